/**
 * The doctor report: built from what the shell gathered (probe records, the captured trace's
 * metrics, the snapshot's memory report, GPU samples, the child's exit). Pure: data in, data out.
 * The trace findings come from analyze's rules (advice/engine.ts), the memory findings from
 * memory's analysis, so a run diagnosed by doctor reads like `analyze` and `memory` on its files.
 */
import { diagnose, diagnoseRun } from '../advice/engine.js';
import { probeImbalanceFinding } from '../advice/rules/distributed.js';
import type { DataParallelAlternative, GpuPeak, ProbeBalance, RunContext } from '../advice/rules/rule.js';
import type { Precision } from '../planner/setup.js';
import { askedPrecision, type Inferred } from '../run/setup.js';
import { frameworkNamedBy, inFramework, inTraceFramework } from '../advice/framework.js';
import { type Finding, finding } from '../findings/finding.js';
import { sortFindings } from '../findings/rank.js';
import type { MemoryReport } from '../memory/report.js';
import { type Job, windowJob } from '../pace/job.js';
import type { Pipeline } from '../pace/pipeline.js';
import { type PaceReport, paceReportOf } from '../pace/report.js';
import { epochStartsOf, runPipeline } from '../pace/run.js';
import type { ModelDescription } from '../planner/model.js';
import { describeModel, MODEL_SUMMARY_FORMAT } from '../planner/modelSummary.js';
import type { ChildExit } from '../run/exit.js';
import {
  type AllocatorMemory,
  type ExceptionRecord,
  type ForwardGradModes,
  type HelloRecord,
  type CpuRecord,
  type LoaderRecord,
  type ModelRecord,
  analysedWindowEnds,
  type OomRecord,
  type ProbeRecord,
  type ProfileEndRecord,
  type ProfileStartRecord,
  rankOf,
  type StepRecord,
} from '../run/records.js';
import { batchOfSteps, countedStepsOf, gpuStepTimesOf, slowedByProbe, type StepStats, type StepTimeline, stepStats, stepTimelineOf } from '../run/steps.js';
import { threadCpuPerStep } from '../run/threadCpu.js';
import type { UnprobedProcess } from '../run/attach.js';
import { type Snapshot, usableMemoryBytes } from '../telemetry/sample.js';
import type { CollectiveTimings } from '../trace/metrics/collectives.js';
import { modelFlopsAtStep } from '../trace/metrics/modelFlops.js';
import type { ModelFlops, TraceMetrics } from '../trace/metrics/types.js';
import { type GpuProcess, gpuProcessesOf, isGpuProcess, withJobPids } from './gpuProcesses.js';
import { type DistributedView, distributedView, probeBalanceOf, probeJobOf } from './distributed.js';
import { type Ending, endingOf, type FirstFailure } from './ending.js';
import { type HangAnalysis, hangAnalysis, innermostFrames, openStalls, recoveredStalls } from './hang.js';
import { dataParallelAlternativeOf } from './dataParallelFix.js';
import { decodeAutogradFinding, decodeBatchingFinding, decodeLeverEffects } from './decode.js';
import { gpuSharedFindings, ranksShareGpuFinding, type SharingGpu, type SharingProcess } from './sharing.js';
import type { RunSetup } from '../run/setup.js';
import { buildWhatIfs, hardwareOf, type WhatIf, type WhatIfCalibration, type WhatIfResult, whatIfFindings } from './whatIfs.js';
import { fmtMs } from '../util/format.js';
import { isHalfDtype } from '../util/dtype.js';

/** The collector (cli/probeRun.ts) takes the exit type from here. */
export type { ChildExit } from '../run/exit.js';

export const DOCTOR_SCHEMA_VERSION = 1;

/** How the run ended, most specific first. */
export type Outcome = 'completed' | 'stopped-after-steps' | 'interrupted' | 'out-of-memory' | 'crashed' | 'failed' | 'hung';

export interface TraceInput {
  rank: number;
  path: string;
  metrics: TraceMetrics | null;
  /** Its collectives keyed for matching ranks (rank-imbalance); null with metrics. */
  collectives: CollectiveTimings | null;
  /** Why the trace could not be analysed. */
  error: string | null;
}

export interface SnapshotInput {
  rank: number;
  path: string;
  kind: 'window' | 'oom';
  report: MemoryReport | null;
  error: string | null;
}

/** The Python a command runs, as doctor checked it (cli/commandPython.ts). */
export interface CommandPython {
  /** As the command names it: python3, /opt/env/bin/python, or a script's `#!` interpreter. */
  python: string;
  /** That Python's sys.executable; null when it did not say. */
  executable: string | null;
  /** torch.__version__; null when `import torch` failed (then `importError`, the error's last line). */
  torch: string | null;
  importError: string | null;
}

export interface DoctorInput {
  version: string;
  command: string[];
  runDir: string;
  startedAtMs: number;
  endedAtMs: number;
  exit: ChildExit;
  /** Doctor forwarded SIGINT/SIGTERM to the child. */
  forwardedSignal: string | null;
  /**
   * Doctor stopped the job because every training rank had been stalled (or gone) for `timeoutS` (--hang-timeout), at
   * `atMs` (null when not known: a re-diagnosed run); absent or null when it did not.
   */
  hang?: { timeoutS: number | null; atMs: number | null } | null;
  /** When each process's connection to the collector closed (Unix ms, by pid): the process ended. Live runs only. */
  disconnectedAtMs?: Record<number, number>;
  /**
   * The last step each process ended by its step counter in the run directory (by pid; io/beacons.ts): further than its
   * last step record when it was killed with records still queued. Absent: none read.
   */
  stepBeacons?: Record<number, number>;
  records: ProbeRecord[];
  /** Step records received per process id when `records` holds only a sample of them (cli/probeRun.ts); absent: all are in `records`. */
  stepRecordsByPid?: Record<number, number>;
  skippedLines: number;
  traces: TraceInput[];
  snapshots: SnapshotInput[];
  /** GPU samples taken during the run; null when no GPU could be read. */
  gpuSamples: Snapshot[] | null;
  gpuUnavailableReason: string | null;
  /** A re-diagnosed run (doctor --from): the GPU summaries its first report kept, used when there are no samples. */
  recordedGpus?: { gpus: GpuSummary[]; driver: string | null } | null;
  /**
   * The model.json beside the run that `gpuwise plan --model` reads: the file a live doctor writes into the run
   * directory, or the one a re-diagnosed directory holds; null or absent when there is none (the report then names
   * no plan command: a suggestion's input must exist).
   */
  planModelFile?: string | null;
  /** The command's Python and its PyTorch, checked when the probe sent nothing; absent when not checked. */
  python?: CommandPython | null;
  /** The command's processes /proc showed while it ran (run/attach.ts): the job's, probed or not; absent: not watched. */
  commandPids?: number[];
  /** Those that imported torch without the probe, and why; absent: not watched. */
  unprobed?: UnprobedProcess[];
  notes: string[];
}

export interface RankSummary {
  /** RANK of the process; 0 for a process without one (`rankFromEnv` false). */
  rank: number;
  rankFromEnv: boolean;
  pid: number;
  localRank: number | null;
  steps: StepStats;
  /** Allocator figures at the last step. */
  allocator: AllocatorMemory | null;
  /** Largest GPU memory NVML saw held by this process (CUDA context + allocator pools + other libraries). */
  nvmlUsedBytes: number | null;
  /** nvmlUsed - peak reserved: the CUDA context and memory outside PyTorch's allocator (approximate: maxima of both). */
  nonAllocatorBytes: number | null;
  /** GPU memory NVML attributed to this process at each sample (seconds since the first sample). */
  nvmlTimeline: { tS: number[]; usedBytes: number[] };
  /**
   * Every step in order (for charts and comparisons): step number, step time (null when unknown), DataLoader wait.
   * At most STEP_TIMELINE_MAX_POINTS entries: a longer run keeps every k-th step (`step` says which).
   * Added to schema 1 after its first release: absent from older reports.
   */
  stepTimeline?: StepTimeline;
  exception: { name: string; message: string; step: number; outOfMemory: boolean } | null;
  oom: { step: number; device: number; allocBytes: number; deviceFreeBytes: number; snapshot: string | null } | null;
  probeError: string | null;
  endReason: string | null;
  /** The outermost module's forwards by grad mode, from the probe's end record (absent without one: killed, older probe). */
  forwardGradModes?: ForwardGradModes;
  /** When the process ended (its connection to doctor closed), Unix seconds; absent when not known (files, --from). */
  endedAtS?: number;
}

