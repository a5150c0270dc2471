/**
 * What sets a training step's pace (pure): the step as a pipeline of stages, each a time per step with where it comes
 * from, and the one documented way they combine (docs/reference/doctor.md, "What sets the pace").
 *
 * Stages that overlap take their max: the DataLoader's workers produce the next batches while the stepping thread
 * issues this step's work and the GPU runs the work issued before, each behind a queue (prefetched batches, CUDA's
 * launch queue), so the slowest sets the pace. The device's own time is its compute plus the communication no compute
 * hides; launch gaps (the GPU waiting on a host behind in parts of the step) lengthen the GPU's side, and so does a
 * drain's refill where the host stage is the host's own work (the GPU waits while the host does the rest of its step).
 * Serial costs add to the host and GPU's side: a sync empties the GPU's queue and the GPU then waits for the host to
 * get ahead again, a pageable copy blocks both, a pipeline bubble leaves devices waiting; the DataLoader's workers go
 * on filling the prefetch queue meanwhile. Epoch starts add to all: the queue is empty and everything waits
 * for the first batch. With stalls (the loop waits for a batch every few steps) the throughput is the mean step, never
 * the median: the prefetch queue smooths the stalls into the mean.
 *
 *   step = max(input, max(host, gpu + communication + launch gaps + refill) + serial costs) + epoch starts
 *
 * Each stage says whether it is `measured` (read off the run or the window) or `assumed` (inferred from other
 * figures), and why, in words; a stage the evidence cannot time is null and never binds. The modelled step is
 * calibrated on the measured one (`calibration`: measured / modelled), so what the stages do not explain is kept,
 * in proportion, through every fix.
 */
import type { StallPattern } from '../run/steps.js';
import { fmtMs } from '../util/format.js';
import { noWorkTouched, type WorkLeft } from './work.js';

export type Provenance = 'measured' | 'assumed';
export type StageName = 'input' | 'host' | 'gpu' | 'comm';
export const STAGE_NAMES: readonly StageName[] = ['input', 'host', 'gpu', 'comm'];

export interface Stage {
  /** Time per step in ns; null when the evidence cannot time it (it then never binds: `evidence` says why). */
  ns: number | null;
  how: Provenance;
  /** Where the figure comes from, in words. */
  evidence: string;
  /** How the stage is named in words ("the GPU", "the host"); set where a stage stands for more than its name. */
  label?: string;
}

/**
 * `refill`: after a sync drained the queue, the GPU waiting for the host's next launches, where the host stage is the
 * host's own work and so holds that work (run.ts drainSpin); it lengthens the GPU's side as launch gaps do. `syncs`:
 * the GPU idle after syncs measured beside a host stage that is the thread's CPU time, which holds the waits in them.
 */
export type SerialKind = 'syncs' | 'refill' | 'copy' | 'gaps' | 'epoch-starts' | 'other';

/** A cost on the step's critical path: it adds to the step whatever the stages do. */
export interface SerialCost {
  kind: SerialKind;
  ns: number;
  /** Occurrences per step (syncs that drained the queue), when counted. */
  perStep: number | null;
  how: Provenance;
  evidence: string;
}

