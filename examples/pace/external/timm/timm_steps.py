"""Mean wall step of a timm train.py log (--log-interval 1: every update's 'Time: X s'), skipping the first SKIP."""
import json, re, sys
name, path, skip = sys.argv[1], sys.argv[2], int(sys.argv[3])
ts = [float(m.group(1)) for m in re.finditer(r"Train: \d+ \[\s*\d+/\d+.*?Time: ([\d.]+)s", open(path, errors="replace").read())]
xs = ts[skip:]
print(json.dumps({"script": "timm_train", "config": name, "steps": len(ts), "mean_step_ms": 1000 * sum(xs) / len(xs) if xs else None,
                  "median_step_ms": 1000 * sorted(xs)[len(xs) // 2] if xs else None, "label": sys.argv[4] if len(sys.argv) > 4 else ""}))
