#!/usr/bin/env bash
# Issue 26's decode levers on one GPU, in one device call each part (GPU machine, repository root):
#   bash examples/levers/decode_levers.sh OUT autograd    decode_grad_modes bench; decode_loop.py held out of the
#                                                         inference_mode model's figures (a Llama at batch 1, GPT-2
#                                                         at batch 4): under doctor with gradients, then plainly with
#                                                         gradients and under inference_mode, alternately, twice
#   bash examples/levers/decode_levers.sh OUT graphs      static-cache generate() under doctor at batch 8 (fp32) and 1
#                                                         (bf16): decode steps replayed from a CUDA graph, named
#   bash examples/levers/decode_levers.sh OUT dtype       static-cache generate(), fp32 against bf16 weights, plainly
#                                                         (BATCHES, default "8 1")
# autograd-doctor and autograd-plain run autograd's doctor runs or its plain rounds (ROUNDS, default "1 2") alone.
# The device machine returns 8 files at most: pack OUT (its traces gzipped) into one archive there.
# Writes OUT/measured.jsonl (one line a run: the script's JSON line with run, label, flags, under, call) and a
# doctor directory a doctor run. Plain decode_loop runs leave their first sequence out (--warmup 128: each new cache
# length is a new shape there, about 47 ms a step on an H200); doctor finds the steady steps itself.
set -u
cd "$(dirname "$0")/../.."
out=${1:?usage: decode_levers.sh OUT autograd|graphs}
part=${2:-autograd}
gpuwise=${GPUWISE:-node dist/gpuwise.mjs}
budget=${BUDGET_S:-560}
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
mkdir -p "$out"
start=$(date +%s)
left() { echo $(( budget - ($(date +%s) - start) )); }

# record RUN LABEL UNDER FLAGS < the script's stdout: its JSON line, labelled, appended to measured.jsonl
record() {
  python3 -c '
import json, sys
run, label, under, flags, call = sys.argv[1:6]
lines = [l for l in sys.stdin.read().splitlines() if l.startswith("{\"script\"")]
if lines:
    d = json.loads(lines[-1])
    d.update(run=run, label=label, flags=flags, under=under, call=call)
    print(json.dumps(d))
' "$@" >> "$out/measured.jsonl"
}

# doctor_run NAME SCRIPT FLAGS...: one run under doctor, its directory OUT/NAME
doctor_run() {
  local name=$1 script=$2; shift 2
  [ "$(left)" -gt 120 ] || { echo "skipped doctor $name: $(left) s left" >&2; return; }
  timeout 200 $gpuwise doctor --no-serve --out "$out/$name" -- python3 "$script" "$@" > "$out/$name.out" 2> "$out/$name.err"
  record "$name" doctor doctor "$*" "${CALL:-}" < "$out/$name.out"
}

# plain NAME LABEL FLAGS...: decode_loop.py run plainly
plain() {
  local name=$1 label=$2; shift 2
  [ "$(left)" -gt 45 ] || { echo "skipped $name $label: $(left) s left" >&2; return; }
  timeout 120 python3 examples/levers/decode_loop.py --warmup 128 "$@" 2> "$out/$name-$label.err" | record "$name" "$label" plain "$*" "${CALL:-}"
}

HELD_OUT=("decode_loop_llama:--model llama" "decode_loop_b4:--batch 4")
case "$part" in
  autograd | autograd-doctor | autograd-plain)
    [ "$part" = autograd-plain ] || [ "$part" = autograd-doctor ] ||
      timeout 120 python3 bench/doctor/decode_grad_modes.py --device cuda --rounds 6 > "$out/decode_grad_modes.txt" 2>&1
    for cfg in "${HELD_OUT[@]}"; do
      name=${cfg%%:*}
      flags=${cfg#*:}
      [ "$part" = autograd-plain ] || doctor_run "$name" examples/levers/decode_loop.py $flags
      [ "$part" = autograd-doctor ] && continue
      for r in ${ROUNDS:-1 2}; do
        plain "$name" grad $flags
        plain "$name" inference $flags --grad-mode inference
      done
    done
    ;;
  graphs)
    doctor_run hf_generate_static_b8_fp32 examples/levers/hf_generate.py --static-cache --batch 8 --dtype fp32
    doctor_run hf_generate_static_b1 examples/levers/hf_generate.py --static-cache
    ;;
  dtype)
    # fp32 against bf16 weights with the static cache, plain runs alternately (the host's pace moves between calls)
    for b in ${BATCHES:-8 1}; do
      for dt in fp32 bf16; do
        [ "$(left)" -gt 75 ] || { echo "skipped b$b $dt: $(left) s left" >&2; continue; }
        timeout 150 python3 examples/levers/hf_generate.py --static-cache --batch "$b" --dtype $dt --steps 8 2> "$out/b$b-$dt.err" |
          record hf_generate_static "b$b-$dt" plain "--static-cache --batch $b --dtype $dt --steps 8" "${CALL:-}"
      done
    done
    ;;
  *)
    echo "decode_levers.sh: unknown part $part (autograd, autograd-doctor, autograd-plain, graphs, dtype)" >&2
    exit 2
    ;;
esac
echo "decode_levers.sh $part: $(( $(date +%s) - start )) s"
