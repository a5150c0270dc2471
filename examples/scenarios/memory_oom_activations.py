#!/usr/bin/env python3
"""Out of memory in the forward pass: TinyGPT (12 layers, d=768) with a batch far too large
for a 6 GiB cap (set_per_process_memory_fraction). The snapshot is dumped by an OOM observer
at the moment of the failure, the way users are told to capture one. Then the script finds the
largest batch that really trains under the same cap, so gpuwise's `batchThatFits` can be
checked against it (it is an upper bound: the forward was cut short).

    python3 examples/scenarios/memory_oom_activations.py OUT
"""
import gzip
import os
import shutil
import sys

import torch
from memory_common import TinyGPT, batch_of, cap_memory, start_recording, stop_recording, train_step, write_meta

out = sys.argv[1]
CAP = 6 << 30
BATCH = 64
cap = cap_memory(CAP)
start_recording(stacks="python")
dumped = []


def on_oom(device, alloc, device_alloc, device_free):
    path = os.path.join(out, "memory_oom_activations.pickle")
    torch.cuda.memory._dump_snapshot(path)
    dumped.append(path)


torch._C._cuda_attach_out_of_memory_observer(on_oom)
model = TinyGPT(d=768, layers=12, heads=12).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
message = None
try:
    x, y = batch_of(BATCH, 512, 8192)
    train_step(model, opt, x, y)
except torch.OutOfMemoryError as e:
    message = str(e).splitlines()[0]
stop_recording()
assert message is not None and dumped, "expected an out-of-memory error and a snapshot"
with open(dumped[0], "rb") as src, gzip.GzipFile(filename=dumped[0] + ".gz", mode="wb", compresslevel=9, mtime=0) as dst:
    shutil.copyfileobj(src, dst)
os.remove(dumped[0])
peaks = (torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved())

# The largest batch that trains a full step under the same cap (binary search, a few steps).
del x, y
opt.zero_grad(set_to_none=True)
torch.cuda.empty_cache()
lo, hi = 0, BATCH
while hi - lo > 1:
    mid = (lo + hi) // 2
    try:
        xb, yb = batch_of(mid, 512, 8192)
        train_step(model, opt, xb, yb)
        del xb, yb
        lo = mid
    except torch.OutOfMemoryError:
        hi = mid
    opt.zero_grad(set_to_none=True)
    torch.cuda.empty_cache()
print(f"largest batch that trains under the cap: {lo}")
write_meta(out, "memory_oom_activations",
           f"TinyGPT 12x768 bf16 AdamW, batch {BATCH}x512 under a {CAP >> 30} GiB cap: OOM in forward",
           {"finding": "oom-activations", "batch": BATCH, "batch_that_trains": lo},
           peaks=peaks, cap_bytes=cap, error=message)
