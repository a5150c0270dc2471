/**
 * Runs the rules over every rank's metrics, merges the same finding seen on
 * several ranks (keeping the rank with the largest gain), and ranks the result
 * by severity, then gain.
 */

import { type Finding, withGain } from '../findings/finding.js';
import { jobGainOf } from '../pace/gain.js';
import { type Job, windowJob } from '../pace/job.js';
import { mergeById, sortFindings } from '../findings/rank.js';
import { type CollectiveTimings, collectiveWaits } from '../trace/metrics/collectives.js';
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
import { type CrossRankRule, type ModelRule, pipelineOf, type RankRule, type RunContext } from './rules/rule.js';
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
  // Windows begun at different steps (doctor): the waits in them are the profiler's, not the job's.
  const waits = contexts.some((c) => c?.windowsApart === true) ? null : peerWaits(ranks, collectives);
  ranks.forEach((m, i) => {
    const ctx = waits === null ? contexts[i] : { ...(contexts[i] ?? { askedHalf: null }), peerWaitNs: waits[i] ?? 0 };
    for (const rule of RANK_RULES) {
      const f = rule(m, ctx);
      if (f) perRank.push(f);
    }
  });
  const job = waits === null ? null : windowJob(ranks, collectives, ranks.map((m, i) => pipelineOf(m, contexts[i]?.pace)));
  const byId = new Map(mergeById(perRank).map((f) => [f.id, job ? onJob(job, f) : f]));
  if (ranks.length > 1) {
    for (const rule of CROSS_RANK_RULES) {
      const f = rule(ranks, collectives, contexts);
      if (f) byId.set(f.id, f);
    }
  }
  return sortFindings([...byId.values()]);
}

/**
 * A rank's finding judged on the job (pace/job.ts): the job's step is the slowest rank's own, so a fix on a rank that
 * waits for another gains only what the job gains, and every finding's gain starts from the same measured step.
 */
function onJob(job: Job, f: Finding): Finding {
  if (!f.fix || !f.estimatedGain) return f;
  return withGain(f, jobGainOf(job, f.fix, f.ranks));
}

/** Each rank's wait a step for the others in collectives, where every rank's collectives were matched; else null. */
function peerWaits(ranks: readonly TraceMetrics[], collectives: readonly CollectiveTimings[]): number[] | null {
  if (ranks.length < 2 || collectives.length !== ranks.length || new Set(ranks.map((m) => m.rank)).size !== ranks.length) return null;
  const w = collectiveWaits(collectives, ranks.map((m) => m.steps.length));
  return w.matched > 0 ? w.waitNsPerStep : null;
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
