/**
 * A job of one or more ranks (pure): what sets a data-parallel job's pace, and what a fix does to it (docs/reference/doctor.md,
 * "What sets the pace", "Several ranks").
 *
 * In a synchronous job every rank waits for the others at each collective, so a rank's measured step holds its own
 * work and its wait for the others; the wait is the other ranks' work, not its own. The job is its ranks' own
 * pipelines: each rank's pipeline less its wait in collectives (`ownPipeline`). The job's step is the slowest rank's
 * own step, calibrated so that the job's modelled step is the measured step of the slowest rank (`Job.calibration`).
 * A fix applies to every rank its finding names (all where it names none) and the step after it is again the slowest
 * rank's own; balancing moves work between ranks, it removes none (`balanced`). A single-rank run is a job of one rank,
 * its own pipeline its measured one: one code path.
 */
import { collectiveWaits, type CollectiveTimings } from '../trace/metrics/collectives.js';
import type { TraceMetrics } from '../trace/metrics/types.js';
import { applyFix, type Fix } from './fix.js';
import { type PaceStep, type Pipeline, type SerialCost, type SerialKind, STAGE_NAMES, STAGE_WORDS, type StageName, stepOf } from './pipeline.js';
import { INPUT_BINDS_SHARE } from './window.js';

export interface JobRank {
  rank: number;
  /** The rank's pipeline as measured (its wait for the others in it): what the report's summary shows. */
  measured: Pipeline;
  /** Its own pipeline: the measured one less its wait for the other ranks, with every fix applied so far. */
  pipeline: Pipeline;
  /** Its wait for the other ranks a step, in the pipeline's ns (what the stages could hold of it was taken out). */
  waitNs: number;
}

export interface Job {
  /** By rank. */
  ranks: JobRank[];
  /** The measured step of the slowest rank, ns: the job's step now. */
  stepNs: number;
  /** That rank (the lowest of equals). */
  slowestRank: number;
  /**
   * The job's measured step over the longest own step, at least 1: what the ranks' own steps leave unexplained (the
   * collectives' latency, the jitter of the waits), kept in proportion through every fix as a pipeline's calibration is.
   */
  calibration: number;
}

/** The job's step: the binding rank's own step, calibrated to the job. */
export interface JobStep extends PaceStep {
  /** The rank whose own step sets the job's (the lowest of equals). */
  rank: number;
  /** Its own pipeline. */
  pipeline: Pipeline;
}

/** A rank's pipeline as measured and its wait for the other ranks a step (in the pipeline's ns). */
export interface RankPipeline {
  rank: number;
  pipeline: Pipeline;
  waitNs: number;
}

function withStageNs(p: Pipeline, s: StageName, ns: number | null): Pipeline {
  return p.stages[s].ns === ns ? p : { ...p, stages: { ...p.stages, [s]: { ...p.stages[s], ns } } };
}

/**
 * A rank's own pipeline: `waitNs` of waiting for the other ranks taken out of where a collective's wait shows: the
 * exposed communication first (a collective kernel spins on the GPU until the other ranks arrive, past the compute it
 * overlaps), then the GPU idle while the host was in a collective call (a host blocked in a collective waits there),
 * then a stage that is the whole step (no window told the host and the GPU apart: the wait is inside it). What they do
 * not hold stays in the rank's step, so its own step is never shorter than the evidence allows.
 */
export function ownPipeline(p: Pipeline, waitNs: number): Pipeline {
  let left = Math.max(0, waitNs);
  if (!(left > 0)) return p;
  const take = (ns: number): number => {
    const t = Math.min(ns, left);
    left -= t;
    return ns - t;
  };
  let q = p.stages.comm.ns === null ? p : withStageNs(p, 'comm', take(p.stages.comm.ns));
  if (left > 0 && q.serial.some((c) => c.kind === 'other'))
    q = { ...q, serial: q.serial.map((c) => (c.kind === 'other' ? { ...c, ns: take(c.ns) } : c)).filter((c) => c.ns > 0) };
  if (left > 0 && !q.deviceTimed && q.stages.gpu.ns !== null) q = withStageNs(q, 'gpu', take(q.stages.gpu.ns));
  return q;
}

/** The job's step: the slowest rank's own step (per batch of the run's size, the lowest rank of equals), calibrated. */
export function jobStepOf(job: Job): JobStep {
  let best: JobStep | null = null;
  for (const r of job.ranks) {
    const s = stepOf(r.pipeline);
    if (best === null || s.perBatchNs > best.perBatchNs) best = { ...s, rank: r.rank, pipeline: r.pipeline };
  }
  if (best === null) throw new Error('a job has at least one rank');
  return job.calibration === 1 ? best : { ...best, stepNs: best.stepNs * job.calibration, perBatchNs: best.perBatchNs * job.calibration };
}

