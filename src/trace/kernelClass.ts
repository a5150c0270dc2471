/**
 * Classifies GPU activities by name: what kind of work a kernel does, and for
 * matrix multiplies whether it runs on tensor cores and in which precision.
 * Collectives are recognised from NCCL args first (kernel names change between
 * NCCL releases), names second. The one home of what a kernel's name says of its
 * element type (HALF_KERNEL, FP16_KERNEL, FP32_KERNEL) and of Inductor's Triton
 * kernels (isInductorKernel); a dtype's own name is util/dtype.ts's.
 */
import { isHalfDtype } from '../util/dtype.js';

export const KernelCategory = {
  gemm: 0,
  attention: 1,
  conv: 2,
  elementwise: 3,
  reduction: 4,
  optimizer: 5,
  communication: 6,
  memcpy: 7,
  memset: 8,
  other: 9,
} as const;
export type KernelCategory = (typeof KernelCategory)[keyof typeof KernelCategory];
export const CATEGORY_NAMES = [
  'gemm',
  'attention',
  'conv',
  'elementwise',
  'reduction',
  'optimizer',
  'communication',
  'memcpy',
  'memset',
  'other',
] as const;
export type CategoryName = (typeof CATEGORY_NAMES)[number];

/** Precision of a matrix-multiply kernel. */
export const MatmulPrecision = {
  notMatmul: 0,
  tensorCore16: 1, // bf16 / fp16 on tensor cores
  tensorCoreTf32: 2,
  tensorCore8: 3, // fp8 / int8
  fp32: 4, // SIMT fp32/fp64: no tensor cores
  unknown: 5,
} as const;
export type MatmulPrecision = (typeof MatmulPrecision)[keyof typeof MatmulPrecision];
export const PRECISION_NAMES = [
  'n/a',
  'bf16/fp16 tensor cores',
  'tf32 tensor cores',
  'fp8/int8 tensor cores',
  'fp32 (no tensor cores)',
  'unknown',
] as const;

const COMM = /nccl|^hccl|rccl|allreduce|all_reduce|allgather|reducescatter|sendrecv/i;
const ATTENTION = /flash|fmha|attention|sdpa|attn/i;
const CONV = /conv|implicit_gemm|fprop|dgrad|wgrad|winograd/i;
const GEMM = /gemm|gemv|cutlass|nvjet|cublas|xmma|matmul|_mm_|splitKreduce|\bmm\b/i;
const OPTIMIZER = /multi_tensor_apply|adam|sgd|lamb(?!da)|_foreach|fused_adam|optimizer|lerp_scalar|addcdiv|addcmul/i;
const REDUCTION =
  /reduce|softmax|norm|sum_kernel|mean|cross_entropy|nll_loss|max_pool|avg_pool|argmax|cumsum|scan|topk|sort|batch_norm|bn_fw|bn_bw|layer_norm|GammaBeta|welford|var_|statistics/i;
const ELEMENTWISE =
  /nchwToNhwc|nhwcToNchw|elementwise|vectorized|unrolled|CatArray|fill|copy|index|gather|scatter|where|clamp|cast|_to_|dropout|fused_dropout|gelu|relu|silu|tanh|sigmoid|embedding|pointwise|triton_poi/i;

export function categoriseKernel(name: string, hasCollectiveArgs: boolean): KernelCategory {
  if (hasCollectiveArgs || COMM.test(name)) return KernelCategory.communication;
  if (ATTENTION.test(name)) return KernelCategory.attention;
  if (CONV.test(name)) return KernelCategory.conv;
  if (GEMM.test(name)) return KernelCategory.gemm;
  if (OPTIMIZER.test(name)) return KernelCategory.optimizer;
  if (REDUCTION.test(name) || /triton_(red|per)_/.test(name)) return KernelCategory.reduction;
  if (ELEMENTWISE.test(name)) return KernelCategory.elementwise;
  return KernelCategory.other;
}

