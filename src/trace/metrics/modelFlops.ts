/**
 * Achieved model TFLOP/s and MFU from the trace alone: the FLOPs of the matmuls and convolutions
 * recorded with their shapes (record_shapes), and of attention (hand-written attention's matmuls are GEMMs with shapes;
 * SDPA's fused ops carry theirs: attention.ts), over the step time, against the GPU's dense peak for the
 * precision the matmuls ran in. A floor: attention kernels without an op that records their shapes (the flash-attn
 * package) add FLOPs it does not count, so it is given only when the counted ops carry most of the matmul time.
 */
import { lookupGpu } from '../../gpus/catalogue.js';
import type { ConvolutionTotals } from './kernels.js';
import type { AttentionStats, GemmShapeStat, ModelFlops, NsByCategory, PrecisionStats } from './types.js';

/** Below this share of matmul time with known FLOPs the figure would mislead (convolutions of an older torch without Concrete Inputs). */
const MIN_COVERED_SHARE = 0.5;

export function modelFlops(
  gemmShapes: readonly GemmShapeStat[],
  convolutions: ConvolutionTotals,
  attention: AttentionStats,
  precision: PrecisionStats,
  kernelNsPerStep: NsByCategory,
  steps: number,
  stepNs: number,
  deviceName: string | null,
): ModelFlops | null {
  const n = Math.max(1, steps);
  const gpu = deviceName ? lookupGpu(deviceName) : null;
  if (gpu === null || stepNs <= 0) return null;
  const gemmFlopsPerStep = gemmShapes.reduce((a, g) => a + g.flopsPerCall * g.calls, 0) / n;
  const convFlopsPerStep = convolutions.flops / n;
  // Fused attention's FLOPs come from SDPA's ops; its kernels' time counts as covered when they did.
  const fusedAttentionFlopsPerStep = attention.fused?.flops ?? 0;
  const attentionCovered = fusedAttentionFlopsPerStep > 0 ? kernelNsPerStep.attention : 0;
  const flopsPerStep = gemmFlopsPerStep + convFlopsPerStep + fusedAttentionFlopsPerStep;
  const countedNs = (gemmShapes.reduce((a, g) => a + g.gpuNs, 0) + convolutions.matmulNs) / n + attentionCovered;
  const matmulNs = kernelNsPerStep.gemm + kernelNsPerStep.attention + kernelNsPerStep.conv;
  if (flopsPerStep <= 0 || matmulNs <= 0) return null;
  const coveredShare = Math.min(1, countedNs / matmulNs);
  if (coveredShare < MIN_COVERED_SHARE) return null;
  const classes: [ModelFlops['peakPrecision'], number, number][] = [
    ['bf16', precision.tensorCore16Ns, gpu.bf16Tflops],
    ['tf32', precision.tensorCoreTf32Ns, gpu.tf32Tflops],
    ['fp32', precision.fp32Ns, gpu.fp32Tflops],
    ['fp8', precision.tensorCore8Ns, gpu.bf16Tflops * 2],
  ];
  const [peakPrecision, , peakTflops] = classes.reduce((best, c) => (c[1] > best[1] ? c : best));
  if (!(peakTflops > 0)) return null;
  const achievedTflops = flopsPerStep / stepNs / 1e3;
  return {
    flopsPerStep,
    gemmFlopsPerStep,
    convFlopsPerStep,
    fusedAttentionFlopsPerStep,
    handWrittenAttentionFlopsPerStep: attention.handWritten?.gemmFlops ?? 0,
    uncountedAttentionNsPerStep: kernelNsPerStep.attention - attentionCovered,
    achievedTflops,
    peakTflops,
    peakPrecision,
    gpu: gpu.name,
    mfu: achievedTflops / peakTflops,
    coveredShare,
  };
}

/**
 * The same FLOPs over another step time: doctor's run step outside the profiled window, which the profiler's own
 * cost does not lengthen (the window's figure understates what the run achieves).
 */
export function modelFlopsAtStep(f: ModelFlops, stepNs: number): ModelFlops {
  if (!(stepNs > 0)) return f;
  const achievedTflops = f.flopsPerStep / stepNs / 1e3;
  return { ...f, achievedTflops, mfu: achievedTflops / f.peakTflops };
}
