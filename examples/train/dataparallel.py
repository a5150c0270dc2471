"""nn.DataParallel: one process drives every GPU, copying the model to each one every step.

    gpuwise doctor -- python examples/train/dataparallel.py                                    # the problem
    gpuwise doctor -- torchrun --nproc_per_node 2 examples/train/dataparallel.py --fixed       # DDP

DataParallel replicates the weights, scatters the batch and gathers the outputs from one Python
thread per step, and reduces gradients on GPU 0. --fixed is DistributedDataParallel, one process per
GPU, which PyTorch recommends instead. Needs 2 or more CUDA GPUs.
"""
import argparse
import os
import time

import torch


def build():
    blocks = [torch.nn.Sequential(torch.nn.Linear(2048, 2048), torch.nn.GELU()) for _ in range(12)]
    return torch.nn.Sequential(*blocks, torch.nn.Linear(2048, 10))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--batch-size", type=int, default=1024, help="global batch (DataParallel splits it; DDP takes batch/world per rank)")
    ap.add_argument("--fixed", action="store_true", help="DistributedDataParallel (run under torchrun)")
    args = ap.parse_args()
    torch.manual_seed(0)
    world = 1
    if args.fixed:
        if "RANK" not in os.environ:
            raise SystemExit("dataparallel.py --fixed runs one process per GPU: torchrun --nproc_per_node N dataparallel.py --fixed")
        import torch.distributed as dist

        dist.init_process_group("nccl")
        local = int(os.environ["LOCAL_RANK"])
        torch.cuda.set_device(local)
        world = dist.get_world_size()
        model = torch.nn.parallel.DistributedDataParallel(build().cuda(), device_ids=[local])
    else:
        model = torch.nn.DataParallel(build().cuda())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    per_process = args.batch_size // world
    x = torch.randn(per_process, 2048, device="cuda")
    y = torch.randint(0, 10, (per_process,), device="cuda")
    t0 = None
    for step in range(1, args.steps + 1):
        if step == 6:
            torch.cuda.synchronize()
            t0 = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    dt = time.perf_counter() - t0
    if int(os.environ.get("RANK", "0")) == 0:
        print("dataparallel%s: %.1f ms/step for a global batch of %d" % (" --fixed" if args.fixed else "", dt / (args.steps - 5) * 1000, args.batch_size))
    if args.fixed:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