export interface GpuSummary {
  index: number;
  /** The ordinal CUDA gave this GPU under the run's CUDA_VISIBLE_DEVICES; null when hidden from the job. Added in 0.3. */
  cudaIndex?: number | null;
  name: string;
  /** The memory CUDA can use (telemetry/sample.ts usableMemoryBytes; NVML's total before 0.3, its reserved part included). */
  totalBytes: number | null;
  samples: number;
  maxUsedBytes: number | null;
  meanUtilizationPercent: number | null;
  maxUtilizationPercent: number | null;
  /** Every sample: seconds since the first sample of the run, memory used, utilisation (null = not available). */
  timeline: { tS: number[]; usedBytes: (number | null)[]; utilizationPercent: (number | null)[] };
  /** Wall clock of `tS` = 0 (the run's first sample), ms since the Unix epoch: aligns the samples with the probe's records. Added in 0.3. */
  firstSampleAtMs?: number | null;
  /** Every process seen on this GPU over the run (gpuProcesses.ts): the job's own first. Added in 0.3. */
  processes?: GpuProcess[];
}

export interface RankedFinding extends Finding {
  /**
   * trace: analyze's rules on the captured window; memory: the snapshot; probe: the per-step records;
   * planner: a what-if calibrated on the run (whatIfs.ts); telemetry: the GPU samples beside the step records
   * (sharing.ts; added in 0.3).
   */
  source: 'trace' | 'memory' | 'probe' | 'planner' | 'telemetry';
}

export interface DoctorReport {
  schemaVersion: typeof DOCTOR_SCHEMA_VERSION;
  tool: 'gpuwise';
  command: 'doctor';
  version: string;
  run: {
    command: string[];
    runDir: string;
    startedAtMs: number;
    durationS: number;
    exitCode: number;
    signal: string | null;
    outcome: Outcome;
    /** One sentence on how the run ended. */
    outcomeText: string;
    /**
     * The process that failed first (by time), when one did: the cause; absent otherwise. `after`: how the other
     * processes that did not end cleanly ended (stopped by the launcher, failed in a collective: consequences).
     */
    firstFailure?: FirstFailure & { after: Ending['after'] };
    /** Outcome `hung` (or stalls left open at the end): the stalled ranks, their stacks, and which are behind. */
    hang?: HangAnalysis;
  };
  environment: {
    python: string | null;
    torch: string | null;
    cuda: string | null;
    cudnn: number | null;
    /** The NVIDIA driver version, from the GPU samples (NVML or nvidia-smi); null when no GPU was sampled. Added in 0.2. */
    driver?: string | null;
    hostname: string | null;
    worldSize: number | null;
    devices: { index: number; name: string; totalMemoryBytes: number; capability: string }[];
    stepHook: string | null;
    /** The probe never reported (the command is not Python, never imported torch, or never stepped). */
    probeSilent: boolean;
    /** Processes of the command that imported torch without the probe, and why (run/attach.ts). Added in 0.3. */
    unprobed?: UnprobedProcess[];
  };
  ranks: RankSummary[];
  /** The per-rank view of a run of two or more training ranks (distributed.ts); absent otherwise. */
  distributed?: DistributedView;
  gpus: GpuSummary[] | null;
  gpuUnavailableReason: string | null;
  model: Omit<ModelRecord, 'v' | 'type' | 'pid' | 'rank' | 't'> | null;
  /**
   * The model as `gpuwise plan --model` reads it (`gpuwise-model/1`), written to RUN_DIR/model.json:
   * the architecture from the model's Hugging Face config, the parameter count measured by the probe.
   * null when the model has no config plan understands (`planModelProblem` says why).
   */
  planModel: ({ format: typeof MODEL_SUMMARY_FORMAT } & ModelDescription) | null;
  planModelProblem: string | null;
  /**
   * Where that model.json is (DoctorInput.planModelFile); null when it is not there (a re-diagnosed directory without
   * one). Added to schema 1 after its first release: absent from older reports, whose live runs wrote RUN_DIR/model.json.
   */
  planModelFile?: string | null;
  profile: {
    /** `modelFlops`: the window's GEMM FLOPs per step over the run's own GPU-timed median step (null when unknown). */
    traces: { rank: number; path: string; error: string | null; modelFlops: ModelFlops | null }[];
    snapshots: { rank: number; path: string; kind: string; error: string | null }[];
  };
  /**
   * Planner what-ifs calibrated on this run's measured memory (whatIfs.ts): the largest batch, twice the batch,
   * bf16 autocast, checkpointing, FSDP, accumulation; empty when the data does not support them (`whatIfProblem`).
   */
  whatIfs: WhatIf[];
  /** The run's set-up as inferred, and how the predictions were calibrated on it; null without what-ifs. */
  whatIfBasis: { setup: RunSetup | null; calibration: WhatIfCalibration | null } | null;
  whatIfProblem: string | null;
  /** Trace, memory, probe and planner findings, ranked by severity, then estimated gain. */
  findings: RankedFinding[];
  /**
   * What sets the pace of the slowest training rank's step (src/pace/): the pipeline's stages, the bound and why, and
   * the plan: the findings' fixes in order, each with the step expected after it. Null without a timed step. Added
   * after schema 1's release (absent from older reports).
   */
  pace?: PaceReport | null;
  notes: string[];
}

export function summarizeGpus(samples: Snapshot[], jobPids: ReadonlyMap<number, number | null> = new Map()): GpuSummary[] {
  const by = new Map<number, GpuSummary & { utilSum: number; utilN: number }>();
  const processes = gpuProcessesOf(samples, (s) => secondsSince(samples, s), jobPids);
  const firstSampleAtMs = samples[0]?.timestampMs ?? null;
  for (const s of samples) {
    for (const g of s.gpus) {
      let e = by.get(g.index);
      if (!e) {
        e = {
          index: g.index,
          cudaIndex: g.cudaIndex,
          name: g.name,
          totalBytes: usableMemoryBytes(g),
          samples: 0,
          maxUsedBytes: null,
          meanUtilizationPercent: null,
          maxUtilizationPercent: null,
          timeline: { tS: [], usedBytes: [], utilizationPercent: [] },
          utilSum: 0,
          utilN: 0,
        };
        by.set(g.index, e);
      }
      e.samples++;
      e.timeline.tS.push(secondsSince(samples, s));
      e.timeline.usedBytes.push(g.memoryUsedBytes);
      e.timeline.utilizationPercent.push(g.utilizationGpuPercent);
      if (g.memoryUsedBytes !== null) e.maxUsedBytes = Math.max(e.maxUsedBytes ?? 0, g.memoryUsedBytes);
      if (g.utilizationGpuPercent !== null) {
        e.utilSum += g.utilizationGpuPercent;
        e.utilN++;
        e.maxUtilizationPercent = Math.max(e.maxUtilizationPercent ?? 0, g.utilizationGpuPercent);
      }
    }
  }
  return [...by.values()]
    .sort((a, b) => a.index - b.index)
    .map(({ utilSum, utilN, ...g }) => ({
      ...g,
      meanUtilizationPercent: utilN ? utilSum / utilN : null,
      firstSampleAtMs,
      processes: processes.get(g.index) ?? [],
    }));
}

function secondsSince(samples: Snapshot[], s: Snapshot): number {
  const t0 = samples[0]?.timestampMs ?? null;
  return t0 !== null && s.timestampMs !== null ? Math.round(s.timestampMs - t0) / 1000 : 0;
}

