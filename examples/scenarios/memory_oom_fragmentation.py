#!/usr/bin/env python3
"""Out of memory from fragmentation: under a 2 GiB cap, 6 MiB tensors fill 20 MiB segments three
at a time, every other one is freed, and then 64 MiB is requested. The cached free memory is
larger than the request but in pieces. The script then re-runs itself with
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True and records whether the same request succeeds,
which checks gpuwise's recommendation on the GPU.

    python3 examples/scenarios/memory_oom_fragmentation.py OUT
"""
import json
import os
import subprocess
import sys

import torch
from memory_common import cap_memory, dump, start_recording, stop_recording

out = sys.argv[1]
check_only = len(sys.argv) > 2 and sys.argv[2] == "--check"
cap = cap_memory(2 << 30)
if not check_only:
    start_recording(stacks="python")
# 6 MiB requests get 20 MiB segments, three tensors each; fill the cap to within 40-60 MiB
# (no out-of-memory yet), then free every other tensor: every segment keeps a live tensor,
# so none can be released, and the holes are 6-8 MiB.
segments = (cap - (40 << 20)) // (20 << 20)
held = [torch.empty(6 << 20, dtype=torch.uint8, device="cuda") for _ in range(3 * segments)]
del held[::2]
torch.cuda.synchronize()
ok = True
try:
    big = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
except torch.OutOfMemoryError:
    ok = False
if check_only:
    print(json.dumps({"request_ok_with_expandable_segments": ok}))
    sys.exit(0)
assert not ok, "expected the 64 MiB request to fail"
peaks = (torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved())
dump(out, "memory_oom_fragmentation")
stop_recording()
env = dict(os.environ, PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True")
res = subprocess.run([sys.executable, __file__, out, "--check"], env=env, capture_output=True, text=True, check=True)
with_expandable = json.loads(res.stdout.strip().splitlines()[-1])["request_ok_with_expandable_segments"]
meta = {
    "scenario": "memory_oom_fragmentation",
    "torch": torch.__version__,
    "device": torch.cuda.get_device_name(),
    "story": "6 MiB tensors, every other one freed, then 64 MiB under a 2 GiB cap (set_per_process_memory_fraction)",
    "peak_alloc": peaks[0],
    "peak_reserved": peaks[1],
    "cap_bytes": cap,
    "expect": {"finding": "oom-fragmentation", "request_ok_with_expandable_segments": with_expandable},
}
with open(os.path.join(out, "memory_oom_fragmentation.meta.json"), "w") as f:
    json.dump(meta, f, indent=1)
    f.write("\n")
print(f"memory_oom_fragmentation: with expandable_segments the request {'succeeds' if with_expandable else 'still fails'}")
