/**
 * The probe's wire format: one JSON object per line (python/gpuwise/probe.py writes them), sent to
 * doctor's Unix socket or appended to `probe-PID.jsonl` files. Version 1 of the protocol.
 */

export const PROBE_PROTOCOL_VERSION = 1;

interface Base {
  /** Protocol version. */
  v: number;
  pid: number;
  /** RANK from the environment (torchrun, accelerate, SLURM); null for a single process. */
  rank: number | null;
  /** Wall clock, seconds since the Unix epoch. */
  t: number;
}

export interface CudaDevice {
  index: number;
  name: string;
  totalMemoryBytes: number;
  capability: string;
}

export interface HelloRecord extends Base {
  type: 'hello';
  probeVersion: string;
  python: string;
  torch: string | null;
  cudnn: number | null;
  cuda: { available: boolean; initialized: boolean; version: string | null; devices: CudaDevice[]; currentDevice: number | null };
  hostname: string;
  argv: string[];
  localRank: number | null;
  worldSize: number | null;
  /** `optimizer-step-post-hook` (torch >= 2.0) or `optimizer-step-wrapper`; steps may also come from `gpuwise.step()` or batches (see StepRecord.stepSource). */
  stepHook: string | null;
  profileAt: number;
  profileSteps: number;
  maxSteps: number | null;
}

/** torch.cuda.memory_stats() of the current device at the end of a step; peaks are since the start. */
export interface AllocatorMemory {
  device: number;
  allocatedBytes: number;
  reservedBytes: number;
  peakAllocatedBytes: number;
  peakReservedBytes: number;
  allocRetries: number;
  ooms: number;
}

export interface StepRecord extends Base {
  type: 'step';
  step: number;
  /** Host wall clock from the end of the previous step (or the first batch) to this optimizer step; null when unknown. */
  stepTimeS: number | null;
  /** Time spent inside DataLoader `__next__` during this step. */
  dataWaitS: number;
  batches: number;
  /** Sum of the batches' leading dimensions; null when a batch's size could not be told. */
  samples: number | null;
  /**
   * Token positions in this step's batches: the element count of `input_ids` (a dict batch) or of the first 2-D integer
   * tensor (samples x sequence), padding included (the GPU processes it); null when no batch looked like token ids.
   * Absent from probes before 0.2.
   */
  tokens?: number | null;
  /** The sequence length (second dimension) of the last such batch; null or absent as for `tokens`. */
  seqLen?: number | null;
  /**
   * What marked this step: `optimizer` (the first optimizer's step), `marker` (the script called `gpuwise.step()`),
   * `batch` (no optimizer stepped for many batches: each DataLoader batch is a step). Absent from probes before 0.2.
   */
  stepSource?: 'optimizer' | 'marker' | 'batch';
  /**
   * Steps as the GPU ran them, `[step, seconds]`: the time between the completion of a CUDA timing event recorded at
   * the previous step's end and this step's (idle gaps included), for the steps whose events the GPU had reached when
   * this record was sent (so they lag behind `step`). Empty without CUDA; absent from probes before 0.2.
   */
  gpuStepTimes?: [number, number][];
  memory: AllocatorMemory | null;
  profiled: boolean;
}

export interface ModelRecord extends Base {
  type: 'model';
  format: 'gpuwise-model/1';
  name: string;
  paramCount: number;
  totalParamCount: number;
  paramGroups: { name: string; count: number }[];
  modules: { name: string; class: string; paramCount: number; trainableParamCount: number; dtypes: Record<string, number> }[];
  buffers: { count: number; bytes: number; dtypes: Record<string, number> };
  /** Null when steps come from `gpuwise.step()` or batches and no optimizer was seen. */
  optimizer: { class: string; paramGroups: number; stateBytes: number; stateDtypes: Record<string, number> } | null;
  hfConfig: Record<string, unknown> | null;
  found: boolean;
}

export interface ProfileEndRecord extends Base {
  type: 'profile-end';
  firstStep: number;
  lastStep: number;
  trace: string | null;
  snapshot: string | null;
}

export interface OomRecord extends Base {
  type: 'oom';
  step: number;
  device: number;
  allocBytes: number;
  deviceAllocatedBytes: number;
  deviceFreeBytes: number;
  snapshot: string | null;
}

export interface ExceptionRecord extends Base {
  type: 'exception';
  step: number;
  exception: string;
  message: string;
  outOfMemory: boolean;
}

export interface EndRecord extends Base {
  type: 'end';
  reason: 'exit' | 'max-steps' | 'exception' | 'interrupted';
  steps: number;
  exception: string | null;
  /** The GPU step times still due at a clean end (see StepRecord.gpuStepTimes). */
  gpuStepTimes?: [number, number][];
}

export interface ProbeErrorRecord extends Base {
  type: 'probe-error';
  error: string;
  step: number;
}

export interface ProfileStartRecord extends Base {
  type: 'profile-start';
  step: number;
  steps: number;
  cuda: boolean;
}

export type ProbeRecord =
  | HelloRecord
  | StepRecord
  | ModelRecord
  | ProfileStartRecord
  | ProfileEndRecord
  | OomRecord
  | ExceptionRecord
  | EndRecord
  | ProbeErrorRecord;

const TYPES = new Set(['hello', 'step', 'model', 'profile-start', 'profile-end', 'oom', 'exception', 'end', 'probe-error']);

export interface ParsedRecords {
  records: ProbeRecord[];
  /** Lines that were not a record of a known type (a torn last line of a killed process, a newer probe). */
  skippedLines: number;
}

/** Parses JSON lines; keeps every well-formed record of a known type, counts the rest. */
export function parseProbeLines(text: string): ParsedRecords {
  const records: ProbeRecord[] = [];
  let skippedLines = 0;
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    let o: unknown;
    try {
      o = JSON.parse(line);
    } catch {
      skippedLines++;
      continue;
    }
    const r = o as Partial<Base> & { type?: unknown };
    if (typeof o !== 'object' || o === null || typeof r.type !== 'string' || !TYPES.has(r.type) || typeof r.pid !== 'number') {
      skippedLines++;
      continue;
    }
    records.push(o as ProbeRecord);
  }
  return { records, skippedLines };
}

/** The rank a record belongs to: RANK when set, else 0 (one process). */
export function rankOf(r: { rank: number | null }): number {
  return r.rank ?? 0;
}
