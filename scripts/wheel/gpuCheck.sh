#!/usr/bin/env bash
# The wheel on a GPU machine that has PyTorch and no Node: installs it into the machine's python3 and runs
# smi (NVML through koffi), doctor on a short CUDA training and monitor --json-stream. Outputs go to $OUT
# (default ./.gpu-out/wheel). Run from the repository root:
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
echo "== gpuwise monitor --json-stream --count 5"
$gw monitor --json-stream --count 5 | tee "$out/monitor.ndjson" || rc=1
echo "== monitor lines: $(wc -l <"$out/monitor.ndjson")"
exit $rc
