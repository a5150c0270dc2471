#!/usr/bin/env bash
# GPU check of the host floor (docs/validation/pace.md, "re-based on the run"): ResNet-50 fp32 at batch 64 on one GPU under
# doctor, then the advice followed (--amp --channels-last), and the expected step of the fp32 run's GPU-work fixes
# against the step the second run measured.
#
#   npm run build && bash examples/doctor/host_floor_check.sh OUT_DIR ["node dist/gpuwise.mjs"]
#
# Needs one CUDA GPU, torch and torchvision (no network). About 2.5 minutes (two 25 s trainings, start-up, export).
# Prints, for each run: median step, the host's CPU time per step (the probe's hostCpuS), the steps in flight, and
# for the fp32 run each finding whose fix only shortens GPU work with its expected step. PASS when every such
# finding's expected step is within 25% of the --amp --channels-last run's measured median (on an H100, torch 2.11:
# 39.8 ms measured, 20.6 ms promised before the floor).
set -u
OUT=${1:?usage: host_floor_check.sh OUT_DIR [CLI]}
CLI=${2:-node dist/gpuwise.mjs}
PY=${PYTHON:-python3}
SCRIPT=examples/realworld/ddp_torchrun.py
mkdir -p "$OUT"

echo "== fp32"
$CLI doctor --out "$OUT/fp32" -- $PY $SCRIPT --seconds 25 > "$OUT/fp32.txt" 2>&1
echo "doctor exit $?"
echo "== --amp --channels-last"
$CLI doctor --out "$OUT/amp_cl" -- $PY $SCRIPT --seconds 25 --amp --channels-last > "$OUT/amp_cl.txt" 2>&1
echo "doctor exit $?"

node -e '
const fs = require("fs");
const [fp32, amp] = process.argv.slice(1).map((d) => JSON.parse(fs.readFileSync(d + "/report.json", "utf8")));
const ms = (s) => (s == null ? "n/a" : (s * 1e3).toFixed(1) + " ms");
for (const [name, r] of [["fp32", fp32], ["amp_cl", amp]]) {
  const s = r.ranks[0].steps;
  console.log(`${name}: median ${ms(s.medianS)} (${s.timing}), host CPU ${ms(s.medianHostCpuS)} a step, steps in flight ${s.medianStepsInFlight}`);
  for (const f of r.findings.slice(0, 3))
    console.log(`  ${f.severity} ${f.id}: ${f.estimatedGain ? ms(f.estimatedGain.stepTimeNs / 1e9) + " -> " + ms(f.estimatedGain.expectedStepTimeNs / 1e9) : "no step gain"}`);
}
const measured = amp.ranks[0].steps.medianS;
const gpuFixes = fp32.findings.filter((f) => f.estimatedGain && f.estimatedGain.savesGpuWork);
let ok = fp32.ranks[0].steps.medianHostCpuS != null && gpuFixes.length > 0;
if (fp32.ranks[0].steps.medianHostCpuS == null) console.log("FAIL: no hostCpuS in the fp32 run (an older probe?)");
for (const f of gpuFixes) {
  const e = f.estimatedGain.expectedStepTimeNs / 1e9;
  const err = e / measured - 1;
  const pass = Math.abs(err) <= 0.25;
  ok = ok && pass;
  console.log(`${pass ? "PASS" : "FAIL"} ${f.id} (${f.severity}): expected ${ms(e)}, the fixed run measured ${ms(measured)} (${(err * 100).toFixed(0)}%)`);
  console.log("  " + f.estimatedGain.arithmetic.split(". ").slice(-2).join(". "));
}
process.exit(ok ? 0 : 1);
' "$OUT/fp32" "$OUT/amp_cl"
