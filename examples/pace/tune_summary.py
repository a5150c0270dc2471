"""tune_plan.sh's table: for each script, tune --plan's steps (predicted and measured by the trials) and its verified
best configuration's step against the same configuration run plainly (the mean of the plain runs in measured.jsonl).

    python3 examples/pace/tune_summary.py OUT NAME ..."""
import json
import os
import sys


def ms(ns):
    return "-" if ns is None else "%.1f ms" % (ns / 1e6)


def main(out, names):
    plain = {}
    try:
        with open(os.path.join(out, "measured.jsonl")) as f:
            for line in f:
                d = json.loads(line)
                plain.setdefault(d["run"], []).append(d["mean_step_ms"])
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
            mean = sum(runs) / len(runs)
            line += ", plain %.1f ms (%s), tune/plain %+.1f%%" % (mean, " ".join("%.1f" % x for x in runs), (b["stepNs"] / 1e6 / mean - 1) * 100)
        print(line)
        t = {k: r.get(k) for k in ("trialsS", "totalS", "warmupCostS")}
        print("  time: %s" % json.dumps(t))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
