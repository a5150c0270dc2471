import type { CollectiveTimings } from '../../trace/metrics/collectives.js';
import type { TraceMetrics } from '../../trace/metrics/types.js';
import { type EstimatedGain, type Finding, severityForGain } from '../finding.js';

/** A rule reads one rank's metrics and returns at most one finding. */
export type RankRule = (m: TraceMetrics) => Finding | null;
/** A rule that compares ranks (runs only with two or more); `collectives[i]` is rank i's, or empty when not given. */
export type CrossRankRule = (ranks: TraceMetrics[], collectives: readonly CollectiveTimings[]) => Finding | null;

export interface FindingParts {
  id: string;
  title: string;
  ranks: number[];
  evidence: string[];
  data: Finding['data'];
  recommendation: Finding['recommendation'];
  estimatedGain: EstimatedGain | null;
}

export function finding(p: FindingParts): Finding {
  return { ...p, severity: severityForGain(p.estimatedGain) };
}

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
