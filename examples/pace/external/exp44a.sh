#!/usr/bin/env bash
# Call 1 of issue 44's GPU checks: llm.c's train_gpt2.py (d12, bf16) and minGPT's chargpt at GPT-2 size, each under
# doctor as it is, then plainly at each plan step (hand-written attention -> SDPA -> + compile), and doctor runs of
# the SDPA and compiled states (their traces: what compile fuses). Results into $OUT as tarballs and a jsonl.
set -u
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
R=/tmp/r44; mkdir -p $R/runs; M=$OUT/measured.jsonl
python3 -m pip install -q --no-deps --no-index ../../dist/gpuwise-*.whl 2>&1 | tail -1
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee $OUT/gpu.txt
python3 make_data.py $R/data
export PYTHONPATH=$PWD/stubs
L="python3 llmc/train_gpt2.py --model d12 --batch_size 8 --sequence_length 1024 --total_batch_size 8192 --dtype bfloat16 --write_tensors 0 --tensorcores 1 --input_bin $R/data/tok.bin --sample_every 0 --val_loss_every 0"
plain_llmc() { # name args...
  local name=$1; shift
  local line; line=$(timeout 240 $L "$@" 2>&1 | grep "final .* iters avg" | tail -1)
  echo "{\"script\": \"llmc\", \"config\": \"$name\", \"line\": \"$line\"}" | tee -a $M
}
G="timeout 200 gpuwise doctor --no-serve"
$G --out $R/runs/llmc_hand -- $L --flash 0 --num_iterations 60 > $R/runs/llmc_hand.txt 2>&1; tail -25 $R/runs/llmc_hand.txt
plain_llmc hand --flash 0 --num_iterations 40
plain_llmc sdpa --flash 1 --num_iterations 40
plain_llmc sdpa_compile --flash 1 --compile 1 --num_iterations 60
$G --out $R/runs/llmc_sdpa -- $L --flash 1 --num_iterations 60 > $R/runs/llmc_sdpa.txt 2>&1; tail -12 $R/runs/llmc_sdpa.txt
$G --out $R/runs/llmc_sdpa_compile -- $L --flash 1 --compile 1 --num_iterations 80 > $R/runs/llmc_sdpa_compile.txt 2>&1
N="python3 mingpt_train.py --text $R/data/input.txt"
plain_m() { local name=$1; shift; timeout 200 $N "$@" 2>/dev/null | tail -1 | sed "s/^{/{\"config\": \"$name\", /" | tee -a $M; }
$G --out $R/runs/mingpt_fp32 -- $N --steps 80 > $R/runs/mingpt_fp32.txt 2>&1; tail -25 $R/runs/mingpt_fp32.txt
plain_m fp32 --steps 60
plain_m bf16 --amp bf16 --steps 60
plain_m bf16_sdpa --amp bf16 --sdpa --steps 60
plain_m bf16_sdpa_compile --amp bf16 --sdpa --compile --steps 80 --warmup 30
$G --out $R/runs/mingpt_bf16_sdpa -- $N --amp bf16 --sdpa --steps 80 > $R/runs/mingpt_bf16_sdpa.txt 2>&1; tail -12 $R/runs/mingpt_bf16_sdpa.txt
cd $R/runs && tar czf $OUT/reports.tgz --exclude='trace-*' --exclude='*.pt.trace*' --exclude='snapshot*' . && tar czf $OUT/llmc_traces.tgz llmc_*/trace-* 2>/dev/null; tar czf $OUT/mingpt_traces.tgz mingpt_*/trace-* 2>/dev/null; ls -la $OUT; du -sh $R/runs/*
