/**
 * What bf16 autocast does to a step's GPU work: the one model behind every finding whose fix is "train under bf16
 * autocast" (precision.ts's mixed-precision, compute.ts's no-tensor-cores). Pure: trace metrics in, the fix's GPU
 * work items out (pace/fix.ts applies them to the pipeline).
 *
 * - Matmuls move to the tensor cores: fp32 GEMMs with recorded shapes at a bf16 rate (this trace's own bf16 GEMMs,
 *   else a share of the catalogue's peak), other fp32 matmul time at an assumed speed-up, TF32 time at the ratio of
 *   the peaks.
 * - fp32 fused attention (SDPA's memory-efficient or math kernels on fp32 inputs) gets bf16 inputs, so flash.
 * - Memory-bound kernels move fewer bytes only where their inputs become bf16, and autocast adds casts of its own
 *   around the ops it keeps in fp32. Factors by kind of kernel, measured on two transformers whose fp32 run and bf16
 *   run were both profiled: a Hugging Face GPT-2 on an H100 (examples/realworld/runs/hf_trainer_gpt2{,_bf16}) and a
 *   torchvision ViT-B/16 on an H200 (examples/pace/runs/h200/gpu_bound{,_bf16}).
 */
import { catalogueName } from '../gpus/catalogue.js';
import { HALF_ALIGNMENT } from '../trace/metrics/kernels.js';
import type { GemmShapeStat, KernelMix, TraceMetrics } from '../trace/metrics/types.js';
import { FP32_KERNEL, HALF_KERNEL } from '../trace/kernelClass.js';
import { fmtFlops, fmtMs } from '../util/format.js';
import { isHalfDtype } from '../util/dtype.js';
import type { FixOp } from '../pace/fix.js';
import { gpuOf } from './rules/rule.js';

/**
 * Speed-up assumed for fp32 matmuls moved to tensor cores when the trace cannot say better (unknown GPU, no GEMM
 * shapes): dense TF32 is ~7x and bf16 ~15x fp32 SIMT peak on A100/H100; real GEMMs gain less, so 4x.
 */
export const TENSOR_CORE_SPEEDUP = 4;
/**
 * The bf16 GEMM rate by shape, when the trace has no bf16 GEMMs of its own to measure it: a call takes its flops at a
 * share of the catalogue's bf16 dense peak, plus a fixed cost. Fitted on the bf16 GEMMs of the profiled bf16 runs of
 * the fit set (examples/realworld/runs/hf_trainer_gpt2_bf16, H100; examples/pace/runs/h200/gpu_bound_bf16, H200;
 * examples/traces/scenarios/resnet50_amp{,_channels_last}, H100), the time-weighted squared log error of each shape's
 * time least; held out: examples/traces/gpt2_amp, examples/pace/runs/h200-d/{llmc_sdpa,mingpt_bf16_sdpa},
 * examples/doctor/runs/h100-host/alone_amp_cl (docs/validation/autocast.md).
 * - aligned shapes (M, N and K multiples of 8): 0.78 of the peak (GPT-2's and ViT-B/16's linear layers ran at
 *   550-800 TFLOP/s of 989 on an H100 and an H200);
 * - a dimension not a multiple of 8 (GPT-2's 50,257-wide vocabulary): 0.12. cuBLAS runs these without the aligned
 *   tensor-core kernels, 95-148 TFLOP/s on both cards, where fp32 SIMT ran them as fast as aligned ones: the output
 *   layer, 6% of the fp32 GEMM time, took 71% of the bf16 GEMM time of the Trainer's GPT-2;
 * - 6 us a call: the small GEMMs (a ResNet's classifier, 768 x 768 weight gradients) fall short of the rate.
 */
