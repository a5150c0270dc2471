/**
 * The probe's wire format (pure): one JSON object per line (python/gpuwise/probe/ writes them), sent to doctor's
 * Unix socket or appended to `probe-PID.jsonl` files, and its validation at the edge. Protocol versions 1 to 3 are
 * read (2 adds the step sources `backward`, `forward`, `graph`, `time`, `step.batchSource`, the model's `compiled`,
 * `framework`, `autocastDtype` and `batchDim`, why the profiler window started, and the time window of a run without
 * steps; 3 adds the `stall` record of the probe's watchdog, and later, without a bump, the `loader` record of the
 * DataLoader's own production). Every record is checked once, field by
 * field, in `parseProbeLines`: a record that is not understood is left out with a note saying why, so the code after
 * it trusts the types and a malformed record can never end a report in an internal error.
 */
import { anyObject, arrayOf, bool, type Check, FieldProblem, int, mapOf, nullable, num, obj, oneOf, optional, str } from './validate.js';

/** The newest protocol version this gpuwise reads; every version from 1 to it is accepted. */
export const PROBE_PROTOCOL_VERSION = 3;

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
  /** `available` is null when the process never initialised CUDA: asking would initialise the driver in it. */
  cuda: { available: boolean | null; initialized: boolean; version: string | null; devices: CudaDevice[]; currentDevice: number | null };
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
  /**
   * CPU time of the stepping thread over the same interval (`time.thread_time()`): the host's own work to issue the
   * step. Sleeps (a DataLoader queue wait, the GIL) do not count; a CUDA synchronisation that spin-waits does (see
   * doctor's re-basing). Null when unknown (the step ended on another thread); absent from older probes (an
   * optional field: no protocol bump, an older gpuwise keeps the record and ignores it).
   */
  hostCpuS?: number | null;
  /**
   * Wall time of the stepping thread inside `torch.autograd.backward` calls during this step (on CUDA it waits there
   * while autograd's device thread launches the backward's kernels): the host's launch work, timed in the window's
   * steps and outside it alike, so the two tell the profiler's cost on the host. Null when no backward ran; absent from
   * older probes (an optional field: no protocol bump).
   */
  backwardS?: number | null;
  /** Time spent inside DataLoader `__next__` during this step. */
  dataWaitS: number;
  batches: number;
  /**
   * `model-input` steps: the forward calls whose inputs the samples add up (the micro-batches: gradient accumulation
   * over a `get_batch()` loop); null otherwise. Absent from probes before it (an optional field: no protocol bump).
   */
  forwards?: number | null;
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
   * `batch` (no optimizer stepped for many batches: each DataLoader batch is a step); protocol 2 adds `backward`
   * (autograd backward passes), `forward` (calls of the outermost module), `graph` (replays of the first CUDA graph
   * replayed) and `time` (reserved: a run without steps sends no step record, only a time window). Absent from probes
   * before 0.2.
   */
  stepSource?: StepSource;
  /**
   * Protocol 2: where samples, tokens and seqLen come from: `dataloader` (the DataLoader's batches) or `model-input`
   * (the leading dimension of the outermost module's first tensor argument, when no DataLoader is iterated); null
   * when neither told.
   */
  batchSource?: 'dataloader' | 'model-input' | null;
  /**
   * Steps as the GPU ran them, `[step, seconds]`: the time between the completion of a CUDA timing event recorded at
   * the previous step's end and this step's (idle gaps included), for the steps whose events the GPU had reached when
   * this record was sent (so they lag behind `step`). Empty without CUDA; absent from probes before 0.2.
   */
  gpuStepTimes?: [number, number][];
  memory: AllocatorMemory | null;
  profiled: boolean;
  /**
   * The probe's own work that ran during this step and slowed it, so the step statistics leave the step out:
   * `window-end` (the profiler stopped at its start), `export` (the window's trace or snapshot being written by the
   * probe's background thread meanwhile), `model` (the model searched for at its start), `sampling` (the step under way
   * when the probe, between two bursts of its sampled loop, began to watch the DataLoader again); null when none. Any other
   * string is kept (a newer probe's reason). Absent from older probes (an optional field: no protocol bump).
   */
  probeWork?: string | null;
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
  /** Protocol 2: the model is compiled (torch.compile's OptimizedModule, torch._dynamo active); null when not told. */
  compiled?: boolean | null;
  /** What showed it (`OptimizedModule`, `torch._dynamo`). */
  compiledEvidence?: string | null;
  /** The training framework seen (`transformers`, `lightning`, `accelerate`) and its version. */
  framework?: string | null;
  frameworkVersion?: string | null;
  /**
   * The autocast dtype active at the model's forward (`bfloat16`, `float16`; `""` when autocast was off there), when
   * seen. Read at the outermost module's forward pre-hook: a wrapper that enters autocast inside the forward
   * (accelerate's prepared model) is not seen here, hence `acceleratePrecision`.
   */
  autocastDtype?: string | null;
  /**
   * The mixed precision accelerate was set up with (`no`, `bf16`, `fp16`, `fp8`): accelerate launch's flag or config
   * file, `Accelerator(mixed_precision=...)`, or a Hugging Face Trainer's bf16/fp16; null or absent without accelerate
   * (or from an older probe).
   */
  acceleratePrecision?: string | null;
  /**
   * The dimension of the outermost module's first tensor argument read as the batch (`model-input` batches): 0, or 1
   * for a sequence-first model (`[seq, batch, ...]`); null or absent when the outermost module was not found (or an
   * older probe, which always read 0).
   */
  batchDim?: number | null;
  /** What decided it: the first module reading a `batch_first` flag (`LSTM(batch_first=False)`); null: none (the leading dimension). */
  batchDimEvidence?: string | null;
}

