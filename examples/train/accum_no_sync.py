"""Gradient accumulation under DistributedDataParallel without `no_sync()`.

    gpuwise doctor -- torchrun --nproc_per_node 2 examples/train/accum_no_sync.py           # the problem
    gpuwise doctor -- torchrun --nproc_per_node 2 examples/train/accum_no_sync.py --fixed   # no_sync()

DDP all-reduces the gradients after every backward, so 4 micro-batches per optimizer step pay for
4 all-reduces where 1 is needed. --fixed wraps the first 3 micro-batches in `model.no_sync()`.
Needs 2 or more CUDA GPUs; run under torchrun.
"""
import argparse
import contextlib
import os
import time

import torch
import torch.distributed as dist


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--accum", type=int, default=4)
    ap.add_argument("--fixed", action="store_true", help="model.no_sync() on all micro-batches but the last")
    args = ap.parse_args()
    if "RANK" not in os.environ:
        raise SystemExit("accum_no_sync.py runs under torchrun: torchrun --nproc_per_node 2 accum_no_sync.py")
    dist.init_process_group("nccl")
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    torch.manual_seed(0)
    blocks = []
    for _ in range(12):
        blocks += [torch.nn.Linear(2048, 8192), torch.nn.GELU(), torch.nn.Linear(8192, 2048)]
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(*blocks).cuda(), device_ids=[local])
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    x = torch.randn(args.accum, 1024, 2048, device="cuda")
    t0 = None
    for step in range(1, args.steps + 1):
        if step == 6:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
        for mb in range(args.accum):
            last = mb == args.accum - 1
            with model.no_sync() if args.fixed and not last else contextlib.nullcontext():
                with torch.autocast("cuda", dtype=torch.bfloat16):
                    loss = model(x[mb]).float().pow(2).mean() / args.accum
                loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    if dist.get_rank() == 0:
        print("accum_no_sync%s: %.1f ms/step" % (" --fixed" if args.fixed else "", dt / (args.steps - 5) * 1000))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
