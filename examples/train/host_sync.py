"""Host synchronisation in the loop: `loss.item()` after every micro-batch, then logging work.

    gpuwise doctor -- python examples/train/host_sync.py           # the problem
    gpuwise doctor -- python examples/train/host_sync.py --fixed   # keep the loss on the GPU

`.item()` makes the host wait until the GPU has finished everything queued, so the host's own
work afterwards (logging, metrics: 2 ms here) leaves the GPU idle instead of overlapping with it.
--fixed accumulates the loss on the GPU and reads it once every 20 steps. Needs a CUDA GPU.
"""
import argparse
import time

import torch


def busy_logging(history, value):
    # Stands for the logging and metric code that follows .item() in real loops: 2 ms of Python.
    history.append(value)
    t = time.perf_counter()
    while time.perf_counter() - t < 0.002:
        pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--batch-size", type=int, default=4096)
    ap.add_argument("--fixed", action="store_true", help="no .item() in the loop")
    args = ap.parse_args()

    torch.manual_seed(0)
    layers = []
    for _ in range(6):
        layers += [torch.nn.Linear(4096, 4096), torch.nn.GELU()]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(4096, 1000)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    x = torch.randn(args.batch_size, 4096, device="cuda")
    y = torch.randint(0, 1000, (args.batch_size,), device="cuda")
    history = []
    running = torch.zeros((), device="cuda")
    t0 = None
    for step in range(1, args.steps + 1):
        if step == 6:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
        for _ in range(4):  # micro-batches
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = torch.nn.functional.cross_entropy(model(x), y) / 4
            loss.backward()
            if args.fixed:
                running += loss.detach()
            else:
                busy_logging(history, loss.item())
        opt.step()
        opt.zero_grad(set_to_none=True)
        if args.fixed and step % 20 == 0:
            busy_logging(history, running.item() / 20)
            running.zero_()
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    print("host_sync%s: %.1f ms/step" % (" --fixed" if args.fixed else "", dt / (args.steps - 5) * 1000))


if __name__ == "__main__":
    main()
