"""Matrix multiplies in full fp32: no tensor cores.

    gpuwise doctor -- python examples/train/fp32_matmul.py           # the problem
    gpuwise doctor -- python examples/train/fp32_matmul.py --fixed   # bf16 autocast

PyTorch's default for fp32 matmuls is "highest" precision (no TF32), so a model trained in fp32
runs its GEMMs on the SIMT cores at a fraction of the GPU's rate. --fixed wraps the forward in
`torch.autocast("cuda", dtype=torch.bfloat16)`. Needs a CUDA GPU.
"""
import argparse
import time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--batch-size", type=int, default=2048)
    ap.add_argument("--fixed", action="store_true", help="bf16 autocast")
    args = ap.parse_args()

    torch.manual_seed(0)
    layers = []
    for _ in range(6):
        layers += [torch.nn.Linear(4096, 4096), torch.nn.GELU()]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(4096, 1000)).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    x = torch.randn(args.batch_size, 4096, device="cuda")
    y = torch.randint(0, 1000, (args.batch_size,), device="cuda")
    t0 = None
    for step in range(1, args.steps + 1):
        if step == 6:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=args.fixed):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    print("fp32_matmul%s: %.1f ms/step" % (" --fixed" if args.fixed else "", dt / (args.steps - 5) * 1000))


if __name__ == "__main__":
    main()