export interface ProfileEndRecord extends Base {
  type: 'profile-end';
  /** The window's steps; null for a time window (no step was found). */
  firstStep: number | null;
  lastStep: number | null;
  trace: string | null;
  snapshot: string | null;
  /** `time`: a time window of a run without steps (profile-start's reason); absent for a step window. */
  reason?: 'time';
  /** How long a time window profiled (seconds). */
  durationS?: number;
  /** Why the window has no trace although it was profiled (torch could not parse its own records, the file could
   * not be written). */
  traceError?: string;
  /** Why the window has no memory snapshot although history was recorded (the file could not be written). */
  snapshotError?: string;
  /** A CUDA window: whether its stop detached CUPTI (the probe's teardown, or the script's own TEARDOWN_CUPTI=1). Left
   * attached, later launch-heavy steps run slower (a compiled ResNet-50: 25-35% on an H200): `cuptiSlowdownOf`.
   * Absent from older probes. */
  cuptiDetached?: boolean;
  /** Seconds the window's stop held the stepping thread (a CUDA synchronisation, the profiler collecting its events,
   * CUPTI's detach): the one slow step a window leaves on the training. Absent from older probes. */
  stopS?: number;
  /** Seconds the probe's background work spent writing the trace and the snapshot (torch's writers hold the GIL, so the
   * training thread's steps meanwhile may wait: they are marked as the probe's work). Absent from older probes. */
  exportS?: { trace: number; snapshot: number };
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

/**
 * The outermost module's forward calls the probe saw, by grad mode: with gradients, under `no_grad`, under
 * `inference_mode` (seen while the probe watches them: every one where forwards are the steps).
 */
export interface ForwardGradModes {
  grad: number;
  noGrad: number;
  inference: number;
}

export interface EndRecord extends Base {
  type: 'end';
  reason: 'exit' | 'max-steps' | 'exception' | 'interrupted';
  steps: number;
  exception: string | null;
  /** The GPU step times still due at a clean end (see StepRecord.gpuStepTimes). */
  gpuStepTimes?: [number, number][];
  /** Added without a bump. */
  forwardGradModes?: ForwardGradModes;
}

export interface ProbeErrorRecord extends Base {
  type: 'probe-error';
  error: string;
  step: number;
}

export interface ProfileStartRecord extends Base {
  type: 'profile-start';
  /** The window's first step; null for a time window. */
  step: number | null;
  steps: number;
  cuda: boolean;
  /**
   * Protocol 2: why the window started here: step times `settled`, the `cap` was reached first, a `fixed` step
   * (GPUWISE_PROFILE_AT), or `time`: no step was found after GPUWISE_TIME_WINDOW_AFTER_S of device work, so the
   * probe profiles `durationS` seconds (no ProfilerStep span: analysed as one step).
   */
  reason?: 'settled' | 'cap' | 'fixed' | 'time';
  /** A time window's planned length, and how long nothing step-like had happened before it (seconds). */
  durationS?: number;
  quietS?: number;
  settled?: boolean;
  /** Steps run before the window. */
  warmupSteps?: number;
  /** A distributed rank's window opened at rank 0's announced step (false: its own choice, no plan came). */
  aligned?: boolean;
  /** A rank that waited for rank 0's plan in vain: the step at which it would have opened its window alone. */
  ownReadyStep?: number;
}

/**
 * Protocol 3: the probe's watchdog saw the main thread make no progress (no step, DataLoader batch, forward of the
 * outermost module or backward pass) for `thresholdS`; sent again at most every 60 s while it lasts, with the grown
 * `sinceStepS`.
 */
export interface StallRecord extends Base {
  type: 'stall';
  /** The step the main thread is in (steps done + 1). */
  step: number;
  /** Seconds since the last step ended (or since the first step started, before any ended). */
  sinceStepS: number;
  /** The threshold that applied: max(GPUWISE_STALL_S, 10 x the median step). */
  thresholdS: number;
  /** The main thread's Python stack, `file:line function`, innermost last, at most 30 frames. */
  stack: string[];
}

/**
 * A DataLoader the process iterates, and what its workers cost (optional; a probe of protocol 3 sends it without a bump:
 * an older gpuwise leaves the record out with a note). Nothing runs in the workers: the probe sees each iterator as
 * `DataLoader.__iter__` returns it and its background thread reads, about once a second and at the end, the batches the
 * loader has yielded and the CPU time of its worker processes from /proc. Counts are cumulative over the loader's
 * epochs; the differences between two records give the CPU a batch costs in the workers and the cores the training
 * process itself uses (docs/reference/doctor.md, "What sets the pace").
 */
export interface LoaderRecord extends Base {
  type: 'loader';
  /** The stepping thread's step count when the record was read. */
  step: number;
  /** Which DataLoader: 0 for the first the process iterated, 1 for the next, ... */
  loader: number;
  /** How many times this loader's iterator was created (1 in the first epoch). */
  epoch: number;
  /** The step at which this epoch's iterator was created (its first batch belongs to the step after). */
  epochStartStep: number;
  /** num_workers (0: batches made in the main process, in the step). */
  workers: number;
  persistentWorkers: boolean;
  /** prefetch_factor; null with num_workers 0. */
  prefetchFactor: number | null;
  pinMemory: boolean;
  /** batch_size; null for a batch_sampler or an iterable dataset that batches itself. */
  batchSize: number | null;
  /** CPU cores the process may run on (len(os.sched_getaffinity(0))); null where the platform cannot tell. */
  cpuCores: number | null;
  /** Batches this loader has yielded so far, all epochs. */
  batches: number;
  /** CPU seconds (user + system, all threads) its worker processes have used so far; null with no workers or no /proc. */
  workerCpuS: number | null;
  /** CPU seconds the training process itself has used so far (all its threads). */
  processCpuS: number | null;
  /**
   * The wait for an epoch's first batch, from the call of `iter(loader)` (the workers started, unless persistent) to
   * the batch: the median over the epochs after the first (whose start also pays the first imports); null until a
   * second epoch has begun; absent from an older probe.
   */
  epochFillS?: number | null;
}

/**
 * The training process's CPU time by thread, read by the probe about once a second from /proc/self/task (probe
 * threads.py). Each figure is CPU seconds (user + system) since the first reading, so two records' difference is the
 * CPU of the steps between them. On CUDA, `loss.backward()` runs on autograd's device thread while the stepping thread
 * waits: the host's work a step is the stepping thread's and autograd's together.
 */
export interface CpuRecord extends Base {
  type: 'cpu';
  /** The stepping thread's step count when the record was read. */
  step: number;
  /** Threads of the process at the reading. */
  threads: number;
  /** CPU seconds of the whole process since its start (all threads); null where /proc cannot be read. */
  processCpuS: number | null;
  /** The thread whose events mark the steps. */
  steppingCpuS: number;
  /** Autograd's device threads (`pt_autograd_<device>`): the backward passes of CUDA tensors. */
  autogradCpuS: number;
  /** The probe's own background thread. */
  probeCpuS: number;
  /** Every other thread: pin-memory, CUDA's, intra-op workers, the script's own. */
  otherCpuS: number;
}

export type StepSource = 'optimizer' | 'marker' | 'batch' | 'backward' | 'forward' | 'graph' | 'time';

export type ProbeRecord =
  | HelloRecord
  | StepRecord
  | ModelRecord
  | ProfileStartRecord
  | ProfileEndRecord
  | OomRecord
  | ExceptionRecord
  | EndRecord
  | ProbeErrorRecord
  | StallRecord
  | LoaderRecord
  | CpuRecord;

const TYPES: ReadonlySet<string> = new Set([
  'hello',
  'step',
  'model',
  'profile-start',
  'profile-end',
  'oom',
  'exception',
  'end',
  'probe-error',
  'stall',
  'loader',
  'cpu',
]);

const rankField = nullable(int(0));
const base = { v: int(1), pid: int(0), rank: rankField, t: num() } as const;
const bytes = num(0);
const stepTimes = arrayOf((v, f) => {
  const pair = arrayOf(num())(v, f);
  if (pair.length !== 2 || !Number.isSafeInteger(pair[0]) || (pair[1] as number) < 0) throw new FieldProblem(f, '[step, seconds >= 0]');
  return pair as [number, number];
});
const allocator = obj({
  device: int(0),
  allocatedBytes: bytes,
  reservedBytes: bytes,
  peakAllocatedBytes: bytes,
  peakReservedBytes: bytes,
  allocRetries: num(0),
  ooms: num(0),
});

/** Malformed optional fields of the record being checked (the schemas are built once and share it). */
const DROPPED: string[] = [];

/** One check per record type: the fields the report reads, with their types. */
const SCHEMAS: Record<ProbeRecord['type'], Check<unknown>> = (() => {
  const dropped = DROPPED;
  return {
    hello: obj(
      {
        ...base,
        type: str,
        probeVersion: str,
        python: str,
        torch: nullable(str),
        cudnn: nullable(num()),
        cuda: obj({
          available: nullable(bool),
          initialized: bool,
          version: nullable(str),
          devices: arrayOf(obj({ index: int(0), name: str, totalMemoryBytes: bytes, capability: str })),
          currentDevice: nullable(int(0)),
        }),
        hostname: str,
        argv: arrayOf(str),
        localRank: nullable(int(0)),
        worldSize: nullable(int(1)),
        stepHook: nullable(str),
        profileAt: num(),
        profileSteps: num(),
        maxSteps: nullable(num()),
      },
      dropped,
    ),
    step: obj(
      {
        ...base,
        type: str,
        step: int(0),
        stepTimeS: nullable(num(0)),
        hostCpuS: optional(nullable(num(0))),
        backwardS: optional(nullable(num(0))),
        dataWaitS: num(0),
        batches: int(0),
        forwards: optional(nullable(int(0))),
        samples: nullable(num(0)),
        tokens: optional(nullable(num(0))),
        seqLen: optional(nullable(int(0))),
        stepSource: optional(oneOf(['optimizer', 'marker', 'batch', 'backward', 'forward', 'graph', 'time'] as const)),
        batchSource: optional(nullable(oneOf(['dataloader', 'model-input'] as const))),
        gpuStepTimes: optional(stepTimes),
        memory: nullable(allocator),
        profiled: bool,
        probeWork: optional(nullable(str)),
      },
      dropped,
    ),
    model: obj(
      {
        ...base,
        type: str,
        format: oneOf(['gpuwise-model/1'] as const),
        name: str,
        paramCount: num(0),
        totalParamCount: num(0),
        paramGroups: arrayOf(obj({ name: str, count: num(0) })),
        modules: arrayOf(obj({ name: str, class: str, paramCount: num(0), trainableParamCount: num(0), dtypes: mapOf(num(0)) })),
        buffers: obj({ count: num(0), bytes: num(0), dtypes: mapOf(num(0)) }),
        optimizer: nullable(obj({ class: str, paramGroups: num(0), stateBytes: num(0), stateDtypes: mapOf(num(0)) })),
        hfConfig: nullable(anyObject),
        found: bool,
        compiled: optional(nullable(bool)),
        compiledEvidence: optional(nullable(str)),
        framework: optional(nullable(str)),
        frameworkVersion: optional(nullable(str)),
        autocastDtype: optional(nullable(str)),
        acceleratePrecision: optional(nullable(str)),
        batchDim: optional(nullable(int(0))),
        batchDimEvidence: optional(nullable(str)),
      },
      dropped,
    ),
    'profile-start': obj(
      {
        ...base,
        type: str,
        step: nullable(num()),
        steps: num(0),
        cuda: bool,
        reason: optional(oneOf(['settled', 'cap', 'fixed', 'time'] as const)),
        durationS: optional(num(0)),
        quietS: optional(num(0)),
        settled: optional(bool),
        warmupSteps: optional(int(0)),
        aligned: optional(bool),
        ownReadyStep: optional(int(0)),
      },
      dropped,
    ),
    'profile-end': obj(
      {
        ...base,
        type: str,
        firstStep: nullable(num()),
        lastStep: nullable(num()),
        trace: nullable(str),
        snapshot: nullable(str),
        reason: optional(oneOf(['time'] as const)),
        durationS: optional(num(0)),
        traceError: optional(str),
        snapshotError: optional(str),
        cuptiDetached: optional(bool),
        stopS: optional(num(0)),
        exportS: optional(obj({ trace: num(0), snapshot: num(0) })),
      },
      dropped,
    ),
    oom: obj(
      {
        ...base,
        type: str,
        step: num(0),
        device: int(0),
        allocBytes: bytes,
        deviceAllocatedBytes: bytes,
        deviceFreeBytes: bytes,
        snapshot: nullable(str),
      },
      dropped,
    ),
    exception: obj({ ...base, type: str, step: num(0), exception: str, message: str, outOfMemory: bool }, dropped),
    end: obj(
      {
        ...base,
        type: str,
        reason: oneOf(['exit', 'max-steps', 'exception', 'interrupted'] as const),
        steps: num(0),
        exception: nullable(str),
        gpuStepTimes: optional(stepTimes),
        forwardGradModes: optional(obj({ grad: int(0), noGrad: int(0), inference: int(0) })),
      },
      dropped,
    ),
    'probe-error': obj({ ...base, type: str, error: str, step: num() }, dropped),
    stall: obj({ ...base, type: str, step: int(0), sinceStepS: num(0), thresholdS: num(0), stack: arrayOf(str) }, dropped),
    loader: obj(
      {
        ...base,
        type: str,
        step: int(0),
        loader: int(0),
        epoch: int(1),
        epochStartStep: int(0),
        workers: int(0),
        persistentWorkers: bool,
        prefetchFactor: nullable(int(0)),
        pinMemory: bool,
        batchSize: nullable(int(1)),
        cpuCores: nullable(int(1)),
        batches: int(0),
        workerCpuS: nullable(num(0)),
        processCpuS: nullable(num(0)),
        epochFillS: optional(nullable(num(0))),
      },
      dropped,
    ),
    cpu: obj(
      {
        ...base,
        type: str,
        step: int(0),
        threads: int(0),
        processCpuS: nullable(num(0)),
        steppingCpuS: num(0),
        autogradCpuS: num(0),
        probeCpuS: num(0),
        otherCpuS: num(0),
      },
      dropped,
    ),
  };
})();

export interface ParsedRecords {
  records: ProbeRecord[];
  /**
   * Lines that are not a record this gpuwise understands: not JSON (a torn last line of a killed process), or a
   * record of an unknown type, protocol version or malformed fields (`notes` says which).
   */
  skippedLines: number;
  /** One line per kind of problem, with a count and an example: what was left out and why. */
  notes: string[];
}

/** Groups problems into notes: "3 probe records left out: 'step' record of pid 12: stepTimeS: expected ...". */
class ProblemLog {
  private readonly byKind = new Map<string, { count: number; example: string }>();
  add(kind: string, example: string): void {
    const e = this.byKind.get(kind);
    if (e) e.count++;
    else this.byKind.set(kind, { count: 1, example });
  }
  notes(): string[] {
    return [...this.byKind].map(([kind, { count, example }]) => `${kind}: ${count} (first: ${example})`);
  }
}

/** Checks one parsed JSON value: the record, or why it is left out. */
export function validateRecord(o: unknown, dropped: string[] = []): { record: ProbeRecord } | { problem: string; kind: string } {
  if (typeof o !== 'object' || o === null || Array.isArray(o))
    return { kind: 'probe lines that are not a JSON object', problem: 'not an object' };
  const r = o as Record<string, unknown>;
  const type = r.type;
  if (typeof type !== 'string' || !TYPES.has(type))
    return { kind: 'probe records of a type this gpuwise does not know (a newer probe?)', problem: `type ${JSON.stringify(type)}` };
  const v = r.v;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1 || v > PROBE_PROTOCOL_VERSION)
    return {
      kind: `probe records of a protocol version this gpuwise does not read (it reads 1 to ${PROBE_PROTOCOL_VERSION}: run the gpuwise that launched the probe)`,
      problem: `'${type}' record with v ${JSON.stringify(v)}`,
    };
  DROPPED.length = 0;
  try {
    const record = SCHEMAS[type as ProbeRecord['type']](o, '') as ProbeRecord;
    dropped.push(...DROPPED);
    return { record };
  } catch (e) {
    if (!(e instanceof FieldProblem)) throw e;
    return { kind: 'probe records left out for a malformed field', problem: `'${type}' record of pid ${String(r.pid)}: ${e.message}` };
  }
}