/** What the pipeline knows of the DataLoader, the input stage's parameters. */
export interface LoaderFacts {
  /** Worker processes (num_workers); null when not told. */
  workers: number | null;
  /**
   * Wall time one worker takes to produce one batch, ns: from the loop's waits when the loader binds (the workers then
   * work without pause), else the CPU a batch costs (a worker cannot be faster); null when not known.
   */
  batchNsPerWorker: number | null;
  /** CPU time a batch costs in the workers (user + system, read from /proc), ns; null when not measured. */
  cpuNsPerBatch: number | null;
  /** Cores the training process itself keeps busy (its CPU seconds a second); null when not measured. */
  processCores: number | null;
  /** DataLoader batches per step. */
  batchesPerStep: number;
  /** Samples per batch, for rates in samples/s; null when not told. */
  samplesPerBatch: number | null;
  /** CPU cores the process may run on (os.sched_getaffinity); null when not told. */
  cpuCores: number | null;
  persistentWorkers: boolean | null;
  prefetchFactor: number | null;
  pinMemory: boolean | null;
  how: Provenance;
  /**
   * Steps between two epoch starts (the iterator made again), from the loader's records; null when the run saw one
   * epoch. Each epoch start empties the prefetch queue: the loop waits for the first batch of the next epoch.
   */
  stepsPerEpoch: number | null;
  /**
   * The workers' start-up at each epoch start (they are forked again unless persistent), ns: the epoch-start stalls
   * measured less the fill of the first batch; null when not measured.
   */
  startNs: number | null;
  /** The measured wait for an epoch's first batch (the probe's `epochFillS`), ns; null when not measured. */
  epochFillNs: number | null;
  /** Worker count a fix set: a number, or `enough`: as many as the demand of the other stages needs. */
  workersTo?: number | 'enough';
  /** persistent_workers a fix set. */
  persistentTo?: boolean;
}

export interface Pipeline {
  /** analyze's profiled window, doctor's run outside the profiler, or only a measured step (no stage timed). */
  source: 'window' | 'run' | 'step';
  /** The measured mean step now, ns: the basis every share is of. */
  stepNs: number;
  stages: Record<StageName, Stage>;
  serial: SerialCost[];
  loader: LoaderFacts | null;
  /**
   * From the profiled window's ns to this pipeline's, for the GPU and host figures a fix names (1 in a window; in a
   * run, how much the profiler's own cost lengthened them).
   */
  scale: { gpu: number; host: number };
  /** Measured step / modelled step now: the share the stages leave unexplained, kept through fixes. */
  calibration: number;
  /** What is left of each work item a fix named (1 = untouched), by stage, so two fixes of the same kernels compose. */
  work: WorkLeft;
  /** The batch as a multiple of the run's (batch fixes): the per-batch step is the step over it. */
  batchScale: number;
  /** The GPU's work a step does once whatever its batch, which a batch fix does not grow (batch.ts). */
  gpuPerStep: GpuPerStep;
  /** The GPU's own work is timed apart from the host's (a profiled window): what per-sample and per-step costs need. */
  deviceTimed: boolean;
  /** The loop's wait on the DataLoader per step: the GPU idle in DataLoader.__next__ (window), the probe's mean wait (run). */
  inputWaitNs: number;
  /** How the waits fall over the steps (a run's steps only), null when not known. */
  stalls: StallPattern | null;
  /** The loader's partial batches (a run's steps only): what a fix that compiles the model meets at each epoch's end. */
  partialBatch?: PartialBatch | null;
}

/** The GPU's work a step does once whatever its batch (batch.ts says what counts). */
export interface GpuPerStep {
  /** Window ns (the pipeline's `scale.gpu` takes it to its own). */
  ns: number;
  /** The batch, as a multiple of the run's, up to which it stays once a step; null: at any batch. */
  upToScale: number | null;
  /** What it is, in words. */
  evidence: string;
}

/** No GPU work told apart as once a step: all of it grows with the batch. */
export const NO_GPU_PER_STEP: GpuPerStep = { ns: 0, upToScale: null, evidence: 'no GPU work told apart as once a step' };

/** A DataLoader that keeps each epoch's last, smaller batch (`drop_last=False`), read from the run's steps. */
export interface PartialBatch {
  /** The sizes of the partial batches, and the full batches' size, in samples. */
  samples: number[];
  fullSamples: number;
  /** Steps between them when they recur at one period (the epoch's length in steps); null otherwise. */
  everySteps: number | null;
}

export type Bound = StageName | 'serial';

