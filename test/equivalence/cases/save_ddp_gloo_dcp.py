"""A one-process gloo group (file store outside the working directory): DistributedDataParallel training, the
unwrapped module's state_dict saved by rank 0, and torch.distributed.checkpoint save/load where it exists (torch
2.x; torch 1.13 lacks it and says so the same way in both runs). DCP's files go to a temporary folder (their
metadata names the save); what is printed is the files' names and the reloaded weights.
"""
import os
import tempfile

import torch
import torch.distributed as dist

if not dist.is_available() or not dist.is_gloo_available():
    print("skip: no gloo backend")
    raise SystemExit(0)
store_dir = tempfile.mkdtemp()
dist.init_process_group("gloo", init_method="file://" + os.path.join(store_dir, "store"), rank=0, world_size=1)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
ddp = torch.nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
sampler = torch.utils.data.distributed.DistributedSampler(data, shuffle=True, seed=0)
loader = torch.utils.data.DataLoader(data, batch_size=8, sampler=sampler)
for epoch in range(8):
    sampler.set_epoch(epoch)
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
print("loss %.6f" % loss.item())
if dist.get_rank() == 0:
    torch.save(ddp.module.state_dict(), "ddp_module.pt")
try:
    import torch.distributed.checkpoint as dcp
except ImportError:
    print("torch.distributed.checkpoint: absent in torch %s" % torch.__version__.split("+")[0])
else:
    ckpt_dir = os.path.join(store_dir, "dcp")
    dcp.save({"model": model.state_dict()}, checkpoint_id=ckpt_dir)
    print("dcp files:", sorted(os.listdir(ckpt_dir)))
    fresh = {"model": {k: torch.zeros_like(v) for k, v in model.state_dict().items()}}
    dcp.load(fresh, checkpoint_id=ckpt_dir)
    print("dcp reload equal:", all(torch.equal(fresh["model"][k], v) for k, v in model.state_dict().items()))
dist.destroy_process_group()
