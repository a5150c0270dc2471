#!/usr/bin/env bash
# The behaviour-equivalence suite (issue 27) on the GPU machine: every case of test/equivalence/cases run plainly and
# under doctor with the `python3` there (torch 2.x with CUDA): the CUDA cases (cuda_*) and the torch 2 ones
# (compile, torch.export, DCP) run instead of skipping, and so do lightning, transformers and safetensors where they
# are installed. The stdio, environment and launcher families (io_*, envx_*, launch_*: pipes with slow, tee'd and
# closing readers on doctor's own streams, closed descriptors, env/bash/make/torchrun launchers) need sh, bash, make,
# tee, head, timeout and cat there; torchrun's case runs two gloo ranks on the CPU. The generated programs of seeds
# $SEEDS (default 0-11; scripts/equivalenceGen.mjs) run too; one that differs is kept and its path printed in the table.
# ATTACH=site|path picks the route doctor attaches its probe by (the runner's --attach; ATTACH=site needs the site hook in
# that python3: SITE_HOOK=1 installs it first, as the wheel would); ONLY=a,b runs those cases alone (no generated ones).
# Writes OUT/equivalence.json (scripts/equivalence.mjs's report) and OUT/equivalence.txt (the table).
#   bash test/equivalence/run_gpu.sh [OUT] [CLI]     OUT defaults to $OUT, else .gpu-out/equivalence
# Exit status: the runner's (0 every case the same, 1 some differ, 2 it could not run).
set -u
cd "$(dirname "$0")/../.."
out=${1:-${OUT:-.gpu-out/equivalence}}
cli=${2:-dist/gpuwise.mjs}
mkdir -p "$out"
if [ ! -f "$cli" ]; then
  echo "run_gpu.sh: $cli is missing: run npm run build first (or carry dist/)" >&2
  exit 2
fi
# doctor starts its command through koffi (src/io/nativeSpawn.ts); without koffi's native module beside the bundle it
# falls back to Node's spawn, and signal_sigrtmax_unhandled then differs (a real-time signal's death reads as exit 0).
if ! node -e "require('./node_modules/koffi')" 2>/dev/null; then
  echo "run_gpu.sh: warning: koffi does not load here (node_modules/koffi and node_modules/@koromix/koffi-linux-*): doctor falls back to Node's spawn" >&2
fi
# One GPU shared by the CUDA cases is fine; the CPU cases are what the cores run.
jobs=${JOBS:-$(( $(nproc) > 16 ? 8 : ($(nproc) + 1) / 2 ))}
python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.cuda.is_available())' | tee "$out/versions.txt"
for tool in sh bash make tee head timeout cat; do
  command -v "$tool" >/dev/null || echo "run_gpu.sh: warning: $tool is missing here: the cases that use it will differ or fail" >&2
done
if [ "${SITE_HOOK:-0}" = 1 ]; then
  site=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  cp -r python/gpuwise "$site/" && cp python/gpuwise-probe.pth python/_gpuwise_site.py "$site/" && echo "run_gpu.sh: the site hook installed in $site"
fi
select=(--generate "${SEEDS:-0-11}")
[ -n "${ONLY:-}" ] && select=(--only "$ONLY")
node scripts/equivalence.mjs --python python3 --cli "$cli" --cases test/equivalence/cases "${select[@]}" ${ATTACH:+--attach "$ATTACH"} --jobs "$jobs" --json "$out/equivalence.json" > "$out/equivalence.txt" 2> "$out/progress.log"
code=$?
cat "$out/equivalence.txt"
exit $code