/** GPU memory NVML attributed to `pid` at each sample (summed over its GPUs), and the largest. */
function nvmlUsedByPid(samples: Snapshot[] | null, pid: number): { max: number | null; timeline: { tS: number[]; usedBytes: number[] } } {
  const timeline = { tS: [] as number[], usedBytes: [] as number[] };
  if (!samples) return { max: null, timeline };
  let max: number | null = null;
  for (const s of samples) {
    let sum: number | null = null;
    for (const g of s.gpus)
      for (const p of g.processes) if (p.pid === pid && p.usedMemoryBytes !== null) sum = (sum ?? 0) + p.usedMemoryBytes;
    if (sum === null) continue;
    max = Math.max(max ?? 0, sum);
    timeline.tS.push(secondsSince(samples, s));
    timeline.usedBytes.push(sum);
  }
  return { max, timeline };
}

/** The rank as the outcome names it: `rank R`, or `pid P` for a process without RANK beside others. */
function who(f: { rank: number; pid: number; rankFromEnv: boolean }, processes: number): string {
  return f.rankFromEnv || processes < 2 ? `rank ${f.rank}` : `pid ${f.pid}`;
}

/** "; then rank 0 ended without an end record (...)": the other processes, as consequences of the first failure. */
function afterText(ending: Ending, byPid: ReadonlyMap<number, RankSummary>): string {
  if (ending.after.length === 0) return '';
  const name = (a: { rank: number; pid: number }) => {
    const r = byPid.get(a.pid);
    return r && !r.rankFromEnv ? `pid ${a.pid}` : `rank ${a.rank}`;
  };
  return `; after it ${ending.after.map((a) => `${name(a)} ${a.how}`).join('; ')}`;
}

/**
 * The outcome stage: how the run ended. The first failure by time is the cause (ending.ts), the other ranks' ends are named as
 * what followed; a hang doctor stopped is `hung` unless a rank failed before it.
 */
export function outcomeOf(
  input: DoctorInput,
  ranks: RankSummary[],
  ending: Ending = { first: null, after: [] },
  hang: HangAnalysis | null = null,
): { outcome: Outcome; text: string } {
  const code = input.exit.code;
  const first = ending.first;
  const byPid = new Map(ranks.map((r) => [r.pid, r]));
  const after = afterText(ending, byPid);
  const hangTail =
    input.hang && hang
      ? `; the others then made no progress and doctor stopped the job after ${input.hang.timeoutS ?? '?'} s (--hang-timeout)`
      : '';
  if (first?.kind === 'out-of-memory')
    return {
      outcome: 'out-of-memory',
      text: `ran out of GPU memory on ${who(first, ranks.length)} in step ${first.step} (exit code ${code})${after}${hangTail}`,
    };
  if (input.forwardedSignal !== null)
    return {
      outcome: 'interrupted',
      text: `interrupted (${input.forwardedSignal} passed to the command); exit code ${code}; the report covers the steps before`,
    };
  if (first?.kind === 'exception') {
    const r = byPid.get(first.pid);
    if (r && r.steps.steps === 0 && ending.after.length === 0)
      return {
        outcome: 'crashed',
        text: `crashed before the first training step (pid ${first.pid}${first.rankFromEnv ? `, rank ${first.rank}` : ''}): ${first.error} (exit code ${code})`,
      };
    return {
      outcome: 'crashed',
      text: `crashed on ${who(first, ranks.length)} in step ${first.step}: ${first.error} (exit code ${code})${after}${hangTail}`,
    };
  }
  if (first?.kind === 'killed' && (code !== 0 || ranks.length > 1))
    return {
      outcome: 'failed',
      text: `${who(first, ranks.length)} died in step ${first.step} without an end record (${first.error ?? 'killed by a signal: SIGKILL, the OOM killer, a segfault'})${after}${hangTail}; exit code ${code}${input.exit.signal ? ` (${input.exit.signal})` : ''}`,
    };
  if (input.hang) {
    const behind = hang?.behindRanks ?? [];
    return {
      outcome: 'hung',
      text: `hung: every training rank made no progress for ${input.hang.timeoutS ?? '?'} s and doctor stopped the job (--hang-timeout)${
        behind.length ? `; behind: rank${behind.length > 1 ? 's' : ''} ${behind.join(', ')} (${hang?.why})` : ''
      }`,
    };
  }
  if (ranks.some((r) => r.exception?.name === 'KeyboardInterrupt'))
    return {
      outcome: 'interrupted',
      text: `interrupted (SIGINT passed to the command); exit code ${code}; the report covers the steps before`,
    };
  if (code !== 0)
    return {
      outcome: 'failed',
      text: `the command failed with exit code ${code}${input.exit.signal ? ` (killed by ${input.exit.signal})` : ''}`,
    };
  if (ranks.length > 0 && ranks.every((r) => r.endReason === 'max-steps'))
    return { outcome: 'stopped-after-steps', text: `stopped cleanly after ${ranks[0]?.steps.steps ?? 0} steps (--steps)` };
  return { outcome: 'completed', text: 'completed (exit code 0)' };
}

export function rankFindings(
  trace: Finding[],
  memory: Finding[],
  probe: Finding[],
  planner: Finding[],
  telemetry: Finding[] = [],
): RankedFinding[] {
  return sortFindings<RankedFinding>([
    ...trace.map((f) => ({ ...f, source: 'trace' as const })),
    ...memory.map((f) => ({ ...f, source: 'memory' as const })),
    ...probe.map((f) => ({ ...f, source: 'probe' as const })),
    ...telemetry.map((f) => ({ ...f, source: 'telemetry' as const })),
    ...planner.map((f) => ({ ...f, source: 'planner' as const })),
  ]);
}

/** The planner's description of the probe's model, from its Hugging Face config and the measured parameter count. */
export function planModelOf(model: ModelRecord | null): { model: DoctorReport['planModel']; problem: string | null } {
  if (model === null) return { model: null, problem: 'no model summary (the probe saw no step)' };
  if (model.hfConfig === null)
    return { model: null, problem: `${model.name} has no Hugging Face config: plan cannot model its architecture yet` };
  try {
    const d = describeModel(model.hfConfig);
    // The counts stay the config's (plan's formulas are built on them); the report notes a mismatch with the probe's count.
    return { model: { format: MODEL_SUMMARY_FORMAT, ...d, architecture: model.name }, problem: null };
  } catch (e) {
    return { model: null, problem: `the model's config: ${(e as Error).message}` };
  }
}

/** One process's records, grouped (stage 1). */
export interface ProcessRecords {
  pid: number;
  rank: number;
  /** RANK was set in the environment (else the one process counts as rank 0). */
  rankFromEnv: boolean;
  records: ProbeRecord[];
  hello: HelloRecord | null;
  model: ModelRecord | null;
  steps: StepRecord[];
  /** The DataLoader's own production, measured in its workers (`loader` records; none from an older probe). */
  loader: LoaderRecord[];
  /** The process's CPU time by thread (`cpu` records; none from an older probe). */
  cpu: CpuRecord[];
}

/** Stage 1: the records grouped by process, in the order the processes first reported. */
export function groupProcesses(records: readonly ProbeRecord[]): ProcessRecords[] {
  const byPid = new Map<number, ProbeRecord[]>();
  for (const r of records) {
    const list = byPid.get(r.pid) ?? [];
    list.push(r);
    byPid.set(r.pid, list);
  }
  return [...byPid].map(([pid, recs]) => {
    const first = recs[0] as ProbeRecord;
    return {
      pid,
      rank: rankOf(first),
      rankFromEnv: first.rank !== null,
      records: recs,
      hello: recs.find((r): r is HelloRecord => r.type === 'hello') ?? null,
      // The last: a probe that sent one with a time window sends the training's own at the first step.
      model: recs.findLast((r): r is ModelRecord => r.type === 'model') ?? null,
      steps: recs.filter((r): r is StepRecord => r.type === 'step'),
      loader: recs.filter((r): r is LoaderRecord => r.type === 'loader'),
      cpu: recs.filter((r): r is CpuRecord => r.type === 'cpu'),
    };
  });
}