/** The job of these ranks (a rank given twice: its last), or null without one. */
export function jobOf(inputs: readonly RankPipeline[]): Job | null {
  const byRank = new Map(inputs.map((r) => [r.rank, r]));
  const ranks: JobRank[] = [...byRank.values()]
    .sort((a, b) => a.rank - b.rank)
    .map((r) => ({ rank: r.rank, measured: r.pipeline, pipeline: ownPipeline(r.pipeline, r.waitNs), waitNs: Math.max(0, r.waitNs) }));
  if (ranks.length === 0) return null;
  const slowest = ranks.reduce((a, r) => (r.measured.stepNs > a.measured.stepNs ? r : a));
  const job: Job = { ranks, stepNs: slowest.measured.stepNs, slowestRank: slowest.rank, calibration: 1 };
  const own = jobStepOf(job);
  // The slowest rank binding with nothing taken out: its pipeline is calibrated on that step already.
  const bindsAsMeasured = own.rank === slowest.rank && own.pipeline === slowest.measured;
  return bindsAsMeasured || !(own.stepNs > 0) ? job : { ...job, calibration: Math.max(1, job.stepNs / own.stepNs) };
}

/**
 * The job of profiled windows: `pipelines[i]` is `ranks[i]`'s (the window's own, or doctor's run pipeline built on
 * it), each rank's wait the collectives' (collectiveWaits), taken to the pipeline's ns by its GPU scale. Without every
 * rank's collectives matched, no rank waits.
 */
export function windowJob(ranks: readonly TraceMetrics[], collectives: readonly CollectiveTimings[], pipelines: readonly Pipeline[]): Job | null {
  const oneJob = new Set(ranks.map((m) => m.rank)).size === ranks.length;
  const waits = collectiveWaits(oneJob ? collectives : [], ranks.map((m) => m.steps.length));
  return jobOf(
    ranks.map((m, i) => {
      const p = pipelines[i] as Pipeline;
      return { rank: m.rank, pipeline: p, waitNs: waits.matched > 0 ? (waits.waitNsPerStep[i] ?? 0) * p.scale.gpu : 0 };
    }),
  );
}

/** A fix named by a finding of these ranks applies to them (to every rank where it names none). */
function names(among: readonly number[], rank: number): boolean {
  return among.length === 0 || among.includes(rank);
}

/**
 * The job once `fix` is made on the ranks `among` names (all where it names none). The batch is the job's: a batch
 * fix changes every rank's (a data-parallel job runs one script), where the finding names a rank of the job at all.
 * A `balance` op then balances the ranks named.
 */
export function applyJobFix(job: Job, fix: Fix, among: readonly number[] = []): Job {
  const inJob = job.ranks.some((r) => names(among, r.rank));
  const batchOps = fix.ops.filter((o) => o.kind === 'batch');
  const ranks = job.ranks.map((r) => {
    const f = names(among, r.rank) ? fix : inJob && batchOps.length > 0 ? { ...fix, ops: batchOps } : null;
    return f ? { ...r, pipeline: applyFix(r.pipeline, f) } : r;
  });
  return { ...job, ranks: fix.ops.some((o) => o.kind === 'balance') ? balanced(ranks, among) : ranks };
}

/** The ranks of the job a fix changes (applyJobFix): those it names, every rank where it changes the batch. */
export function ranksMadeOn(job: Job, fix: Fix, among: readonly number[] = []): number[] {
  const named = job.ranks.filter((r) => names(among, r.rank)).map((r) => r.rank);
  return named.length > 0 && fix.ops.some((o) => o.kind === 'batch') ? job.ranks.map((r) => r.rank) : named;
}

/**
 * The ranks `among` names balanced: each takes the mean across them of the work they do, in each rank's own measure
 * (weighted by its calibration, so what its stages leave unexplained stays its own and balanced ranks all take the
 * mean). Work moves between ranks, none goes:
 * - a stage every rank times: its mean; a stage some rank cannot time stays as each rank has it (unknown work does
 *   not move);
 * - the serial costs, kind by kind (a rank without one has none of it), where every rank times the same stages: the
 *   host's own time and the serial costs split the same work by what each rank's evidence could time, so moving one
 *   without the other would move work that is not there;
 * - the DataLoader's time a batch (a worker's wall time and CPU), where every rank's is known.
 * Where everything moves, the balanced step is at most the mean of the ranks' steps (the step is a maximum of sums).
 */
