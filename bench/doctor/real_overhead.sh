#!/usr/bin/env bash
# doctor's cost on a real host-bound GPU run (issue 27): examples/pace/jpeg_resnet.py in its fastest configuration
# (12 DataLoader workers decoding JPEGs, bf16, channels_last, persistent workers: the host sets the pace), plainly and
# under `gpuwise doctor` as a user runs it (window, trace, snapshot, analysis), alternately, ROUNDS times each.
# The script's own clock (examples/pace/_harness.py) gives each run's mean step: `mean_step_ms` leaves out the steps
# the profiler window covered, `wall_mean_step_ms` keeps every step after the warm-up (the window and the trace
# export included). Writes OUT/real_overhead.jsonl (one line per run) and prints the medians.
#   bash bench/doctor/real_overhead.sh OUT [ROUNDS] [GPUWISE]        (GPU machine, from the repository root)
set -u
cd "$(dirname "$0")/../.."
out=${1:?usage: real_overhead.sh OUT [ROUNDS] [GPUWISE]}
rounds=${2:-2}
gpuwise=${3:-node dist/gpuwise.mjs}
python=${PYTHON:-python3}
data=${DATA:-/tmp/gpuwise-corpus-data}
flags="--workers 12 --amp bf16 --channels-last --persistent-workers --steps 300"
mkdir -p "$out"
export GPUWISE_CORPUS_DATA=$data PYTHONUNBUFFERED=1
$python examples/pace/make_data.py --data "$data" jpeg > "$out/make_data.log" 2>&1 || { echo "make_data failed" >&2; exit 2; }
: > "$out/real_overhead.jsonl"
for r in $(seq 1 "$rounds"); do
  for side in plain doctor; do
    if [ $side = plain ]; then
      line=$($python examples/pace/jpeg_resnet.py $flags 2> "$out/$side-$r.err" | grep '^{' | tail -1)
    else
      line=$($gpuwise doctor --no-serve --out "$out/doctor-$r" -- $python examples/pace/jpeg_resnet.py $flags 2> "$out/$side-$r.err" | grep '^{"script"' | tail -1)
    fi
    echo "{\"side\":\"$side\",\"round\":$r,\"run\":${line:-null}}" >> "$out/real_overhead.jsonl"
  done
done
$python - "$out/real_overhead.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for key in ("mean_step_ms", "wall_mean_step_ms"):
    got = {s: [r["run"][key] for r in rows if r["side"] == s and r["run"] and key in r["run"]] for s in ("plain", "doctor")}
    if got["plain"] and got["doctor"]:
        p, d = statistics.median(got["plain"]), statistics.median(got["doctor"])
        print("%-18s plain %s  doctor %s  median %.2f -> %.2f ms (%+.1f%%)" % (key, got["plain"], got["doctor"], p, d, 100 * (d - p) / p))
PY
