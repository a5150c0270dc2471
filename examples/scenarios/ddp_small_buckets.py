"""small-comm-buckets: DDP with bucket_cap_mb=1 over a model with many small layers."""
import torch
import torch.distributed as dist
from _common import profile_steps
from _ddp import init

local = init()
net = torch.nn.Sequential(*[torch.nn.Linear(512, 512) for _ in range(96)]).cuda()
model = torch.nn.parallel.DistributedDataParallel(net, device_ids=[local], bucket_cap_mb=1)
opt = torch.optim.AdamW(model.parameters(), fused=True)
x = torch.randn(256, 512, device="cuda")


def step(i):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(x).float().pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)


profile_steps("ddp_small_buckets", step, ["small-comm-buckets"], "DDP with 1 MB buckets: ~100 small all-reduces per step", 256)
dist.destroy_process_group()
