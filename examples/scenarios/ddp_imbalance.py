"""rank-imbalance: rank 1 does twice the forward work of rank 0 every step."""
import torch
import torch.distributed as dist
from _common import profile_steps
from _ddp import init, transformer_like

local = init()
model = torch.nn.parallel.DistributedDataParallel(transformer_like(1024, 8), device_ids=[local])
opt = torch.optim.AdamW(model.parameters(), fused=True)
rows = 8192 if dist.get_rank() == 1 else 2048  # uneven batches, as with unbucketed variable-length data
x = torch.randn(rows, 1024, device="cuda")


def step(i):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(x).float().pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)


profile_steps("ddp_imbalance", step, ["rank-imbalance"], "DDP where rank 1 gets 4x the rows of rank 0", rows)
dist.destroy_process_group()
