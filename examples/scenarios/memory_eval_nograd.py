#!/usr/bin/env python3
"""Evaluation without torch.no_grad(): outputs of several eval batches are kept while each
forward pass still holds its autograd graph. gpuwise must report `forward-without-backward`.

    python3 examples/scenarios/memory_eval_nograd.py OUT
"""
import sys

import torch
from memory_common import TinyGPT, batch_of, dump, start_recording, stop_recording, write_meta

out = sys.argv[1]
start_recording(stacks="python")
model = TinyGPT(layers=4).cuda()
model.eval()
outs = []
for i in range(6):
    x, _ = batch_of(8, 512, 8192)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        outs.append(model(x)[:, -1])  # keeps the graph of the whole forward pass alive
torch.cuda.synchronize()
dump(out, "memory_eval_nograd")
stop_recording()
write_meta(out, "memory_eval_nograd", "TinyGPT 4x512, 6 eval batches without no_grad, last-token logits kept", {"finding": "forward-without-backward"})