/** What the run is, from the lowest rank that told it: its hello, its model, and the rank whose steps the what-ifs use. */
export interface RunIdentity {
  hello: HelloRecord | null;
  model: ModelRecord | null;
  /** The lowest rank with steps (its memory binds when all ranks are alike), and its steps. */
  stepsOf: { rank: number; steps: StepRecord[] } | null;
}

/** Stage 2: the run's identity (lowest rank first). */
export function runIdentity(processes: readonly ProcessRecords[]): RunIdentity {
  const lowest = <T>(pick: (p: ProcessRecords) => T | null) =>
    [...processes].filter((p) => pick(p) !== null).sort((a, b) => a.rank - b.rank)[0];
  const h = lowest((p) => p.hello);
  const m = lowest((p) => p.model);
  const s = lowest((p) => (p.steps.length > 0 ? p.steps : null));
  return { hello: h?.hello ?? null, model: m?.model ?? null, stepsOf: s ? { rank: s.rank, steps: s.steps } : null };
}

/** Stage 3: one rank's summary: steady step statistics, memory beside NVML, how it ended. */
export function summarizeRank(p: ProcessRecords, gpuSamples: Snapshot[] | null, disconnectedAtMs?: Record<number, number>): RankSummary {
  const recs = p.records;
  const exc = recs.find((r): r is ExceptionRecord => r.type === 'exception') ?? null;
  const oom = recs.find((r): r is OomRecord => r.type === 'oom') ?? null;
  const err = recs.find((r) => r.type === 'probe-error');
  const end = recs.find((r) => r.type === 'end');
  const lastMem = [...p.steps].reverse().find((s) => s.memory !== null)?.memory ?? null;
  const { max: nvml, timeline: nvmlTimeline } = nvmlUsedByPid(gpuSamples, p.pid);
  return {
    rank: p.rank,
    rankFromEnv: p.rankFromEnv,
    pid: p.pid,
    localRank: p.hello?.localRank ?? null,
    steps: stepStats(
      p.steps,
      gpuStepTimesOf(recs),
      epochStartsOf(p.loader),
      recs.some((r) => r.type === 'profile-end' && r.cuptiDetached === true),
      countedStepsOf(recs),
    ),
    allocator: lastMem,
    nvmlUsedBytes: nvml,
    nonAllocatorBytes: nvml !== null && lastMem !== null ? nvml - lastMem.peakReservedBytes : null,
    nvmlTimeline,
    stepTimeline: stepTimelineOf(p.steps),
    exception: exc ? { name: exc.exception, message: exc.message, step: exc.step, outOfMemory: exc.outOfMemory } : null,
    oom: oom
      ? { step: oom.step, device: oom.device, allocBytes: oom.allocBytes, deviceFreeBytes: oom.deviceFreeBytes, snapshot: oom.snapshot }
      : null,
    probeError: err && err.type === 'probe-error' ? err.error : null,
    endReason: end && end.type === 'end' ? end.reason : null,
    ...(end && end.type === 'end' && end.forwardGradModes ? { forwardGradModes: end.forwardGradModes } : {}),
    ...(disconnectedAtMs?.[p.pid] !== undefined ? { endedAtS: (disconnectedAtMs[p.pid] as number) / 1000 } : {}),
  };
}

/** The run's own GPU-timed median step of a rank (outside the profiled window), null when not GPU-timed. */
function runStepNsOf(ranks: readonly RankSummary[], rank: number): number | null {
  const st = ranks.find((r) => r.rank === rank)?.steps;
  return st && st.timing === 'gpu' && st.medianS !== null ? st.medianS * 1e9 : null;
}

/** Median DataLoader batches per step of a process's steps; null without steps. */
function batchesPerStepOf(steps: readonly StepRecord[]): number | null {
  const b = steps
    .map((s) => s.batches)
    .filter((n) => n > 0)
    .sort((x, y) => x - y);
  return b.length ? (b[Math.floor((b.length - 1) / 2)] as number) : null;
}

/**
 * Stage 4a: each training process's pipeline (src/pace/run.ts), from its unprofiled steps, its DataLoader records and
 * its rank's window; keyed by pid. What every finding's gain is judged on.
 */
export function pacesOf(
  processes: readonly ProcessRecords[],
  ranks: readonly RankSummary[],
  traces: readonly TraceInput[],
): Map<number, Pipeline> {
  const out = new Map<number, Pipeline>();
  for (const p of processes) {
    const st = ranks.find((r) => r.pid === p.pid)?.steps;
    if (!st) continue;
    const window = traces.find((t) => t.rank === p.rank && t.metrics !== null)?.metrics ?? null;
    // Where the steps after the window ran slower (CUPTI left attached), their threads' CPU is left out with them.
    const threads = threadCpuPerStep(p.cpu, st.steadyFromStep ?? 0, slowedByProbe(p.steps), st.slowedAfterWindow?.windowFirstStep);
    const batch = batchOfSteps(p.steps);
    const pace = runPipeline({ steps: st, window, loader: p.loader, batchesPerStep: batchesPerStepOf(p.steps), threads, batch });
    if (pace) out.set(p.pid, pace);
  }
  return out;
}

/** The pipeline of a rank: its first process's (processes that are not ranks of one job all count as rank 0). */
function paceOfRank(paces: ReadonlyMap<number, Pipeline>, ranks: readonly RankSummary[], rank: number): Pipeline | null {
  for (const r of ranks) if (r.rank === rank && paces.has(r.pid)) return paces.get(r.pid) as Pipeline;
  return null;
}

/**
 * Stage 2b: the precision the run asked for, from how it was launched (run/setup.ts askedPrecision): accelerate's
 * state in the model record, else a flag of the command or of a process's arguments. The set-up inference and the
 * precision rules read it.
 */
export function askedPrecisionOf(
  command: readonly string[],
  processes: readonly ProcessRecords[],
  model: ModelRecord | null,
): Inferred<Precision | null> {
  return askedPrecision({
    command,
    argv: processes.flatMap((p) => (p.hello ? [p.hello.argv] : [])),
    acceleratePrecision: model?.acceleratePrecision ?? null,
  });
}

/** The half precision the run asked for, as the rules' context carries it. */
function askedHalfOf(asked: Inferred<Precision | null> | null): RunContext['askedHalf'] {
  const v = asked?.value ?? null;
  const dtype = v === 'amp-bf16' || v === 'bf16' ? 'bfloat16' : v === 'amp-fp16' ? 'float16' : null;
  return asked && dtype ? { dtype, evidence: asked.evidence } : null;
}

/** What doctor knows of the run beyond its traces, for the trace rules (advice/rules/rule.ts RunContext). */
export interface RunFacts {
  model?: ModelRecord | null;
  paces?: ReadonlyMap<number, Pipeline>;
  asked?: Inferred<Precision | null> | null;
  /** The ranks' windows began at different steps (windowsApart). */
  windowsApart?: boolean;
  /** Each process's NVML samples, for its peak memory per GPU. */
  gpus?: readonly SharingGpu[] | null;
  /** The ranks' balance as the probe timed it (doctor/distributed.ts probeBalanceOf). */
  probeBalance?: ProbeBalance | null;
  /** A split model's data-parallel alternative, from a rank's window (doctor/dataParallelFix.ts). */
  dataParallelOf?: (m: TraceMetrics) => DataParallelAlternative | null;
}

/** The process's NVML peak memory on each GPU, in CUDA ordinal order where known (cuda:0, the output device, first). */
function gpuPeaksOf(gpus: readonly SharingGpu[], pid: number | null): GpuPeak[] | null {
  if (pid === null) return null;
  const rows = gpus
    .map((g) => ({ g, peak: g.processes?.find((x) => x.pid === pid)?.peakUsedBytes ?? null }))
    .filter((x): x is { g: SharingGpu; peak: number } => x.peak !== null)
    .sort((a, b) => (a.g.cudaIndex ?? a.g.index) - (b.g.cudaIndex ?? b.g.index));
  return rows.map(({ g, peak }) => ({
    index: g.index,
    name: `GPU ${g.index}${typeof g.cudaIndex === 'number' ? ` (cuda:${g.cudaIndex})` : ''}`,
    peakBytes: peak,
  }));
}

