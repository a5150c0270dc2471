"""host-sync as the root cause of idle time: a GPT-2 step that calls loss.item() and
torch.cuda.synchronize() four times (logging, a timing helper). The CPU launches far faster than the GPU
runs, so the idle after each sync is the queue refilling: the sync's cost, not a launch bottleneck.

  python sync_refill.py OUT          # expect host-sync on top, not launch-bound
  python sync_refill.py OUT --fixed  # the twin: no syncs inside the step
"""
import argparse

import torch
from _common import median_step_ms, profile_steps, variant_name
from _gpt import GPT

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--fixed", action="store_true")
a = ap.parse_args()

torch.manual_seed(0)
model = GPT().cuda()
opt = torch.optim.AdamW(model.parameters(), lr=6e-4, fused=True)
B, T = 12, 1024  # large enough that the GPU, not the CPU, sets the pace between syncs
x = torch.randint(0, 50257, (4, B, T), device="cuda")
y = torch.randint(0, 50257, (4, B, T), device="cuda")
log = []


def step(i):
    for k in range(4):  # four micro-batches, gradient accumulation
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x[k], y[k]) / 4
        loss.backward()
        if not a.fixed:
            log.append(loss.item())  # the logging line
            torch.cuda.synchronize()  # a timing helper
    opt.step()
    opt.zero_grad(set_to_none=True)


name = variant_name("sync_refill", {"fixed": a.fixed})
ms = median_step_ms(step, warmup=4, steps=12)
timing = {"median_step_ms": ms, **{"batch": 4 * B, "seq": T}}  # measured without the profiler: the step the user sees
profile_steps(name, step, [] if a.fixed else ["host-sync"], f"GPT-2 124M, 4 micro-batches of {B}x{T}, .item() + synchronize() after each: {not a.fixed}", 4 * B * T, extra_meta=timing)
