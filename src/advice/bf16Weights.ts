/**
 * What bf16 weights do to a generation loop's matmuls (pure): the model behind the `bf16-weights` finding, the
 * precision lever of decode steps, where autocast is the wrong fix (it would cast every weight again at each step).
 *
 * A decode step multiplies one new token per sequence by every weight: its GEMMs are matrix-vector products whose time
 * is the bytes they read, over the memory's bandwidth, on top of a fixed cost per kernel. On an H200, Hugging Face
 * GPT-2 decoding at batch 1 in bf16 (examples/levers/runs/h200/hf_generate) took 4.0 us for a 768x768 weight (1.2 MB)
 * and 29.9 us for the 768x50257 head (77 MB): about 3.6 us + bytes / 2.9 TB/s. Half the bytes thus halve only the
 * second term: for GPT-2's small layers bf16 saves a tenth to a quarter of their time, for a 7B model's (4096x4096)
 * nearly half.
 *
 * Each fp32 GEMM shape of the trace is costed so:
 * - memory-bound ones (their flops per byte below the GPU's fp32 ridge point): `fixed + bytes / bandwidth` with the
 *   line fitted on this trace's own memory-bound GEMMs of every dtype (two sizes at least, 2x apart), else the
 *   catalogue's peak bandwidth (the smallest saving the bytes allow); half the bytes term goes from each call's
 *   measured time;
 * - compute-bound ones (a prefill, a large batch): their flops at the bf16 tensor-core rate (autocast.ts halfGemmRate).
 * fp32 matmul time without a recorded shape, and the elementwise kernels (a few microseconds each at decode sizes,
 * latency more than bytes), are left as they are; where no GEMM has a shape (kernels replayed from a CUDA graph) and
 * the steps are decode steps of a known batch, `unshapedDecodeEffect` costs them as a whole.
 */
import type { FixOp } from '../pace/fix.js';
import type { GemmShapeStat, TraceMetrics } from '../trace/metrics/types.js';
import { dtypeBytes, isHalfDtype } from '../util/dtype.js';
import { fmtMs } from '../util/format.js';
import { type AutocastEffect, FP32_DTYPES, halfGemmCallNs, halfGemmRate } from './autocast.js';
import { gpuOf } from './rules/rule.js';

/** Flops per byte below which a GEMM is memory-bound, where the GPU is not in the catalogue (an H100's fp32 ridge is 20). */
const DEFAULT_RIDGE = 10;
/** The fitted line needs GEMMs of at least two sizes this far apart, or its slope is noise. */
const FIT_MIN_SPREAD = 2;

/** Bytes a GEMM call reads and writes: its three operands at `bytesPerElement`. */
export function gemmBytes(g: GemmShapeStat, bytesPerElement: number): number {
  return bytesPerElement * g.batch * (g.m * g.k + g.k * g.n + g.m * g.n);
}

/** A float GEMM's element size (fp32 or 16-bit; util/dtype.ts); null for the others (integer GEMMs), which are not fitted. */
function elementBytes(dtype: string | null): number | null {
  return dtype !== null && (FP32_DTYPES.has(dtype) || isHalfDtype(dtype)) ? dtypeBytes(dtype) : null;
}

/** A memory-bound GEMM call's time: `fixedNs` plus its bytes at `nsPerByte`. */
export interface GemmLine {
  fixedNs: number;
  nsPerByte: number;
  /** Memory-bound GEMM shapes the line was fitted on. */
  shapes: number;
}

/**
 * The line `ns per call = fixed + bytes x nsPerByte` fitted by least squares on the memory-bound GEMM shapes of `m`
 * (any dtype: the bytes are what they move); null with fewer than two sizes FIT_MIN_SPREAD apart, or no positive slope.
 */
