"""tune_plan.sh's table: for each script, tune --plan's steps (predicted and measured by the trials) and its verified
best configuration's step against the same configuration run plainly (the mean of the plain runs in measured.jsonl).
A plain run's mean is given as it is and, where it holds one-time stalls, without them, by tune's own rule
(src/tune/planTrials.ts withoutOneTimeStalls: at most two steps over 10x the median; tune counts them as warm-up, a
cost, not in its mean; a plain run records no DataLoader waits, so a loader's stall of that size would be dropped too).

    python3 examples/pace/tune_summary.py OUT NAME ..."""
import json
import os
import sys


def ms(ns):
    return "-" if ns is None else "%.1f ms" % (ns / 1e6)


ONE_TIME_STALL_X = 10
ONE_TIME_STALLS_MAX = 2


def steady(d):
    """The plain run's mean step without one-time stalls (tune's rule), or None where it has none to drop."""
    xs = d.get("step_ms") or []
    if len(xs) < 10:
        return None
    med = sorted(xs)[len(xs) // 2]
    once = [x for x in xs if x > ONE_TIME_STALL_X * med]
    if not once or len(once) > ONE_TIME_STALLS_MAX:
        return None
    kept = [x for x in xs if x <= ONE_TIME_STALL_X * med]
    return sum(kept) / len(kept), once


def main(out, names):
    plain = {}
    try:
        with open(os.path.join(out, "measured.jsonl")) as f:
            for line in f:
                d = json.loads(line)
                plain.setdefault(d["run"], []).append(d)
    except OSError:
        pass
    for n in names:
        try:
            with open(os.path.join(out, n + ".plan.json")) as f:
                r = json.load(f)
        except (OSError, ValueError) as e:
            print("%s: no tune --plan result (%s)" % (n, e))
            continue
        d = r.get("diagnosis") or {}
        print("## %s: diagnosis %s (plan expects %s), baseline trial %s" % (
            n, ms(d.get("stepNs")), ms(d.get("planExpectedStepNs")), ms(((r.get("baseline") or {}).get("measure") or {}).get("meanNs"))))
        for s in r.get("steps") or []:
            err = ""
            if s.get("predictedStepNs") and s.get("measuredStepNs"):
                err = " (prediction %+.0f%%)" % ((s["predictedStepNs"] / s["measuredStepNs"] - 1) * 100)
            print("  %-40s predicted %s -> %s, measured %s -> %s %s%s" % (
                s["label"][:40], ms(s.get("fromStepNs")), ms(s.get("predictedStepNs")), ms(s.get("measuredFromStepNs")),
                ms(s.get("measuredStepNs")), "kept" if s.get("kept") else ("not injectable" if not s.get("injectable") else "not kept"), err))
        b = r.get("best") or {}
        runs = plain.get(n) or []
        line = "  best: %s: tune %s" % (", ".join(b.get("names") or []) or "as it is", ms(b.get("stepNs")))
        if runs and b.get("stepNs"):
            means = [d["mean_step_ms"] for d in runs]
            mean = sum(means) / len(means)
            line += ", plain %.1f ms (%s), tune/plain %+.1f%%" % (mean, " ".join("%.1f" % x for x in means), (b["stepNs"] / 1e6 / mean - 1) * 100)
            cut = [steady(d) for d in runs]
            if any(cut):
                kept = [c[0] if c else d["mean_step_ms"] for c, d in zip(cut, runs)]
                once = [x for c in cut if c for x in c[1]]
                k = sum(kept) / len(kept)
                line += "; without one-time stalls (%s ms) %.1f ms (%s), tune/plain %+.1f%%" % (
                    ", ".join("%.0f" % x for x in once), k, " ".join("%.1f" % x for x in kept), (b["stepNs"] / 1e6 / k - 1) * 100)
        print(line)
        t = {k: r.get(k) for k in ("trialsS", "totalS", "warmupCostS")}
        print("  time: %s" % json.dumps(t))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
