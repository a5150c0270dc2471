#!/usr/bin/env bash
# Does doctor's profiler window leave a run slower after it? (issue 27: the compiled ResNet-50 of examples/levers ran
# 25.2 ms a step before the window and 33.4 ms after it on an H200; plainly 27.8 ms.) Runs one script plainly and
# under doctor in variants that each take one suspect away, and prints each run's median step before and after the
# window (from the probe's records) beside the plain run's median (from the script's own JSON line).
#
#   bash bench/doctor/window_slowdown.sh OUT [SCRIPT [FLAGS...]]     (from the repository root, after npm run build)
#
# SCRIPT defaults to examples/levers/compiled_cnn.py. Variants:
#   plain        no doctor
#   doctor       as a user runs it
#   teardown     TEARDOWN_CUPTI=1 in the environment (Kineto finalises CUPTI when the window stops)
#   nowindow     GPUWISE_PROFILE_STEPS=0 (no profiler window at all; the probe's hooks stay)
#   history      GPUWISE_MEMORY_HISTORY=1 (the memory history on for the whole run: its cost when left on)
# env: PYTHON (default python3), GPUWISE (default "node dist/gpuwise.mjs"), VARIANTS (default all, in that order; a
# variant may repeat: runs are numbered). Each run's start and end (epoch seconds) are printed, to set beside a log of
# the GPU's clocks: a GPU-bound step follows the SM clock, which power and heat move between runs.
set -u
cd "$(dirname "$0")/../.."
out=${1:?usage: window_slowdown.sh OUT [SCRIPT [FLAGS...]]}
shift
script=${1:-examples/levers/compiled_cnn.py}
[[ $# -gt 0 ]] && shift
python=${PYTHON:-python3}
gpuwise=${GPUWISE:-node dist/gpuwise.mjs}
mkdir -p "$out"

medians() { # run directory -> "before A ms, after B ms (window at steps F-L)"
  "$python" - "$1" <<'EOF'
import glob, json, statistics, sys
recs = []
for f in glob.glob(sys.argv[1] + "/probe*.jsonl"):
    recs += [json.loads(l) for l in open(f) if l.strip()]
start = [r for r in recs if r.get("type") == "profile-start"]
end = [r for r in recs if r.get("type") == "profile-end"]
steps = [(r["step"], r["stepTimeS"]) for r in recs if r.get("type") == "step" and r.get("stepTimeS") and not r.get("probeWork")]
if not start or not end:
    ms = [t * 1e3 for _, t in steps[1:]]
    print("no window: median %.2f ms over %d steps" % (statistics.median(ms), len(ms)) if ms else "no steps")
    sys.exit()
a, b = start[0]["step"], end[0]["lastStep"]
before = [t * 1e3 for s, t in steps if 1 < s < a]
after = [t * 1e3 for s, t in steps if s > b + 1]
fmt = lambda x: "%.2f ms (%d steps)" % (statistics.median(x), len(x)) if x else "none"
print("before the window %s, after it %s (window at steps %d-%d)" % (fmt(before), fmt(after), a, b))
EOF
}

limit=${RUN_LIMIT_S:-600}
n=0
for v in ${VARIANTS:-plain doctor teardown nowindow history}; do
  n=$((n + 1))
  log=$out/$n-$v
  run=$log.run
  t0=$(date +%s)
  case $v in
  plain) timeout "$limit" "$python" "$script" "$@" > "$log.out" 2> "$log.err" ;;
  doctor) timeout "$limit" $gpuwise doctor --no-serve --out "$run" -- "$python" "$script" "$@" > "$log.out" 2> "$log.err" ;;
  teardown) TEARDOWN_CUPTI=1 timeout "$limit" $gpuwise doctor --no-serve --out "$run" -- "$python" "$script" "$@" > "$log.out" 2> "$log.err" ;;
  nowindow) timeout "$limit" $gpuwise doctor --no-serve --profile-steps 0 --out "$run" -- "$python" "$script" "$@" > "$log.out" 2> "$log.err" ;;
  history) GPUWISE_MEMORY_HISTORY=1 timeout "$limit" $gpuwise doctor --no-serve --out "$run" -- "$python" "$script" "$@" > "$log.out" 2> "$log.err" ;;
  *) echo "window_slowdown.sh: unknown variant $v" >&2; exit 2 ;;
  esac
  rc=$?
  line=$(grep '^{"script"' "$log.out" | tail -1)
  own=$([[ -n $line ]] && "$python" -c 'import json, sys; d = json.loads(sys.argv[1]); print("script: mean %.2f, median %.2f ms" % (d["mean_step_ms"], d["median_step_ms"]))' "$line" || echo "script: no JSON line")
  probe=$([[ -d $run ]] && medians "$run" || echo "")
  echo "$n $v (exit $rc, $t0-$(date +%s)): $own${probe:+; probe: $probe}"
done
