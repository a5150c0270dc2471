"""comm-bound: DDP over a parameter-heavy, compute-light model: the all-reduce cannot hide."""
import torch
import torch.distributed as dist
from _common import profile_steps
from _ddp import init

local = init()
# 1.2 GB of fp32 gradients per step for a handful of cheap lookups.
net = torch.nn.Sequential(torch.nn.Embedding(300_000, 1024), torch.nn.Linear(1024, 1024)).cuda()
model = torch.nn.parallel.DistributedDataParallel(net, device_ids=[local])
opt = torch.optim.SGD(model.parameters(), lr=1e-3)
tok = torch.randint(0, 300_000, (64,), device="cuda")


def step(i):
    loss = model(tok).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)


profile_steps("ddp_comm_bound", step, ["comm-bound"], "DDP over a 300k x 1024 embedding with almost no compute: exposed all-reduce", 64)
dist.destroy_process_group()
