#!/usr/bin/env bash
# gpuwise's own CPU cost on a GPU machine, with one load process per GPU (so there are GPU processes
# to look up): the cost of each NVML call, the cost of a sample with and without /proc, and `monitor`
# at 10 Hz, both as NDJSON and as the screen (through a pseudo-terminal from `script`), measured by the
# command itself (GPUWISE_SELF_CPU=1, microsecond resolution, start-up excluded).
#   bash bench/telemetry/cpu-check.sh OUTDIR      (from the repository root; needs dist/ and node)
# GPUWISE_BUNDLE=FILE measures another build (e.g. an older one, for a before/after on the same host).
set -u
OUT=${1:-.gpu-out/cpu}
mkdir -p "$OUT"
G="node ${GPUWISE_BUNDLE:-dist/gpuwise.mjs}"
n=$(nvidia-smi -L | wc -l)
pids=()
for i in $(seq 0 $((n - 1))); do
  CUDA_VISIBLE_DEVICES=$i RANK=$i WORLD_SIZE=$n python3 bench/telemetry/gpu_load.py --seconds 240 --gib 2 > "$OUT/load$i.txt" 2>&1 &
  pids+=($!)
done
for _ in $(seq 1 60); do
  [ "$(cat "$OUT"/load*.txt 2>/dev/null | grep -c ready)" -ge "$n" ] && break
  sleep 1
done
echo "GPUs: $n, load processes ready: $(cat "$OUT"/load*.txt | grep -c ready)"
GPUWISE_NVML_TIMINGS=1 $G smi --bench 2000 > "$OUT/nvml-call-timings.json"
for r in 1 2 3; do
  $G smi --bench 5000 > "$OUT/sample-procfs-$r.json"
  $G smi --bench 5000 --no-procfs > "$OUT/sample-nvml-$r.json"
done
GPUWISE_SELF_CPU=1 $G monitor --json-stream --interval 100ms --count 301 > /dev/null 2> "$OUT/monitor-ndjson.txt"
if command -v script > /dev/null; then
  GPUWISE_SELF_CPU=1 script -qec "stty cols 160 rows 48; $G monitor --interval 100ms --count 301 2> $OUT/monitor-tui.txt" /dev/null > /dev/null
else
  echo "no 'script' command: the screen mode is not measured" > "$OUT/monitor-tui.txt"
fi
kill "${pids[@]}" 2> /dev/null
wait 2> /dev/null
node -e '
const fs = require("fs"), out = process.argv[1];
const j = (f) => JSON.parse(fs.readFileSync(`${out}/${f}`, "utf8"));
const med = (xs) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const p = [1, 2, 3].map((r) => j(`sample-procfs-${r}.json`)), q = [1, 2, 3].map((r) => j(`sample-nvml-${r}.json`));
console.log(`per sample, ${p[0].gpus} GPU(s), ${p[0].processesPerSample} process(es), first 5000 after start: NVML + /proc cpu ${med(p.map((x) => x.cpuUsPerSample)).toFixed(1)} us wall ${med(p.map((x) => x.wallUsPerSample)).toFixed(1)} us; NVML only cpu ${med(q.map((x) => x.cpuUsPerSample)).toFixed(1)} us wall ${med(q.map((x) => x.wallUsPerSample)).toFixed(1)} us`);
if (p[0].steadyCpuUsPerSample !== undefined) console.log(`per sample, next 5000 (steady): NVML + /proc cpu ${med(p.map((x) => x.steadyCpuUsPerSample)).toFixed(1)} us wall ${med(p.map((x) => x.steadyWallUsPerSample)).toFixed(1)} us; NVML only cpu ${med(q.map((x) => x.steadyCpuUsPerSample)).toFixed(1)} us wall ${med(q.map((x) => x.steadyWallUsPerSample)).toFixed(1)} us`);
const t = j("nvml-call-timings.json").nvmlCalls || {};
console.log("NVML calls (us per call): " + Object.entries(t).map(([k, v]) => `${k.replace("nvmlDevice", "")} ${v.usPerCall.toFixed(1)} x${v.calls}`).join(", "));
for (const f of ["monitor-ndjson.txt", "monitor-tui.txt"]) { const line = fs.readFileSync(`${out}/${f}`, "utf8").split("\n").find((l) => l.startsWith("{\"selfCpu\"")); console.log(f, line ?? "(no figure)"); }
' "$OUT" | tee "$OUT/summary.txt"
