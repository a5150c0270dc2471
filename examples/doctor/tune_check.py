"""Checks `gpuwise tune` on a real GPU against the true largest batch. For GPT-2 small (seq 1024, AdamW, bf16
autocast) and ResNet-50 (224x224, SGD, bf16 autocast), from examples/doctor/tune_models.py:

  1. `gpuwise tune` from a small first value (GPT-2: 1..1024, ResNet-50: 16..4096), default settings;
  2. the true largest batch without gpuwise: one fresh process per batch size that runs 4 steps and exits 3 on
     out-of-memory, bisected from tune's bracket (widened upwards when needed) to 1% (exact below 100);
  3. prints the trials tune used, its largest value that fits against the true one (% gap), and how many runs
     doubling-then-bisecting from 1 would have needed for the same answer.

    npm run build && GPUWISE="node dist/gpuwise.mjs" python examples/doctor/tune_check.py OUTDIR [gpt2,resnet50]

About 3-4 minutes on an H100 or H200. Writes OUTDIR/summary.json; exits 1 when tune used more than 3 trials,
missed the true largest batch by more than 10%, or claimed a batch that does not fit.
"""
import json
import os
import shlex
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
MODELS = os.path.join(HERE, "tune_models.py")
GPUWISE = shlex.split(os.environ.get("GPUWISE", "node dist/gpuwise.mjs"))
RANGES = {"gpt2": (1, 1024), "resnet50": (16, 4096)}
OOM_EXIT = 3


def fits(model, b, log):
    """One process, 4 steps: True if it ran, False on out-of-memory; any other failure stops the check."""
    t0 = time.time()
    p = subprocess.run([sys.executable, MODELS, "--model", model, "--batch-size", str(b), "--steps", "4", "--oom-exit-code", str(OOM_EXIT)], capture_output=True, text=True, cwd=REPO)
    log.append({"batch": b, "exit": p.returncode, "s": round(time.time() - t0, 1), "out": p.stdout.strip()[-200:]})
    print("    reference %s batch %d: %s (%.0f s)" % (model, b, {0: "fits", OOM_EXIT: "out of memory"}.get(p.returncode, "exit %d" % p.returncode), time.time() - t0), flush=True)
    if p.returncode not in (0, OOM_EXIT):
        sys.exit("reference run failed:\n" + p.stderr[-3000:])
    return p.returncode == 0


def true_largest(model, ok, bad, log):
    """The largest batch that fits, bracketed to 1% (exact below 100): (fits, smallest known not to fit)."""
    while bad is None:
        up = max(ok + 1, int(ok * 1.15))
        if fits(model, up, log):
            ok = up
        else:
            bad = up
    while bad - ok > max(1, ok // 100):
        mid = (ok + bad) // 2
        if fits(model, mid, log):
            ok = mid
        else:
            bad = mid
    return ok, bad


def doubling_then_bisecting_runs(true_max, lo, hi):
    runs, ok, b, bad = 0, 0, lo, hi + 1
    while b <= hi:
        runs += 1
        if b > true_max:
            bad = b
            break
        ok, b = b, b * 2
    while bad - ok > 1:
        runs += 1
        mid = (ok + bad) // 2
        ok, bad = (mid, bad) if mid <= true_max else (ok, mid)
    return runs


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: GPUWISE='node dist/gpuwise.mjs' python examples/doctor/tune_check.py OUTDIR [gpt2,resnet50]")
    outdir = os.path.abspath(sys.argv[1])
    models = (sys.argv[2] if len(sys.argv) == 3 else "gpt2,resnet50").split(",")
    os.makedirs(outdir, exist_ok=True)
    summary, failed = {}, []
    for model in models:
        lo, hi = RANGES[model]
        out = os.path.join(outdir, model)
        cmd = GPUWISE + ["tune", "--out", out, "--json", "--param", "batch_size=%d..%d" % (lo, hi), "--", sys.executable, MODELS, "--model", model, "--batch-size", "{batch_size}"]
        print("%s: %s" % (model, " ".join(shlex.quote(c) for c in cmd)), flush=True)
        t0 = time.time()
        p = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
        tune_s = time.time() - t0
        with open(out + ".log", "w") as f:
            f.write("--- stdout\n%s\n--- stderr\n%s\n" % (p.stdout, p.stderr))
        try:
            rep = json.loads(p.stdout)
        except ValueError:
            sys.exit("gpuwise tune printed no JSON (exit %d):\n%s" % (p.returncode, p.stderr[-3000:]))
        res = rep["result"]
        trials = [(t["value"], t["outcome"]) for t in rep["trials"]]
        print("  tune: %s in %.0f s -> largest %s, recommended %s, goldilocks %s (%s)" % (trials, tune_s, res["largestOk"], res["recommended"], res["goldilocks"], rep["stopReason"]), flush=True)
        log = []
        ok = res["largestOk"]
        if ok is None:
            failed.append(model)
            summary[model] = {"tune": rep, "error": "tune found no batch that fits"}
            continue
        truth, bad = true_largest(model, ok, res["smallestOom"], log)
        # Worst case within the bracket: the true largest may be up to bad - 1.
        gap = (bad - 1 - ok) / (bad - 1)
        runs = doubling_then_bisecting_runs(truth, 1, hi)
        good = rep["searchTrials"] <= 3 and 0 <= gap <= 0.10
        if not good:
            failed.append(model)
        line = res["line"] or {}
        summary[model] = {
            "trials": trials,
            "searchTrials": rep["searchTrials"],
            "tuneLargest": ok,
            "trueLargest": truth,
            "trueLargestBelow": bad,
            "gapPercent": round(gap * 100, 1),
            "doublingThenBisectingRuns": runs,
            "tuneSeconds": round(tune_s, 1),
            "line": line,
            "budget": res["budget"],
            "reservedRatio": res["reservedRatio"],
            "recommended": res["recommended"],
            "goldilocks": res["goldilocks"],
            "curve": [(t["value"], t["outcome"], t["peakAllocatedBytes"], t["peakReservedBytes"], t["samplesPerS"]) for t in rep["trials"]],
            "reference": log,
        }
        print("  %s: tune %d trials -> %d; true largest %d%s (gap %.1f%%); doubling-then-bisecting from 1: %d runs  %s" % (model, rep["searchTrials"], ok, truth, "" if bad == truth + 1 else " to %d" % (bad - 1), gap * 100, runs, "ok" if good else "FAIL"), flush=True)
    with open(os.path.join(outdir, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2, default=str)
    print("%d models, %d failed%s" % (len(models), len(failed), (": " + ", ".join(failed)) if failed else ""))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
