/**
 * What the mix of kernels says about the levers a step leaves unpulled: the dtype of the memory-bound
 * work (fp32 elementwise and normalisation kernels move twice the bytes of bf16 ones), the memory
 * format of a convolutional net (cuDNN's NCHW<->NHWC transposes, NCHW normalisation and pooling
 * kernels), whether a compiler fused the step (Inductor's Triton kernels), and fp16 without a
 * GradScaler. Read from kernel names, which carry their template arguments; one entry per distinct
 * name, so this costs nothing per kernel.
 */
import { FP16_KERNEL, FP32_KERNEL, HALF_KERNEL, KernelCategory, isInductorKernel } from '../kernelClass.js';
import type { KernelMix } from './types.js';

export interface NamedKernelTime {
  name: string;
  category: number;
  count: number;
  totalNs: number;
}

const TRANSPOSE = /nchwToNhwc|nhwcToNchw/;
const NORM_POOL = /batch_norm|bn_fw|bn_bw|bn_bw_|instance_norm|group_norm|max_pool|avg_pool|adaptive_avg|upsample/i;
const CHANNELS_LAST = /channels_last|nhwc|NHWC/;
const GRAD_SCALER = /amp_update_scale|non_finite_check_and_unscale/;
/** What a fusable kernel does, first match wins (see KernelMix.fusable). */
const MULTI_TENSOR = /multi_tensor_apply|fused_adam|fused_sgd|_foreach_/;
const CAST_COPY = /copy_kernel|direct_copy|_to_copy/;
const NORM = /layer_norm|GammaBeta|rms_?norm|RMSNorm|group_norm|batch_norm|instance_norm|bn_fw|bn_bw|welford/i;
const SOFTMAX_LOSS = /softmax|nll_loss|cross_entropy/i;
const REDUCE = /reduce_kernel|sum_kernel|mean_kernel|argmax|cumsum/;
const FUSABLE = new Set<number>([KernelCategory.elementwise, KernelCategory.reduction, KernelCategory.optimizer, KernelCategory.other]);
/** Ops autocast runs in fp32 whatever their inputs (its fp32 list: norms but batch norm, softmax, losses, pow, exp, log). */
const AUTOCAST_FP32 = /layer_norm|GammaBeta|rms_?norm|RMSNorm|group_norm|softmax|nll_loss|cross_entropy|pow_tensor|PowFunctor|pow_kernel|exp_kernel|log_kernel|logsumexp|cumsum/i;
const ACTIVATION = /gelu|relu|threshold|silu|sigmoid|hardswish|hardsigmoid|elu_kernel|leaky|mish|dropout|masked_scale|bernoulli/i;
const BATCH_NORM = /batch_norm|bn_fw|bn_bw|instance_norm/i;

/** What bf16 autocast does to an fp32 memory-bound kernel (KernelMix.memoryBoundFp32ByAutocast's key). */
export function autocastKind(name: string, category: number): keyof KernelMix['memoryBoundFp32ByAutocast'] {
  if (AUTOCAST_FP32.test(name)) return 'keptFp32Ns';
  if (BATCH_NORM.test(name)) return 'batchNormNs';
  if (ACTIVATION.test(name)) return 'activationNs';
  if (CAST_COPY.test(name) || /CatArray/.test(name)) return 'copyNs';
  if (category === KernelCategory.reduction) return 'reductionNs';
  return 'pointwiseNs';
}

/** What a kernel a compiler could fuse does (KernelMix.fusable's key), first match wins; null for a kernel it could not fuse. */
export function fusableKind(name: string, category: number): keyof KernelMix['fusable'] | null {
  if (!FUSABLE.has(category) || isInductorKernel(name)) return null;
  if (MULTI_TENSOR.test(name)) return 'optimizerNs';
  if (CAST_COPY.test(name)) return 'castNs';
  if (NORM.test(name)) return 'normNs';
  if (SOFTMAX_LOSS.test(name)) return 'softmaxNs';
  if (REDUCE.test(name)) return 'reduceNs';
  return 'pointwiseNs';
}

/** Per-step kernel mix from the kernels of the analysed steps (totals over `steps` steps). */
export function kernelMix(kernels: readonly NamedKernelTime[], steps: number): KernelMix {
  const n = Math.max(1, steps);
  // Integer nanosecond and count totals first, divided once at the end: the sum is then the same in any order of
  // names (a parse on several threads numbers them differently).
  const mix: KernelMix = {
    memoryBoundFp32Ns: 0,
    memoryBoundHalfNs: 0,
    memoryBoundOtherNs: 0,
    nchwTransposeNs: 0,
    nchwNormPoolNs: 0,
    channelsLastNormPoolNs: 0,
    halfNormPoolNs: 0,
    tritonNs: 0,
    tritonKernels: 0,
    fp16Kernels: 0,
    gradScalerKernels: 0,
    fusable: { castNs: 0, pointwiseNs: 0, normNs: 0, softmaxNs: 0, reduceNs: 0, optimizerNs: 0 },
    memoryBoundFp32ByAutocast: { keptFp32Ns: 0, activationNs: 0, copyNs: 0, reductionNs: 0, batchNormNs: 0, pointwiseNs: 0 },
  };
  const byAutocast = mix.memoryBoundFp32ByAutocast;
  const fu = mix.fusable;
  for (const k of kernels) {
    const t = k.totalNs;
    const name = k.name;
    if (isInductorKernel(name)) {
      mix.tritonNs += t;
      mix.tritonKernels += k.count;
    }
    else {
      const kind = fusableKind(name, k.category);
      if (kind !== null) fu[kind] += t;
    }
    if (GRAD_SCALER.test(name)) mix.gradScalerKernels += k.count;
    if (FP16_KERNEL.test(name)) mix.fp16Kernels += k.count;
    if (k.category === KernelCategory.elementwise || k.category === KernelCategory.reduction) {
      if (TRANSPOSE.test(name)) mix.nchwTransposeNs += t;
      else if (HALF_KERNEL.test(name)) mix.memoryBoundHalfNs += t;
      else if (FP32_KERNEL.test(name)) {
        mix.memoryBoundFp32Ns += t;
        byAutocast[autocastKind(name, k.category)] += t;
      }
      else mix.memoryBoundOtherNs += t;
      if (NORM_POOL.test(name)) {
        if (CHANNELS_LAST.test(name)) mix.channelsLastNormPoolNs += t;
        else mix.nchwNormPoolNs += t;
        if (HALF_KERNEL.test(name)) mix.halfNormPoolNs += t;
      }
    }
  }
  for (const key of Object.keys(mix) as (keyof KernelMix)[]) if (key !== 'fusable' && key !== 'memoryBoundFp32ByAutocast') mix[key] /= n;
  for (const key of Object.keys(fu) as (keyof KernelMix['fusable'])[]) fu[key] /= n;
  for (const key of Object.keys(byAutocast) as (keyof KernelMix['memoryBoundFp32ByAutocast'])[]) byAutocast[key] /= n;
  return mix;
}
