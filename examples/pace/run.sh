#!/usr/bin/env bash
# The issue-25/26 corpus on one GPU (examples/pace and examples/levers): for each script, one run under
# gpuwise doctor as a new user would start it, then plain runs (no doctor) with each plan step's flags, every
# run's JSON line collected into OUT/measured.jsonl. Expected diagnoses, written before the runs, are in
# examples/pace/README.md and examples/levers/README.md; summarize.py OUT sets doctor's plan against the
# measured steps.
#
#   bash examples/pace/run.sh OUT [GPUWISE] [NAME|PART ...]        (from the repository root)
#
#   GPUWISE   how to call gpuwise (default "node dist/gpuwise.mjs"; e.g. "gpuwise" for the pip wheel)
#   NAME      one script (jpeg_resnet ...); PART: part1, part2, part3 (each under 10 minutes), all (default)
#   env       PYTHON (default python3), DATA (default /tmp/gpuwise-corpus-data: outside OUT, which comes back
#             to the lead's machine), CHECKS=1 adds the side checks (runs that test a claim, not a plan step);
#             PLAN_FROM=doctor follows the plan of doctor's report (follow_plan.py) instead of the PLAN table;
#             REPEAT=N runs each plain configuration N times (the same configuration moves 10-20% between runs on a
#             shared host: Lightning's bf16 + pinned memory measured 42.1 and 51.0 ms in two calls);
#             for a dry run on a CPU: SCRIPT_FLAGS="--device cpu --smoke" STEPS=6; BASE_FLAGS: flags of the
#             baseline that doctor runs and every plan step starts from (a step's own flags come after them and win:
#             BASE_FLAGS="--dtype fp32" with a plan step "--dtype bf16" runs bf16)
#
# A doctor run whose OUT/NAME exists is kept (a run is never overwritten); plain runs append to measured.jsonl
# (summarize.py takes the latest line of each run and step). PLAN_FROM=doctor follows doctor's actual plan.
set -u
cd "$(dirname "$0")/../.."
out=${1:?usage: run.sh OUT [GPUWISE] [NAME|PART ...]}
shift
gpuwise="node dist/gpuwise.mjs"
python=${PYTHON:-python3}
data=${DATA:-/tmp/gpuwise-corpus-data}
extra=${SCRIPT_FLAGS:-}
base=${BASE_FLAGS:-}
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 HF_DATASETS_OFFLINE=1
export GPUWISE_CORPUS_DATA=$data

