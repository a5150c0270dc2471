#!/usr/bin/env bash
# Issue 46 on a GPU: `gpuwise tune --plan` on corpus scripts of four kinds, then its verified best configuration run
# plainly (no gpuwise) with the change made by hand, the script's own flags (tune_flags.py), REPEAT times.
#
#   bash examples/pace/tune_plan.sh OUT [NAME ...]      (from the repository root, on the GPU machine)
#
#   NAME     jpeg_resnet (a CNN over JPEGs in workers), memmap_gpt (a GPT from a token memmap), hf_trainer
#            (transformers' Trainer), lightning_datamodule (Lightning); default all four
#   env      GPUWISE (default "node dist/gpuwise.mjs"), PYTHON (python3), DATA (/tmp/gpuwise-corpus-data),
#            REPEAT (plain runs of the best, default 2), TUNE_TIMEOUT (seconds for one tune --plan, default 300),
#            BASE_FLAGS (flags of every run of every script, e.g. "--device cpu --smoke" for a dry run),
#            TUNE_FLAGS (more tune --plan options, e.g. "--trial-seconds 5 --diagnosis-steps 60")
#
# OUT gets NAME.plan.json (tune's --json), NAME.plan.err (its progress), NAME/ (its runs), measured.jsonl (the plain
# runs' JSON lines, with the flags) and summary.txt (predicted, measured by tune, measured plainly).
set -u
cd "$(dirname "$0")/../.."
out=${1:?usage: tune_plan.sh OUT [NAME ...]}
shift
gpuwise=${GPUWISE:-node dist/gpuwise.mjs}
python=${PYTHON:-python3}
data=${DATA:-/tmp/gpuwise-corpus-data}
base=${BASE_FLAGS:-}
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 GPUWISE_CORPUS_DATA=$data
declare -A SCRIPT=([jpeg_resnet]=jpeg_resnet.py [memmap_gpt]=memmap_gpt.py [hf_trainer]=hf_trainer.py [lightning_datamodule]=lightning_datamodule.py)
declare -A NEEDS=([jpeg_resnet]=jpeg [memmap_gpt]=tokens [lightning_datamodule]=images)
declare -A PLAIN_STEPS=([jpeg_resnet]=120 [memmap_gpt]=60 [hf_trainer]=80 [lightning_datamodule]=150)
names=("$@")
[[ ${#names[@]} -eq 0 ]] && names=(jpeg_resnet memmap_gpt hf_trainer lightning_datamodule)
mkdir -p "$out/logs"
sets=""
for n in "${names[@]}"; do
  [[ -z ${SCRIPT[$n]:-} ]] && { echo "tune_plan.sh: $n: not one of ${!SCRIPT[*]}" >&2; exit 2; }
  [[ -n ${NEEDS[$n]:-} ]] && sets="$sets ${NEEDS[$n]}"
done
# shellcheck disable=SC2086
[[ -n $sets ]] && $python examples/pace/make_data.py --data "$data" $sets $([[ $base == *--smoke* ]] && echo --smoke)

for n in "${names[@]}"; do
  s=examples/pace/${SCRIPT[$n]}
  t0=$(date +%s)
  # shellcheck disable=SC2086
  timeout "${TUNE_TIMEOUT:-300}" $gpuwise tune --plan ${TUNE_FLAGS:-} --json --out "$out/$n" --store "$out/store" -- $python $s $base > "$out/$n.plan.json" 2> "$out/$n.plan.err"
  echo "tune_plan.sh: $n: tune --plan exit $? in $(($(date +%s) - t0)) s" >&2
  flags=$($python examples/pace/tune_flags.py "$out/$n.plan.json" "$n") || continue
  for ((r = 1; r <= ${REPEAT:-2}; r++)); do
    log="$out/logs/$n.best.$r"
    # shellcheck disable=SC2086
    timeout 300 $python $s $base $flags --steps "${STEPS:-${PLAIN_STEPS[$n]}}" > "$log.out" 2> "$log.err" || echo "tune_plan.sh: $n plain run $r failed (see $log.err)" >&2
    line=$(grep '^{"script"' "$log.out" | tail -1)
    [[ -n $line ]] && $python -c 'import json, sys; d = json.loads(sys.argv[1]); d.update(run=sys.argv[2], flags=sys.argv[3], under="plain", repeat=int(sys.argv[4])); print(json.dumps(d))' "$line" "$n" "$flags" "$r" >> "$out/measured.jsonl"
  done
done
$python examples/pace/tune_summary.py "$out" "${names[@]}" | tee "$out/summary.txt"
