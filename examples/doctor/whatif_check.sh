#!/usr/bin/env bash
# GPU check of doctor's what-ifs: run GPT-2 small under `gpuwise doctor` at batch B, read the calibrated
# predictions from its report, then run the script at 2B (the double-batch what-if), at the predicted largest
# batch and at 10% above it, and print predicted against measured.
#
#   npm run build && GPUWISE="node dist/gpuwise.mjs" bash examples/doctor/whatif_check.sh [OUT_DIR]
#
# Needs one CUDA GPU, torch and transformers (no network). About 2 minutes on an H100/H200.
# Passes when the predicted largest batch fits and 10% more does not (the "within 10%") and the
# double-batch peak is within 5% of its measurement.
set -u
GPUWISE=${GPUWISE:-node dist/gpuwise.mjs}
PY=${PYTHON:-python}
B=${B:-8}
OUT=${1:-/tmp/gw-whatif}
SCRIPT=examples/doctor/gpt2_train.py
mkdir -p "$OUT"
RUN="$OUT/run-$(date +%s)"

echo "== doctor at batch $B"
$GPUWISE doctor --steps 12 --profile-at 6 --profile-steps 3 --out "$RUN" -- $PY $SCRIPT --batch-size "$B" > "$OUT/doctor.txt" 2>&1
echo "doctor exit $?"
sed -n '/^What if/,/^Findings/p' "$OUT/doctor.txt"

read -r MAX MAXPRED DBL DBLPRED < <(node -e '
const r = JSON.parse(require("fs").readFileSync(process.argv[1] + "/report.json", "utf8"));
const w = (id) => r.whatIfs.find((x) => x.id === id) || {};
const m = w("max-batch"), d = w("double-batch");
console.log([m.batch ?? 0, m.predictedPeakBytes ?? 0, d.batch ?? 0, d.predictedPeakBytes ?? 0].join(" "));
' "$RUN")
if [ "${MAX:-0}" = "0" ]; then echo "FAIL: no max-batch what-if in $RUN/report.json"; exit 1; fi
OVER=$(( (MAX * 11 + 9) / 10 ))
[ "$OVER" -le "$MAX" ] && OVER=$(( MAX + 1 ))

trial() { # batch -> prints "peak_bytes" or "OOM"
  $PY $SCRIPT --batch-size "$1" --steps 4 --report-peak 2> "$OUT/trial-$1.err" | awk '/^peak_alloc_bytes/ {print $2} /^OOM/ {print "OOM"}' | head -1
}
echo "== trials"
DBLMEAS=$(trial "$DBL"); echo "batch $DBL: $DBLMEAS"
MAXMEAS=$(trial "$MAX"); echo "batch $MAX: $MAXMEAS"
OVERMEAS=$(trial "$OVER"); echo "batch $OVER: $OVERMEAS"

node -e '
const [dbl, dblPred, dblMeas, max, maxPred, maxMeas, over, overMeas] = process.argv.slice(1);
const gib = (b) => (Number(b) / 2 ** 30).toFixed(2) + " GiB";
const err = (p, m) => m === "OOM" || !m ? "n/a" : ((100 * (Number(p) - Number(m))) / Number(m)).toFixed(1) + "%";
console.log(`double batch ${dbl}: predicted ${gib(dblPred)}, measured ${dblMeas === "OOM" ? "OOM" : gib(dblMeas)} (error ${err(dblPred, dblMeas)})`);
console.log(`largest batch ${max}: predicted ${gib(maxPred)}, measured ${maxMeas === "OOM" ? "OOM" : gib(maxMeas)} (error ${err(maxPred, maxMeas)})`);
console.log(`batch ${over} (+10%): ${overMeas === "OOM" ? "OOM, as predicted" : "fits: the prediction is low by more than 10% (measured " + gib(overMeas) + ")"}`);
const ok = maxMeas !== "OOM" && overMeas === "OOM" && dblMeas !== "OOM" && Math.abs(Number(dblPred) - Number(dblMeas)) / Number(dblMeas) < 0.05;
console.log(ok ? "PASS" : "FAIL");
process.exit(ok ? 0 : 1);
' "$DBL" "$DBLPRED" "$DBLMEAS" "$MAX" "$MAXPRED" "$MAXMEAS" "$OVER" "$OVERMEAS"
