#!/usr/bin/env bash
# GPU checks of the probe paths that CPU tests cannot reach (issue 14, torch 2.11): a loop with no step source
# (time window), a CUDA-graph replay loop (steps from replays), and the committed notebook's cells in an in-process
# IPython shell where nbclient is missing. bash examples/doctor/gpu_extra_check.sh OUT [CLI]
set -u
out=${1:-.gpu-out/extra}
cli=${2:-dist/gpuwise.mjs}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
timeout 150 node "$cli" doctor --out "$out/functional_loop" -- python3 examples/doctor/functional_loop.py --seconds 40 > "$out/functional_loop.log" 2>&1 || echo "FAILED ($?): functional_loop"
timeout 150 node "$cli" doctor --out "$out/graph_loop" -- python3 examples/doctor/graph_loop.py > "$out/graph_loop.log" 2>&1 || echo "FAILED ($?): graph_loop"
if python3 -c "import IPython" 2>/dev/null; then
  GPUWISE_STORE="$out/store" PYTHONPATH="$PWD/python" GPUWISE_CLI="node $PWD/$cli" GPUWISE_NOTEBOOK_PROXY=0 \
    timeout 200 python3 examples/notebook/run_in_ipython.py examples/notebook/gpuwise.ipynb "$out/notebook" > "$out/notebook.log" 2>&1 || echo "FAILED ($?): notebook"
else
  echo "no IPython here: notebook not run"
fi
