"""Shared helpers for the scenario scripts: each reproduces one problem gpuwise
diagnoses, on a real GPU, and writes a trimmed torch.profiler trace plus a
meta file saying which finding it must produce.

Run one:  python examples/scenarios/host_sync.py OUT_DIR
"""
import gzip
import json
import os
import shutil
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile, schedule

WAIT, WARMUP, ACTIVE = 1, 2, 3


def out_dir() -> str:
    d = sys.argv[1] if len(sys.argv) > 1 else "scenario-out"
    os.makedirs(d, exist_ok=True)
    return d


def rank() -> int:
    return int(os.environ.get("RANK", "0"))


def profile_steps(name: str, step_fn, expect: list, story: str, items_per_step: int = 0, extra_steps: int = 0, extra_meta: dict = None):
    """Runs step_fn under the profiler for WAIT+WARMUP+ACTIVE steps and writes
    OUT/name[.rankN].trace.json.gz and its .meta.json (with extra_meta, e.g. the median step measured
    without the profiler)."""
    d = out_dir()
    suffix = f".rank{rank()}" if "RANK" in os.environ else ""
    path = os.path.join(d, f"{name}{suffix}.trace.json")
    steps = WAIT + WARMUP + ACTIVE + extra_steps
    with profile(
        activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
        schedule=schedule(wait=WAIT, warmup=WARMUP, active=ACTIVE, repeat=1),
        record_shapes=True,
        profile_memory=True,
        on_trace_ready=lambda p: p.export_chrome_trace(path),
    ) as prof:
        t0 = None
        for i in range(steps):
            step_fn(i)
            if i == WAIT + WARMUP - 1:
                # The wall clock starts on an empty queue; this sync sits in the last warm-up step, which
                # the trace leaves out, so no recorded step carries a sync of the harness's own.
                torch.cuda.synchronize()
                t0 = time.perf_counter()
            prof.step()
        torch.cuda.synchronize()
        wall = time.perf_counter() - (t0 or time.perf_counter())
    with open(path, "rb") as f, gzip.open(path + ".gz", "wb", compresslevel=9) as g:
        shutil.copyfileobj(f, g)
    os.remove(path)
    meta = {
        "scenario": name,
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(),
        "rank": rank(),
        "world_size": int(os.environ.get("WORLD_SIZE", "1")),
        "story": story,
        "expect_findings": expect,
        "steps_timed": ACTIVE,
        "wall_s": wall,
        "items_per_s": items_per_step * ACTIVE / wall if wall > 0 and items_per_step else None,
        "peak_alloc": torch.cuda.max_memory_allocated(),
        "peak_reserved": torch.cuda.max_memory_reserved(),
    }
    meta.update(extra_meta or {})
    with open(os.path.join(d, f"{name}{suffix}.meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print(f"{name}{suffix}: {os.path.getsize(path + '.gz') / 1e6:.1f} MB trace, {wall * 1000 / ACTIVE:.1f} ms/step")


def mlp(width: int, depth: int, out: int, dtype=torch.float32) -> torch.nn.Module:
    layers = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.GELU()]
    layers.append(torch.nn.Linear(width, out))
    return torch.nn.Sequential(*layers).cuda().to(dtype)


def median_step_ms(step_fn, warmup: int = 8, steps: int = 20) -> float:
    """Median GPU-timed step (ms) outside the profiler: what the user sees once the run has settled.
    Each step is bracketed by CUDA events, so queueing and idle gaps count as they do for the user."""
    for i in range(warmup):
        step_fn(i)
    torch.cuda.synchronize()
    times = []
    for i in range(steps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        step_fn(warmup + i)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2]


def variant_name(base: str, flags: dict) -> str:
    """`resnet50` + {"amp": True, "channels_last": False} -> `resnet50_amp`: one trace per variant."""
    on = [k for k, v in flags.items() if v]
    return "_".join([base] + on)