/**
 * Processes that are not ranks of one job (no RANK: two scripts under one doctor, each rank 0) are diagnosed apart:
 * the cross-rank rules would compare unrelated processes.
 */
function oneJob(analysed: readonly TraceInput[]): boolean {
  return new Set(analysed.map((t) => t.rank)).size === analysed.length;
}

/** Whether the cross-rank rules run on these traces: two or more analysed windows of one job. */
export function crossRankRulesRun(traces: readonly TraceInput[]): boolean {
  const analysed = traces.filter((t) => t.metrics !== null);
  return analysed.length >= 2 && oneJob(analysed);
}

/**
 * Stage 4: analyze's rules on the windows, with what doctor knows of the run as their context (RunFacts: the precision
 * asked for, each rank's pipeline, a compiled model, decode steps, windows begun apart, NVML peaks, the probe's rank
 * balance, a split model's data-parallel fit), their gains judged on each rank's pipeline (the run outside the
 * profiler); a fix led by the training framework's own switch when the probe saw one, none in a generation loop.
 */
export function traceFindingsOf(traces: readonly TraceInput[], ranks: readonly RankSummary[], facts: RunFacts = {}): Finding[] {
  const { model = null, paces = new Map<number, Pipeline>(), asked = null } = facts;
  const analysed = traces.filter((t) => t.metrics !== null);
  const metrics = analysed.map((t) => t.metrics as TraceMetrics);
  const collectives = analysed.every((t) => t.collectives !== null) ? analysed.map((t) => t.collectives as CollectiveTimings) : [];
  const askedHalf = askedHalfOf(asked);
  const summaryOf = (rank: number) => ranks.find((r) => r.rank === rank);
  const contextOf = (m: TraceMetrics): RunContext => ({
    askedHalf,
    pace: paceOfRank(paces, ranks, m.rank),
    compiled: model?.compiled === true,
    decode: summaryOf(m.rank)?.steps.decode ?? null,
    inference: trainsNothing(summaryOf(m.rank), model),
    windowsApart: facts.windowsApart === true,
    gpuPeakBytes: facts.gpus ? gpuPeaksOf(facts.gpus, summaryOf(m.rank)?.pid ?? null) : null,
    probeBalance: facts.probeBalance ?? null,
    dataParallel: facts.dataParallelOf?.(m) ?? null,
  });
  const found = oneJob(analysed)
    ? diagnose(metrics, collectives, metrics.map(contextOf))
    : metrics.flatMap((m, i) => diagnose([m], collectives.length ? [collectives[i] as CollectiveTimings] : [], [contextOf(m)]));
  // The probe's framework (the call stack at a step) first; else the one the trace names, as analyze does. A loop
  // that trains nothing (generation, evaluation) is no training loop: its fixes are not a Trainer's or Lightning's
  // switches.
  const named = model?.framework ? null : frameworkNamedBy(metrics);
  return found.map((f) =>
    trainsNothing(summaryOf(f.ranks[0] ?? 0), model) ? f : named ? inTraceFramework(f, named) : inFramework(f, model?.framework),
  );
}

/**
 * Whether a rank trains nothing (RunContext.inference): its steps are decode steps, or the probe counted its outermost
 * module's forwards, none with gradients, and no optimizer was built. Unknown (an older probe, no forward seen) is not
 * inference.
 */
function trainsNothing(rank: RankSummary | undefined, model: ModelRecord | null): boolean {
  if (!rank) return false;
  if (rank.steps.decode) return true;
  const modes = rank.forwardGradModes;
  return modes !== undefined && modes.grad === 0 && modes.noGrad + modes.inference > 0 && model?.optimizer == null;
}

/**
 * What the profiler window's end cost the run: the stop on the stepping thread (the profiler collecting its events),
 * and the trace and snapshot written by the probe's background work (holding the GIL through torch's writers). The steps these
 * slowed are the probe's work, left out of the statistics; the note says what the training paid for them.
 */
function windowCostNote(pid: number, stopS: number, exportS: { trace: number; snapshot: number } | undefined): string {
  const s = (x: number) => fmtMs(x * 1e9);
  const written = exportS
    ? `; then the trace took ${s(exportS.trace)} to write${exportS.snapshot > 0 ? ` and the memory snapshot ${s(exportS.snapshot)}` : ''}, beside the training`
    : '';
  return `pid ${pid}: the profiler window's stop held the training thread ${s(stopS)} (the profiler collecting its events)${written}; the steps this slowed are left out of the statistics`;
}

/** Stage 5: memory's findings on each snapshot, on the snapshot's rank. */
export function memoryFindingsOf(snapshots: readonly SnapshotInput[]): Finding[] {
  return snapshots.flatMap((s) => (s.report?.findings ?? []).map((f) => ({ ...f, ranks: [s.rank] })));
}

/**
 * Stage 6: the probe's own findings: for a rank without a window, what its pipeline alone supports (the DataLoader's
 * waits); the model's half-precision master weights.
 */
export function probeFindingsOf(
  model: ModelRecord | null = null,
  ranks: readonly RankSummary[] = [],
  traces: readonly TraceInput[] = [],
  paces: ReadonlyMap<number, Pipeline> = new Map(),
): Finding[] {
  const windowed = new Set(traces.filter((t) => t.metrics !== null).map((t) => t.rank));
  const unwindowed = [...new Set(ranks.filter((r) => !windowed.has(r.rank)).map((r) => r.rank))].flatMap((rank) => {
    const p = paceOfRank(paces, ranks, rank);
    return p ? diagnoseRun(p, rank) : [];
  });
  const weights = halfMasterWeightsFinding(model);
  return [...unwindowed, ...(weights ? [weights] : [])];
}

/**
 * Stage 6c: a generation loop's own levers (decode.ts), on each rank whose steps are decode steps: more sequences per
 * decode step; generation under inference_mode where its forwards ran with gradients.
 */
export function decodeFindingsOf(
  ranks: readonly RankSummary[],
  traces: readonly TraceInput[],
  paces: ReadonlyMap<number, Pipeline> = new Map(),
): Finding[] {
  const out: Finding[] = [];
  for (const r of ranks) {
    const decode = r.steps.decode;
    if (!decode) continue;
    const metrics = traces.find((t) => t.rank === r.rank && t.metrics !== null)?.metrics ?? null;
    const effects = decodeLeverEffects(decode, metrics);
    const f = effects ? decodeBatchingFinding(decode, effects, r.rank) : null;
    if (f) out.push(f);
    const autograd = r.forwardGradModes ? decodeAutogradFinding(decode, r.forwardGradModes, r.rank, paceOfRank(paces, ranks, r.rank)) : null;
    if (autograd) out.push(autograd);
  }
  return out;
}

/** Half-precision weights and optimizer state past this share of the parameters: no fp32 master copy exists. */
const HALF_WEIGHTS_MIN_SHARE = 0.9;

/**
 * The model's weights and the optimizer's state are bf16/fp16 (`model.to(torch.bfloat16)` before the optimizer):
 * updates smaller than the weight's last bit (lr x update below about 1/256 of the weight in bf16) are lost, so
 * training stalls or drifts. Autocast keeps fp32 master weights and runs the matmuls in bf16 all the same. No time
 * gain: a correctness word (severity info).
 */