export interface PaceStep {
  /** Expected step at the pipeline's batch, ns. */
  stepNs: number;
  /** The same per batch of the run's size (what throughput compares). */
  perBatchNs: number;
  /** The stage that sets the pace. */
  bound: Bound;
  /** Why, in words: the binding stage against the others. */
  why: string;
  /**
   * Worker count the input stage needs to keep up with LOADER_HEADROOM to spare, when the loader's rate is known (where
   * none keeps up, the count that reaches the floor the CPU sets: `workersKeepUp` false).
   */
  workersNeeded: number | null;
  workersKeepUp: boolean | null;
  /** What epoch starts add to the step (the first batch's fill and the workers' start-up), ns, before calibration. */
  epochStartsNs: number;
}

export const STAGE_WORDS: Record<StageName, string> = { input: 'the DataLoader', host: 'the host', gpu: 'the GPU', comm: 'communication' };

export function stageLabel(p: Pipeline, s: StageName): string {
  return p.stages[s].label ?? STAGE_WORDS[s];
}

export function serialNs(p: Pipeline): number {
  return p.serial.reduce((a, c) => a + c.ns, 0);
}

/**
 * The cores the DataLoader's workers can keep busy: the process's cores less what the training process keeps busy
 * itself (measured), else less one for the training loop; at least one.
 */
export function workerCap(l: LoaderFacts): number {
  if (l.cpuCores === null) return Number.POSITIVE_INFINITY;
  return Math.max(1, Math.floor(l.cpuCores - Math.max(1, l.processCores ?? 1) + 1e-9));
}

/**
 * The most workers a plan asks for. A worker that waits on I/O holds no core, so past the cores more of them still
 * help (on the 2-core VM a loader sleeping 2 ms a sample took 27.4 ms a step with 1 worker, 14.3 with 2, 4.4 with 8);
 * each costs a process, its memory and its start-up, so the count stops here.
 */
export const MAX_WORKERS = 32;

/**
 * The loader's period a step with `w` workers, ns: each worker makes a batch in its own wall time, in parallel with the
 * others, and together they go no faster than the CPU the batches cost over the cores left to them (workerCap; without
 * the CPU measured, all of a worker's time). With 0 workers the main process makes the batches within the step (one
 * worker's pace).
 */
export function loaderPeriodNs(l: LoaderFacts, w: number, batchScale = 1): number | null {
  if (l.batchNsPerWorker === null) return null;
  const perStep = l.batchNsPerWorker * l.batchesPerStep * batchScale;
  // Without the workers' CPU time, their wall time is taken as CPU (decoding, augmenting): the cores then cap them.
  const cpuPerStep = (l.cpuNsPerBatch ?? l.batchNsPerWorker) * l.batchesPerStep * batchScale;
  const n = Math.max(1, w);
  return Math.max(perStep / n, cpuPerStep / Math.min(n, workerCap(l)));
}

/**
 * The workers that keep the loader's period within `demandNs / LOADER_HEADROOM` (the rest of the step, with room to
 * spare): the fewest that do, or where none does (the CPU a batch costs over the cores left is the floor), the fewest
 * that reach that floor; at most MAX_WORKERS. `keepsUp`: whether the count keeps up. Null without the loader's rate.
 */
export function workersForDemand(l: LoaderFacts, demandNs: number, batchScale = 1): { workers: number; keepsUp: boolean } | null {
  const floor = loaderPeriodNs(l, MAX_WORKERS, batchScale);
  if (floor === null || !(demandNs > 0)) return null;
  const target = demandNs / LOADER_HEADROOM;
  for (let w = 1; w <= MAX_WORKERS; w++) {
    const period = loaderPeriodNs(l, w, batchScale) as number;
    if (period <= target) return { workers: w, keepsUp: true };
    if (period <= floor * 1.001) return { workers: w, keepsUp: false };
  }
  return { workers: MAX_WORKERS, keepsUp: false };
}

/**
 * The workers to ask for when `needed` keep up: never fewer than the run has (the loop waits on them), and as many as
 * workersForDemand found, past the cores where the workers wait on I/O.
 */
