#!/usr/bin/env python3
"""Healthy training: TinyGPT (6 layers, d=512), bf16 autocast, AdamW, batch 16x512, 3 steps,
full C++ and Python stacks. gpuwise must report the peaks torch measured, to the byte.

    python3 examples/scenarios/memory_train.py OUT
"""
import sys

import torch
from memory_common import TinyGPT, batch_of, dump, start_recording, stop_recording, train_step, write_meta

out = sys.argv[1]
start_recording(stacks="all")
model = TinyGPT().cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
x, y = batch_of(16, 512, 8192)
for _ in range(3):
    train_step(model, opt, x, y)
torch.cuda.synchronize()
dump(out, "memory_train")
stop_recording()
write_meta(out, "memory_train", "TinyGPT 6x512 bf16 autocast AdamW batch 16x512, 3 steps, stacks=all",
           {"findings_at_most": "low", "peak_matches_torch": True},
           params=sum(p.numel() for p in model.parameters()))
