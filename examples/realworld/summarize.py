"""Reads the run directories that run.sh wrote and prints, per run, what doctor said and what was measured:
the top finding, its expected step, the run's own median step (GPU-timed), throughput, and for each
case the measured step of the run that followed the advice. Usage: python3 summarize.py OUT"""
import json
import os
import sys

out = sys.argv[1]
rows = {}
for name in sorted(os.listdir(out)):
    p = os.path.join(out, name, "report.json")
    if not os.path.exists(p):
        rows[name] = {"run": name, "error": "no report.json"}
        continue
    r = json.load(open(p))
    st = (r.get("ranks") or [{}])[0].get("steps") or {}
    f = r.get("findings") or []
    top = f[0] if f else None
    g = (top or {}).get("estimatedGain") or {}
    rows[name] = {
        "run": name,
        "steps": st.get("steps"),
        "stepSource": st.get("stepSource"),
        "timing": st.get("timing"),
        "tokensPerS": st.get("tokensPerS"),
        "medianStepMs": round(st["medianS"] * 1e3, 2) if st.get("medianS") else None,
        "samplesPerS": st.get("samplesPerS"),
        "findings": [(x["id"], x["severity"]) for x in f[:4]],
        "top": top["id"] if top else None,
        "expectedMs": round(g["expectedStepTimeNs"] / 1e6, 2) if g.get("expectedStepTimeNs") else None,
        "stepForGainMs": round(g["stepTimeNs"] / 1e6, 2) if g.get("stepTimeNs") else None,
    }
print(json.dumps(list(rows.values()), indent=1))