export function halfMasterWeightsFinding(model: ModelRecord | null): Finding | null {
  const opt = model?.optimizer;
  if (!model || !opt) return null;
  let half = 0;
  let all = 0;
  for (const m of model.modules)
    for (const [dtype, n] of Object.entries(m.dtypes)) {
      all += n;
      if (isHalfDtype(dtype)) half += n;
    }
  const stateHalf = Object.entries(opt.stateDtypes).reduce((a, [d, b]) => a + (isHalfDtype(d) ? b : 0), 0);
  const stateAll = Object.values(opt.stateDtypes).reduce((a, b) => a + b, 0);
  // An optimizer that keeps fp32 state for half weights (a mixed-precision optimizer) holds the master copy itself.
  if (all === 0 || half / all < HALF_WEIGHTS_MIN_SHARE || (stateAll > 0 && stateHalf / stateAll < HALF_WEIGHTS_MIN_SHARE)) return null;
  const dtype = Object.entries(model.modules[0]?.dtypes ?? {}).find(([d]) => isHalfDtype(d))?.[0] ?? 'bfloat16';
  return finding({
    id: 'half-master-weights',
    title: `The weights and ${opt.class}'s state are ${dtype}: no fp32 master copy, small updates are lost`,
    ranks: [model.rank ?? 0],
    evidence: [
      `${((half / all) * 100).toFixed(0)}% of ${all.toLocaleString('en-US')} parameters in bf16/fp16; ${opt.class} state ${stateAll > 0 ? `${((stateHalf / stateAll) * 100).toFixed(0)}% bf16/fp16` : 'not created yet'}`,
    ],
    data: { halfParamShare: half / all, optimizer: opt.class },
    recommendation: {
      summary:
        'Keep the parameters and the optimizer state in fp32 and run the forward under bf16 autocast: the matmuls still run on bf16 tensor cores, and the optimizer adds each update to an fp32 weight. (Pure-bf16 training needs an optimizer that keeps fp32 state or compensates the rounding.)',
      code: [
        'model = Model().cuda()                      # fp32 weights: no model.to(torch.bfloat16)',
        'opt = torch.optim.AdamW(model.parameters(), lr=lr, fused=True)',
        'with torch.autocast("cuda", dtype=torch.bfloat16):',
        '    loss = loss_fn(model(x), y)',
      ].join('\n'),
      frameworks: {
        transformers: 'load the model in fp32 and pass TrainingArguments(..., bf16=True)',
        lightning: 'Trainer(..., precision="bf16-mixed")  # not "bf16-true"',
      },
    },
    estimatedGain: null,
  });
}

const lastMemory = (p: ProcessRecords) => [...p.steps].reverse().find((s) => s.memory !== null)?.memory ?? null;

/** The run's pids and their RANK (null for a process without one): how the GPU samples tell the job's processes. */
export function jobPidsOf(processes: readonly ProcessRecords[], commandPids: readonly number[] = []): Map<number, number | null> {
  const pids = new Map<number, number | null>(commandPids.map((pid) => [pid, null]));
  for (const p of processes) pids.set(p.pid, p.rankFromEnv ? p.rank : null);
  return pids;
}

/** The GPU summaries: from this run's samples, or those a re-diagnosed run's report kept, with the job's pids told again. */
export function gpusOf(input: DoctorInput, processes: readonly ProcessRecords[]): GpuSummary[] | null {
  const jobPids = jobPidsOf(processes, input.commandPids);
  if (input.gpuSamples) return summarizeGpus(input.gpuSamples, jobPids);
  const saved = input.recordedGpus?.gpus ?? null;
  return saved
    ? saved.map((g) => (Array.isArray(g.processes) ? { ...g, processes: withJobPids(g.processes.filter(isGpuProcess), jobPids) } : g))
    : null;
}

/**
 * Stage 6b: GPUs shared while the run trained (sharing.ts): another process's work beside a training process
 * (`gpu-shared`), ranks of one job on one GPU while others stay idle (`ranks-share-gpu`).
 */
export function sharingFindingsOf(
  gpus: readonly GpuSummary[] | null,
  processes: readonly ProcessRecords[],
  ranks: readonly RankSummary[],
): Finding[] {
  const procs: SharingProcess[] = processes.map((p) => {
    const st = ranks.find((r) => r.pid === p.pid)?.steps;
    return {
      pid: p.pid,
      rank: p.rank,
      rankFromEnv: p.rankFromEnv,
      hello: p.hello,
      steps: p.steps,
      gpuStepTimes: gpuStepTimesOf(p.records),
      timing: st?.timing ?? 'host',
      medianS: st?.medianS ?? null,
      device: lastMemory(p)?.device ?? null,
      peakAllocatedBytes: lastMemory(p)?.peakAllocatedBytes ?? 0,
    };
  });
  const share = ranksShareGpuFinding(gpus ?? [], procs);
  return [...(share ? [share] : []), ...gpuSharedFindings(gpus ?? [], procs)];
}

/** Why the probe sent nothing: the command's Python has no PyTorch (which Python, and the import's error), or in general. */
function nothingSentNote(python: CommandPython | null): string {
  if (python === null || python.torch !== null)
    return 'the probe sent nothing: the command did not run Python with torch, or no step happened (no optimizer step, DataLoader batch or gpuwise.step())';
  const which =
    python.executable !== null && python.executable !== python.python ? `${python.python} (${python.executable})` : python.python;
  return `${which} has no PyTorch (${python.importError}): the probe reports from PyTorch, so it had nothing to send; run doctor with the Python of the environment that trains, or install torch into this one`;
}

/** A process of the command that used PyTorch without the probe: which, and why. */
export function unprobedNote(u: UnprobedProcess): string {
  return `pid ${u.pid} (${u.command}) imported torch without the probe: ${u.reason}`;
}

/** Stage 7: the notes: what was left out, what could not be analysed, what switched itself off. */
export function notesOf(input: DoctorInput, processes: readonly ProcessRecords[], ranks: readonly RankSummary[]): string[] {
  const notes = [...input.notes];
  if (input.skippedLines > 0)
    notes.push(
      `${input.skippedLines} probe line(s) left out: not JSON (a process killed mid-write) or not a record this gpuwise understands`,
    );
  for (const u of input.unprobed ?? []) notes.push(unprobedNote(u));
  if (processes.length === 0 && (input.unprobed ?? []).length === 0) notes.push(nothingSentNote(input.python ?? null));
  notes.unshift(...timeWindowNotes(processes));
  for (const t of input.traces)
    if (t.metrics !== null && t.metrics.steps.length === 0)
      notes.push(
        `${t.path}: analyze found no profiled steps in it (a process without CUDA is profiled by torch's legacy profiler, whose CPU-only trace has no event categories)`,
      );
  for (const p of processes)
    for (const r of p.records)
      if (r.type === 'profile-end') {
        if (r.traceError !== undefined) notes.push(`pid ${p.pid}: the profiler window has no trace: ${r.traceError}`);
        if (r.snapshotError !== undefined) notes.push(`pid ${p.pid}: the profiler window has no memory snapshot: ${r.snapshotError}`);
        if (r.stopS !== undefined) notes.push(windowCostNote(p.pid, r.stopS, r.exportS));
      }
  for (const r of ranks) {
    const slowed = r.steps.slowedAfterWindow;
    if (slowed)
      notes.push(
        `rank ${r.rank}: the steps after the profiler window ran ${(slowed.slowdown * 100).toFixed(0)}% slower than the ${slowed.stepsBefore} steady steps before it (CUPTI, the profiler's CUDA tracing, stayed attached after this window, and each launch pays its callback): the run's statistics are those ${slowed.stepsBefore} steps`,
      );
  }
  for (const p of processes)
    for (const r of p.records)
      if (r.type === 'profile-start' && r.settled === false)
        notes.push(
          `rank ${p.rank}: the profiled window started at step ${r.step} before the step times settled (${r.reason === 'cap' ? 'the wait reached its cap' : 'a fixed step'}${r.warmupSteps !== undefined ? `, after ${r.warmupSteps} steps` : ''}): its figures may include warm-up; the run's own statistics use its steady steps`,
        );
  // A stall the rank recovered from (a step came after it) is worth a word; one still open is in run.hang.
  for (const st of recoveredStalls(input.records))
    notes.push(
      `rank ${st.rank ?? 0}: no progress for ${st.sinceStepS.toFixed(0)} s in step ${st.step} (at ${innermostFrames(st.stack, 1)[0] ?? '?'}), then it went on`,
    );
  for (const p of processes) {
    const partial = partialBatchNote(p);
    if (partial) notes.push(partial);
  }
  for (const r of ranks) {
    if (r.probeError) notes.push(`probe on rank ${r.rank} switched itself off after an internal error: ${r.probeError}`);
    if (r.steps.settled === false)
      notes.push(
        `rank ${r.rank}: the step times never settled (no run of steps at the pace of the run's second half): the statistics use the second half`,
      );
  }
  return notes;
}

