"""The probe's cost per step in the sampled steady loop (issue 27), on the machine at hand: the steps it records in full
and the steps it only counts, each measured, and the steady loop's cost as their mix (64 in 1024 recorded: steps.py).

One process runs overhead.py's DataLoader loop (a 16-wide linear layer, SGD, padded to about --target-ms a step) in
blocks of 1,000 steps, cycling through three sides `--rounds` times: plainly (`off`), under the probe recording every
step (`full`: GPUWISE_FULL_STEPS=all, a run's first 2048 steps), and under the probe sampling from the start (`counted`:
GPUWISE_FULL_STEPS=0, whose steps 64-1023 are only counted). Each block gives its mean step over steps 80-999, without
the slowest 1% (preemptions of a shared machine); each side's cost is the median over rounds of its block less the
plain block of the same round (a machine whose speed drifts weighs on both alike). Wall time and the training thread's
CPU time (time.thread_time). The probe is started fresh for each block, as doctor's boot starts it.

    python3 bench/doctor/sampled_overhead.py [--target-ms 1] [--rounds 10] [--json OUT]
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import time  # noqa: F401  (the timed loop reads it)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

from gpuwise import probe as probe_mod  # noqa: E402
from overhead import _TIMED_LOOP  # noqa: E402  (the loop overhead.py measures, defined once)

exec(_TIMED_LOOP)  # m, opt, a and timed_loop(steps, pad, loop, xs, ys) -> (wall times, CPU times)

BLOCK = 1000
FROM, TO = 80, 1000  # for `counted`, the steps between its first burst (1-63) and its next (1024)
BURST, PERIOD = 64, 1024


def block_mean(xs):
    xs = sorted(xs[FROM:TO])[: int((TO - FROM) * 0.99)]
    return sum(xs) / len(xs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target-ms", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    xs, ys = torch.randn(BLOCK * 8, 16), torch.randn(BLOCK * 8, 16)
    target = args.target_ms / 1000.0
    base = statistics.median(timed_loop(300, 0, "dataloader", xs, ys)[0][20:])  # noqa: F821
    pad = 0
    for _ in range(3):
        trial = max(pad, 20)
        per_mm = (statistics.median(timed_loop(300, trial, "dataloader", xs, ys)[0][20:]) - base) / trial  # noqa: F821
        pad = max(0, int(round((target - base) / max(per_mm, 1e-7))))
    sides = {"off": None, "full": "all", "counted": "0"}
    got = {s: ([], []) for s in sides}
    for _ in range(args.rounds):
        for side, full in sides.items():
            p = None
            if full is not None:
                p = probe_mod.start({"GPUWISE_RUN_DIR": tempfile.mkdtemp(), "GPUWISE_PROFILE_STEPS": "0", "GPUWISE_STALL_S": "0", "GPUWISE_FULL_STEPS": full})
            times, cpus = timed_loop(BLOCK, pad, "dataloader", xs, ys)  # noqa: F821
            if p is not None:
                assert p.quiet == (full == "0"), "the counted side was not sampled"
                p.sender.flush()
                p.switch_off()
            got[side][0].append(block_mean(times))
            got[side][1].append(block_mean(cpus))
    out = {"python": sys.version.split()[0], "torch": torch.__version__, "cpus": os.cpu_count(), "targetMs": args.target_ms}
    for which, name in ((0, "wall"), (1, "cpu")):
        off = got["off"][which]
        cost = {s: statistics.median(v - o for v, o in zip(got[s][which], off)) for s in ("full", "counted")}
        steady = (BURST * cost["full"] + (PERIOD - BURST) * cost["counted"]) / PERIOD
        plain = statistics.median(off)
        out[name] = {
            "plainUs": round(plain * 1e6, 1),
            "fullCostUs": round(cost["full"] * 1e6, 1),
            "countedCostUs": round(cost["counted"] * 1e6, 1),
            "steadyCostUs": round(steady * 1e6, 1),
            "steadyCostShare": round(steady / plain, 4),
            "blocksUs": {s: [round(x * 1e6, 1) for x in got[s][which]] for s in sides},
        }
    text = json.dumps(out, indent=1)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    for name in ("wall", "cpu"):
        o = out[name]
        print("%-4s plain %.1f us; every step recorded %+.1f us; counted %+.1f us; steady loop (64 in 1024 recorded) %+.1f us (%+.2f%%)" % (name, o["plainUs"], o["fullCostUs"], o["countedCostUs"], o["steadyCostUs"], o["steadyCostShare"] * 100))


if __name__ == "__main__":
    main()