export function workersToAsk(l: LoaderFacts, needed: number): number {
  return Math.max(needed, l.workers ?? 0);
}

/**
 * Workers are counted so that the loader's period is at most 1 / LOADER_HEADROOM of the rest of the step: a worker's
 * time a batch is read from one run and moves from run to run and with the worker count. On the H200 host
 * (bench/pace/results/h200-2026-11-29-loader-scaling.txt) a FakeData batch took a worker 888-1,203 ms at 1 to 14
 * workers, and 707 ms in a doctor run against 908-961 ms in the plain runs after it with 5 to 11 workers; a loader
 * counted to just keep up then binds again (Lightning with 2 workers at 54.6 ms a step against the GPU's 58.4 measured
 * 71.1 ms, its loop stalling).
 */
export const LOADER_HEADROOM = 1.3;

/** The input stage's time per step: the loader's period at the worker count a fix set, or as built. */
function inputNs(
  p: Pipeline,
  demandNs: number,
): { ns: number | null; workersNeeded: number | null; workersKeepUp: boolean | null; workers: number | null } {
  const l = p.loader;
  const base = p.stages.input.ns;
  if (!l || l.batchNsPerWorker === null) return { ns: base, workersNeeded: null, workersKeepUp: null, workers: l?.workers ?? null };
  const need = workersForDemand(l, demandNs, p.batchScale);
  const needed = need?.workers ?? null;
  const keepUp = need?.keepsUp ?? null;
  const workers = l.workersTo === 'enough' ? workersToAsk(l, needed ?? 1) : (l.workersTo ?? l.workers);
  if (workers === null || workers === undefined) return { ns: base, workersNeeded: needed, workersKeepUp: keepUp, workers: null };
  return { ns: loaderPeriodNs(l, workers, p.batchScale), workersNeeded: needed, workersKeepUp: keepUp, workers };
}

/**
 * The epoch starts' cost per step: at each epoch start the prefetch queue is empty and the loop waits for the first
 * batch, which one worker makes alone at the pace every worker then works at (all start at once: more workers than
 * the cores left to them share the cores), plus the workers' start-up unless they are persistent; once every
 * `stepsPerEpoch` steps. More workers shorten the period, not this fill: on the H100 timm run, 14 workers took the
 * steady step to 87 ms and the epoch starts (a 1.0-1.5 s stall every 31 steps) kept the mean at 127.
 *
 * Where the loader binds (`periodNs` above `chainNs`, the host and GPU's side), the steady steps wait for batches too:
 * the workers' first batches, one each, made together during the fill, would have taken as many periods of the steady
 * loop, of which the loop spends the chain working; only the rest of the fill is the epoch start's own. On the H100
 * timm run (4 workers, 871 ms of CPU a batch, 218 ms steps within the epochs against a 84 ms chain) an epoch start
 * cost 351 ms over the steps within the epochs, less than the 871 ms fill alone.
 */
export function epochStartNs(l: LoaderFacts | null, workers: number | null, batchScale = 1, periodNs: number | null = null, chainNs = 0): number {
  if (!l || l.stepsPerEpoch === null || !(l.stepsPerEpoch > 0)) return 0;
  const firstSteps = Math.max(0, workers ?? 0) / Math.max(1, l.batchesPerStep);
  const hidden = periodNs !== null ? firstSteps * Math.max(0, periodNs - chainNs) : 0;
  return (Math.max(0, firstBatchFillNs(l, workers, batchScale) - hidden) + workerStartUpNs(l)) / l.stepsPerEpoch;
}

