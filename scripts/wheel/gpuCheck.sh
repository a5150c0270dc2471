#!/usr/bin/env bash
# The wheel on a GPU machine that has PyTorch and no Node: installs it into the machine's python3 and runs
# smi and smi --html (NVML through koffi), doctor on a short CUDA training (report.json, report.md and report.html,
# uPlot inline, in its run directory), serve with that run and the live GPUs fetched over HTTP, and
# monitor --json-stream. Outputs go to $OUT (default ./.gpu-out/wheel). Run from the repository root:
#   bash scripts/wheel/gpuCheck.sh .carry/gpuwise-VERSION-py3-none-manylinux_2_28_x86_64.whl
set -uo pipefail
whl=${1:?usage: gpuCheck.sh WHEEL}
out=${OUT:-.gpu-out/wheel}
mkdir -p "$out"
echo "== node on this machine: $(command -v node || echo none)"
python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.cuda.is_available())'
echo "== pip install $whl ($(du -h "$whl" | cut -f1))"
python3 -m pip install --no-index --no-deps --force-reinstall "$whl" ||
  python3 -m pip install --no-index --no-deps --force-reinstall --break-system-packages "$whl" || exit 1
gw="$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')/gpuwise"
[ -x "$gw" ] || gw="python3 -m gpuwise"
echo "== $gw --version: $($gw --version)"
rc=0
echo "== gpuwise smi"
$gw smi || rc=1
$gw smi --json >"$out/smi.json" || rc=1
echo "== gpuwise doctor --steps 30"
$gw doctor --steps 30 --out "$out/doctor-run" --store "$out/store" -- python3 examples/doctor/tiny_train.py --device cuda --steps 60 || rc=1
$gw smi --html "$out/smi.html" || rc=1
for f in report.json report.md report.html; do
  [ -s "$out/doctor-run/$f" ] || { echo "FAIL: doctor kept no $f in its run directory"; rc=1; }
done
grep -q 'uPlot=function' "$out/doctor-run/report.html" 2>/dev/null || { echo "FAIL: report.html without uPlot"; rc=1; }
echo "== gpuwise serve: the run's pages and the live GPUs over HTTP"
$gw serve --port 0 --store "$out/store" --no-record >"$out/serve.out" 2>"$out/serve.err" &
serve_pid=$!
url=""
for _ in $(seq 100); do
  url=$(grep -o 'http://127\.0\.0\.1:[0-9]*/' "$out/serve.out" | head -1)
  [ -n "$url" ] && break
  sleep 0.2
done
python3 - "$url" "$out" <<'PY' || rc=1
import json, sys, time, urllib.request
url, out = sys.argv[1], sys.argv[2]
if not url:
    sys.exit("FAIL: serve printed no URL (see serve.err)")
ok = True
for path, needle in [("runs", "tiny_train.py"), ("run-report?id=last", "uPlot=function"), ("assets/uplot.js", "uPlot=function"), ("live", "gpuwise")]:
    with urllib.request.urlopen(url + path, timeout=30) as r:
        body = r.read().decode()
        good = r.status == 200 and needle in body
    print("serve GET /%s: %d%s" % (path, r.status, "" if good else ", without " + needle))
    ok = ok and good
time.sleep(2)  # a sample or two of the live GPUs
with urllib.request.urlopen(url + "api/live/status", timeout=30) as r:
    status = json.load(r)
json.dump(status, open(out + "/live-status.json", "w"), indent=1)
gpus = (status.get("latest") or {}).get("gpus") or []
print("serve live: %d GPU(s) sampled" % len(gpus))
sys.exit(0 if ok and gpus else 1)
PY
kill -INT "$serve_pid" && wait "$serve_pid" || { echo "FAIL: serve did not stop cleanly on Ctrl-C"; rc=1; }
echo "== gpuwise monitor --json-stream --count 5"
$gw monitor --json-stream --count 5 | tee "$out/monitor.ndjson" || rc=1
echo "== monitor lines: $(wc -l <"$out/monitor.ndjson")"
exit $rc
