import type { Finding } from '../../findings/finding.js';
import { type GpuSpec, lookupGpu } from '../../gpus/catalogue.js';
import type { CollectiveTimings } from '../../trace/metrics/collectives.js';
import type { TraceMetrics } from '../../trace/metrics/types.js';

export { type FindingParts, finding } from '../../findings/finding.js';

/** A rule reads one rank's metrics and returns at most one finding. */
export type RankRule = (m: TraceMetrics) => Finding | null;
/** A rule that compares ranks (runs only with two or more); `collectives[i]` is rank i's, or empty when not given. */
export type CrossRankRule = (ranks: TraceMetrics[], collectives: readonly CollectiveTimings[]) => Finding | null;

/**
 * The step time gains are measured against: the mean over the analysed steps,
 * the same basis as every per-step figure in the metrics.
 */
export function stepNs(m: TraceMetrics): number {
  return m.perStep.durNs;
}

export function matmulNs(m: TraceMetrics): number {
  const k = m.perStep.kernelNsByCategory;
  return k.gemm + k.conv + k.attention;
}

/** The trace's GPU in the catalogue (its peaks), or null for one the catalogue lacks. */
export function gpuOf(m: TraceMetrics): GpuSpec | null {
  const d = m.devices[0];
  return d?.name ? lookupGpu({ name: d.name, memoryBytes: d.totalMemoryBytes }) : null;
}
