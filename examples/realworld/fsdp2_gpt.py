"""FSDP2 (torch.distributed.fsdp.fully_shard) training a GPT-2 medium (355M, random weights) on random tokens under
torchrun, written as the FSDP2 examples teach: each transformer block sharded, then the root; AdamW; no mixed
precision policy, as first written.
Follow the advice: --bf16 (MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32))."""
import argparse
import os

import torch
import torch.distributed as dist
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from transformers import GPT2Config, GPT2LMHeadModel

ap = argparse.ArgumentParser()
ap.add_argument("--bf16", action="store_true")
ap.add_argument("--batch", type=int, default=8)
ap.add_argument("--seq", type=int, default=1024)
ap.add_argument("--steps", type=int, default=40)
a = ap.parse_args()

dist.init_process_group("nccl")
local_rank = int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local_rank)
torch.manual_seed(0)

model = GPT2LMHeadModel(GPT2Config(n_embd=1024, n_layer=24, n_head=16)).cuda()
mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) if a.bf16 else MixedPrecisionPolicy()
for block in model.transformer.h:
    fully_shard(block, mp_policy=mp)
fully_shard(model, mp_policy=mp)
opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
g = torch.Generator(device="cuda").manual_seed(local_rank)
for step in range(a.steps):
    ids = torch.randint(0, 50257, (a.batch, a.seq), device="cuda", generator=g)
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    opt.step()
    opt.zero_grad()
dist.destroy_process_group()
