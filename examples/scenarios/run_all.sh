#!/usr/bin/env bash
# Runs every scenario on a machine with 2 NVIDIA GPUs: bash examples/scenarios/run_all.sh OUT_DIR
set -u
out=${1:-scenario-out}
mkdir -p "$out"
cd "$(dirname "$0")"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
for s in host_sync fp32_matmul misaligned_vocab pageable_copy small_batch memory_near_limit; do
  CUDA_VISIBLE_DEVICES=0 timeout 120 python3 $s.py "$out" || echo "FAILED: $s"
done
timeout 120 python3 dataparallel.py "$out" || echo "FAILED: dataparallel"
for s in ddp_accum_no_sync ddp_small_buckets ddp_comm_bound ddp_imbalance; do
  timeout 150 torchrun --standalone --nproc_per_node=2 $s.py "$out" || echo "FAILED: $s"
done
ls -la "$out"