/** Parses JSON lines; keeps every record that passes its check, counts the rest and says why in `notes`. */
export function parseProbeLines(text: string): ParsedRecords {
  const records: ProbeRecord[] = [];
  const log = new ProblemLog();
  let skippedLines = 0;
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    let o: unknown;
    try {
      o = JSON.parse(line);
    } catch {
      skippedLines++;
      log.add('probe lines that are not JSON (a torn line of a killed process?)', line.length > 60 ? `${line.slice(0, 57)}...` : line);
      continue;
    }
    const dropped: string[] = [];
    const checked = validateRecord(o, dropped);
    if ('problem' in checked) {
      skippedLines++;
      log.add(checked.kind, checked.problem);
      continue;
    }
    for (const d of dropped) log.add(`optional probe fields ignored for a malformed value`, `'${checked.record.type}' record: ${d}`);
    records.push(checked.record);
  }
  return { records, skippedLines, notes: log.notes() };
}

/**
 * The windows to analyse: every step window, and a process's time window only when that process has no step window
 * (steps that started after a time window make it a capture of the set-up, not of the training).
 */
export function analysedWindowEnds(records: readonly ProbeRecord[]): ProfileEndRecord[] {
  const ends = records.filter((r): r is ProfileEndRecord => r.type === 'profile-end');
  const withSteps = new Set(ends.filter((r) => r.reason !== 'time').map((r) => r.pid));
  return ends.filter((r) => r.reason !== 'time' || !withSteps.has(r.pid));
}

/** The rank a record belongs to: RANK when set, else 0 (one process). */
export function rankOf(r: { rank: number | null }): number {
  return r.rank ?? 0;
}
