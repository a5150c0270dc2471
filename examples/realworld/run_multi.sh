#!/usr/bin/env bash
# The multi-GPU corpus under gpuwise doctor on a machine with 2 GPUs (issue 19), each script as a user would run
# it, then with the advice followed. bash examples/realworld/run_multi.sh OUT PART [CLI]   (from the repository root)
# PART: scenarios | ddp | frameworks | drills | shared | onegpu (drills and shared on one GPU) | all. Expected diagnoses, written before the runs, are in
# examples/realworld/README.md ("Several GPUs").
set -u
out=${1:-.gpu-out/multi}
part=${2:-all}
cli=${3:-dist/gpuwise.mjs}
mkdir -p "$out"
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
doctor() { local name=$1 t=$2; shift 2; timeout "$t" node "$cli" doctor --out "$out/$name" -- "$@" > "$out/$name.log" 2>&1 || echo "FAILED ($?): $name"; }
d=examples/realworld
s=examples/scenarios
tr="torchrun --standalone --nproc_per_node 2"
want() { [ "$part" = all ] || [ "$part" = "$1" ]; }
if want scenarios; then
  # Model parallelism by hand, its pipelined twin and the DDP alternative: traces + unprofiled medians.
  timeout 120 python3 $s/model_parallel.py "$out/scenarios" || echo "FAILED: model_parallel"
  timeout 120 python3 $s/model_parallel.py "$out/scenarios" --pipelined || echo "FAILED: model_parallel --pipelined"
  timeout 150 $tr $s/model_parallel.py "$out/scenarios" || echo "FAILED: model_parallel ddp"
  doctor model_parallel 150 python3 $s/model_parallel.py /tmp/mp-under-doctor
fi
if want ddp; then
  doctor dataparallel_resnet_2gpu 150 python3 $d/dataparallel_resnet.py
  doctor ddp_resnet 150 $tr $d/ddp_torchrun.py
  doctor ddp_resnet_amp_cl 150 $tr $d/ddp_torchrun.py --amp --channels-last
  doctor ddp_resnet_slow_rank1 150 $tr $d/ddp_torchrun.py --slow-rank 1
fi
if want frameworks; then
  doctor fsdp2_gpt 200 $tr $d/fsdp2_gpt.py
  doctor fsdp2_gpt_bf16 200 $tr $d/fsdp2_gpt.py --bf16
  doctor hf_trainer_gpt2_ddp 200 $tr $d/hf_trainer_gpt2.py
  doctor hf_trainer_gpt2_ddp_bf16 200 $tr $d/hf_trainer_gpt2.py --bf16
  doctor accelerate_gpt2_ddp 200 accelerate launch --multi_gpu --num_processes 2 --num_machines 1 --mixed_precision no --dynamo_backend no $d/accelerate_gpt2.py
  doctor accelerate_gpt2_fsdp 200 accelerate launch --num_processes 2 --num_machines 1 --mixed_precision no --dynamo_backend no --use_fsdp --fsdp_version 2 --fsdp_auto_wrap_policy TRANSFORMER_BASED_WRAP --fsdp_transformer_layer_cls_to_wrap GPT2Block $d/accelerate_gpt2.py
fi
if want drills; then
  doctor ddp_crash_rank1 120 $tr $d/ddp_torchrun.py --crash-rank 1 --at-step 20
  doctor ddp_kill_rank1 120 $tr $d/ddp_torchrun.py --kill-rank 1 --at-step 20
fi
if want onegpu; then
  # Two processes of one job on one GPU, the second started 15 s later (each has steps alone and contended).
  doctor shared_gpu_two_procs 150 sh -c "python3 $d/ddp_torchrun.py --seconds 40 & sleep 15; python3 $d/ddp_torchrun.py --seconds 40; wait"
  # Another user's job on the GPU (not under doctor) for the first ~35 s of ours.
  timeout 100 python3 $d/ddp_torchrun.py --seconds 35 > "$out/foreign.log" 2>&1 &
  sleep 2
  doctor shared_gpu_foreign 150 python3 $d/ddp_torchrun.py --seconds 60
  wait
  doctor shared_gpu_alone 100 python3 $d/ddp_torchrun.py --seconds 25
  # The drills with two gloo ranks on the one GPU.
  g="--backend gloo --one-gpu --at-step 20"
  doctor gloo_crash_rank1 120 $tr $d/ddp_torchrun.py $g --crash-rank 1
  doctor gloo_kill_rank1 120 $tr $d/ddp_torchrun.py $g --kill-rank 1
  GPUWISE_STALL_S=10 timeout 150 node "$cli" doctor --hang-timeout 30 --out "$out/gloo_hang_rank1" -- $tr $d/ddp_torchrun.py $g --hang-rank 1 > "$out/gloo_hang_rank1.log" 2>&1; echo "gloo_hang_rank1: doctor exit $?"
fi
ls "$out"
