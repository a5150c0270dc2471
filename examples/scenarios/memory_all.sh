#!/usr/bin/env bash
# Runs every `gpuwise memory` scenario on one GPU (about a minute on an H200) and writes
# the snapshots and their meta files into OUT. Usage: examples/scenarios/memory_all.sh OUT
set -uo pipefail
out=${1:?usage: memory_all.sh OUT}
mkdir -p "$out"
here=$(cd "$(dirname "$0")" && pwd)
for s in memory_train memory_oom_activations memory_oom_fragmentation memory_leak memory_eval_nograd; do
  echo "== $s"
  python3 "$here/$s.py" "$out" || echo "FAILED: $s"
done
ls -la "$out"