/**
 * A loader that hands out a last partial batch each epoch (`drop_last=False`, a dataset size that is not a multiple of
 * the batch): said once, with the batch the report reads (the full batches', run/steps.ts batchOfSteps), and what it
 * costs a compiled model (a recompilation for the odd shape). Null when every step holds a full batch.
 */
export function partialBatchNote(p: ProcessRecords): string | null {
  const b = batchOfSteps(p.steps);
  if (b.partialSteps === 0 || b.samplesPerStep === null) return null;
  const who = p.rankFromEnv ? `rank ${p.rank}` : 'the run';
  const sizes = b.partialSamples.join(', ');
  const when =
    b.partialEvery !== null
      ? `every ${b.partialEvery} steps: the last batch of each epoch, which the DataLoader keeps (drop_last=False)`
      : b.partialSteps === 1
        ? 'once: a last batch the DataLoader keeps (drop_last=False)'
        : 'the DataLoader keeps batches smaller than the others (drop_last=False)';
  const compiled =
    p.model?.compiled === true
      ? "; a compiled model recompiles for the partial batch's shape: DataLoader(..., drop_last=True) avoids it"
      : '';
  return `${who}: ${b.partialSteps} of ${b.sizedSteps} steps ran a partial batch (${sizes} samples; the full batches hold ${b.samplesPerStep}), ${when}; the batch is read as ${b.microBatch}${b.gradAccum > 1 ? ` x ${b.gradAccum} accumulation` : ''}, the size of the full batches, and the what-ifs are scaled from it${compiled}`;
}

/**
 * Ranks whose profiler windows started at different steps (recorded before the probe aligned them, or ranks that
 * could not read rank 0's plan): the rank being profiled is slowed by the profiler and the others wait for it in
 * their collectives, so the windows' exposed communication and imbalance are the profiler's. On 2x H200 such windows
 * showed "communication not hidden: 76%" in a DDP run whose steps took 38 ms. Returns the note, or null.
 */
export function windowsApart(processes: readonly ProcessRecords[]): string | null {
  const starts: { rank: number; step: number }[] = [];
  for (const p of processes) {
    if (!p.rankFromEnv) continue;
    const s = p.records.filter((r): r is ProfileStartRecord => r.type === 'profile-start' && typeof r.step === 'number').pop();
    if (s) starts.push({ rank: p.rank, step: s.step as number });
  }
  if (new Set(starts.map((s) => s.step)).size < 2) return null;
  const list = starts
    .sort((a, b) => a.rank - b.rank)
    .map((s) => `rank ${s.rank} from step ${s.step}`)
    .join(', ');
  return `the ranks' profiler windows cover different steps (${list}): the profiled rank runs slower and the others wait for it in their collectives, so comm-bound and rank-imbalance from the windows are left out (the per-rank view and the probe's imbalance use every step's timing)`;
}

/** Stage 4b: the per-rank view of a run of two or more training ranks (distributed.ts), each rank with its own window. */
export function distributedStage(
  processes: readonly ProcessRecords[],
  ranks: readonly RankSummary[],
  traces: readonly TraceInput[],
): DistributedView | null {
  return distributedView(
    ranks.filter((r) => r.rankFromEnv).map((r) => ({ rank: r.rank, pid: r.pid, ...r.steps })),
    (pid) => processes.find((p) => p.pid === pid)?.hello ?? null,
    (rank) => traces.find((t) => t.rank === rank && t.metrics !== null)?.metrics ?? null,
  );
}

/**
 * A time window analysed in place of a step window: say plainly that no step was identified, what the window covers,
 * and what to add to the loop.
 */
export function timeWindowNotes(processes: readonly ProcessRecords[]): string[] {
  const windows = new Set<ProbeRecord>(analysedWindowEnds(processes.flatMap((p) => p.records)));
  const notes: string[] = [];
  for (const p of processes) {
    const end = p.records.find((r): r is ProfileEndRecord => r.type === 'profile-end' && r.reason === 'time' && windows.has(r));
    if (!end) continue;
    const start = p.records.find((r): r is ProfileStartRecord => r.type === 'profile-start' && r.reason === 'time');
    const who = p.rankFromEnv ? `rank ${p.rank}` : `process ${p.pid}`;
    const len = end.durationS !== undefined ? `${end.durationS.toFixed(1)} s` : 'a';
    const quiet =
      start?.quietS !== undefined ? ` after ${start.quietS.toFixed(start.quietS < 10 ? 1 : 0)} s of device work without one` : '';
    notes.push(
      p.steps.length === 0
        ? `${who}: no training step was identified (no optimizer step, DataLoader batch, backward pass, forward call of a module, CUDA graph replay or gpuwise.step()), so the probe profiled a ${len} time window${quiet} and its findings take that whole window as one step ("per step" means per window); no step time, throughput or what-if. Call gpuwise.step() at the end of each iteration to get them ("import gpuwise" with the gpuwise wheel pip-installed, or doctor --importable; it does nothing outside doctor)`
        : `${who}: the profiled window is a ${len} time window taken before the first step was identified${quiet}; the steps came too late or too few for a step window: it may show set-up rather than training`,
    );
  }
  return notes;
}

/** Stage 8a: the set-up inference, memory model and what-ifs of the rank the what-ifs use (whatIfs.ts). */
export function whatIfResultOf(
  id: RunIdentity,
  planModel: DoctorReport['planModel'],
  ranks: readonly RankSummary[],
  traces: readonly TraceInput[],
  outcome: Outcome,
  paces: ReadonlyMap<number, Pipeline> = new Map(),
  asked: Inferred<Precision | null> | null = null,
): WhatIfResult {
  const rank = id.stepsOf?.rank ?? 0;
  const steps = ranks.find((r) => r.rank === rank)?.steps;
  const metrics = traces.filter((t) => t.metrics !== null).map((t) => t.metrics as TraceMetrics);
  return buildWhatIfs({
    hello: id.hello,
    model: id.model,
    planModel,
    steps: id.stepsOf?.steps ?? [],
    medianStepS: steps?.medianS ?? null,
    worldSize: id.hello?.worldSize ?? null,
    metrics: metrics.find((m) => m.rank === rank) ?? metrics[0] ?? null,
    pace: paceOfRank(paces, ranks, rank),
    outOfMemory: outcome === 'out-of-memory',
    askedPrecision: asked,
  });
}

/** Stage 8b: the what-ifs as findings, merged into the trace findings that say the same. */
export function whatIfStage(
  id: RunIdentity,
  ranks: readonly RankSummary[],
  result: WhatIfResult,
  traceFindings: Finding[],
  paces: ReadonlyMap<number, Pipeline> = new Map(),
): { findings: Finding[]; traceFindings: Finding[] } {
  const rank = id.stepsOf?.rank ?? 0;
  const steps = ranks.find((r) => r.rank === rank)?.steps;
  const planned = whatIfFindings(result, traceFindings, steps?.medianS ?? null, rank, paceOfRank(paces, ranks, rank));
  return { findings: planned.findings, traceFindings: traceFindings.map((f) => planned.merged.find((m) => m.id === f.id) ?? f) };
}

/** Each rank's pipeline: its first process's (processes that are not ranks of one job all count as rank 0). */
function pipelinesByRank(paces: ReadonlyMap<number, Pipeline>, ranks: readonly RankSummary[]): Map<number, Pipeline> {
  const byRank = new Map<number, Pipeline>();
  for (const r of ranks) {
    const p = paces.get(r.pid);
    if (p && !byRank.has(r.rank)) byRank.set(r.rank, p);
  }
  return byRank;
}