/**
 * The fill of an epoch's first batch, ns: one worker makes it alone at the pace every worker then works at (all start
 * at once: more workers than the cores left to them share the cores); 0 without a worker's time a batch or a worker.
 * Only the CPU a batch costs is shared: the rest of a worker's time a batch is waiting (I/O), which holds no core
 * (examples/pace/cpu/epochs.py, 2 ms sleeps a sample: persistent workers took 12.3 ms a step with 2 workers on the
 * 2-core VM and 9.7 with 3, where sharing all of it made the fill, and the step, grow with the workers). Without the
 * CPU measured, the whole time is taken as CPU, as loaderPeriodNs takes it.
 */
export function firstBatchFillNs(l: LoaderFacts, workers: number | null, batchScale = 1): number {
  if (workers === null || workers <= 0 || l.batchNsPerWorker === null) return 0;
  const busy = workers + Math.max(1, l.processCores ?? 1);
  const shared = l.cpuCores !== null && busy > l.cpuCores ? busy / l.cpuCores : 1;
  const cpuNs = Math.min(l.cpuNsPerBatch ?? l.batchNsPerWorker, l.batchNsPerWorker);
  return (l.batchNsPerWorker - cpuNs + cpuNs * shared) * batchScale;
}

/** The workers' start-up at an epoch start, ns: 0 when they are persistent (as run, or as a fix set) or it is not measured. */
export function workerStartUpNs(l: LoaderFacts): number {
  return (l.persistentTo ?? l.persistentWorkers ?? false) ? 0 : (l.startNs ?? 0);
}

/** The host and GPU's side of the step: its parts, and the chain the serial costs make of it (stepOf). */
function sideOf(p: Pipeline) {
  const host = p.stages.host.ns;
  const gpu = p.stages.gpu.ns;
  const comm = p.stages.comm.ns ?? 0;
  const device = gpu === null && comm === 0 ? null : (gpu ?? 0) + comm;
  // Launch gaps are the GPU waiting on a host behind in parts of the step: they lengthen the GPU's side, and a host
  // that binds has them inside its own time. So does a drain's refill beside a host stage of its own work: the host
  // reached the sync, waited, went on, and the GPU waited for it (the step is max(host, GPU + refill)). Syncs beside a
  // host stage that holds their waits, blocking copies and collective waits stop both sides; an epoch start stops
  // everything, the DataLoader included.
  const sumOf = (k: SerialKind) => p.serial.filter((c) => c.kind === k).reduce((a, c) => a + c.ns, 0);
  const refill = sumOf('refill');
  const gaps = sumOf('gaps') + refill;
  const starts = sumOf('epoch-starts');
  const serial = serialNs(p) - gaps - starts;
  const gpuSide = device === null ? null : device + gaps;
  const core = device === null ? Math.max(host ?? 0, 0) + gaps : Math.max(host ?? 0, gpuSide ?? 0);
  // The serial costs lengthen the host and GPU's side of the step: a sync or a blocking copy stops the stepping thread
  // and the GPU, not the workers, which go on filling the prefetch queue. The loader must keep up with that side.
  const chain = core + serial;
  return { host, gpu, comm, device, refill, gaps, starts, serial, gpuSide, core, chain };
}

/**
 * The loader's fill at an epoch start in the pipeline as it is, ns (once an epoch; epochStartNs without the workers'
 * start-up): what run.ts takes off a measured epoch start to leave the start-up.
 */
export function epochFillInNs(p: Pipeline): number {
  const l = p.loader;
  if (!l || l.stepsPerEpoch === null || !(l.stepsPerEpoch > 0)) return 0;
  const { chain } = sideOf(p);
  const input = inputNs(p, chain);
  return epochStartNs({ ...l, startNs: null, persistentTo: true }, input.workers, p.batchScale, input.ns, chain) * l.stepsPerEpoch;
}