const TENSOR_CORE_EFFICIENCY = 0.78;
const MISALIGNED_TENSOR_CORE_EFFICIENCY = 0.12;
const GEMM_CALL_NS = 6_000;
/** A GEMM's dtype as the trace records it (aten's names and torch's): fp32. The 16-bit ones: util/dtype.ts's isHalfDtype. */
export const FP32_DTYPES: ReadonlySet<string> = new Set(['float', 'float32']);
/** fp32 fused attention to bf16 (flash): 12.7 -> 1.9 ms a step (GPT-2, H100), 30.4 -> 3.8 ms (ViT-B/16, H200). */
const FP32_ATTENTION_LEFT = 0.14;
/**
 * What remains of each kind of fp32 memory-bound kernel (KernelMix.memoryBoundFp32ByAutocast) under bf16 autocast:
 * - ops of autocast's fp32 list stay fp32, and their inputs and gradients are cast across precision around them: the
 *   casts took about their own time again (ViT: layer norms 5.6 ms, casts 6.5; GPT-2: norms, log-softmax and pow
 *   10.5 ms, casts 9.7), so 2;
 * - activations and dropout on a matmul's bf16 output: 0.65 (GELU 4.2 -> 2.9 ms; dropout 0.5 -> 0.3);
 * - copies (layout, `.contiguous()`) of bf16 activations: half the bytes, 0.5;
 * - reductions (bias gradients: the backward runs in bf16): 0.6 (4.2 -> 2.4; 2.0 -> 1.2);
 * - batch norm runs in the input's dtype (not on autocast's fp32 list): 0.5;
 * - other pointwise ops, mostly residual adds that promote to the fp32 stream: 0.85 (9.5 -> 7.4; 16.7 -> 14.8).
 */
const MEMORY_BOUND_LEFT: Record<keyof KernelMix['memoryBoundFp32ByAutocast'], number> = {
  keptFp32Ns: 2,
  activationNs: 0.65,
  copyNs: 0.5,
  reductionNs: 0.6,
  batchNormNs: 0.5,
  pointwiseNs: 0.85,
};

/**
 * Kernels autocast adds that the fp32 trace has no trace of: the casts of the weights to bf16 in the forward (4 bytes
 * read and 2 written a weight) and of their bf16 gradients to fp32 in the backward (2 and 4), 12 bytes a weight, as
 * memory-bound as the optimizer's update of the same weights: 28 bytes a weight for Adam (weight, gradient and two
 * moments read, three written), 20 for SGD with momentum. 12/28, from bytes, not fitted; the fp32 MLP of
 * examples/train/fp32_matmul.py (101M weights, fused AdamW 0.87 ms a step on an H200) gets 0.37 ms of casts.
 */
const WEIGHT_CASTS_OF_OPTIMIZER = 0.43;

/** How fast a GEMM would run in bf16 (halfGemmCallNs reads it). */
export interface HalfGemmRate {
  /** flop per ns of aligned shapes, and of shapes with a dimension not a multiple of the 16-bit alignment. */
  flopPerNs: number;
  misalignedFlopPerNs: number;
  /** Fixed cost of a call (0 where the rate was measured on this trace's calls: it holds theirs). */
  callNs: number;
  basis: string;
}

/**
 * The bf16 rate the fp32 GEMMs would run at: what this trace's own aligned bf16/fp16 GEMMs reached (misaligned shapes
 * at that rate times the ratio of the two efficiencies: a trace's own misaligned 16-bit GEMMs are mostly tiny ones, no
 * measure of a large one), else the device's catalogue peak times the efficiencies above; null when neither is known.
 */
