"""DDP set-up shared by the multi-GPU scenarios (run under torchrun)."""
import os

import torch
import torch.distributed as dist


def init():
    dist.init_process_group("nccl")
    local = int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    torch.manual_seed(0)
    return local


def transformer_like(d=2048, layers=12):
    blocks = []
    for _ in range(layers):
        blocks += [torch.nn.Linear(d, 4 * d), torch.nn.GELU(), torch.nn.Linear(4 * d, d)]
    return torch.nn.Sequential(*blocks).cuda()
