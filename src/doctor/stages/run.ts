/**
 * Stage 2 of the doctor report, run: the one model of the run every later stage reads.
 * In: what the shell gathered (`DoctorInput`) and its records grouped by process (stage 1). Out: `Run`: who the run
 * is (the lowest rank's hello and model), each rank's summary, the GPUs, the per-rank view, how it ended, the model as
 * the planner reads it, the precision it asked for and its set-up (runSetup.ts), the hardware. Nothing here judges
 * the run: the pace, what-if and finding stages do, on this.
 */
import type { Hardware, Precision } from '../../planner/setup.js';
import type { HelloRecord, ModelRecord, ProfileStartRecord, StepRecord } from '../../run/records.js';
import type { Inferred, RunSetup } from '../../run/setup.js';
import type { TraceMetrics } from '../../trace/metrics/types.js';
import { type DistributedView, distributedView } from '../distributed.js';
import { type Ending, endingOf } from '../ending.js';
import { gpusOf } from '../gpuSamples.js';
import { type HangAnalysis, hangAnalysis, openStalls } from '../hang.js';
import { outcomeOf, type RunOutcome } from '../outcome.js';
import { summarizeRanks } from '../rankSummary.js';
import type { DoctorInput, GpuSummary, RankSummary, TraceInput } from '../reportTypes.js';
import { askedPrecisionOf, hardwareOf, type PlanModel, planModelOf, runSetupOf, type SetupEvidence } from '../runSetup.js';
import type { ProcessRecords } from './records.js';

/** The run doctor watched, as every stage after the records reads it. */
export interface Run {
  /** What the shell gathered: records, windows, snapshots, GPU samples, the exit. */
  input: DoctorInput;
  processes: readonly ProcessRecords[];
  /** The lowest rank's hello and model record: what the run is. */
  hello: HelloRecord | null;
  model: ModelRecord | null;
  /** The lowest rank with steps (its memory binds when all ranks are alike), and its steps: the set-up and what-ifs are its. */
  setupRank: { rank: number; steps: StepRecord[] } | null;
  /** Each process's summary, by rank then pid. */
  ranks: RankSummary[];
  gpus: GpuSummary[] | null;
  /** The per-rank view of two or more training ranks (distributed.ts); null otherwise. */
  distributed: DistributedView | null;
  ending: Ending;
  /** Stalls left open: the stalled ranks and which are behind (hang.ts). */
  hang: HangAnalysis | null;
  outcome: RunOutcome;
  planModel: PlanModel;
  /** The precision the launch asked for. */
  asked: Inferred<Precision | null>;
  /** The ranks' profiler windows began at different steps: each rank's first step, by rank; null when they did not. */
  windowsApart: { rank: number; step: number }[] | null;
  /** The set-up of `setupRank` (runSetup.ts); null without the probe's model record. */
  setup: RunSetup | null;
  hardware: Hardware | null;
}

/** The run, from the shell's input and the records grouped by process. */
export function runOf(input: DoctorInput, processes: readonly ProcessRecords[]): Run {
  const identity = identityOf(processes);
  const ranks = summarizeRanks(processes, input.gpuSamples, input.disconnectedAtMs);
  const ending = endingOf(processes, input.disconnectedAtMs, input.hang?.atMs ?? null, input.stepBeacons);
  const hang = hangAnalysis(openStalls(input.records), input.hang ? input.hang.timeoutS : null, input.hang?.atMs ?? null);
  const planModel = planModelOf(identity.model);
  const asked = askedPrecisionOf(input.command, processes, identity.model);
  const setup = runSetupOf(setupEvidenceOf(input, identity, ranks, planModel, asked));
  return {
    input,
    processes,
    ...identity,
    ranks,
    gpus: gpusOf(input, processes),
    distributed: distributedOf(processes, ranks, input.traces),
    ending,
    hang,
    outcome: outcomeOf(input, ranks, ending, hang),
    planModel,
    asked,
    windowsApart: windowsApartOf(processes),
    setup,
    hardware: setup ? hardwareOf(setup) : null,
  };
}

type Identity = Pick<Run, 'hello' | 'model' | 'setupRank'>;

