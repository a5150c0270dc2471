#!/usr/bin/env bash
# Runs the real-code corpus under gpuwise doctor on one GPU: each script as a new user would run it,
# then with the advice followed. bash examples/realworld/run.sh OUT [CLI]   (from the repository root)
# Expected diagnoses, written before the runs, are in examples/realworld/README.md.
set -u
out=${1:-.gpu-out/realworld}
cli=${2:-dist/gpuwise.mjs}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1
doctor() { local name=$1; shift; timeout 300 node "$cli" doctor --out "$out/$name" -- "$@" > "$out/$name.log" 2>&1 || echo "FAILED ($?): $name"; }
d=examples/realworld
doctor manual_sgd_lstm python3 $d/manual_sgd_lstm.py
doctor manual_sgd_lstm_batch80 python3 $d/manual_sgd_lstm.py --batch 80
doctor eval_inference python3 $d/eval_inference.py
doctor eval_inference_bf16_cl python3 $d/eval_inference.py --bf16 --channels-last
doctor nanogpt_style python3 $d/nanogpt_style.py
doctor nanogpt_style_compiled python3 $d/nanogpt_style.py --compile --iters 80
doctor lightning_resnet python3 $d/lightning_resnet.py
doctor lightning_resnet_bf16_cl python3 $d/lightning_resnet.py --precision bf16-mixed --channels-last
doctor hf_trainer_gpt2 python3 $d/hf_trainer_gpt2.py
doctor hf_trainer_gpt2_bf16 python3 $d/hf_trainer_gpt2.py --bf16
doctor accelerate_gpt2 python3 $d/accelerate_gpt2.py
doctor accelerate_gpt2_bf16 python3 $d/accelerate_gpt2.py --mixed-precision bf16
doctor dataparallel_resnet python3 $d/dataparallel_resnet.py
doctor dataparallel_resnet_amp_cl python3 $d/dataparallel_resnet.py --amp --channels-last
python3 $d/summarize.py "$out" > "$out/summary.json"
cat "$out/summary.json"
