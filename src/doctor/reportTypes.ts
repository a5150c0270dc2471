/**
 * The doctor report's types (pure): what the shell hands the report builder (`DoctorInput`, with its windows and
 * snapshots) and the `--json` contract it returns (`DoctorReport`, `schemaVersion` 1: its fields only grow).
 */
import type { Finding } from '../findings/finding.js';
import type { LeverAccuracy } from '../history/leverAccuracy.js';
import type { MemoryReport } from '../memory/report.js';
import type { PaceReport } from '../pace/report.js';
import type { UnprobedProcess } from '../run/attach.js';
import type { ChildExit } from '../run/exit.js';
import type { AllocatorMemory, ForwardGradModes, ModelRecord, ProbeRecord } from '../run/records.js';
import type { RunSetup } from '../run/setup.js';
import type { StepStats, StepTimeline } from '../run/steps.js';
import type { Snapshot } from '../telemetry/sample.js';
import type { CollectiveTimings } from '../trace/metrics/collectives.js';
import type { ModelFlops, TraceMetrics } from '../trace/metrics/types.js';
import type { DistributedView } from './distributed.js';
import type { Ending, FirstFailure } from './ending.js';
import type { GpuProcess } from './gpuProcesses.js';
import type { HangAnalysis } from './hang.js';
import type { PlanModelDescription } from './runSetup.js';
import type { WhatIf, WhatIfCalibration } from './whatIfs.js';

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
  /**
   * What `tune --plan` measured of each plan step on this machine (the run history's pairs, history/leverAccuracy.ts);
   * absent or empty when it measured none.
   */
  leverAccuracy?: readonly LeverAccuracy[];
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
  planModel: PlanModelDescription | null;
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
  /**
   * Of the plan's steps, those `tune --plan` has measured on this machine before: the predicted and measured ratio
   * by step id (DoctorInput.leverAccuracy). The plan's figures stay the model's; the report says where this machine
   * measured otherwise. Added to schema 1 after its release: absent when none was measured.
   */
  measuredHere?: LeverAccuracy[];
  notes: string[];
}
