/**
 * Stage 3 of the doctor report, pace: what every finding's gain is judged on (src/pace/).
 * In: the `Run`. Out: `RunPace`: each training process's pipeline outside the profiler (pace/run.ts, from its
 * unprofiled steps, its DataLoader records, its threads' CPU and its rank's window), the ranks' balance as the probe
 * timed it, and the job (pace/job.ts) the plan is made over.
 */
import type { ProbeBalance } from '../../advice/rules/rule.js';
import { type Job, windowJob } from '../../pace/job.js';
import type { Pipeline } from '../../pace/pipeline.js';
import { type RunEvidence, runPipeline } from '../../pace/run.js';
import { batchOfSteps, slowedByProbe, type StepStats } from '../../run/steps.js';
import { threadCpuPerStep } from '../../run/threadCpu.js';
import type { CollectiveTimings } from '../../trace/metrics/collectives.js';
import type { TraceMetrics } from '../../trace/metrics/types.js';
import { probeBalanceOf, probeJobOf } from '../distributed.js';
import type { ProcessRecords } from './records.js';
import { crossRankRulesRun, type Run, windowOf } from './run.js';

export interface RunPace {
  /** Each training process's pipeline, by pid. */
  byPid: ReadonlyMap<number, Pipeline>;
  /** Each rank's pipeline: its first process's (processes that are not ranks of one job all count as rank 0). */
  byRank: ReadonlyMap<number, Pipeline>;
  /** The ranks' balance timed by the probe over every steady step (distributed.ts), on the job with the probe's waits. */
  probeBalance: ProbeBalance | null;
  /**
   * The job: each training rank's pipeline less its wait for the others in collectives. The wait is the windows'
   * (collectiveWaits) where every rank has a window of one job begun at the same step, else the probe's (probeWaitsNs:
   * the DataLoader waits' differences).
   */
  job: Job | null;
}

/** The run's pace: its pipelines, the probe's balance, the job. */
export function paceOf(run: Run): RunPace {
  const byPid = pipelinesByPid(run);
  const byRank = pipelinesByRank(byPid, run);
  const probeJob = probeJobOf(run.distributed, byRank);
  return {
    byPid,
    byRank,
    probeBalance: probeBalanceOf(run.distributed, probeJob),
    job: windowsComparable(run, byRank) ? windowedJob(run, byRank) : probeJob,
  };
}

function pipelinesByPid(run: Run): Map<number, Pipeline> {
  const out = new Map<number, Pipeline>();
  for (const p of run.processes) {
    const st = run.ranks.find((r) => r.pid === p.pid)?.steps;
    if (!st) continue;
    const pace = runPipeline(runEvidenceOf(p, st, windowOf(run.input.traces, p.rank)));
    if (pace) out.set(p.pid, pace);
  }
  return out;
}

/** What a process's pipeline is made of (pace/run.ts RunEvidence): its steps, window, DataLoader, threads, batch. */
function runEvidenceOf(p: ProcessRecords, steps: StepStats, window: TraceMetrics | null): RunEvidence {
  // Where the steps after the window ran slower (CUPTI left attached), their threads' CPU is left out with them.
  const threads = threadCpuPerStep(p.cpu, steps.steadyFromStep ?? 0, slowedByProbe(p.steps), steps.slowedAfterWindow?.windowFirstStep);
  return { steps, window, loader: p.loader, batchesPerStep: batchesPerStepOf(p), threads, batch: batchOfSteps(p.steps) };
}

/** Median DataLoader batches per step of a process's steps; null without steps. */
function batchesPerStepOf(p: ProcessRecords): number | null {
  const b = p.steps
    .map((s) => s.batches)
    .filter((n) => n > 0)
    .sort((x, y) => x - y);
  return b.length ? (b[Math.floor((b.length - 1) / 2)] as number) : null;
}

function pipelinesByRank(byPid: ReadonlyMap<number, Pipeline>, run: Run): Map<number, Pipeline> {
  const byRank = new Map<number, Pipeline>();
  for (const r of run.ranks) {
    const p = byPid.get(r.pid);
    if (p && !byRank.has(r.rank)) byRank.set(r.rank, p);
  }
  return byRank;
}

/** Every rank with a pipeline has a window of one job, begun at the same step, with its collectives. */
function windowsComparable(run: Run, byRank: ReadonlyMap<number, Pipeline>): boolean {
  const traces = run.input.traces;
  return run.windowsApart === null && crossRankRulesRun(traces) && byRank.size > 1 && withCollectives(run, byRank).length === byRank.size;
}

function withCollectives(run: Run, byRank: ReadonlyMap<number, Pipeline>) {
  return run.input.traces.filter((t) => t.metrics !== null && t.collectives !== null && byRank.has(t.rank));
}

function windowedJob(run: Run, byRank: ReadonlyMap<number, Pipeline>): Job | null {
  const analysed = withCollectives(run, byRank);
  return windowJob(
    analysed.map((t) => t.metrics as TraceMetrics),
    analysed.map((t) => t.collectives as CollectiveTimings),
    analysed.map((t) => byRank.get(t.rank) as Pipeline),
  );
}
