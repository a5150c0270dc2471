"""Sets doctor's plan against the measured steps of the corpus (examples/pace, examples/levers): for each run
directory OUT/NAME that run.sh wrote, the report's pace section (the step now, what binds it, the plan: each
fix with the step expected after it and the ones before it) beside the plain runs' JSON lines in
OUT/measured.jsonl (the mean step of each plan step's flags), as a Markdown table with the error of each
prediction. Usage: python3 examples/pace/summarize.py OUT

The pace section is read defensively (its shape is new): report["pace"]["plan"] = {stepNs, bound, steps:
[{id, label, fromStepNs, expectedStepNs, bound, boundText, workersNeeded, text}], expectedStepNs}; whatever of
it is there is printed. A report without one falls back to its top finding's expected step (the older
reports' estimatedGain) as a one-step plan. Expected steps are per batch of the run's size, so a plan step
that changes the batch (hf_generate --batch 8) is compared per batch of the run's size too."""
import json
import os
import sys


def load_measured(out):
    """One row per (run, label) from measured.jsonl: the latest JSON line, its mean step the mean of every line with
    the same flags (run.sh's REPEAT, or calls appended to one file: a plain configuration moves by 10-20% between
    calls on a shared host), their means in `runs_ms`."""
    rows = {}
    means = {}
    path = os.path.join(out, "measured.jsonl")
    if not os.path.exists(path):
        return rows
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                d = json.loads(line)
            except ValueError:
                print(f"{path}:{n}: not JSON, left out", file=sys.stderr)
                continue
            key = (d.get("run"), d.get("label"))
            if key in rows and rows[key].get("flags") != d.get("flags"):
                means[key] = []  # the label now stands for other flags: the earlier runs are not this one
            rows[key] = d
            if isinstance(d.get("mean_step_ms"), (int, float)):
                means.setdefault(key, []).append(d["mean_step_ms"])
    for key, xs in means.items():
        if len(xs) > 1:
            rows[key] = dict(rows[key], mean_step_ms=round(sum(xs) / len(xs), 3), runs_ms=xs)
    return rows


def ms(ns):
    return round(ns / 1e6, 2) if isinstance(ns, (int, float)) else None


def first(d, *keys):
    for k in keys:
        if isinstance(d, dict) and d.get(k) is not None:
            return d[k]
    return None


def expected_ns(step):
    """The expected step of a plan step, whatever the key: ...Ns, ...S or ...Ms."""
    v = first(step, "expectedStepNs", "expectedNs", "stepNs", "expectedStepTimeNs")
    if v is not None:
        return v
    for k, x in (step or {}).items():
        if not isinstance(x, (int, float)) or "expected" not in k.lower():
            continue
        if k.endswith("Ms"):
            return x * 1e6
        if k.endswith("S"):
            return x * 1e9
    return None


def plan_of(report):
    """(step now ns, bound now, why, [plan steps as dicts: fix, expected_ns, bound, text]) from a report."""
    pace = report.get("pace") or {}
    plan = pace.get("plan") if isinstance(pace, dict) else None
    if isinstance(plan, list):  # a bare list of steps
        plan = {"steps": plan}
    if isinstance(plan, dict) and isinstance(plan.get("steps"), list):
        steps = [
            {
                "fix": first(s, "label", "title", "fix", "id") or "?",
                "id": first(s, "id", "fixId"),
                "expected_ns": expected_ns(s),
                "bound": first(s, "boundText", "bound"),
                "workers": first(s, "workersNeeded"),
                "text": first(s, "text"),
            }
            for s in plan["steps"]
            if isinstance(s, dict)
        ]
        return first(plan, "stepNs") or first(pace, "stepNs"), first(plan, "bound") or first(pace, "bound"), first(pace, "why"), steps, "pace"
    findings = report.get("findings") or []
    top = findings[0] if findings else None
    gain = (top or {}).get("estimatedGain") or {}
    steps = []
    if gain.get("expectedStepTimeNs"):
        steps.append({"fix": f"{top.get('id')}: {top.get('title', '')}".strip(), "id": top.get("id"), "expected_ns": gain["expectedStepTimeNs"], "bound": None, "workers": None, "text": None})
    return gain.get("stepTimeNs"), None, None, steps, "top finding (no pace section)"


def mean_of(report):
    st = ((report.get("ranks") or [{}])[0] or {}).get("steps") or {}
    return st.get("meanS"), st.get("medianS"), st.get("samplesPerStep")


def per_run_batch(row, base):
    """A measured row's mean step per batch of the baseline's size (equal when the batch did not change)."""
    m = row.get("mean_step_ms")
    b0, b = (base or {}).get("samples_per_step"), row.get("samples_per_step")
    if m is None:
        return None, ""
    runs = row.get("runs_ms")
    several = f" ({len(runs)} runs: {', '.join(f'{x:.2f}' for x in runs)})" if runs else ""
    if b0 and b and b != b0:
        return round(m * b0 / b, 2), f" ({m:.2f} ms per batch of {b}, scaled to {b0}){several}"
    return m, several