export function balanced(ranks: readonly JobRank[], among: readonly number[] = []): JobRank[] {
  const group = ranks.filter((r) => names(among, r.rank));
  if (group.length < 2) return [...ranks];
  const meanOf = (f: (p: Pipeline) => number) => group.reduce((a, r) => a + f(r.pipeline) * r.pipeline.calibration, 0) / group.length;
  const timed = STAGE_NAMES.filter((s) => group.every((r) => balanceNs(r.pipeline, s) !== null));
  const sameTiming = STAGE_NAMES.every((s) => timed.includes(s) || group.every((r) => balanceNs(r.pipeline, s) === null));
  const stageMeans = timed.map((s) => [s, meanOf((p) => balanceNs(p, s) as number)] as const);
  const kinds = sameTiming ? [...new Set(group.flatMap((r) => r.pipeline.serial.map((c) => c.kind)))] : [];
  const serialMeans = kinds.map((k) => [k, meanOf((p) => kindNs(p, k))] as const);
  const loaderKnown = group.every((r) => r.pipeline.loader !== null && r.pipeline.loader.batchNsPerWorker !== null);
  const cpuKnown = loaderKnown && group.every((r) => r.pipeline.loader?.cpuNsPerBatch !== null);
  const batchMean = loaderKnown ? meanOf((p) => p.loader?.batchNsPerWorker as number) : null;
  const cpuMean = cpuKnown ? meanOf((p) => p.loader?.cpuNsPerBatch as number) : null;
  const first = (k: SerialKind) => group.flatMap((r) => r.pipeline.serial).find((c) => c.kind === k) as SerialCost;
  return ranks.map((r) => {
    if (!group.includes(r)) return r;
    const p = r.pipeline;
    const c = p.calibration;
    let q = stageMeans.reduce((acc, [s, mean]) => withStageNs(acc, s, mean / c), p);
    if (sameTiming)
      q = {
        ...q,
        serial: serialMeans
          .map(([k, mean]): SerialCost => ({ ...first(k), ns: mean / c, perStep: null, how: 'assumed', evidence: `the ranks' mean, balanced: ${first(k).evidence}` }))
          .filter((s) => s.ns > 0),
      };
    if (q.loader && batchMean !== null)
      q = { ...q, loader: { ...q.loader, batchNsPerWorker: batchMean / c, cpuNsPerBatch: cpuMean === null ? q.loader.cpuNsPerBatch : cpuMean / c } };
    return { ...r, pipeline: q };
  });
}

/**
 * A stage's time for balancing: as timed, or for a DataLoader the loop hardly waits on (so the run cannot time it), at
 * most the rest of the rank's step: it keeps up (run.ts keptUp). Taking the most is taking the least gain: a rank whose
 * loader keeps up can take on at most what it does in its own step.
 */
function balanceNs(p: Pipeline, s: StageName): number | null {
  const ns = p.stages[s].ns;
  if (ns !== null || s !== 'input' || p.inputWaitNs >= INPUT_BINDS_SHARE * p.stepNs) return ns;
  return stepOf({ ...p, calibration: 1, loader: null }).stepNs;
}

/**
 * What balancing cannot move, in words ('' when it moves everything): the stages some of the ranks `among` names time
 * and others cannot (and with them the serial costs).
 */
export function balanceLimits(job: Job, among: readonly number[] = []): string {
  const group = job.ranks.filter((r) => names(among, r.rank));
  const partly = STAGE_NAMES.filter((s) => {
    const timed = group.filter((r) => balanceNs(r.pipeline, s) !== null);
    return timed.length > 0 && timed.length < group.length;
  });
  if (group.length < 2 || partly.length === 0) return '';
  const which = partly
    .map((s) => `${STAGE_WORDS[s]} is timed on rank ${group.filter((r) => r.pipeline.stages[s].ns !== null).map((r) => r.rank).join(', ')} only`)
    .join('; ');
  return `${which}: work a rank's evidence cannot time does not move, nor do the blocking waits, which split the same work by what each rank could time`;
}


function kindNs(p: Pipeline, k: SerialKind): number {
  return p.serial.filter((c) => c.kind === k).reduce((a, c) => a + c.ns, 0);
}

/** A run of one rank as a job of one (its own pipeline its measured one). */
export function soloJob(p: Pipeline, rank = 0): Job {
  return jobOf([{ rank, pipeline: p, waitNs: 0 }]) as Job;
}
