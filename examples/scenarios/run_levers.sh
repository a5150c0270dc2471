#!/usr/bin/env bash
# The issue-15 levers on one GPU: each scenario and its fixed twin, traces + medians measured without the
# profiler (median_step_ms in NAME.meta.json). bash examples/scenarios/run_levers.sh OUT_DIR
set -u
out=${1:-scenario-out}
mkdir -p "$out"
cd "$(dirname "$0")"
export PYTHONUNBUFFERED=1
run() { timeout 240 python3 "$@" || echo "FAILED: $*"; }
run resnet_precision.py "$out"
run resnet_precision.py "$out" --amp
run resnet_precision.py "$out" --amp --channels-last
run gpt_fusion.py "$out"
run gpt_fusion.py "$out" --compile
run sync_refill.py "$out"
run sync_refill.py "$out" --fixed
