"""Steady GPU load for gpuwise's real-GPU checks: a fixed allocation plus a matmul loop.

Run by bench/telemetry/gpu-check.mjs and bench.mjs, one process per GPU, with CUDA_VISIBLE_DEVICES set
to that GPU and RANK/LOCAL_RANK/WORLD_SIZE/SLURM_JOB_ID set so gpuwise can show them. Prints
"ready PID" once its memory use is stable, then loops until --seconds have passed or its parent dies.
"""
import argparse
import os
import sys
import time


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--seconds", type=float, default=60.0)
    p.add_argument("--gib", type=float, default=2.0)
    args = p.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("error: torch sees no CUDA device", flush=True)
        return 2
    dev = torch.device("cuda", 0)
    block = torch.empty(int(args.gib * 2**30), dtype=torch.uint8, device=dev)  # fixed, never freed
    a = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    b = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    c = a @ b  # the caching allocator now holds every block the loop needs: memory stays constant
    torch.cuda.synchronize()
    print(f"ready {os.getpid()} {block.numel()}", flush=True)
    parent = os.getppid()
    end = time.time() + args.seconds
    while time.time() < end and os.getppid() == parent:
        for _ in range(20):
            c = a @ b
        torch.cuda.synchronize()
    del c
    return 0


if __name__ == "__main__":
    sys.exit(main())
