#!/usr/bin/env python3
"""A leak across steps: the training loop keeps every step's loss (with its graph) and logits
in a list. Snapshots after step 2 and after step 6 feed `gpuwise memory diff`; the step-6 one
alone must show `kept-across-steps`.

    python3 examples/scenarios/memory_leak.py OUT
"""
import sys

import torch
from memory_common import TinyGPT, batch_of, dump, start_recording, stop_recording, write_meta

out = sys.argv[1]
start_recording(stacks="python")
model = TinyGPT(layers=4).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
x, y = batch_of(8, 512, 8192)
history = []
for step in range(6):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        logits = model(x)
        loss = torch.nn.functional.cross_entropy(logits.float().view(-1, logits.shape[-1]), y.view(-1))
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)
    history.append((loss, logits))  # the bug: tensors kept for "logging"
    if step == 1:
        torch.cuda.synchronize()
        dump(out, "memory_leak_step2")
        write_meta(out, "memory_leak_step2", "TinyGPT 4x512, logits and loss kept every step; after step 2", {"diff_with": "memory_leak_step6"})
torch.cuda.synchronize()
dump(out, "memory_leak_step6")
stop_recording()
write_meta(out, "memory_leak_step6", "TinyGPT 4x512, logits and loss kept every step; after step 6",
           {"finding": "kept-across-steps", "kept_bytes_per_step": history[-1][1].untyped_storage().nbytes()})
