"""ddp-accum-without-no-sync: 4 micro-batches per optimizer step, each all-reducing gradients."""
import torch
import torch.distributed as dist
from _common import profile_steps
from _ddp import init, transformer_like

local = init()
model = torch.nn.parallel.DistributedDataParallel(transformer_like(), device_ids=[local])
opt = torch.optim.AdamW(model.parameters(), fused=True)
x = torch.randn(4, 1024, 2048, device="cuda")


def step(i):
    for mb in range(4):  # no model.no_sync() on the first three
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(x[mb : mb + 1]).float().pow(2).mean() / 4
        loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)


profile_steps("ddp_accum_no_sync", step, ["ddp-accum-without-no-sync"], "DDP, gradient accumulation over 4 micro-batches without no_sync", 4 * 1024)
dist.destroy_process_group()
