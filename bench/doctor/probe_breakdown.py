"""Where the probe's per-step cost goes, on the machine at hand (issue 27): for the Python and torch of a GPU host,
where valgrind (probe_instructions.sh) is not at hand.

One process runs overhead.py's DataLoader loop (a 16-wide linear layer, SGD, padded to about --target-ms of the
thread's CPU) in blocks, alternately plainly and with the probe in each variant, `--rounds` times; each block's median
of the training thread's CPU time per step (time.thread_time) is kept, and each variant's median over its blocks. Then:
- `profile`: one block with the probe under cProfile; the probe's functions by their own time per step (cProfile's
  own cost inflates each call alike, so the shares among them are what it tells);
- `cuda` (where CUDA is there): the probe's per-step CUDA event (gpu.py, `Gpu.step_times`), timed alone over a loop of
  one small kernel a step, and its parts (the capture check, the event's record, its query).

Variants: `on` (the probe as doctor starts it, records to a file, no profiler window), `drop` (each step's row dropped
as it is queued: the hooks alone).
    python3 bench/doctor/probe_breakdown.py [--target-ms 1] [--steps 600] [--rounds 6] [--json OUT]
"""
import argparse
import cProfile
import json
import os
import pstats
import statistics
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "python"))

import torch  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

from gpuwise import probe as probe_mod  # noqa: E402
from gpuwise.probe import records  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from overhead import _TIMED_LOOP  # noqa: E402  (the loop overhead.py measures, defined once)

exec(_TIMED_LOOP)  # m, opt, a, timed_loop(steps, pad, loop, xs, ys) -> (wall times, CPU times), pad_for(target_s, loop)


def loop(steps, pad, xs, ys):
    """The median CPU time of the training thread a step (the first 20 steps left out)."""
    return statistics.median(timed_loop(steps, pad, "dataloader", xs, ys)[1][20:])  # noqa: F821


def start(variant, run_dir):
    if variant == "off":
        return None
    put = records.Sender.put
    if variant == "drop":
        records.Sender.put = lambda self, rec, now=False: False
    p = probe_mod.start({"GPUWISE_RUN_DIR": run_dir, "GPUWISE_PROFILE_STEPS": "0", "GPUWISE_STALL_S": "0"})
    p._restore_put = put
    return p


def stop(p):
    if p is not None:
        records.Sender.put = p._restore_put
        p.sender.flush()
        p.switch_off()


def cuda_parts(n=5000):
    """Microseconds a call of the probe's per-step CUDA work, and its parts, each timed over n steps of one tiny kernel."""
    from gpuwise.probe.gpu import Gpu

    x = torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    gpu = Gpu(torch)
    out = {}

    def timed(name, fn):
        for i in range(200):
            x.add_(1)
            fn(i)
        torch.cuda.synchronize()
        t = time.thread_time()
        for i in range(n):
            x.add_(1)
            fn(i)
        out[name] = (time.thread_time() - t) / n * 1e6
        torch.cuda.synchronize()

    timed("kernel alone", lambda i: None)
    timed("Gpu.step_times", lambda i: gpu.step_times(i))
    timed("is_initialized", lambda i: torch.cuda.is_initialized())
    timed("is_current_stream_capturing", lambda i: torch.cuda.is_current_stream_capturing())
    ev = torch.cuda.Event(enable_timing=True)
    timed("Event.record", lambda i: ev.record())
    timed("Event.query", lambda i: ev.query())
    stream = torch.cuda.current_stream()
    timed("Event.record(stream)", lambda i: ev.record(stream))
    timed("current_stream", lambda i: torch.cuda.current_stream())
    base = out["kernel alone"]
    return {k: round(v - base if k != "kernel alone" else v, 2) for k, v in out.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target-ms", type=float, default=1.0)
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    steps = args.steps
    xs, ys = torch.randn(steps * 8, 16), torch.randn(steps * 8, 16)
    pad = pad_for(args.target_ms / 1000.0, "dataloader", which=1)  # noqa: F821  (on the thread's CPU time)
    run_dir = tempfile.mkdtemp()
    variants = ("off", "on", "drop")
    got = {v: [] for v in variants}
    for _ in range(args.rounds):
        for v in variants:
            p = start(v, run_dir)
            got[v].append(loop(steps, pad, xs, ys))
            stop(p)
    med = {v: statistics.median(x) for v, x in got.items()}
    result = {
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "cpus": os.cpu_count(),
        "stepCpuUs": {v: round(x * 1e6, 1) for v, x in med.items()},
        "costUs": {v: round((med[v] - med["off"]) * 1e6, 1) for v in variants if v != "off"},
        "blocksUs": {v: [round(x * 1e6, 1) for x in xs_] for v, xs_ in got.items()},
    }
    # The probe's functions under cProfile, per step.
    p = start("on", run_dir)
    prof = cProfile.Profile()
    prof.enable()
    loop(steps, pad, xs, ys)
    prof.disable()
    stop(p)
    stats = pstats.Stats(prof)
    rows = []
    total_probe = 0.0
    for (fname, line, func), (cc, nc, tt, ct, callers) in stats.stats.items():
        if "gpuwise" in fname:
            total_probe += tt
            rows.append((tt, nc, "%s:%d %s" % (os.path.basename(fname), line, func)))
    rows.sort(reverse=True)
    result["profile"] = {
        "probeOwnUsPerStep": round(total_probe / steps * 1e6, 1),
        "top": [{"fn": name, "usPerStep": round(tt / steps * 1e6, 2), "callsPerStep": round(nc / steps, 2)} for tt, nc, name in rows[:25]],
    }
    if torch.cuda.is_available():
        result["cudaUsPerCall"] = cuda_parts()
    text = json.dumps(result, indent=1)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
