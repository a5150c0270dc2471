#!/usr/bin/env bash
# hf_generate.py's weights in fp32 against bf16, with the static cache, plain runs alternately in one device call
# (a host-bound decode loop's pace moves by up to 57% between calls: compare only runs of the same call), and
# doctor's run of the fp32 baseline whose plan says what bf16 weights would give (issue 26).
#   bash examples/levers/generation_dtype.sh OUT [ROUNDS] [BATCHES]     (GPU machine, repository root)
# Writes OUT/measured.jsonl (one line a run: label, flags, the script's JSON line) and OUT/doctor-b<N> per batch size.
set -u
cd "$(dirname "$0")/../.."
out=${1:?usage: generation_dtype.sh OUT [ROUNDS] [BATCHES]}
rounds=${2:-2}
batches=${3:-"8 1"}
gpuwise=${GPUWISE:-node dist/gpuwise.mjs}
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
mkdir -p "$out"
for b in $batches; do
  flags="--batch $b --static-cache"
  if [ ! -d "$out/doctor-b$b" ]; then
    timeout 200 $gpuwise doctor --no-serve --out "$out/doctor-b$b" -- python3 examples/levers/hf_generate.py --dtype fp32 $flags > "$out/doctor-b$b.out" 2> "$out/doctor-b$b.err"
  fi
  for r in $(seq 1 "$rounds"); do
    for dt in fp32 bf16; do
      line=$(timeout 150 python3 examples/levers/hf_generate.py --dtype $dt $flags --steps 12 2> "$out/b$b-$dt-$r.err" | grep '^{"script"' | tail -1)
      echo "{\"label\":\"b$b-$dt\",\"round\":$r,\"flags\":\"--dtype $dt $flags\",\"run\":${line:-null}}" >> "$out/measured.jsonl"
    done
  done
done