declare -A SCRIPT=(
  [jpeg_resnet]=pace/jpeg_resnet.py [timm_style]=pace/timm_style.py [lightning_datamodule]=pace/lightning_datamodule.py
  [fakedata_resnet]=pace/fakedata_resnet.py [memmap_gpt]=pace/memmap_gpt.py [gpu_bound]=pace/gpu_bound.py
  [gpt_attention]=levers/gpt_attention.py [hf_generate]=levers/hf_generate.py [gan_fakedata]=levers/gan_fakedata.py
  [compiled_cnn]=levers/compiled_cnn.py [decode_loop]=levers/decode_loop.py
)
# The plan, step by step: "label=full flags" separated by ';' (step 0 is the baseline: what doctor ran).
# Each step carries the ones before it. From the expected diagnoses; edit to follow doctor's actual plan.
declare -A PLAN=(
  [jpeg_resnet]="base=;workers12=--workers 12;bf16_cl=--workers 12 --amp bf16 --channels-last;persistent=--workers 12 --amp bf16 --channels-last --persistent-workers"
  [timm_style]="base=;workers14=--workers 14;persistent=--workers 14 --persistent-workers"
  [lightning_datamodule]="base=;bf16_cl=--precision bf16-mixed --channels-last;pinned=--precision bf16-mixed --channels-last --pin-memory"
  [fakedata_resnet]="base=;workers12=--workers 12;bf16_cl=--workers 12 --amp bf16 --channels-last;pinned=--workers 12 --amp bf16 --channels-last --pin-memory"
  [memmap_gpt]="base=;compile=--compile"
  [gpu_bound]="base=;bf16=--amp bf16"
  [gpt_attention]="base=;sdpa=--attn sdpa;sdpa_compile=--attn sdpa --compile"
  [hf_generate]="base=;batch8=--batch 8;batch8_static=--batch 8 --static-cache"
  [gan_fakedata]="base=;drop_last=--drop-last;persistent=--drop-last --persistent-workers"
  [compiled_cnn]="base="
  [decode_loop]="base=;inference=--grad-mode inference"
)
# Runs that test a claim rather than follow the plan (CHECKS=1): measured from the baseline, labelled check_*.
declare -A CHECK=(
  [jpeg_resnet]="check_bf16_alone=--amp bf16 --channels-last"
  [fakedata_resnet]="check_bf16_alone=--amp bf16 --channels-last"
  [lightning_datamodule]="check_workers6=--precision bf16-mixed --channels-last --pin-memory --workers 6"
  [memmap_gpt]="check_item_every10=--log-every 10;check_compile_fused=--compile --fused-adamw"
  [gpu_bound]="check_bf16_compile=--amp bf16 --compile;check_tf32=--tf32"
  [gpt_attention]="check_manual_compile=--attn manual --compile"
  [compiled_cnn]="check_eager=--no-compile"
  [decode_loop]="check_no_grad=--grad-mode no_grad"
)
# Plain runs are shorter than doctor's (which needs 10-50 steps to settle before its window): the mean of the
# steps after the warm-up is what they measure.
declare -A PLAIN_STEPS=(
  [jpeg_resnet]=120 [timm_style]=100 [lightning_datamodule]=150 [fakedata_resnet]=100 [memmap_gpt]=100
  [gpu_bound]=80 [gpt_attention]=80 [hf_generate]=12 [gan_fakedata]=400 [compiled_cnn]=200 [decode_loop]=520
)
# Rough H200 minutes for the doctor run plus the plan's plain runs (startup, compile and data included).
declare -A MINUTES=(
  [jpeg_resnet]=1.9 [timm_style]=2.3 [lightning_datamodule]=2.0 [fakedata_resnet]=2.2 [memmap_gpt]=2.5
  [gpu_bound]=1.8 [gpt_attention]=2.6 [hf_generate]=3.1 [gan_fakedata]=1.5 [compiled_cnn]=2.5 [decode_loop]=1.2
)
declare -A NEEDS=([jpeg_resnet]=jpeg [timm_style]=jpeg [lightning_datamodule]=images [memmap_gpt]=tokens [gpt_attention]=tokens)
PARTS_part1="jpeg_resnet timm_style fakedata_resnet gan_fakedata"
PARTS_part2="lightning_datamodule memmap_gpt gpu_bound"
PARTS_part3="gpt_attention hf_generate compiled_cnn decode_loop"
ORDER="$PARTS_part1 $PARTS_part2 $PARTS_part3"

if [[ $# -gt 0 && $1 != all && $1 != part[123] && -z ${SCRIPT[$1]:-} ]]; then
  if ! command -v "${1%% *}" > /dev/null; then # a mistyped NAME must not run everything with a broken GPUWISE
    echo "run.sh: $1: not a script of the corpus (${!SCRIPT[*]}), a part (part1|part2|part3|all) nor a command" >&2
    exit 2
  fi
  gpuwise=$1
  shift
fi
names=()
for arg in "$@"; do
  case $arg in
  all) names+=($ORDER) ;;
  part1 | part2 | part3) v=PARTS_$arg; names+=(${!v}) ;;
  *)
    if [[ -z ${SCRIPT[$arg]:-} ]]; then
      echo "run.sh: $arg: not a script of the corpus (${!SCRIPT[*]}) nor part1|part2|part3|all" >&2
      exit 2
    fi
    names+=("$arg")
    ;;
  esac