export function fitGemmLine(m: TraceMetrics): GemmLine | null {
  const ridge = ridgeOf(m);
  const points: { x: number; y: number }[] = [];
  for (const g of m.gemmShapes) {
    const size = elementBytes(g.dtype);
    if (size === null || g.calls <= 0) continue;
    const bytes = gemmBytes(g, size);
    if (bytes > 0 && memoryBound(g, bytes, ridge)) points.push({ x: bytes, y: g.gpuNs / g.calls });
  }
  if (points.length < 2) return null;
  const xs = points.map((p) => p.x);
  if (Math.max(...xs) < FIT_MIN_SPREAD * Math.min(...xs)) return null;
  const n = points.length;
  const mx = xs.reduce((a, x) => a + x, 0) / n;
  const my = points.reduce((a, p) => a + p.y, 0) / n;
  const sxy = points.reduce((a, p) => a + (p.x - mx) * (p.y - my), 0);
  const sxx = points.reduce((a, p) => a + (p.x - mx) ** 2, 0);
  let slope = sxy / sxx;
  let fixed = my - slope * mx;
  if (fixed < 0) {
    // Through the origin: no kernel takes less than nothing.
    fixed = 0;
    slope = points.reduce((a, p) => a + p.x * p.y, 0) / points.reduce((a, p) => a + p.x * p.x, 0);
  }
  return slope > 0 ? { fixedNs: fixed, nsPerByte: slope, shapes: n } : null;
}

/** Fewer flops per byte moved than the GPU's ridge point: the GEMM waits on memory, not on its arithmetic. */
function memoryBound(g: GemmShapeStat, bytes: number, ridge: number): boolean {
  return g.flopsPerCall / bytes < ridge;
}

function ridgeOf(m: TraceMetrics): number {
  const gpu = gpuOf(m);
  return gpu && gpu.fp32Tflops > 0 && gpu.memoryBandwidth > 0 ? (gpu.fp32Tflops * 1e12) / gpu.memoryBandwidth : DEFAULT_RIDGE;
}

export interface Bf16WeightsEffect extends AutocastEffect {
  /** The fp32 GEMMs' time per step (window ns), and the memory-bound part of it. */
  fp32GemmNs: number;
  memoryBoundNs: number;
  /** The line the memory-bound GEMMs were costed by; null: the catalogue's peak bandwidth (or none memory-bound). */
  line: GemmLine | null;
}

/** The fp32 GEMMs of `m` with bf16 weights: null when the trace has none, or nothing to cost them by. */
export function bf16WeightsEffect(m: TraceMetrics): Bf16WeightsEffect | null {
  const nSteps = Math.max(1, m.steps.length);
  const fp32 = m.gemmShapes.filter((g) => g.dtype !== null && FP32_DTYPES.has(g.dtype) && g.calls > 0);
  if (fp32.length === 0) return null;
  const ridge = ridgeOf(m);
  const line = fitGemmLine(m);
  const gpu = gpuOf(m);
  const peakNsPerByte = gpu && gpu.memoryBandwidth > 0 ? 1e9 / gpu.memoryBandwidth : null;
  const rate = halfGemmRate(m);
  // Window ns before and after, by kind of GEMM.
  const mem = { ns: 0, afterNs: 0 };
  const compute = { ns: 0, afterNs: 0 };
  for (const g of fp32) {
    const perCall = g.gpuNs / g.calls;
    const bytes = gemmBytes(g, dtypeBytes(g.dtype));
    let after = perCall;
    const bound = memoryBound(g, bytes, ridge);
    if (bound) {
      // Half the bytes term goes from the call's measured time (the line's fixed cost stays, and so does whatever
      // this shape takes beyond the line).
      const nsPerByte = line?.nsPerByte ?? peakNsPerByte;
      if (nsPerByte !== null) after = Math.max(0, perCall - (nsPerByte * bytes) / 2);
    } else if (rate !== null) after = Math.min(perCall, halfGemmCallNs(g, rate));
    const kind = bound ? mem : compute;
    kind.ns += g.gpuNs;
    kind.afterNs += after * g.calls;
  }
  const beforeNs = mem.ns + compute.ns;
  const afterNs = mem.afterNs + compute.afterNs;
  if (beforeNs <= 0 || afterNs >= beforeNs) return null;
  const perStep = (ns: number) => ns / nSteps;
  const parts: string[] = [];
  if (mem.ns > 0)
    parts.push(
      `memory-bound fp32 GEMMs ${fmtMs(perStep(mem.ns))} a step -> ${fmtMs(perStep(mem.afterNs))} at half the bytes (${
        line !== null
          ? `each call ${fmtMs(line.fixedNs)} + its bytes at ${(1 / line.nsPerByte / 1e3).toFixed(1)} TB/s, fitted on ${line.shapes} memory-bound GEMM shapes of this trace`
          : "the catalogue's peak bandwidth for the bytes, the rest of each call fixed"
      })`,
    );
  if (compute.ns > 0)
    parts.push(
      `compute-bound fp32 GEMMs ${fmtMs(perStep(compute.ns))} a step -> ${fmtMs(perStep(compute.afterNs))}${rate !== null ? ` at ${rate.basis}` : ' (no bf16 rate known: unchanged)'}`,
    );
  const savedNs = perStep(beforeNs - afterNs);
  return {
    ops: [{ kind: 'gpu', work: 'fp32-matmul', ns: perStep(beforeNs), factor: afterNs / beforeNs }],
    savedNs,
    arithmetic: `${parts.join('; ')}: ${fmtMs(savedNs)} of GPU work saved per step (fp32 matmuls without a recorded shape, and elementwise kernels, unchanged)`,
    fp32GemmNs: perStep(beforeNs),
    memoryBoundNs: perStep(mem.ns),
    line,
  };
}

