"""`torchrun --standalone --nproc_per_node 2 train.py` (as `python3 -m torch.distributed.run`): two ranks on the
CPU with the gloo backend train a DistributedDataParallel model 32 steps; rank 0 prints the averaged loss and saves
the model, each rank reports its RANK/WORLD_SIZE and the elastic agent's variables it was given. doctor must record
steps in both ranks, and the output, exit status and checkpoint must be the same. `--redirects 1 --tee 1` (rank
stdout through the agent's log files to its console, lines prefixed `[default0]:`): torch 1.13's default of 0 fails
on Python 3.11 (its Std.from_str finds no flag for 0); `--monitor_interval 0.2`: the agent's 5 s poll would make
every run last 5 s more.

# equivalence: command {python} -m torch.distributed.run --standalone --nproc_per_node 2 --monitor_interval 0.2 --redirects 1 --tee 1 {script}
# equivalence: stdio stdout=pipe stderr=pipe
# equivalence: probed 2
"""
import os

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = DDP(torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
g = torch.Generator().manual_seed(rank)
data = [(torch.randn(8, 8, generator=g), torch.randn(8, 1, generator=g)) for _ in range(8)]
for step in range(32):
    x, y = data[step % 8]
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
mean = loss.detach().clone()
dist.all_reduce(mean)
seen = sorted(k for k in os.environ if k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "ROLE_RANK", "TORCHELASTIC_RUN_ID", "OMP_NUM_THREADS"))
gathered = [None] * world
dist.all_gather_object(gathered, (rank, os.environ["RANK"], os.environ["WORLD_SIZE"], seen))
if rank == 0:
    for g_ in gathered:
        print("rank", *g_)
    print("mean loss %.6f" % (mean.item() / world))
    torch.save(model.module.state_dict(), "ddp.pt")
dist.barrier()
dist.destroy_process_group()
