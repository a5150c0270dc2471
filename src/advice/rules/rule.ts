import { type Finding, type FindingParts, finding } from '../../findings/finding.js';
import type { Fix } from '../../pace/fix.js';
import { gainOf } from '../../pace/gain.js';
import type { Pipeline } from '../../pace/pipeline.js';
import { windowPipeline } from '../../pace/window.js';
import type { CollectiveTimings } from '../../trace/metrics/collectives.js';
import type { TraceMetrics } from '../../trace/metrics/types.js';

export { type FindingParts, finding } from '../../findings/finding.js';

/**
 * A rule reads one rank's metrics and returns at most one finding. `pace`: the pipeline its fix's gain is judged on,
 * the run's outside the profiler (doctor) or, by default, the window's own (analyze).
 */
export type RankRule = (m: TraceMetrics, pace?: Pipeline) => Finding | null;
/**
 * A rule that compares ranks (runs only with two or more); `collectives[i]` is rank i's, or empty when not given;
 * `paces[i]` rank i's pipeline, as for a rank rule.
 */
export type CrossRankRule = (ranks: TraceMetrics[], collectives: readonly CollectiveTimings[], paces?: readonly (Pipeline | null)[]) => Finding | null;

/**
 * The step time the window's figures are shares of: the mean over the analysed steps, the same basis as every
 * per-step figure in the metrics. Gains are not computed on it but on the pipeline (`paced`).
 */
export function stepNs(m: TraceMetrics): number {
  return m.perStep.durNs;
}

export function matmulNs(m: TraceMetrics): number {
  const k = m.perStep.kernelNsByCategory;
  return k.gemm + k.conv + k.attention;
}

/** A finding whose fix is data and whose gain is that fix applied to the pipeline (the window's unless given). */
export function paced(m: TraceMetrics, pace: Pipeline | undefined, parts: Omit<FindingParts, 'estimatedGain' | 'fix'>, fix: Fix): Finding {
  return finding({ ...parts, fix, estimatedGain: gainOf(pace ?? windowPipeline(m), fix) });
}
