"""The probe's cost per step in the sampled steady loop (issue 27), on the machine at hand: the steps it records in full
and the steps it only counts, each measured, and the steady loop's cost as their mix (SAMPLE_BURST in SAMPLE_PERIOD recorded: steps.py).

One process runs overhead.py's DataLoader loop (a 16-wide linear layer, SGD, padded to about --target-ms a step) in
short segments of --segment steps, cycling through three sides --cycles times: plainly (`off`: no probe), under a probe
recording every step (`full`: GPUWISE_FULL_STEPS=all), and under a probe that only counts as between two bursts
(`counted`: `_enter_quiet`, the backward pass unwatched as a run pauses it; each segment's DataLoader is a new one, whose
`__iter__` would end a run's pause, so its `__next__` is unwatched by hand where sys.monitoring watches it; on Python
>= 3.12 also `counted-next-watched`, the same with `__next__` still watched: what that pause saves). A fresh probe is started for each segment and switched off after it, outside the
timed steps; each segment's first 5 steps are left out. The host's speed drifts by tens of percent over seconds on a
shared machine (the H200 host, 2026-11-29: blocks of 1,000 steps between 918 and 1818 us a step for the same work), so
each side's cost is the median, over the cycles, of its segment's mean step less the plain segment's beside it, a few
tens of milliseconds apart. Wall time and the training thread's CPU time (time.thread_time). Then one probe runs the
whole time over one DataLoader iterator, its segments toggled between recording every step, counting as between two
bursts (`__next__` and the backward pass unwatched, as a run pauses them) and its hooks switched off (sys.monitoring's
watches paused too; on Python < 3.12 the wrappers still run and return at once). No probe starts just before those
timed steps: a fresh probe's first background runs take the GIL during the segments above, so their `counted` is an
upper bound, and this one is the steady loop's cost.

    python3 bench/doctor/sampled_overhead.py [--target-ms 1] [--segment 40] [--cycles 300] [--json OUT]
"""
import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time  # noqa: F401  (the timed loop reads it)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402


from gpuwise import probe as probe_mod  # noqa: E402
from gpuwise.probe import calls  # noqa: E402
from overhead import _TIMED_LOOP  # noqa: E402  (the loop overhead.py measures, defined once)

exec(_TIMED_LOOP)  # m, opt, a, timed_loop(steps, pad, loop, xs, ys) -> (wall times, CPU times), pad_for(target_s, loop)