/** The step the pipeline sets, the binding stage, and why, in words. */
export function stepOf(p: Pipeline): PaceStep {
  const { host, gpu, comm, device, refill, gaps, starts, serial, gpuSide, core, chain } = sideOf(p);
  const input = inputNs(p, chain);
  const candidates: [Bound, number][] = [];
  if (input.ns !== null) candidates.push(['input', input.ns]);
  if (host !== null) candidates.push(['host', host]);
  if (gpuSide !== null) candidates.push([gpu !== null && (gpu ?? 0) >= comm ? 'gpu' : 'comm', gpuSide]);
  const epochs = epochStartNs(p.loader, input.workers, p.batchScale, input.ns, chain) + starts;
  const modelled = Math.max(input.ns ?? 0, chain) + epochs;
  const stepNs = modelled * p.calibration;
  let bound: Bound;
  if (input.ns !== null && input.ns > chain) bound = 'input';
  else if (serial > core || (host === null && device === null)) bound = 'serial';
  else bound = candidates.filter((c) => c[0] !== 'input').reduce<[Bound, number]>((a, c) => (c[1] > a[1] ? c : a), ['serial', -1])[0];
  // The GPU's side binds, but more of it is a drain's refill than the GPU's own work: the syncs set the pace.
  if ((bound === 'gpu' || bound === 'comm') && refill + serial > (device ?? 0)) bound = 'serial';
  const gapParts = [
    ...(gaps - refill > 0 ? [`${fmtMs(gaps - refill)} of it launch gaps`] : []),
    ...(refill > 0 ? [`${fmtMs(refill)} the refill after its drains`] : []),
  ];
  const gapsText = gapParts.length ? ` (${gapParts.join(', ')})` : '';
  const parts = candidates
    .sort((a, b) => b[1] - a[1])
    // A GPU side of 0 ns (a CPU run: no kernel at all) is not named in the chain (issue 47 item 4).
    .filter(([s, ns]) => !((s === 'gpu' || s === 'comm') && ns === 0 && (device ?? 0) === 0))
    .map(
      ([s, ns]) =>
        `${s === 'comm' || (s === 'gpu' && comm > 0) ? 'the GPU and its exposed communication' : stageLabel(p, s as StageName)} ${fmtMs(ns)}${s === 'gpu' || s === 'comm' ? gapsText : ''}`,
    );
  // The syncs bind through their refill (the GPU's side with it is the longest) rather than through the serial costs.
  const refillBinds = bound === 'serial' && refill > 0 && gpuSide !== null && serial <= core;
  // The stages beside the GPU's side, for a refill's words (the GPU's own work and the refill said apart).
  const otherParts = candidates.filter(([s]) => s !== 'gpu' && s !== 'comm').map(([s, ns]) => `${stageLabel(p, s as StageName)} ${fmtMs(ns)}`);
  const serialList = p.serial
    .filter((c) => c.kind !== 'gaps' && c.kind !== 'refill' && c.kind !== 'epoch-starts')
    .map((c) => `${c.kind} ${fmtMs(c.ns)}`)
    .join(', ');
  const serialText =
    serial <= 0 || (bound === 'serial' && !refillBinds)
      ? ''
      : bound === 'input'
        ? `; blocking waits ${fmtMs(serial)} (${serialList}) lengthen the host and GPU's side to ${fmtMs(chain)}, inside the DataLoader's period`
        : `; blocking waits add ${fmtMs(serial)} (${serialList})`;
  const epochText = epochs > 0 ? `; epoch starts add ${fmtMs(epochs)}` : '';
  const unknown = STAGE_NAMES.filter((s) => p.stages[s].ns === null && !(s === 'input' && input.ns !== null) && s !== 'comm').map((s) =>
    stageLabel(p, s),
  );
  const refillWhy =
    refillBinds
      ? `the syncs set the pace: the GPU's own work ${fmtMs(device ?? 0)} + the refill after its drains ${fmtMs(refill)}${gaps > refill ? ` + launch gaps ${fmtMs(gaps - refill)}` : ''} = ${fmtMs(gpuSide)} > ${otherParts.join(', ') || 'no other timed stage'}${serialText}${epochText}`
      : null;
  const why =
    bound === 'serial'
      ? (refillWhy ?? `the blocking waits set the pace: ${fmtMs(serial)} a step (${serialList || 'none timed'}) against ${parts.join(', ') || 'no timed stage'}${epochText}`)
      : `${bound === 'input' ? 'the DataLoader' : bound === 'comm' ? 'communication' : stageLabel(p, bound)} sets the pace: ${parts.join(' > ')}${serialText}${epochText}${unknown.length ? `; ${unknown.join(' and ')} ${unknown.length > 1 ? 'were' : 'was'} not timed` : ''}`;
  return { stepNs, perBatchNs: stepNs / p.batchScale, bound, why: why + calibrationText(modelled, p.calibration), workersNeeded: input.workersNeeded, workersKeepUp: input.workersKeepUp, epochStartsNs: epochs };
}

