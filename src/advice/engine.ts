/**
 * Runs the rules over every rank's metrics, merges the same finding seen on
 * several ranks (keeping the rank with the largest gain), and ranks the result
 * by severity, then gain.
 */

import type { Finding } from '../findings/finding.js';
import { mergeById, sortFindings } from '../findings/rank.js';
import type { CollectiveTimings } from '../trace/metrics/collectives.js';
import type { Pipeline } from '../pace/pipeline.js';
import type { TraceMetrics } from '../trace/metrics/types.js';
import { attention } from './rules/attention.js';
import { bf16Weights, gpuUnderused, misalignedShapes, noTensorCores } from './rules/compute.js';
import { commBound, dataParallel, ddpAccumWithoutNoSync, rankImbalance, smallCommBuckets } from './rules/distributed.js';
import { fusion } from './rules/fusion.js';
import { hostSync, launchBound } from './rules/host.js';
import { dataloaderBound, dataloaderFinding, pageableH2d } from './rules/input.js';
import { memoryNearLimit } from './rules/memory.js';
import { modelParallelBubble } from './rules/modelParallel.js';
import { channelsLast, fp16WithoutScaler, halfMasterWeights, mixedPrecision } from './rules/precision.js';
import type { CrossRankRule, ModelRule, RankRule, RunContext } from './rules/rule.js';
import type { ModelRecord } from '../run/records.js';

export const RANK_RULES: readonly RankRule[] = [
  dataloaderBound,
  pageableH2d,
  hostSync,
  launchBound,
  noTensorCores,
  mixedPrecision,
  bf16Weights,
  channelsLast,
  fp16WithoutScaler,
  fusion,
  attention,
  misalignedShapes,
  gpuUnderused,
  dataParallel,
  modelParallelBubble,
  ddpAccumWithoutNoSync,
  smallCommBuckets,
  commBound,
  memoryNearLimit,
];
export const CROSS_RANK_RULES: readonly CrossRankRule[] = [rankImbalance];
/** The rules on the model the probe described (doctor). */
const MODEL_RULES: readonly ModelRule[] = [halfMasterWeights];

/**
 * `collectives[i]`, rank i's collective timings, lets the rules compare ranks collective by collective; `contexts[i]`,
 * what doctor knows of rank i beyond its trace (absent for analyze), including its pipeline, which the fixes' gains are
 * judged on: the run's outside the profiler (doctor), by default the window's own (analyze).
 */
export function diagnose(ranks: TraceMetrics[], collectives: readonly CollectiveTimings[] = [], contexts: readonly (RunContext | undefined)[] = []): Finding[] {
  const perRank: Finding[] = [];
  ranks.forEach((m, i) => {
    const ctx = contexts[i];
    for (const rule of RANK_RULES) {
      const f = rule(m, ctx);
      if (f) perRank.push(f);
    }
  });
  const byId = new Map(mergeById(perRank).map((f) => [f.id, f]));
  if (ranks.length > 1) {
    for (const rule of CROSS_RANK_RULES) {
      const f = rule(ranks, collectives, contexts);
      if (f) byId.set(f.id, f);
    }
  }
  return sortFindings([...byId.values()]);
}

/** The findings a run's pipeline supports without a profiled window (doctor, a rank without one): the DataLoader's. */
export function diagnoseRun(pace: Pipeline, rank: number): Finding[] {
  const f = dataloaderFinding(pace, null, rank);
  return f ? [f] : [];
}

/** The findings the probe's model record supports (doctor): the model rules'. */
export function diagnoseModel(model: ModelRecord): Finding[] {
  return MODEL_RULES.flatMap((rule) => rule(model) ?? []);
}