export function halfGemmRate(m: TraceMetrics): HalfGemmRate | null {
  const half = m.gemmShapes.filter((g) => isHalfDtype(g.dtype) && g.misalignedDims.length === 0);
  const flops = half.reduce((a, g) => a + g.flopsPerCall * g.calls, 0);
  const ns = half.reduce((a, g) => a + g.gpuNs, 0);
  if (ns > 0 && flops > 0) {
    const aligned = flops / ns;
    const misaligned = (aligned * MISALIGNED_TENSOR_CORE_EFFICIENCY) / TENSOR_CORE_EFFICIENCY;
    return {
      flopPerNs: aligned,
      misalignedFlopPerNs: misaligned,
      callNs: 0,
      basis: `${(aligned * 1e-3).toFixed(0)} TFLOP/s measured on this trace's bf16/fp16 GEMMs, ${(misaligned * 1e-3).toFixed(0)} (x ${MISALIGNED_TENSOR_CORE_EFFICIENCY}/${TENSOR_CORE_EFFICIENCY}) where a dimension is not a multiple of ${HALF_ALIGNMENT}`,
    };
  }
  return catalogueHalfGemmRate(m);
}

/** The bf16 GEMM rate of the catalogue's peak for the trace's GPU and the efficiencies above; null for an unknown GPU. */
export function catalogueHalfGemmRate(m: TraceMetrics): HalfGemmRate | null {
  const gpu = gpuOf(m);
  if (gpu === null || !(gpu.bf16Tflops > 0)) return null;
  const tflops = gpu.bf16Tflops * TENSOR_CORE_EFFICIENCY;
  return {
    flopPerNs: tflops * 1e3,
    misalignedFlopPerNs: gpu.bf16Tflops * MISALIGNED_TENSOR_CORE_EFFICIENCY * 1e3,
    callNs: GEMM_CALL_NS,
    basis: `${tflops.toFixed(0)} TFLOP/s = ${TENSOR_CORE_EFFICIENCY} x ${catalogueName(gpu.name)}'s bf16 dense peak ${gpu.bf16Tflops}, ${(gpu.bf16Tflops * MISALIGNED_TENSOR_CORE_EFFICIENCY).toFixed(0)} (x ${MISALIGNED_TENSOR_CORE_EFFICIENCY}) where a dimension is not a multiple of ${HALF_ALIGNMENT}, + ${fmtMs(GEMM_CALL_NS)} a call`,
  };
}

/**
 * One call of GEMM shape `g` in bf16 at `rate` (ns): a dimension not a multiple of 8 costs the misaligned rate, unless
 * `padded` (the shape padded to the alignment: the aligned rate).
 */
export function halfGemmCallNs(g: GemmShapeStat, rate: HalfGemmRate, padded = false): number {
  const misaligned = !padded && [g.m, g.n, g.k].some((d) => d % HALF_ALIGNMENT !== 0);
  return g.flopsPerCall / (misaligned ? rate.misalignedFlopPerNs : rate.flopPerNs) + rate.callNs;
}

/** Fused attention kernels that ran on fp32 inputs (SDPA's memory-efficient `fmha_cutlass*_f32`, a float template). */
function fp32AttentionNs(m: TraceMetrics): number {
  const fused = m.attention?.fused;
  if (!fused || fused.topKernel === null) return 0;
  const k = fused.topKernel;
  return (/_f32_/.test(k) || FP32_KERNEL.test(k)) && !HALF_KERNEL.test(k) ? fused.kernelNs : 0;
}

export interface AutocastEffect {
  /** The GPU work items the fix changes, for the pipeline (pace/fix.ts). */
  ops: FixOp[];
  /** GPU time saved per step (window ns): the sum of the items' savings. */
  savedNs: number;
  /** The arithmetic, in words. */
  arithmetic: string;
}

/**
 * bf16 autocast applied to the step of `m`. `tf32Ratio` is the TF32 over the bf16 tensor-core peak (0.5 when the GPU
 * is unknown); `transposesGo` adds cuDNN's NCHW<->NHWC transposes, which channels_last beside autocast removes.
 */