/** Kernel-name markers of tensor-core instructions (HMMA/GMMA tiles, tensorop, wgmma). */
const TC16 = /bf16|f16|fp16|half|h884|h1688|h16816|hmma|s16816gemm_bf16|_bf16_|16816fprop_optimized_bf16/i;
const TCTF32 = /tf32|s1688|s16816|tensorop_s|xmma.*f32f32_tf32/i;
const TC8 = /e4m3|e5m2|fp8|i8816|imma|int8/i;
const SIMT = /simt|sgemm(?!.*tensorop)|ffma|dgemm|gemv|f32f32_f32f32_f32/i;
const TC_GENERIC = /tensorop|wgmma|gmma|hmma|nvjet|sm90_xmma|sm80_xmma|flash|fmha/i;
/** A 16-bit float element type in a kernel's name (template arguments, `_bf16`, `_f16`): bf16 or fp16. */
export const HALF_KERNEL = /BFloat16|bfloat16|__nv_bfloat16|\bbf16\b|_bf16|c10::Half|__half\b|\bhalf\b|\bfp16\b|_f16/;
/** fp16 (not bf16) in a kernel's name. */
export const FP16_KERNEL = /c10::Half|__half\b|\bhalf\b|\bfp16\b/;
/** fp32 in a kernel's template arguments or name. */
export const FP32_KERNEL = /<float\b|\(float\b|, float\b|_f32f32|\bfloat\)|FloatType|<float,/;
/**
 * The 16-bit element types a matmul kernel's template arguments name, for its precision when no tile marker (TC16)
 * did: stricter than HALF_KERNEL (a whole `bfloat16` word, `__half` and c10's types only), which is what the reports
 * were measured with (HALF_KERNEL here moves some of the shipped ResNet traces' unknown-precision matmuls to bf16).
 */
const SIXTEEN_BIT_TYPE = /__nv_bfloat16|\bbfloat16\b|__half\b|c10::BFloat16|c10::Half/;
/** Inductor's generated kernels (a compiled model): `triton_poi_...`, `triton_red_...`, `triton_per_...`, `triton_tem_...`. */
const INDUCTOR_KERNEL = /^triton_|\btriton_(poi|red|per|tem)_/;

export function isInductorKernel(name: string): boolean {
  return INDUCTOR_KERNEL.test(name);
}

/**
 * Precision of a matmul-like kernel from its name, refined by the dtype of
 * the CPU op that launched it (`float`, `c10::BFloat16`, ...) when known.
 */
export function matmulPrecision(name: string, opDtype: string | null): MatmulPrecision {
  if (TC8.test(name) && !/tf32|bf16|f16/i.test(name)) return MatmulPrecision.tensorCore8;
  // 16-bit before tf32: `tensorop_bf16_s1688gemm_bf16` names the bf16 variant of the s1688 tile.
  if (TC16.test(name) && !/f32f32_f32f32_f32/.test(name)) return MatmulPrecision.tensorCore16;
  if (TCTF32.test(name)) return MatmulPrecision.tensorCoreTf32;
  // A 16-bit matrix-vector product (a decode step at batch 1: cuBLAS's `gemv2T_kernel_val<..., __nv_bfloat16, ...>`)
  // runs on CUDA cores but is no fp32 matmul: a bf16 model is already in the precision the fp32 rules ask for.
  if (SIXTEEN_BIT_TYPE.test(name) || isHalfDtype(opDtype)) return MatmulPrecision.tensorCore16;
  if (SIMT.test(name)) return MatmulPrecision.fp32;
  if (opDtype !== null) {
    if (/^(float|double)$/.test(opDtype)) {
      // cuBLASLt (nvjet) and xmma kernels carry no dtype in the name; a float op
      // on them runs in tf32 only when allowed, which the name would show.
      return TC_GENERIC.test(name) ? MatmulPrecision.tensorCoreTf32 : MatmulPrecision.fp32;
    }
  }
  return MatmulPrecision.unknown;
}

/** Memcpy kinds from Kineto's `Memcpy HtoD (Pageable -> Device)` names. */
export const CopyKind = {
  none: 0,
  h2dPageable: 1,
  h2dPinned: 2,
  d2hPageable: 3,
  d2hPinned: 4,
  d2d: 5,
  p2p: 6,
  other: 7,
} as const;
export type CopyKind = (typeof CopyKind)[keyof typeof CopyKind];
export const COPY_KIND_NAMES = ['none', 'HtoD pageable', 'HtoD pinned', 'DtoH pageable', 'DtoH pinned', 'DtoD', 'PtoP', 'other'] as const;