done
[[ ${#names[@]} -eq 0 ]] && names=($ORDER)

mkdir -p "$out/logs"
total=0
sets=""
for n in "${names[@]}"; do
  total=$(awk -v a="$total" -v b="${MINUTES[$n]}" 'BEGIN { print a + b }')
  [[ -n ${NEEDS[$n]:-} && $sets != *${NEEDS[$n]}* ]] && sets="$sets ${NEEDS[$n]}"
done
echo "run.sh: ${names[*]}: about $total GPU minutes; gpuwise: $gpuwise; python: $python; data: $data" >&2
if [[ -n $sets ]]; then
  # shellcheck disable=SC2086
  $python examples/pace/make_data.py --data "$data" $sets $([[ $extra == *--smoke* ]] && echo --smoke) || echo "run.sh: make_data failed" >&2
fi

# Appends the JSON line of a run's stdout to measured.jsonl, with the run, the step and how it ran.
collect() {
  local stdout=$1 meta=$2 line
  line=$(grep '^{"script"' "$stdout" | tail -1)
  if [[ -z $line ]]; then
    echo "run.sh: no JSON line in $stdout" >&2
    return
  fi
  $python -c 'import json, sys; d = json.loads(sys.argv[1]); d.update(json.loads(sys.argv[2])); print(json.dumps(d))' "$line" "$meta" >> "$out/measured.jsonl"
}

plain() { # name step label flags; REPEAT=N runs each N times (summarize.py takes their mean)
  local name=$1 step=$2 label=$3 flags=$4 r log
  for ((r = 1; r <= ${REPEAT:-1}; r++)); do
    log="$out/logs/$1.$3$([[ $r -gt 1 ]] && echo ".$r")"
    echo "run.sh: $name $label${REPEAT:+ (run $r of $REPEAT)}: ${SCRIPT[$name]} $flags" >&2
    # shellcheck disable=SC2086
    timeout 420 $python "examples/${SCRIPT[$name]}" $base $flags $extra --steps "${STEPS:-${PLAIN_STEPS[$name]}}" > "$log.out" 2> "$log.err" || echo "run.sh: FAILED ($?): $name $label (see $log.err)" >&2
    collect "$log.out" "{\"run\": \"$name\", \"plan_step\": $step, \"label\": \"$label\", \"flags\": \"$(echo $base $flags)\", \"under\": \"plain\", \"repeat\": $r}"
  done
}

for name in "${names[@]}"; do
  script=examples/${SCRIPT[$name]}
  if [[ -d $out/$name && -n $(ls -A "$out/$name") ]]; then
    echo "run.sh: $out/$name exists: doctor run kept" >&2
  else
    echo "run.sh: doctor $name" >&2
    # shellcheck disable=SC2086
    timeout 480 $gpuwise doctor --out "$out/$name" -- $python "$script" $base $extra > "$out/logs/$name.doctor.out" 2> "$out/logs/$name.doctor.err" || echo "run.sh: doctor FAILED ($?): $name (see $out/logs/$name.doctor.err)" >&2
    collect "$out/logs/$name.doctor.out" "{\"run\": \"$name\", \"plan_step\": 0, \"label\": \"doctor\", \"flags\": \"$base\", \"under\": \"doctor\"}"
  fi
  if [[ ${PLAN_FROM:-} == doctor ]]; then
    # doctor's own plan, each step's flags from follow_plan.py (one "label=flags" a line)
    mapfile -t steps < <($python examples/pace/follow_plan.py "$out/$name/report.json" "$name")
    [[ ${#steps[@]} -eq 0 ]] && steps=("base=")
  else
    IFS=';' read -ra steps <<< "${PLAN[$name]}"
  fi
  for i in "${!steps[@]}"; do
    plain "$name" "$i" "${steps[$i]%%=*}" "${steps[$i]#*=}"
  done
  if [[ ${CHECKS:-0} == 1 && -n ${CHECK[$name]:-} ]]; then
    IFS=';' read -ra checks <<< "${CHECK[$name]}"
    for c in "${checks[@]}"; do plain "$name" -1 "${c%%=*}" "${c#*=}"; done
  fi
done
$python examples/pace/summarize.py "$out" | tee "$out/summary.md"