SKIP = 5  # a segment's first steps: the probe's start or stop just before them
from gpuwise.probe.sampling import SAMPLE_BURST as BURST, SAMPLE_PERIOD as PERIOD  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target-ms", type=float, default=1.0)
    ap.add_argument("--segment", type=int, default=40)
    ap.add_argument("--cycles", type=int, default=300)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    n = args.segment
    xs, ys = torch.randn(n * 8, 16), torch.randn(n * 8, 16)  # a DataLoader loop runs over all of them: n steps
    pad = pad_for(args.target_ms / 1000.0, "dataloader")  # noqa: F821
    sides = ("off", "full", "counted", "counted-next-watched") if calls.available() else ("off", "full", "counted")
    got = {s: ([], []) for s in sides}
    medians = {s: [] for s in sides}  # each segment's median step: blind to the probe's rarer costs (its writes) and to
    # a garbage collection that lands in a segment; beside the means, it tells a steady cost from such pauses
    for _ in range(args.cycles):
        for side in sides:
            p = None
            if side != "off":
                env = {"GPUWISE_RUN_DIR": tempfile.mkdtemp(), "GPUWISE_PROFILE_STEPS": "0", "GPUWISE_STALL_S": "0"}
                env["GPUWISE_FULL_STEPS"] = "all" if side == "full" else "0"
                p = probe_mod.start(env)
                if side.startswith("counted"):
                    timed_loop(2, 0, "dataloader", xs, ys)  # noqa: F821  (the first steps: the optimizer known)
                    p.sampler.enter(10**9, p.steps.batch.last_step_mixed)  # what the steps between two bursts run: only counted
                if side == "counted" and p.sampler.next_code is not None:
                    p.calls.unwatch(p.sampler.next_code)  # as a run's pause does (this segment's new iterator would end it)
            times, cpus = timed_loop(n, pad, "dataloader", xs, ys)  # noqa: F821
            if p is not None:
                assert (p.sampler.burst_at is not None) == side.startswith("counted")
                p.sender.flush()
                p.switch_off()
            got[side][0].append(statistics.mean(times[SKIP:]))
            got[side][1].append(statistics.mean(cpus[SKIP:]))
            medians[side].append(statistics.median(times[SKIP:]))
    out = {"python": sys.version.split()[0], "torch": torch.__version__, "cpus": os.cpu_count(), "targetMs": args.target_ms, "segment": n, "cycles": args.cycles}
    for which, name in ((0, "wall"), (1, "cpu")):
        off = got["off"][which]
        cost = {s: statistics.median(v - o for v, o in zip(got[s][which], off)) for s in sides[1:]}
        steady = (BURST * cost["full"] + (PERIOD - BURST) * cost["counted"]) / PERIOD
        plain = statistics.median(off)
        out[name] = {
            "plainUs": round(plain * 1e6, 1),
            "fullCostUs": round(cost["full"] * 1e6, 1),
            "countedCostUs": round(cost["counted"] * 1e6, 1),
            "steadyCostUs": round(steady * 1e6, 1),
            "steadyCostShare": round(steady / plain, 4),
            "plainSegmentsUs": {"min": round(min(off) * 1e6, 1), "median": round(plain * 1e6, 1), "max": round(max(off) * 1e6, 1)},
        }
        if "counted-next-watched" in cost:
            out[name]["countedNextWatchedUs"] = round(cost["counted-next-watched"] * 1e6, 1)
    # One probe for the whole run over one DataLoader iterator, its segments toggled between recording every step,
    # counting as between two bursts (`Sampler.enter`: the DataLoader's `__next__` and the backward pass unwatched), and
    # switched off (`disabled`: each hook returns at its first test, and the code objects sys.monitoring watches are
    # paused, so only the optimizer hook's first test runs): no probe started just before the timed steps. A fresh
    # probe's first background runs (its announcement, the first readings) land in the segments above, on the
    # training thread's GIL; here they are long past, as in a run's steady loop.
    p = probe_mod.start({"GPUWISE_RUN_DIR": tempfile.mkdtemp(), "GPUWISE_PROFILE_STEPS": "0", "GPUWISE_STALL_S": "0", "GPUWISE_FULL_STEPS": "all"})
    total = (3 * args.cycles * n + SKIP) * 8
    it = iter(DataLoader(TensorDataset(torch.randn(total, 16), torch.randn(total, 16)), batch_size=8))
    timed_loop(SKIP, 0, it, None, None)  # noqa: F821  (the probe knows the iterator and the optimizer)
    held = {"disabled": [], "counted": [], "full": []}  # counted never after full: see below
    for _ in range(args.cycles):
        for side in held:
            p.disabled = side == "disabled"
            if side == "disabled":
                for code in list(p.calls.watched):
                    p.calls.pause(code)
            if side == "full":
                p.steps.clock.last_boundary = None  # its first step's time would span the segments before
            if side == "counted":
                p.sampler.enter(10**12, p.steps.batch.last_step_mixed)
                assert p.sampler.batches_paused, "the DataLoader was not paused"
            times, cpus = timed_loop(n, pad, it, None, None)  # noqa: F821
            if side == "counted":
                p.steps.leave_quiet(threading.get_ident())
            if side == "disabled":
                for code in list(p.calls.watched):
                    p.calls.resume(code)
            # The records a segment queued are written now, outside the timed steps: left to the background, their
            # writes land in the next segment (on the VM a counted segment after a recording one measured +5.0 us a
            # step, after the switched-off one +0.8).
            p.sender.flush()
            held[side].append((statistics.median(times[SKIP:]), statistics.median(cpus[SKIP:])))
    p.disabled = False
    p.sender.flush()
    p.switch_off()
    for which, name in ((0, "oneProbeWallUs"), (1, "oneProbeCpuUs")):
        base = [d[which] for d in held["disabled"]]
        cost = {s: statistics.median(v[which] - d for v, d in zip(held[s], base)) for s in ("full", "counted")}
        steady = (BURST * cost["full"] + (PERIOD - BURST) * cost["counted"]) / PERIOD
        plain = statistics.median(base)
        out[name] = {"plain": round(plain * 1e6, 1), "full": round(cost["full"] * 1e6, 1), "counted": round(cost["counted"] * 1e6, 1), "steady": round(steady * 1e6, 1), "steadyShare": round(steady / plain, 4)}
    off = medians["off"]
    out["wallBySegmentMedians"] = {s: round(statistics.median(v - o for v, o in zip(medians[s], off)) * 1e6, 1) for s in sides[1:]}
    text = json.dumps(out, indent=1)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    for name in ("wall", "cpu"):
        o = out[name]
        print("%-4s plain %.1f us; every step recorded %+.1f us; counted %+.1f us; steady loop (%d in %d recorded) %+.1f us (%+.2f%%)" % (name, o["plainUs"], o["fullCostUs"], o["countedCostUs"], BURST, PERIOD, o["steadyCostUs"], o["steadyCostShare"] * 100))
    m = out["wallBySegmentMedians"]
    print("by the segments' median steps: " + "; ".join("%s %+.1f us" % (k, v) for k, v in m.items()))
    for name in ("oneProbeWallUs", "oneProbeCpuUs"):
        o = out[name]
        print("one probe toggled, against its hooks switched off (%s, segment medians): plain %.1f us; every step recorded %+.1f us; counted %+.1f us; steady loop %+.1f us (%+.2f%%)" % ("wall" if "Wall" in name else "CPU", o["plain"], o["full"], o["counted"], o["steady"], o["steadyShare"] * 100))
    if "countedNextWatchedUs" in out["wall"]:
        print("counted with DataLoader.__next__ still watched (what the pause saves): %+.1f us" % out["wall"]["countedNextWatchedUs"])


if __name__ == "__main__":
    main()