export function bf16AutocastEffect(m: TraceMetrics, tf32Ratio: number, transposesGo: boolean): AutocastEffect {
  const n = Math.max(1, m.steps.length);
  const p = m.precision;
  const mix = m.kernelMix;
  const tf32 = p.tensorCoreTf32Ns / n;
  const simt = p.fp32Ns / n;
  const parts: string[] = [];
  // The GEMMs on fp32 tensors, on the SIMT cores or at the TF32 rate, with known shapes: their flops at the bf16 rate;
  // the rest of each kind's time at its assumed ratio (nanoGPT turns TF32 on: its GEMMs, 32.1 ms a step, ran at TF32).
  const rate = halfGemmRate(m);
  const shaped = m.gemmShapes.filter((g) => g.dtype !== null && FP32_DTYPES.has(g.dtype));
  const fp32GemmNs = simt + tf32;
  const shapedNs = Math.min(fp32GemmNs, shaped.reduce((a, g) => a + g.gpuNs, 0) / n);
  const shapedFlops = shaped.reduce((a, g) => a + g.flopsPerCall * g.calls, 0) / n;
  // Of the bf16 time, what shapes with a dimension not a multiple of 8 take beyond the aligned rate: its own work item
  // (misaligned-gemms), so that padding them (compile's pad_mm, misaligned-shapes) after this fix takes it back.
  let misalignedExcess = 0;
  let bf16Ns = 0;
  // The shaped GEMMs' time, SIMT's first (a convnet's TF32 time is its convolutions, which have no GEMM shape here),
  // and what it keeps once in bf16 (aligned rate; the excess is its own item).
  let shapedSimtNs = 0;
  let shapedTf32Ns = 0;
  let keeps = 0;
  if (fp32GemmNs > 0 && rate !== null && shapedNs > 0 && shapedFlops > 0) {
    bf16Ns = shaped.reduce((a, g) => a + halfGemmCallNs(g, rate) * g.calls, 0) / n;
    const alignedNs = shaped.reduce((a, g) => a + halfGemmCallNs(g, rate, true) * g.calls, 0) / n;
    misalignedExcess = shapedNs - alignedNs > 0 ? Math.min(bf16Ns - alignedNs, shapedNs - alignedNs) : 0;
    shapedSimtNs = Math.min(simt, shapedNs);
    shapedTf32Ns = shapedNs - shapedSimtNs;
    keeps = Math.max(0, bf16Ns - misalignedExcess) / shapedNs;
    // Where some ran at TF32, how much (an fp32 GEMM alone reads as before).
    const kinds = shapedTf32Ns > 0 ? ` (${shapedSimtNs > 0 ? `SIMT ${fmtMs(shapedSimtNs)}, ` : ''}TF32 ${fmtMs(shapedTf32Ns)})` : '';
    parts.push(
      `fp32 GEMMs ${fmtMs(shapedNs)} a step${kinds} -> about ${fmtMs(bf16Ns)} in bf16 (their ${fmtFlops(shapedFlops)} at ${rate.basis})${simt - shapedSimtNs > 0 ? `; other fp32 matmul ${fmtMs(simt - shapedSimtNs)} x 1/${TENSOR_CORE_SPEEDUP}` : ''}${tf32 - shapedTf32Ns > 0 ? `; TF32 matmuls ${fmtMs(tf32 - shapedTf32Ns)} x ${tf32Ratio.toFixed(2)}` : ''}`,
    );
  } else {
    if (simt > 0) parts.push(`fp32 matmul ${fmtMs(simt)} x 1/${TENSOR_CORE_SPEEDUP} (assumed tensor-core speed-up)`);
    if (tf32 > 0) parts.push(`TF32 matmuls ${fmtMs(tf32)} x ${tf32Ratio.toFixed(2)}`);
  }
  const simtLeft = simt > 0 ? (shapedSimtNs * keeps + (simt - shapedSimtNs) / TENSOR_CORE_SPEEDUP) / simt : 1;
  const tf32Left = tf32 > 0 ? (shapedTf32Ns * keeps + (tf32 - shapedTf32Ns) * tf32Ratio) / tf32 : 1;
  const simtSaved = simt * (1 - simtLeft);
  const tf32Saved = tf32 * (1 - tf32Left);
  const attention = fp32AttentionNs(m);
  if (attention > 0) parts.push(`fp32 fused attention ${fmtMs(attention)} x ${FP32_ATTENTION_LEFT} (flash on bf16 inputs)`);
  const kinds = mix.memoryBoundFp32ByAutocast;
  const memNs = Object.values(kinds).reduce((a, x) => a + x, 0);
  const memLeft = (Object.keys(kinds) as (keyof typeof kinds)[]).reduce((a, k) => a + kinds[k] * MEMORY_BOUND_LEFT[k], 0);
  if (memNs > 0)
    parts.push(
      `fp32 memory-bound ${fmtMs(memNs)} -> ${fmtMs(memLeft)} (autocast's fp32 ops ${fmtMs(kinds.keptFp32Ns)} x ${MEMORY_BOUND_LEFT.keptFp32Ns} with their casts, activations ${fmtMs(kinds.activationNs)} x ${MEMORY_BOUND_LEFT.activationNs}, copies ${fmtMs(kinds.copyNs)} x ${MEMORY_BOUND_LEFT.copyNs}, reductions ${fmtMs(kinds.reductionNs)} x ${MEMORY_BOUND_LEFT.reductionNs}, batch norm ${fmtMs(kinds.batchNormNs)} x ${MEMORY_BOUND_LEFT.batchNormNs}, other pointwise ${fmtMs(kinds.pointwiseNs)} x ${MEMORY_BOUND_LEFT.pointwiseNs})`,
    );
  // The weights' casts: each step casts every weight a matmul reads to bf16 and its bf16 gradient back to fp32. The
  // optimizer also updates weights no matmul reads (an embedding table): the casts are at most twice the bf16 GEMMs'
  // time, as their 12 bytes a weight are at most twice the 6 the three GEMMs of its layer read of it.
  const weightCasts = Math.min(mix.fusable.optimizerNs * WEIGHT_CASTS_OF_OPTIMIZER, 2 * bf16Ns);
  if (weightCasts > 0)
    parts.push(
      `the weights' casts to bf16 and their gradients' back: ${fmtMs(weightCasts)} (the optimizer's ${fmtMs(mix.fusable.optimizerNs)} x ${WEIGHT_CASTS_OF_OPTIMIZER})`,
    );
  const transposes = transposesGo ? mix.nchwTransposeNs : 0;
  if (transposes > 0) parts.push(`layout transposes ${fmtMs(transposes)} go`);
  const ops: FixOp[] = [
    ...(tf32 > 0 ? [{ kind: 'gpu', work: 'tf32-matmul', ns: tf32, factor: tf32Left } satisfies FixOp] : []),
    ...(simt > 0 ? [{ kind: 'gpu', work: 'fp32-matmul', ns: simt, factor: simtLeft } satisfies FixOp] : []),
    ...(misalignedExcess > 0 ? [{ kind: 'gpu', work: 'misaligned-gemms', ns: 0, factor: 1, addNs: misalignedExcess } satisfies FixOp] : []),
    ...(attention > 0 ? [{ kind: 'gpu', work: 'fp32-attention', ns: attention, factor: FP32_ATTENTION_LEFT } satisfies FixOp] : []),
    ...(memNs > 0 || weightCasts > 0
      ? [{ kind: 'gpu', work: 'memory-bound', ns: memNs, factor: memNs > 0 ? memLeft / memNs : 1, addNs: weightCasts } satisfies FixOp]
      : []),
    ...(transposes > 0 ? [{ kind: 'gpu', work: 'nchw-transposes', ns: transposes, factor: 0 } satisfies FixOp] : []),
  ];
  const savedNs = simtSaved + tf32Saved - misalignedExcess + attention * (1 - FP32_ATTENTION_LEFT) + (memNs - memLeft) - weightCasts + transposes;
  return {
    ops,
    savedNs,
    arithmetic: `${parts.join('; ')}: ${fmtMs(savedNs)} of GPU work saved per step (the optimizer's fp32 update unchanged)`,
  };
}
