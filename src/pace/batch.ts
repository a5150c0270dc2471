/**
 * The one batch model (pure): what a batch k times larger does to a step's GPU work, for every batch change (analyze's
 * `gpu-underused`, doctor's batch what-ifs, a generation loop's `decode-batching`). Per-sample work grows k-fold; the
 * work a step does once whatever its batch stays:
 * - the optimizer's update of the weights (the trace's `optimizer` kernels: each parameter once a step);
 * - in decode steps (one new token per sequence), all of it: their matmuls are matrix-vector products that read every
 *   weight once whatever the number of sequences, and their other kernels work on a token's activations a sequence,
 *   kilobytes, at each kernel's fixed cost (advice/bf16Weights.ts: a few microseconds each, latency more than bytes).
 *   That holds while the matmuls stay under the GPU's ridge point (a sequence does 2 flops per weight element, against
 *   the GPU's peak flops per byte of bandwidth for the matmuls' precision); past it they are compute-bound, and the
 *   work grows with the batch from there.
 *
 * Measured on the H200 (examples/levers/runs/h200, each window's GPU work a decode step): GPT-2 in bf16 at 4x the
 * sequences (decode_loop -> decode_loop_b4, _b4_d) 553 -> 619 and 625 us (+12%); in fp32 under CUDA graphs at 8x
 * (hf_generate_fp32_static_b1 -> _b8) 782 -> 1,197 us (+53%: cuBLAS picks split-K GEMMs over its matrix-vector kernel
 * at 8 rows). The model keeps 553 and 782 us: 11% and 35% under, a lower bound, where growing the GPU's work k-fold read
 * 2.2 and 6.3 ms (+255%, +423%). Nothing here is fitted to those pairs.
 */
import { gpuOfDevice } from '../gpus/catalogue.js';
import type { TraceMetrics } from '../trace/metrics/types.js';
import { fmtMs } from '../util/format.js';
import { type GpuPerStep, NO_GPU_PER_STEP, type Pipeline } from './pipeline.js';

/**
 * Sequences a decode step's matmuls take before they reach the GPU's ridge point: the peak flops per byte of bandwidth
 * for the precision most of their time runs in, over the 2 flops a sequence does per weight element of its bytes. Null
 * for a GPU the catalogue lacks or a window without matmuls.
 */
export function decodeRidgeSequences(m: TraceMetrics): number | null {
  const gpu = gpuOfDevice(m.devices[0]);
  if (!gpu || !(gpu.memoryBandwidth > 0)) return null;
  const p = m.precision;
  const classes = [
    { ns: p.tensorCore16Ns + p.tensorCore8Ns, tflops: gpu.bf16Tflops, bytes: 2 },
    { ns: p.tensorCoreTf32Ns, tflops: gpu.tf32Tflops, bytes: 4 },
    { ns: p.fp32Ns, tflops: gpu.fp32Tflops, bytes: 4 },
  ];
  const top = classes.reduce((a, c) => (c.ns > a.ns ? c : a));
  if (!(top.ns > 0) || !(top.tflops > 0)) return null;
  return ((top.tflops * 1e12) / gpu.memoryBandwidth) * (top.bytes / 2);
}

/**
 * The window's GPU work once a step: its optimizer's kernels; where its steps are decode steps of `decodeBatch`
 * sequences, all of its GPU work (`gpuNs`, window ns), up to the matmuls' ridge (decodeRidgeSequences: without it, or
 * without the batch, nothing is claimed beyond the optimizer's).
 */
export function gpuPerStepOf(m: TraceMetrics, gpuNs: number, decodeBatch: number | null = null): GpuPerStep {
  const ridge = decodeBatch !== null && decodeBatch > 0 ? decodeRidgeSequences(m) : null;
  if (ridge !== null && decodeBatch !== null && gpuNs > 0)
    return {
      ns: gpuNs,
      upToScale: ridge / decodeBatch,
      evidence: `decode steps: the GPU's work, ${fmtMs(gpuNs)} a step, reads the weights once and works on one token a sequence, so it stays a step's up to ${Math.floor(ridge)} sequences (the matmuls' ridge point on this GPU) and grows with them past it`,
    };
  const optimizer = Math.min(gpuNs, m.perStep.kernelNsByCategory.optimizer);
  return optimizer > 0
    ? { ns: optimizer, upToScale: null, evidence: `the optimizer's kernels ${fmtMs(optimizer)} a step (each weight updated once, whatever the batch)` }
    : NO_GPU_PER_STEP;
}

/**
 * The GPU stage with the batch `k` times larger than `p`'s: the work once a step stays (past its ridge it grows from
 * there), the rest grows k-fold. Null where the GPU is not timed.
 */
export function batchedGpuNs(p: Pipeline, k: number): number | null {
  const gpu = p.stages.gpu.ns;
  if (gpu === null) return null;
  const per = p.gpuPerStep;
  // Fixes made before (bf16 weights shortening a decode step's matmuls) leave less of it than was measured.
  const fixed = Math.min(gpu, per.ns * p.scale.gpu);
  const pastRidge = (scale: number) => (per.upToScale === null ? 1 : Math.max(1, scale / per.upToScale));
  return fixed * (pastRidge(p.batchScale * k) / pastRidge(p.batchScale)) + (gpu - fixed) * k;
}
