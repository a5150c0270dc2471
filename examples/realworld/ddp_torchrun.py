"""Distributed data parallel training written the way PyTorch's DDP tutorial (multigpu_torchrun.py) teaches it: a
Trainer class, torchrun's environment, a DistributedSampler, a DataLoader with pinned memory, a snapshot saved by
rank 0 each epoch. ResNet-50 on synthetic images (uint8, as decoded JPEGs are), fp32 as first written. Without
torchrun it runs as one process on one GPU, as such scripts often allow.

  torchrun --nproc_per_node 2 ddp_torchrun.py                     # fp32
  torchrun --nproc_per_node 2 ddp_torchrun.py --amp --channels-last  # the advice followed
Drills (with --backend gloo --one-gpu on a one-GPU machine): --slow-rank R (rank R's loader is slower), --crash-rank R / --kill-rank R / --hang-rank R with
--at-step N (an exception, SIGKILL, a sleep before the step: the other ranks then wait in the all-reduce).
--seconds S: train for S seconds instead of --steps (two jobs sharing one GPU)."""
import argparse
import os
import signal
import time

import torch
import torch.distributed as dist
import torchvision
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

ap = argparse.ArgumentParser()
ap.add_argument("--batch", type=int, default=64, help="per GPU")
ap.add_argument("--steps", type=int, default=60)
ap.add_argument("--seconds", type=float, default=0)
ap.add_argument("--amp", action="store_true")
ap.add_argument("--channels-last", action="store_true")
ap.add_argument("--workers", type=int, default=4)
ap.add_argument("--slow-rank", type=int, default=-1)
ap.add_argument("--crash-rank", type=int, default=-1)
ap.add_argument("--kill-rank", type=int, default=-1)
ap.add_argument("--hang-rank", type=int, default=-1)
ap.add_argument("--at-step", type=int, default=20)
ap.add_argument("--snapshot", default="/tmp/ddp_snapshot.pt")
ap.add_argument("--backend", default="nccl", help="gloo lets the drills run two ranks on one GPU")
ap.add_argument("--one-gpu", action="store_true", help="every rank on cuda:0 (drills on a one-GPU machine)")
a = ap.parse_args()

distributed = "LOCAL_RANK" in os.environ
if distributed:
    dist.init_process_group(a.backend)
    local_rank, rank = (0 if a.one_gpu else int(os.environ["LOCAL_RANK"])), int(os.environ["RANK"])
    torch.cuda.set_device(local_rank)
else:
    local_rank = rank = 0


class SyntheticImages(Dataset):
    """2,048 decoded images kept in memory; __getitem__ converts one to float as a transform would."""

    def __init__(self, n=2048, delay_s=0.0):
        g = torch.Generator().manual_seed(0)
        self.images = torch.randint(0, 256, (n, 3, 224, 224), dtype=torch.uint8, generator=g)
        self.labels = torch.randint(0, 1000, (n,), generator=g)
        self.delay_s = delay_s

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        if self.delay_s:
            time.sleep(self.delay_s)
        return self.images[i].float().div_(255), self.labels[i]


class Trainer:
    def __init__(self, model, loader, sampler, opt):
        self.fmt = torch.channels_last if a.channels_last else torch.contiguous_format
        self.model = model.to(local_rank).to(memory_format=self.fmt)
        if distributed:
            self.model = DDP(self.model, device_ids=[local_rank])
        self.loader, self.sampler, self.opt = loader, sampler, opt
        self.step = 0

    def _run_batch(self, x, y):
        self.opt.zero_grad()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=a.amp):
            loss = torch.nn.functional.cross_entropy(self.model(x), y)
        loss.backward()
        self.opt.step()

    def _drills(self):
        if self.step != a.at_step:
            return
        if rank == a.crash_rank:
            raise RuntimeError(f"rank {rank}: a bad batch at step {self.step} (drill)")
        if rank == a.kill_rank:
            os.kill(os.getpid(), signal.SIGKILL)
        if rank == a.hang_rank:
            time.sleep(10**6)

    def _run_epoch(self, epoch, deadline):
        if self.sampler is not None:
            self.sampler.set_epoch(epoch)
        for x, y in self.loader:
            self._drills()
            x = x.to(local_rank, non_blocking=True).to(memory_format=self.fmt)
            y = y.to(local_rank, non_blocking=True)
            self._run_batch(x, y)
            self.step += 1
            if (deadline and time.time() > deadline) or (not deadline and self.step >= a.steps):
                return True
        return False

    def train(self):
        deadline = time.time() + a.seconds if a.seconds else 0
        epoch = 0
        while not self._run_epoch(epoch, deadline):
            if rank == 0:
                torch.save(self.model.state_dict(), a.snapshot)
            epoch += 1


data = SyntheticImages(delay_s=0.004 if rank == a.slow_rank else 0.0)
sampler = DistributedSampler(data) if distributed else None
loader = DataLoader(data, batch_size=a.batch, shuffle=sampler is None, sampler=sampler, num_workers=a.workers, pin_memory=True, drop_last=True, persistent_workers=True)
model = torchvision.models.resnet50()
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=1e-4)
Trainer(model, loader, sampler, opt).train()
if distributed:
    dist.destroy_process_group()
