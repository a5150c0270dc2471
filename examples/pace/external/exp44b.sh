#!/usr/bin/env bash
# Issue 44, held-out check of the compile and precision models: karpathy/nanoGPT's train.py (GPT-2 124M, batch 12 x
# 1024, no gradient accumulation; at 3adf61e1) under doctor in fp32 (nanoGPT turns TF32 on itself), then plainly in
# fp32, bf16 and bf16 + compile on the same card. Random tokens from a memmap. Results into $OUT.
set -u
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-index ../../dist/gpuwise-*.whl 2>&1 | tail -1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee $OUT/gpu.txt
cd nanogpt && mkdir -p data/owt
python3 -c "
import numpy as np
r=np.random.default_rng(0)
for s,n in (('train',4_000_000),('val',200_000)): np.minimum(r.zipf(1.2,n)-1,50256).astype(np.uint16).tofile(f'data/owt/{s}.bin')"
A="--dataset=owt --batch_size=12 --block_size=1024 --gradient_accumulation_steps=1 --eval_interval=100000 --eval_iters=1 --log_interval=1 --always_save_checkpoint=False --warmup_iters=10"
plain() { # name iters warm args...
  local name=$1 it=$2 warm=$3; shift 3
  timeout ${T:-80} python3 train.py $A --max_iters=$it "$@" > $OUT/plain_$name.txt 2>&1
  python3 - "$name" "$warm" $OUT/plain_$name.txt <<'PY' | tee -a $OUT/measured.jsonl
import re, sys, json
name, warm, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ts = [(int(m.group(1)), float(m.group(2))) for m in re.finditer(r"iter (\d+): loss [\d.]+, time ([\d.]+)ms", open(path).read())]
xs = [t for i, t in ts if i >= warm]
print(json.dumps({"script": "nanogpt", "config": name, "steps": len(xs), "mean_step_ms": sum(xs) / len(xs) if xs else None}))
PY
}
timeout 110 gpuwise doctor --no-serve --out /tmp/r44b/nanogpt_fp32 -- python3 train.py $A --max_iters=40 --dtype=float32 --compile=False > $OUT/doctor_fp32.txt 2>&1; tail -30 $OUT/doctor_fp32.txt
T=45 plain fp32 20 6 --dtype=float32 --compile=False
T=45 plain bf16 20 6 --dtype=bfloat16 --compile=False
T=100 plain bf16_compile 30 12 --dtype=bfloat16 --compile=True
cd /tmp/r44b && tar czf $OUT/runs.tgz . ; ls -la $OUT