/** Calibrations closer to 1 than this go unsaid: the figures add up as printed. */
const CALIBRATION_SAID = 0.03;

/**
 * Where the figures above do not add up to the step (the measured step over the modelled one: the profiler's cost in
 * an upper bound, what no stage timed), how they are taken: every figure scales by the same factor, so a fix's step
 * is its stages' new sum at that scale (issue 47: "the host 18.2 ms sets the pace" beside a plan of 16.2 ms).
 */
function calibrationText(modelledNs: number, calibration: number): string {
  if (!(modelledNs > 0) || Math.abs(calibration - 1) < CALIBRATION_SAID) return '';
  // Said with its cause, so that the scaling reads as what it is: the stages' figures do not sum to the measured step.
  const cause = calibration < 1 ? 'the stages overlap more than the model counts' : 'part of the step is in no timed stage';
  return `; these give a step of ${fmtMs(modelledNs)} where ${fmtMs(modelledNs * calibration)} was measured (${cause}), so the plan's times are scaled by ${calibration.toFixed(2)} to start from the measured step`;
}

/** The modelled step before calibration (stages and serial costs only). */
export function modelledNs(p: Pipeline): number {
  return stepOf(p).stepNs / p.calibration;
}

/** A pipeline whose calibration makes stepOf return its measured step. */
export function calibrated(p: Omit<Pipeline, 'calibration'>): Pipeline {
  const raw = { ...p, calibration: 1 };
  const m = stepOf(raw).stepNs;
  return { ...raw, calibration: m > 0 && p.stepNs > 0 ? p.stepNs / m : 1 };
}

/** The JSON of a pipeline in reports: its stages, serial costs, the bound and why. */
export interface PaceSummary {
  stepNs: number;
  stages: Record<StageName, Stage>;
  serial: SerialCost[];
  loader: LoaderFacts | null;
  bound: Bound;
  why: string;
  /** Measured step / modelled step (1: the stages explain the step). */
  calibration: number;
}

export function paceSummary(p: Pipeline): PaceSummary {
  const s = stepOf(p);
  return { stepNs: p.stepNs, stages: p.stages, serial: p.serial, loader: p.loader, bound: s.bound, why: s.why, calibration: p.calibration };
}

/** A pipeline that knows only the measured step (no stage timed): for a change measured or modelled as a whole. */
export function measuredStep(stepNs: number, evidence: string): Pipeline {
  const none = (e: string): Stage => ({ ns: null, how: 'assumed', evidence: e });
  return {
    source: 'step',
    stepNs,
    stages: {
      input: none('not told apart'),
      host: none('not told apart'),
      gpu: { ns: stepNs, how: 'measured', label: 'the whole step', evidence },
      comm: { ns: 0, how: 'assumed', evidence: 'not told apart' },
    },
    serial: [],
    loader: null,
    scale: { gpu: 1, host: 1 },
    calibration: 1,
    work: noWorkTouched(),
    batchScale: 1,
    gpuPerStep: NO_GPU_PER_STEP,
    deviceTimed: false,
    inputWaitNs: 0,
    stalls: null,
  };
}