/**
 * Stage 4c: the job (pace/job.ts): each training rank's pipeline less its wait for the others in collectives. The wait
 * is the windows' (collectiveWaits) where every rank has a window of one job begun at the same step, else the probe's
 * (probeWaitsNs: the DataLoader waits' differences). `probe` forces the probe's.
 */
export function jobStage(
  paces: ReadonlyMap<number, Pipeline>,
  ranks: readonly RankSummary[],
  traces: readonly TraceInput[],
  view: DistributedView | null,
  apart: boolean,
  probe = false,
): Job | null {
  const byRank = pipelinesByRank(paces, ranks);
  const analysed = traces.filter((t) => t.metrics !== null && t.collectives !== null && byRank.has(t.rank));
  const windowed = !probe && !apart && crossRankRulesRun(traces) && byRank.size > 1 && analysed.length === byRank.size;
  if (!windowed) return probeJobOf(view, byRank);
  return windowJob(
    analysed.map((t) => t.metrics as TraceMetrics),
    analysed.map((t) => t.collectives as CollectiveTimings),
    analysed.map((t) => byRank.get(t.rank) as Pipeline),
  );
}

/**
 * Stage 9: what sets the pace of the slowest training rank and the plan of the findings' fixes over the job
 * (pace/report.ts). The trace's rules look only at ranks with a window, so their findings name those; a rank of the
 * job without a window of its own runs the same script, so their fixes apply to it too (assumed), as a what-if's does
 * (the job's set-up). The probe's findings name each rank they were looked for on.
 */
export function paceStage(job: Job | null, findings: readonly RankedFinding[], traces: readonly TraceInput[]): DoctorReport['pace'] {
  return paceReportOf(job, plannedFindings(job, findings, traces));
}

/** The findings as the plan reads them: a window's and a what-if's also name the job's ranks without a window. */
export function plannedFindings(job: Job | null, findings: readonly RankedFinding[], traces: readonly TraceInput[]): RankedFinding[] {
  const windowed = new Set(traces.filter((t) => t.metrics !== null).map((t) => t.rank));
  const unseen = (job?.ranks ?? []).map((r) => r.rank).filter((r) => !windowed.has(r));
  if (unseen.length === 0) return [...findings];
  return findings.map((f) =>
    f.source === 'planner'
      ? { ...f, ranks: [] }
      : f.source === 'trace' && f.ranks.length > 0
        ? { ...f, ranks: [...new Set([...f.ranks, ...unseen])].sort((a, b) => a - b) }
        : f,
  );
}

/**
 * The doctor report, as a pipeline of the stages above: group the records by process, tell the run's identity,
 * summarise each rank, collect the trace, memory and probe findings, the outcome and the notes, run the what-ifs, rank
 * everything and assemble.
 */
export function buildDoctorReport(input: DoctorInput): DoctorReport {
  const processes = groupProcesses(input.records);
  const id = runIdentity(processes);
  const ranks = processes
    .map((p) => summarizeRank(p, input.gpuSamples, input.disconnectedAtMs))
    .sort((a, b) => a.rank - b.rank || a.pid - b.pid);
  const gpus = gpusOf(input, processes);
  const distributed = distributedStage(processes, ranks, input.traces);
  const asked = askedPrecisionOf(input.command, processes, id.model);
  const apart = windowsApart(processes);
  const paces = pacesOf(processes, ranks, input.traces);
  const probeBalance = probeBalanceOf(distributed, jobStage(paces, ranks, input.traces, distributed, apart !== null, true));
  const ending = endingOf(processes, input.disconnectedAtMs, input.hang?.atMs ?? null, input.stepBeacons);
  const stalls = openStalls(input.records);
  const hang = hangAnalysis(stalls, input.hang ? input.hang.timeoutS : null, input.hang?.atMs ?? null);
  const { outcome, text } = outcomeOf(input, ranks, ending, hang);
  const plan = planModelOf(id.model);
  // The set-up and the hardware before the rules: a split model's data-parallel fit is part of their context.
  const whatIfResult = whatIfResultOf(id, plan.model, ranks, input.traces, outcome, paces, asked);
  const hw = whatIfResult.setup ? hardwareOf(whatIfResult.setup) : null;
  const dataParallelOf = (m: TraceMetrics) => dataParallelAlternativeOf(m, id.model, whatIfResult.setup, hw, plan.model);
  const traceFindings = traceFindingsOf(input.traces, ranks, {
    model: id.model,
    paces,
    asked,
    windowsApart: apart !== null,
    gpus,
    probeBalance,
    dataParallelOf,
  });
  // Without two windows of one job the cross-rank rule does not run: the probe's timing alone says who is slow.
  const probeImbalance = probeBalance && !crossRankRulesRun(input.traces) ? probeImbalanceFinding(probeBalance) : null;
  const memoryFindings = memoryFindingsOf(input.snapshots);
  const probeFindings = [
    ...probeFindingsOf(id.model, ranks, input.traces, paces),
    ...(probeImbalance ? [probeImbalance] : []),
    ...decodeFindingsOf(ranks, input.traces, paces),
  ];
  const telemetryFindings = sharingFindingsOf(gpus, processes, ranks);
  const notes = notesOf(input, processes, ranks);
  if (apart) notes.push(apart);
  const whatIf = { result: whatIfResult, ...whatIfStage(id, ranks, whatIfResult, traceFindings, paces) };
  const findings = rankFindings(whatIf.traceFindings, memoryFindings, probeFindings, whatIf.findings, telemetryFindings);
  const { model, hello } = id;
  if (plan.model && model && Math.abs(plan.model.paramCount - model.totalParamCount) > 0.01 * plan.model.paramCount)
    notes.push(
      `the model's config gives ${plan.model.paramCount} parameters, the probe counted ${model.totalParamCount}: model.json describes the config's model`,
    );
  let modelOut: DoctorReport['model'] = null;
  if (model) {
    const { v: _v, type: _type, pid: _pid, rank: _rank, t: _t, ...rest } = model;
    modelOut = rest;
  }
  return {
    schemaVersion: DOCTOR_SCHEMA_VERSION,
    tool: 'gpuwise',
    command: 'doctor',
    version: input.version,
    run: {
      command: input.command,
      runDir: input.runDir,
      startedAtMs: input.startedAtMs,
      durationS: (input.endedAtMs - input.startedAtMs) / 1000,
      exitCode: input.exit.code,
      signal: input.exit.signal,
      outcome,
      outcomeText: text,
      ...(ending.first ? { firstFailure: { ...ending.first, after: ending.after } } : {}),
      ...(hang ? { hang } : {}),
    },
    environment: {
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
    },
    ranks,
    ...(distributed ? { distributed } : {}),
    gpus,
    gpuUnavailableReason: input.gpuUnavailableReason,
    model: modelOut,
    planModel: plan.model,
    planModelProblem: plan.problem,
    planModelFile: plan.model ? (input.planModelFile ?? null) : null,
    profile: {
      traces: input.traces.map((t) => {
        const mf = t.metrics?.modelFlops ?? null;
        const run = runStepNsOf(ranks, t.rank);
        return { rank: t.rank, path: t.path, error: t.error, modelFlops: mf && run !== null ? modelFlopsAtStep(mf, run) : mf };
      }),
      snapshots: input.snapshots.map((s) => ({ rank: s.rank, path: s.path, kind: s.kind, error: s.error })),
    },
    whatIfs: whatIf.result.whatIfs,
    whatIfBasis:
      whatIf.result.setup || whatIf.result.calibration ? { setup: whatIf.result.setup, calibration: whatIf.result.calibration } : null,
    whatIfProblem: whatIf.result.problem,
    findings,
    pace: paceStage(jobStage(paces, ranks, input.traces, distributed, apart !== null), findings, input.traces),
    notes,
  };
}