/** What the set-up is inferred from: the set-up rank's steps, median step and window, the model, the precision asked. */
function setupEvidenceOf(input: DoctorInput, id: Identity, ranks: readonly RankSummary[], planModel: PlanModel, asked: Run['asked']): SetupEvidence {
  const rank = id.setupRank?.rank ?? 0;
  return {
    hello: id.hello,
    model: id.model,
    planModel: planModel.model,
    steps: id.setupRank?.steps ?? [],
    medianStepS: ranks.find((r) => r.rank === rank)?.steps.medianS ?? null,
    worldSize: id.hello?.worldSize ?? null,
    metrics: setupWindowOf(input.traces, rank),
    askedPrecision: asked,
  };
}

/** What the run is, from the lowest rank that told it: its hello, its model, and the rank whose steps the set-up uses. */
function identityOf(processes: readonly ProcessRecords[]): Identity {
  const lowest = <T>(pick: (p: ProcessRecords) => T | null) =>
    [...processes].filter((p) => pick(p) !== null).sort((a, b) => a.rank - b.rank)[0];
  const h = lowest((p) => p.hello);
  const m = lowest((p) => p.model);
  const s = lowest((p) => (p.steps.length > 0 ? p.steps : null));
  return { hello: h?.hello ?? null, model: m?.model ?? null, setupRank: s ? { rank: s.rank, steps: s.steps } : null };
}

/** The window the set-up reads (its matmuls' precision, compiled kernels, parallel layout): the rank's, else the first. */
function setupWindowOf(traces: readonly TraceInput[], rank: number): TraceMetrics | null {
  const metrics = traces.filter((t) => t.metrics !== null).map((t) => t.metrics as TraceMetrics);
  return metrics.find((m) => m.rank === rank) ?? metrics[0] ?? null;
}

/** The per-rank view of a run of two or more training ranks (distributed.ts), each rank with its own window. */
function distributedOf(processes: readonly ProcessRecords[], ranks: readonly RankSummary[], traces: readonly TraceInput[]): DistributedView | null {
  return distributedView(
    ranks.filter((r) => r.rankFromEnv).map((r) => ({ rank: r.rank, pid: r.pid, ...r.steps })),
    (pid) => processes.find((p) => p.pid === pid)?.hello ?? null,
    (rank) => windowOf(traces, rank),
  );
}

/**
 * The first step of each rank's profiler window when they differ (recorded before the probe aligned them, or ranks that
 * could not read rank 0's plan): the profiled rank is slowed by the profiler and the others wait for it, so what the
 * windows show of communication and imbalance is the profiler's. Null when they agree.
 */
function windowsApartOf(processes: readonly ProcessRecords[]): { rank: number; step: number }[] | null {
  const starts: { rank: number; step: number }[] = [];
  for (const p of processes) {
    if (!p.rankFromEnv) continue;
    const s = p.records.filter((r): r is ProfileStartRecord => r.type === 'profile-start' && typeof r.step === 'number').pop();
    if (s) starts.push({ rank: p.rank, step: s.step as number });
  }
  if (new Set(starts.map((s) => s.step)).size < 2) return null;
  return starts.sort((a, b) => a.rank - b.rank);
}

/** A rank's analysed window; null without one. */
export function windowOf(traces: readonly TraceInput[], rank: number): TraceMetrics | null {
  return traces.find((t) => t.rank === rank && t.metrics !== null)?.metrics ?? null;
}

/** The analysed windows. */
export function windowsOf(traces: readonly TraceInput[]): TraceInput[] {
  return traces.filter((t) => t.metrics !== null);
}

/**
 * Processes that are not ranks of one job (no RANK: two scripts under one doctor, each rank 0) are diagnosed apart:
 * the cross-rank rules would compare unrelated processes.
 */
export function oneJob(analysed: readonly TraceInput[]): boolean {
  return new Set(analysed.map((t) => t.rank)).size === analysed.length;
}

/** Whether the cross-rank rules run on these traces: two or more analysed windows of one job. */
export function crossRankRulesRun(traces: readonly TraceInput[]): boolean {
  const analysed = windowsOf(traces);
  return analysed.length >= 2 && oneJob(analysed);
}