/** An attention kernel that runs in fp32 (PyTorch's memory-efficient kernel for float: `fmha_cutlassF_f32_...`). */
const FP32_ATTENTION_KERNEL = /_f32_|float/i;

/**
 * bf16 weights for decode steps whose fp32 GEMMs carry no shapes (replayed from a CUDA graph: a static-cache
 * generate()). A decode step at batch b multiplies b rows by each weight: 2b flops for every 4 bytes of fp32 weight,
 * b/2 flops a byte. Below the GPU's fp32 ridge (b < 2 x ridge: 28 on an H200) the GEMMs wait on the weights' bytes,
 * and bf16 halves those: each GEMM is taken to take half its measured time. The KV cache follows the weights' dtype,
 * so an fp32 attention kernel (a decode step's attention reads the cache) is taken to halve too. That is the bytes'
 * share alone; traces with shapes show a fixed part of each call at small sizes that does not halve (GPT-2 at batch 1
 * on an H200: 290 -> 232 us), which kernels without shapes cannot show, while fp32's SIMT kernels at batch 8 ran
 * below the bandwidth bf16's reach (the same model there: fp32 GEMMs 585 us and fp32 attention 313 us a decode step;
 * bf16 weights then took the step from 2.76 to 2.19 ms, plain runs of one call). Null above the ridge (bf16's
 * tensor-core rate would need the shapes) or without the batch.
 */
export function unshapedDecodeEffect(m: TraceMetrics, fp32GemmNs: number, decodeBatch: number | null): AutocastEffect | null {
  if (decodeBatch === null || !(fp32GemmNs > 0)) return null;
  const ridge = ridgeOf(m);
  if (decodeBatch / 2 >= ridge) return null;
  const fused = m.attention.fused;
  const attentionNs = fused && fused.kernelNs > 0 && fused.topKernel !== null && FP32_ATTENTION_KERNEL.test(fused.topKernel) ? fused.kernelNs : 0;
  const savedNs = (fp32GemmNs + attentionNs) / 2;
  const attentionText =
    attentionNs > 0 ? `; the fp32 attention kernels (${fused?.topKernel?.slice(0, 40)}...) ${fmtMs(attentionNs)} a step, over a KV cache in the weights' dtype, -> ${fmtMs(attentionNs / 2)}` : '';
  return {
    ops: [
      { kind: 'gpu', work: 'fp32-matmul', ns: fp32GemmNs, factor: 0.5 },
      ...(attentionNs > 0 ? [{ kind: 'gpu', work: 'fp32-attention', ns: attentionNs, factor: 0.5 } satisfies FixOp] : []),
    ],
    savedNs,
    arithmetic: `fp32 GEMMs ${fmtMs(fp32GemmNs)} a decode step at batch ${decodeBatch}: ${decodeBatch / 2} flops a byte of weight, under the GPU's fp32 ridge (${ridge.toFixed(0)}), so they wait on the weights' bytes, which bf16 halves: ${fmtMs(fp32GemmNs / 2)}${attentionText} (shapes not recorded, so no fixed cost per call is told apart)`,
  };
}