# The flags each finding's fix stands for in the corpus scripts: a plan step whose fix is not the change the measured
# row made (run.sh's PLAN followed the expectations, doctor's plan may differ) is marked, not scored.
FIX_FLAGS = {
    "dataloader-bound": ("--workers", "--persistent-workers"),
    "mixed-precision": ("--amp", "--precision"),
    "no-tensor-cores": ("--amp", "--precision", "--tf32"),
    "pageable-h2d": ("--pin-memory",),
    "fusion": ("--compile",),
    "host-sync": ("--log-every",),
    "attention": ("--attn",),
}


def added_flags(row, before):
    """The flags the measured row added to the one before it (flag names only)."""
    names = lambda r: {w for w in (r or {}).get("flags", "").split() if w.startswith("--")}
    return names(row) - names(before)


def matches(step, row, before):
    """Whether the plan step's fix is the change the measured row made (unknown fixes are taken to match)."""
    wanted = FIX_FLAGS.get(step.get("id") or "")
    return wanted is None or bool(added_flags(row, before) & set(wanted))


def err(pred, meas):
    if pred is None or not meas:
        return ""
    return f"{(pred - meas) / meas * 100:+.0f}%"


def main(out):
    measured = load_measured(out)
    runs = sorted({r for r, _ in measured} | {n for n in os.listdir(out) if os.path.exists(os.path.join(out, n, "report.json"))})
    lines = ["# The corpus: doctor's plan against the measured steps", "",
             "Measured: the mean step of plain runs (no doctor) after their warm-up, from each script's JSON line; "
             "predicted: doctor's expected step after each fix and all before it. Error = (predicted - measured) / measured.", ""]
    for name in runs:
        path = os.path.join(out, name, "report.json")
        report = None
        if os.path.exists(path):
            try:
                with open(path) as f:
                    report = json.load(f)
            except ValueError as e:
                lines += [f"## {name}", "", f"{path}: not readable JSON ({e})", ""]
                continue
        mine = {label: row for (r, label), row in measured.items() if r == name}
        plain = sorted((row for row in mine.values() if row.get("under") == "plain" and row.get("plan_step", -1) >= 0), key=lambda r: r["plan_step"])
        checks = [row for row in mine.values() if row.get("plan_step") == -1]
        base = next((r for r in plain if r.get("plan_step") == 0), None)
        lines += [f"## {name}", ""]
        if report is None:
            lines += ["no report.json (doctor did not run, or failed: see logs/)", ""]
            now_ns, bound, why, steps, source = None, None, None, [], "none"
        else:
            now_ns, bound, why, steps, source = plan_of(report)
            mean_s, median_s, batch = mean_of(report)
            under = mine.get("doctor")
            lines.append(f"doctor: mean step {ms(mean_s * 1e9) if mean_s else '?'} ms, median {ms(median_s * 1e9) if median_s else '?'} ms, batch {batch}; "
                         f"the script's own clock under doctor: mean {under.get('mean_step_ms') if under else '?'} ms "
                         f"({under.get('profiled_steps_left_out', '?') if under else '?'} profiled steps left out)")
            lines.append(f"plan from: {source}; binds now: {bound or '?'}" + (f" ({why})" if why else ""))
            host = (((report.get("pace") or {}).get("stages") or {}).get("host") or {})
            if host.get("evidence"):
                lines.append(f"host stage ({host.get('how', '?')}): {host['evidence']}")
            findings = report.get("findings") or []
            if findings:
                lines.append("findings: " + ", ".join(f"{f.get('id')} {f.get('severity')}" for f in findings[:5]))
            lines.append("")
        lines += ["| step | doctor's fix | binds after | predicted ms | measured (flags) | measured ms | error |", "|---|---|---|---|---|---|---|"]
        b_meas, _ = per_run_batch(base, base) if base else (None, "")
        as_run = f"{base.get('label')} `{base.get('flags', '')}`" if base else "not measured"
        lines.append(f"| now | (as run) | {bound or ''} | {ms(now_ns) or ''} | {as_run} | {b_meas or ''} | {err(ms(now_ns), b_meas)} |")
        for i in range(max(len(steps), len(plain) - 1)):
            s = steps[i] if i < len(steps) else {}
            row = next((r for r in plain if r.get("plan_step") == i + 1), None)
            meas, note = per_run_batch(row, base) if row else (None, "")
            pred = ms(s.get("expected_ns"))
            workers = f"; needs about {s['workers']} workers" if s.get("workers") else ""
            flags = f"{row.get('label')} `{row.get('flags', '')}`{note}" if row else "not measured"
            before = next((r for r in plain if r.get("plan_step") == i), None)
            same = not (s and row) or matches(s, row, before)
            error = err(pred, meas) if same else "not the measured change"
            lines.append(f"| {i + 1} | {s.get('fix', '(no plan step)')} | {(s.get('bound') or '') + workers} | {pred or ''} | {flags} | {meas or ''} | {error} |")
        for c in checks:
            meas, note = per_run_batch(c, base)
            lines.append(f"| check | | | | {c.get('label')} `{c.get('flags', '')}`{note} | {meas or ''} | |")
        lines.append("")
    print("\n".join(lines))


if __name__ == "__main__":
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        print("usage: python3 examples/pace/summarize.py OUT   (OUT: the folder run.sh wrote)", file=sys.stderr)
        sys.exit(2)
    main(sys.argv[1])
