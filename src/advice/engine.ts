/**
 * Runs the rules over every rank's metrics, merges the same finding seen on
 * several ranks (keeping the rank with the largest gain), and ranks the result
 * by severity, then gain.
 */
import type { CollectiveTimings } from '../trace/metrics/collectives.js';
import type { TraceMetrics } from '../trace/metrics/types.js';
import { type Finding, severityRank } from './finding.js';
import { gpuUnderused, misalignedShapes, noTensorCores } from './rules/compute.js';
import { commBound, dataParallel, ddpAccumWithoutNoSync, rankImbalance, smallCommBuckets } from './rules/distributed.js';
import { fusion } from './rules/fusion.js';
import { hostSync, launchBound } from './rules/host.js';
import { dataloaderBound, pageableH2d } from './rules/input.js';
import { memoryNearLimit } from './rules/memory.js';
import { channelsLast, mixedPrecision } from './rules/precision.js';
import type { CrossRankRule, RankRule } from './rules/rule.js';

export const RANK_RULES: readonly RankRule[] = [
  dataloaderBound,
  pageableH2d,
  hostSync,
  launchBound,
  noTensorCores,
  mixedPrecision,
  channelsLast,
  fusion,
  misalignedShapes,
  gpuUnderused,
  dataParallel,
  ddpAccumWithoutNoSync,
  smallCommBuckets,
  commBound,
  memoryNearLimit,
];
export const CROSS_RANK_RULES: readonly CrossRankRule[] = [rankImbalance];

/** `collectives[i]`, rank i's collective timings, lets the rules compare ranks collective by collective. */
export function diagnose(ranks: TraceMetrics[], collectives: readonly CollectiveTimings[] = []): Finding[] {
  const byId = new Map<string, Finding>();
  for (const m of ranks) {
    for (const rule of RANK_RULES) {
      const f = rule(m);
      if (!f) continue;
      const prev = byId.get(f.id);
      if (!prev) byId.set(f.id, f);
      else {
        const keep = gainOf(f) > gainOf(prev) ? f : prev;
        byId.set(f.id, { ...keep, ranks: [...new Set([...prev.ranks, ...f.ranks])].sort((a, b) => a - b) });
      }
    }
  }
  if (ranks.length > 1) {
    for (const rule of CROSS_RANK_RULES) {
      const f = rule(ranks, collectives);
      if (f) byId.set(f.id, f);
    }
  }
  return [...byId.values()].sort((a, b) => severityRank(a.severity) - severityRank(b.severity) || gainOf(b) - gainOf(a));
}

function gainOf(f: Finding): number {
  return f.estimatedGain?.savedFraction ?? 0;
}
