"""model-parallel-bubble: a model split by hand over two GPUs in one process (the seeds' sub_network1.cuda(0),
sub_network2.cuda(1)): each GPU waits while the other works. Needs 2 GPUs.

  python model_parallel.py OUT               # naive split: expect model-parallel-bubble
  python model_parallel.py OUT --pipelined   # the fix in one process: 8 micro-batches, GPU 1 runs micro-batch i
                                             # while GPU 0 runs i+1 (launches are asynchronous, each GPU has its queue)
  torchrun --nproc_per_node 2 model_parallel.py OUT   # the other fix: the model fits on one GPU, so DDP, half the
                                                      # batch per GPU (the same global batch)
"""
import argparse
import os
import time

import torch
from _common import profile_steps

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--pipelined", action="store_true")
ap.add_argument("--micro", type=int, default=8)
ap.add_argument("--batch", type=int, default=8192, help="rows (tokens) per step, global")
a = ap.parse_args()
assert torch.cuda.device_count() >= 2, "needs 2 GPUs"
torch.manual_seed(0)
D, LAYERS = 2048, 12


def blocks(n, dev):
    layers = []
    for _ in range(n):
        layers += [torch.nn.Linear(D, 4 * D), torch.nn.GELU(), torch.nn.Linear(4 * D, D)]
    return torch.nn.Sequential(*layers).to(dev)


ddp = "LOCAL_RANK" in os.environ
if ddp:
    import torch.distributed as dist

    dist.init_process_group("nccl")
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(blocks(LAYERS, local), torch.nn.Linear(D, 1000).to(local)), device_ids=[local])
    devs = [local]
    rows = a.batch // dist.get_world_size()
    x = torch.randn(rows, D, device=local)
    y = torch.randint(0, 1000, (rows,), device=local)

    def forward(inp):
        return model(inp)
else:
    stage1 = blocks(LAYERS // 2, "cuda:0")
    stage2 = torch.nn.Sequential(blocks(LAYERS // 2, "cuda:1"), torch.nn.Linear(D, 1000).to("cuda:1"))
    model = torch.nn.ModuleList([stage1, stage2])
    devs = [0, 1]
    x = torch.randn(a.batch, D, device="cuda:0")
    y = torch.randint(0, 1000, (a.batch,), device="cuda:1")

    def forward(inp):
        if not a.pipelined:
            return stage2(stage1(inp).to("cuda:1"))
        chunks = iter(inp.split(inp.shape[0] // a.micro))
        prev = stage1(next(chunks)).to("cuda:1")
        outs = []
        for c in chunks:
            outs.append(stage2(prev))  # GPU 1 works on micro-batch i ...
            prev = stage1(c).to("cuda:1")  # ... while GPU 0 computes i+1
        outs.append(stage2(prev))
        return torch.cat(outs)

opt = torch.optim.AdamW(model.parameters(), fused=True)


def step(i):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = torch.nn.functional.cross_entropy(forward(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)


def median_wall_ms(warmup=5, steps=15):
    """Median step measured without the profiler, every device of the step synchronised (a CUDA event on one device
    would not see the other's work)."""
    for i in range(warmup):
        step(i)
    times = []
    for i in range(steps):
        for d in devs:
            torch.cuda.synchronize(d)
        t = time.perf_counter()
        step(warmup + i)
        for d in devs:
            torch.cuda.synchronize(d)
        times.append((time.perf_counter() - t) * 1e3)
    return sorted(times)[len(times) // 2]


name = "model_parallel_ddp" if ddp else ("model_parallel_pipelined" if a.pipelined else "model_parallel")
timing = {"median_step_ms": median_wall_ms(), "batch": a.batch, "micro_batches": a.micro if a.pipelined else 1}
expect = [] if (ddp or a.pipelined) else ["model-parallel-bubble"]
story = f"{LAYERS} blocks of Linear {D}x{4 * D} in bf16 autocast, {a.batch} rows a step, " + (
    "DDP over 2 GPUs" if ddp else (f"split over 2 GPUs, {a.micro} micro-batches pipelined" if a.pipelined else "split over 2 GPUs, naive")
)
profile_steps(name, step, expect, story, a.batch, extra_meta=timing)
if ddp:
    dist.destroy_process_group()