export function copyKind(name: string): CopyKind {
  const dir = /Memcpy (\w+)/.exec(name)?.[1] ?? '';
  const pageable = /Pageable/i.test(name);
  switch (dir) {
    case 'HtoD':
      return pageable ? CopyKind.h2dPageable : CopyKind.h2dPinned;
    case 'DtoH':
      return pageable ? CopyKind.d2hPageable : CopyKind.d2hPinned;
    case 'DtoD':
      return CopyKind.d2d;
    case 'PtoP':
      return CopyKind.p2p;
    default:
      return CopyKind.other;
  }
}

/** Runtime API calls, by what they mean for the GPU timeline. */
export const RuntimeKind = {
  launch: 0,
  memcpy: 1,
  memset: 2,
  sync: 3,
  other: 4,
} as const;
export type RuntimeKind = (typeof RuntimeKind)[keyof typeof RuntimeKind];

export function runtimeKind(name: string): RuntimeKind {
  if (/^(cuda|cu)(LaunchKernel|LaunchCooperativeKernel|GraphLaunch|LaunchKernelEx|LaunchKernelExC)/.test(name)) return RuntimeKind.launch;
  if (/Synchronize$|^cudaMemcpy$|^cuMemcpyDtoH|^cudaMemcpyFromSymbol$|^cudaMemcpy2D$/.test(name)) return RuntimeKind.sync;
  if (/Memcpy/.test(name)) return RuntimeKind.memcpy;
  if (/Memset/.test(name)) return RuntimeKind.memset;
  return RuntimeKind.other;
}

/**
 * A copy that keeps its dtype and reads a strided view (torch's `direct_copy_kernel_cuda` on its no-cast path, which it
 * takes for a non-contiguous copy of one dtype): a layout change, `.contiguous()` or a reshape of a transposed view,
 * never a cast (casts load and store with a cast, or run the contiguous vectorized path).
 */
export function isLayoutCopy(name: string): boolean {
  return /gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda/.test(name);
}

/**
 * A kernel's name cut to what it does, for evidence lines: torch's elementwise kernels carry their functor or op in
 * template arguments hundreds of characters long (`vectorized_elementwise_kernel<4, AUnaryFunctor<..., MulFunctor<float>
 * >, ...>`: "MulFunctor (elementwise)"); a cast says its target (`direct_copy_kernel_cuda ... lambda(float)`: "copy to
 * float"). Other names lose their parameter list, and where still longer than 70 characters are cut after a whole
 * template argument or name part, never inside one (issue 47: `cutlass_80_simt_sgemm_2...`).
 */
export function kernelLabel(name: string): string {
  const cast = /direct_copy_kernel_cuda.*?\{lambda\(([\w:]+)\)#\d+\}/.exec(name);
  if (cast) return `copy to ${cast[1]!.replace('c10::', '')}`;
  const softmax = /\b(softmax_warp_(?:forward|backward)|cunn_SoftMax\w+|masked_softmax\w*)/.exec(name);
  if (softmax) return softmax[1]!;
  const op = /\b(masked_fill|fused_dropout|dropout|where)_?kernel/i.exec(name);
  if (op) return `${op[1]} (elementwise)`;
  const functor = /::(\w+Functor)</.exec(name.replace(/::(?:AUnary|BUnary|Binary)Functor</g, ''));
  if (functor && /elementwise_kernel/.test(name)) return `${functor[1]} (elementwise)`;
  const bare = name.replace(/^void /, '');
  if (bare.length <= 70) return bare;
  const noArgs = bare.replace(/\((?:[^()]|\([^()]*\))*\)\s*$/, '');
  if (noArgs.length <= 70) return noArgs;
  // the last separator within the first 70 characters: a name part or a template argument ends there
  // (an identifier of underscored parts alone, as cuBLAS's sm80_xmma_gemm_..., is cut between two parts)
  const at = (seps: string[]) => Math.max(...seps.map((sep) => noArgs.lastIndexOf(sep, 70)));
  const between = at([',', '<', ' ', '::']);
  const cut = between > 20 ? between : at(['_']);
  return `${noArgs.slice(0, cut > 20 ? cut + (noArgs.startsWith('<', cut) ? 1 : 0) : 70)}...`;
}
