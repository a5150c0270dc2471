/**
 * Stage 7 of the doctor report, report: the `--json` contract (reportTypes.ts DoctorReport) assembled from what the
 * stages before made; it judges nothing.
 * In: the run, its what-ifs, its ranked findings and its pace section. Out: the `DoctorReport`, with its notes
 * (notes.ts).
 */
import type { PaceReport } from '../../pace/report.js';
import { modelFlopsAtStep } from '../../trace/metrics/modelFlops.js';
import { notesOf } from '../notes.js';
import { DOCTOR_SCHEMA_VERSION, type DoctorInput, type DoctorReport, type RankedFinding, type RankSummary } from '../reportTypes.js';
import type { WhatIfResult } from '../whatIfs.js';
import type { Run } from './run.js';

/** What the report is assembled from. */
interface ReportParts {
  run: Run;
  whatIfs: WhatIfResult;
  findings: RankedFinding[];
  pace: PaceReport | null;
}

export function reportOf({ run, whatIfs, findings, pace }: ReportParts): DoctorReport {
  const { input, planModel } = run;
  return {
    schemaVersion: DOCTOR_SCHEMA_VERSION,
    tool: 'gpuwise',
    command: 'doctor',
    version: input.version,
    run: runSection(run),
    environment: environmentOf(run),
    ranks: run.ranks,
    ...(run.distributed ? { distributed: run.distributed } : {}),
    gpus: run.gpus,
    gpuUnavailableReason: input.gpuUnavailableReason,
    model: modelSection(run),
    planModel: planModel.model,
    planModelProblem: planModel.problem,
    planModelFile: planModel.model ? (input.planModelFile ?? null) : null,
    profile: profileOf(run),
    whatIfs: whatIfs.whatIfs,
    whatIfBasis: whatIfs.setup || whatIfs.calibration ? { setup: whatIfs.setup, calibration: whatIfs.calibration } : null,
    whatIfProblem: whatIfs.problem,
    findings,
    pace,
    ...measuredHereOf(input.leverAccuracy, pace),
    notes: notesOf(run),
  };
}

/** The plan's steps this machine's `tune --plan` trials measured before (absent when none). */
function measuredHereOf(accuracy: DoctorInput['leverAccuracy'], pace: PaceReport | null): Pick<DoctorReport, 'measuredHere'> {
  const ids = new Set((pace?.plan.steps ?? []).map((s) => s.id));
  const here = (accuracy ?? []).filter((a) => ids.has(a.stepId));
  return here.length > 0 ? { measuredHere: here } : {};
}

function runSection({ input, outcome, ending, hang }: Run): DoctorReport['run'] {
  return {
    command: input.command,
    runDir: input.runDir,
    startedAtMs: input.startedAtMs,
    durationS: (input.endedAtMs - input.startedAtMs) / 1000,
    exitCode: input.exit.code,
    signal: input.exit.signal,
    outcome: outcome.outcome,
    outcomeText: outcome.text,
    ...(ending.first ? { firstFailure: { ...ending.first, after: ending.after } } : {}),
    ...(hang ? { hang } : {}),
  };
}

function environmentOf({ input, hello, processes }: Run): DoctorReport['environment'] {
  return {
    python: hello?.python ?? null,
    torch: hello?.torch ?? null,
    cuda: hello?.cuda.version ?? null,
    cudnn: hello?.cudnn ?? null,
    driver: input.gpuSamples?.find((s) => s.driverVersion !== null)?.driverVersion ?? input.recordedGpus?.driver ?? null,
    hostname: hello?.hostname ?? null,
    worldSize: hello?.worldSize ?? null,
    devices: hello?.cuda.devices ?? [],
    stepHook: hello?.stepHook ?? null,
    probeSilent: processes.length === 0,
    ...(input.unprobed && input.unprobed.length > 0 ? { unprobed: input.unprobed } : {}),
  };
}

/** The model record without its envelope (version, type, pid, rank, time). */
function modelSection({ model }: Run): DoctorReport['model'] {
  if (!model) return null;
  const { v: _v, type: _type, pid: _pid, rank: _rank, t: _t, ...rest } = model;
  return rest;
}

/** The windows and snapshots; a window's model FLOPs over the run's own GPU-timed median step. */
function profileOf({ input, ranks }: Run): DoctorReport['profile'] {
  return {
    traces: input.traces.map((t) => {
      const mf = t.metrics?.modelFlops ?? null;
      const run = runStepNsOf(ranks, t.rank);
      return { rank: t.rank, path: t.path, error: t.error, modelFlops: mf && run !== null ? modelFlopsAtStep(mf, run) : mf };
    }),
    snapshots: input.snapshots.map((s) => ({ rank: s.rank, path: s.path, kind: s.kind, error: s.error })),
  };
}

/** The run's own GPU-timed median step of a rank (outside the profiled window), null when not GPU-timed. */
function runStepNsOf(ranks: readonly RankSummary[], rank: number): number | null {
  const st = ranks.find((r) => r.rank === rank)?.steps;
  return st && st.timing === 'gpu' && st.medianS !== null ? st.medianS * 1e9 : null;
}
