/**
 * The pipeline of a run doctor watched (pure), built from its unprofiled steps: the mean step (the throughput), the
 * loop's DataLoader waits, the stepping thread's CPU time, the DataLoader's own production when the probe measured it,
 * and the profiled window for what only a trace shows (the GPU's work and how its idle splits by cause), taken to the
 * run's scale. docs/reference/doctor.md, "What sets the pace", walks through it.
 */
import type { LoaderRecord } from '../run/records.js';
import type { ThreadCpuPerStep } from '../run/threadCpu.js';
import type { EpochSteps, StallPattern, StepBatch, StepStats } from '../run/steps.js';
import type { TraceMetrics } from '../trace/metrics/types.js';
import { fmtMs, fmtPct } from '../util/format.js';
import {
  calibrated,
  epochFillInNs,
  epochStartNs,
  firstBatchFillNs,
  type LoaderFacts,
  type PartialBatch,
  type Pipeline,
  type SerialCost,
  type Stage,
  loaderPeriodNs,
  NO_GPU_PER_STEP,
  stepOf,
  workerCap,
} from './pipeline.js';
import { gpuPerStepOf } from './batch.js';
import { noWorkTouched } from './work.js';
import {
  deviceBusyNs,
  GPU_BOUND_SHARE,
  HOST_BINDS_IDLE_SHARE,
  INPUT_BINDS_SHARE,
  syncBlockedNs,
  windowHost,
  windowPipeline,
} from './window.js';

/** The window's step must exceed the run's (its waits left out) by this share before the profiler's cost is taken off. */
const MIN_PROFILER_COST_SHARE = 0.02;
/** Sync calls above this share of the window's step: the stepping thread's CPU time may hold spins (a sync may spin). */
export const HOST_SYNC_MAX_SHARE = 0.05;
/** Stalls this many steps apart or more, holding LONG_STALL_WAIT_SHARE of the waiting, are pauses, not the loader's rate. */
const LONG_STALL_PERIOD_STEPS = 16;
const LONG_STALL_WAIT_SHARE = 0.8;
/** About how many launches CUDA's launch queue holds before a launch call blocks (waits on the GPU). */
export const LAUNCH_QUEUE_KERNELS = 1000;

export interface RunEvidence {
  /** The rank's steady step statistics (run/steps.ts). */
  steps: StepStats;
  /** The rank's profiled window, when one was analysed. */
  window: TraceMetrics | null;
  /** The rank's `loader` records (the DataLoader's own production), empty from an older probe. */
  loader: readonly LoaderRecord[];
  /** The run's batch read from its steps (run/steps.ts batchOfSteps): its partial batches, if any; absent when not read. */
  batch?: StepBatch;
  /** DataLoader batches per step (the median of the measured steps); null when not told. */
  batchesPerStep: number | null;
  /** The process's CPU a step by thread (the probe's `cpu` records); null from an older probe or too few steps. */
  threads?: ThreadCpuPerStep | null;
}

/**
 * Why the stepping thread's CPU time may hold waits on the GPU rather than the host's own work, or null when it is the
 * host's work. A wait on the GPU may spin (CUDA's default schedule spins when there are more cores than GPUs), and CPU
 * time counts a spin: in a sync, and in a launch that finds the launch queue full. A host that waited on a full queue
 * runs ahead of the GPU by the queue's length: more than a step when a step has fewer kernels than the queue holds.
 */
/** Blocking copies above this share of the window's step: the thread's CPU time holds their waits, taken off. */
const COPY_BLOCKED_SHARE = 0.05;

/**
 * The host's own work from its threads' CPU time: the stepping thread's less the time the window shows it blocked
 * inside memcpy calls (a copy from or to pageable memory waits there for the GPU's queued work, and a spinning wait
 * counts as CPU time), plus autograd's device thread's (the backward's launches, while the stepping thread waits). With
 * no GPU work the step is the CPU's: the stepping thread's time is all work, no copy waits in it.
 *
 * Where copies block, that difference is only an upper bound: outside the profiler the host does its work faster and
 * so waits longer in the same copy than the window shows, and the wait it spins through stays in its CPU time (a
 * GPU-bound ViT-B/16 on an H100: 332 ms of CPU a 354 ms step, 227 ms of it in the window's copies, yet the step with
 * the GPU's work cut by bf16 measured 72.8 ms). The window bounds it too: the time its stepping thread was neither in
 * a copy, a sync nor the DataLoader (its backward's wait on autograd's thread included), the profiler's cost in it.
 * The host's work is at most the smaller of the two. The window's is taken less the profiler's cost where the probe
 * timed the backward calls in the window's steps and outside it (`backwardS`): the backward's launches are host work
 * like the rest, so the profiler slows the rest as it slows them (a GPU-bound ViT-B/16 on an H200: 81 ms of the
 * window's host a step, the step with bf16's GPU work then measured 65.5 ms, not the 81 the window promised).
 */
function hostWork(
  cpuNs: number,
  m: TraceMetrics | null,
  threads: ThreadCpuPerStep | null,
  noGpuWork: boolean,
  gpuBound: boolean,
  backward: ProfiledBackward | null,
): Stage {
  const blocked = m?.examples.memcpyBlockedNsPerStep ?? 0;
  const copies = !noGpuWork && m !== null && blocked > COPY_BLOCKED_SHARE * m.perStep.durNs;
  const own = copies ? Math.max(0, cpuNs - blocked) : cpuNs;
  // Autograd's thread launches the backward's kernels: on a GPU that is busy most of the step the launch queue fills and
  // a launch spins until there is room, so its CPU time holds waits, not work (a GPU-bound Lightning ResNet-50 on an
  // H100: 17 ms of it a step, and bf16 then measured 73.6 ms where the host with it would have bound at 94).
  const autogradCpu = threads?.autogradNs ?? 0;
  const autograd = gpuBound ? 0 : autogradCpu;
  const thread = copies
    ? `the stepping thread's CPU time ${fmtMs(cpuNs)} a step (median, outside the profiler) less its own ${fmtMs(blocked)} a step inside copy calls in the window's steps (a pageable copy waits there for the GPU's queued work)`
    : `${noGpuWork ? 'no GPU work: the step runs on the CPU, ' : ''}the stepping thread's CPU time, ${fmtMs(cpuNs)} a step (median, outside the profiler)`;
  const backwardText =
    autograd > 0
      ? `, plus autograd's backward thread's ${fmtMs(autograd)} a step (the backward's work, done while the stepping thread waits; over ${threads?.steps} steps)`
      : autogradCpu > 0
        ? ` (autograd's backward thread's ${fmtMs(autogradCpu)} a step left out: the GPU is busy most of the step, and its launches wait for room in the launch queue)`
        : '';
  const total = own + autograd;
  const windowFree = copies ? (m?.examples.hostFreeNsPerStep ?? null) : null;
  if (windowFree !== null) {
    const slowed = backward !== null && backward.profiledS > backward.plainS ? backward : null;
    const inflation = slowed ? slowed.profiledS / slowed.plainS : 1;
    const free = windowFree / inflation;
    const profilerText = slowed
      ? `, less the profiler's cost: the backward calls took ${fmtMs(slowed.profiledS * 1e9)} a step in the window against ${fmtMs(slowed.plainS * 1e9)} outside it (medians), so the host's work is the window's / ${inflation.toFixed(2)} = ${fmtMs(free)}`
      : " (the profiler's cost included)";
    if (free < total)
      return {
        ns: free,
        how: 'measured',
        evidence: `the window's stepping thread outside copy calls, syncs and the DataLoader, ${fmtMs(windowFree)} a step (the median of its steps)${profilerText}; ${thread}${backwardText} gives ${fmtMs(total)}, which holds more of the copies' waits than the window shows`,
      };
  }
  return { ns: total, how: 'measured', evidence: `${thread}${backwardText}${copies || autograd > 0 ? `: ${fmtMs(total)}` : ''}` };
}

/** The backward calls' median wall time a step outside the window and in it (the probe's `backwardS`). */
interface ProfiledBackward {
  plainS: number;
  profiledS: number;
}

export function hostTimeProblem(stepsInFlight: number | null, window: TraceMetrics | null): string | null {
  if (stepsInFlight === null) return 'the steps were not timed on the GPU, so whether the host waited on it is unknown';
  if (stepsInFlight >= 2)
    return `the host ran ${stepsInFlight} steps ahead of the GPU (it waits on the GPU, and a launch that finds the queue full may spin)`;
  if (window === null) return null;
  if (stepsInFlight >= 1 && window.launch.kernelsPerStep > LAUNCH_QUEUE_KERNELS)
    return `the GPU was still on the step at its end and a step launches ${Math.round(window.launch.kernelsPerStep)} kernels, more than the launch queue holds: the host may have spun waiting for room in it`;
  const syncNs = syncBlockedNs(window);
  if (syncNs > HOST_SYNC_MAX_SHARE * window.perStep.durNs)
    return `sync calls take ${fmtMs(syncNs)} of the window's ${fmtMs(window.perStep.durNs)} step, and a sync may spin while it waits`;
  return null;
}

/**
 * The DataLoader the loop iterates most (by batches yielded): its settings, the CPU a batch costs in its workers and the
 * cores the training process keeps busy, from the differences between its records (the first reading left out: the
 * workers' start-up). `batchNsPerWorker` starts as the CPU a batch costs (a worker is not faster than its CPU work);
 * runPipeline replaces it with the wall time when the loader binds.
 */
export function loaderFacts(records: readonly LoaderRecord[], batchesPerStep: number | null): LoaderFacts | null {
  if (records.length === 0) return null;
  const byLoader = new Map<number, LoaderRecord[]>();
  for (const r of records) byLoader.set(r.loader, [...(byLoader.get(r.loader) ?? []), r]);
  const main = [...byLoader.values()].sort(
    (a, b) => (b[b.length - 1]?.batches ?? 0) - (a[a.length - 1]?.batches ?? 0),
  )[0] as LoaderRecord[];
  const last = main[main.length - 1] as LoaderRecord;
  const first = (main.length > 2 ? main[1] : main[0]) as LoaderRecord;
  const batches = last.batches - first.batches;
  const dt = last.t - first.t;
  const cpuNsPerBatch =
    last.workers > 0 && batches > 0 && first.workerCpuS !== null && last.workerCpuS !== null
      ? ((last.workerCpuS - first.workerCpuS) / batches) * 1e9
      : null;
  const processCores =
    dt > 0 && first.processCpuS !== null && last.processCpuS !== null ? (last.processCpuS - first.processCpuS) / dt : null;
  const stepsPerEpoch = stepsPerEpochOf(main);
  return {
    workers: last.workers,
    batchNsPerWorker: cpuNsPerBatch,
    cpuNsPerBatch,
    processCores,
    batchesPerStep: batchesPerStep ?? 1,
    samplesPerBatch: last.batchSize,
    cpuCores: last.cpuCores,
    persistentWorkers: last.persistentWorkers,
    prefetchFactor: last.prefetchFactor,
    pinMemory: last.pinMemory,
    how: 'measured',
    stepsPerEpoch,
    startNs: null,
    epochFillNs: typeof last.epochFillS === 'number' ? last.epochFillS * 1e9 : null,
  };
}

/**
 * Steps an epoch, from a loader's records: the steps between the first and the last epoch start they show over the
 * epochs begun in between. The records are read about once a second, so with epochs shorter than that they skip
 * epoch starts: the gaps between the starts they show are several epochs (epochs of 6 steps read as 18 on the VM).
 * Epoch starts are recorded as steps of the stepping thread: their gaps are steps, whatever the batches a step takes.
 * Null when the records show one epoch.
 */
export function stepsPerEpochOf(records: readonly LoaderRecord[]): number | null {
  const byEpoch = new Map<number, number>();
  for (const r of records) byEpoch.set(r.epoch, r.epochStartStep);
  const epochs = [...byEpoch.keys()].sort((a, b) => a - b);
  const first = epochs[0];
  const last = epochs[epochs.length - 1];
  if (first === undefined || last === undefined || last <= first) return null;
  return ((byEpoch.get(last) as number) - (byEpoch.get(first) as number)) / (last - first);
}

/**
 * The steps at which the loaders' epochs began, from their records. The records are read about once a second, so with
 * shorter epochs they skip some: between two records of a loader the epochs begun in between are spread evenly over
 * the steps between their starts (epochs of one loader take as many steps each, but the last batch's rounding).
 */
export function epochStartsOf(records: readonly LoaderRecord[]): number[] {
  const out = new Set<number>();
  const byLoader = new Map<number, Map<number, number>>();
  for (const r of records) {
    const epochs = byLoader.get(r.loader) ?? new Map<number, number>();
    epochs.set(r.epoch, r.epochStartStep);
    byLoader.set(r.loader, epochs);
    out.add(r.epochStartStep);
  }
  for (const epochs of byLoader.values()) {
    const seen = [...epochs.entries()].sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < seen.length; i++) {
      const [e0, s0] = seen[i - 1] as [number, number];
      const [e1, s1] = seen[i] as [number, number];
      for (let e = e0 + 1; e < e1; e++) out.add(Math.round(s0 + ((s1 - s0) * (e - e0)) / (e1 - e0)));
    }
  }
  return [...out].sort((a, b) => a - b);
}

/**
 * The GPU's idle a step in the run's DataLoader waits, ns. While the loop waits for a batch the GPU runs the work the
 * host queued ahead of it: about a step's GPU work less the host's own time to issue it (the window's stepping thread
 * outside copies, syncs and the DataLoader: an upper bound, so this is the least the GPU runs); only the part of a
 * wait past that leaves it idle. Each stall is one wait; the other waits are spread over the steps. On the H200
 * FakeData run of 2026-11-29 (examples/pace/runs/h200-c) the loop waited 59.4 ms a step, 229 ms at every fourth step,
 * with the GPU 142 ms a step and the host 68.5 ms: the step less the whole wait (138 ms) fell short of the GPU's own
 * work, leaving no room for the copies' serial cost, and 8 workers then measured 165 ms, not the 142 predicted.
 */
export function gpuIdleInWaitsNs(waitNs: number, stalls: StallPattern | null, m: TraceMetrics | null, deviceNs: number): number {
  const hostFree = m?.examples.hostFreeNsPerStep ?? null;
  if (hostFree === null || !(waitNs > 0)) return Math.max(0, waitNs);
  const ahead = Math.max(0, deviceNs - hostFree);
  if (stalls && stalls.stalledSteps > 0 && stalls.measuredSteps > 0) {
    const inStalls = stalls.share * Math.max(0, stalls.meanStallS * 1e9 - ahead);
    const rest = waitNs * (1 - stalls.waitShareInStalls);
    return Math.min(waitNs, inStalls + Math.max(0, rest - ahead));
  }
  return Math.max(0, waitNs - ahead);
}

/** The run's step and its DataLoader waits, ns: what every stage below is read against. */
interface RunTimes {
  /** The mean step. */
  stepNs: number;
  /** The loop's wait on the DataLoader a step. */
  waitNs: number;
  /** The step without its DataLoader waits: what the window's GPU-bound test and scale compare with. */
  stepLessWaitsNs: number;
  stalls: StallPattern | null;
}

/** The GPU and communication stages, the serial costs, and the run's chain (the step less the GPU's idle in waits). */
interface DeviceSide {
  gpu: Stage;
  comm: Stage;
  gpuScale: number;
  serial: SerialCost[];
  /** The GPU's idle in the loop's DataLoader waits. */
  idleInWaitsNs: number;
  /** The run's step without that idle: the host and GPU's chain. */
  chainNs: number;
}

/** The DataLoader's epoch starts: the serial cost of their stalls, the waits left to its period, and their cost a step. */
interface EpochStarts {
  serial: SerialCost[];
  restWaitNs: number;
  epochNsPerStep: number;
  /**
   * The wait for an epoch's first batch at the run's worker count (the workers' start-up and the fill), null when not
   * measured: the probe's epochFillS, else the stalls at epoch starts.
   */
  epochWaitNs: number | null;
  /**
   * Without that wait, what an epoch start adds over the steps within the epochs (the start-up and the part of the
   * fill the steady steps do not hide, pipeline.ts epochStartNs), from the steps; null when not told apart.
   */
  epochExtraNs: number | null;
  /**
   * The step and waits within the epochs, where the steps tell the epoch starts apart (StepStats.epochSteps): what the
   * stages are read from, since what the epoch starts add (the workers forked again in `iter()`, their start-up, the
   * first batch's fill) is their cost, not the loader's period nor the host's work. Null otherwise: the run's own.
   */
  within: RunTimes | null;
}

/** The run's pipeline; null without a mean step. */
export function runPipeline(ev: RunEvidence): Pipeline | null {
  const st = ev.steps;
  if (st.meanS === null || !(st.meanS > 0)) return null;
  const stepNs = st.meanS * 1e9;
  const waitNs = Math.min(stepNs, (st.dataWaitShare ?? 0) * stepNs);
  const t: RunTimes = { stepNs, waitNs, stepLessWaitsNs: stepNs - waitNs, stalls: st.stalls ?? null };
  const m = ev.window;
  const facts = loaderFacts(ev.loader, ev.batchesPerStep);
  const epochs = epochStartCosts(t, facts, st.epochSteps ?? null);
  // The host and the GPU are read from the steps within the epochs where those are told apart (EpochStarts.within).
  const staged = epochs.within ?? t;
  const device = m ? deviceFromWindow(m, staged) : deviceWithoutWindow(staged);
  const { input, loader } = inputStage(t, facts, epochs, device.idleInWaitsNs, st.medianS ?? 0, ev.batchesPerStep !== null);
  const host = hostStage(ev, m, staged, device);
  const serial = host.refill ? [...device.serial.filter((c) => c.kind !== 'syncs' && c.kind !== 'gaps'), ...epochs.serial, host.refill] : [...device.serial, ...epochs.serial];
  const hostWin = m ? windowHost(m).ns : null;
  const hostScale = host.stage.ns !== null && hostWin !== null && hostWin > 0 ? host.stage.ns / hostWin : 1;
  const built = {
    source: 'run' as const,
    stepNs,
    stages: { input, host: host.stage, gpu: device.gpu, comm: device.comm },
    serial,
    loader,
    scale: { gpu: device.gpuScale, host: hostScale },
    work: noWorkTouched(),
    batchScale: 1,
    // A decode step's GPU work is once a step up to the matmuls' ridge; a training step's, its optimizer's (batch.ts).
    gpuPerStep: m ? gpuPerStepOf(m, windowPipeline(m).stages.gpu.ns ?? 0, st.decode?.batch ?? null) : NO_GPU_PER_STEP,
    deviceTimed: m !== null,
    inputWaitNs: waitNs,
    stalls: t.stalls,
    partialBatch: partialBatchOf(ev.batch),
  };
  return calibrated(withStartUp(loaderWaitedOn(t, epochs) ? built : keptUp(built), epochs));
}

/**
 * The workers' start-up (persistent workers have none), with the worker's time a batch settled: the measured wait for
 * an epoch's first batch less the fill the model gives at the run's worker count; else what an epoch start adds over
 * the steps within the epochs less the part of the fill the model leaves at the run's stages. The model then gives
 * what was measured.
 */
function withStartUp(p: Omit<Pipeline, 'calibration'>, epochs: EpochStarts): Omit<Pipeline, 'calibration'> {
  const l = p.loader;
  if (!l || l.persistentWorkers) return p;
  const startNs =
    epochs.epochWaitNs !== null
      ? epochs.epochWaitNs - firstBatchFillNs(l, l.workers)
      : epochs.epochExtraNs !== null
        ? epochs.epochExtraNs - epochFillInNs({ ...p, calibration: 1 })
        : null;
  return startNs === null ? p : { ...p, loader: { ...l, startNs: Math.max(0, startNs) } };
}

/**
 * The GPU and communication from the window, scaled to the run only where the window is GPU-bound and its kernels alone
 * exceed the run's step (the profiler's cost is then on the GPU timeline too); the run says how long the GPU idles, the
 * window says why: its serial costs, scaled to the run's idle.
 */
function deviceFromWindow(m: TraceMetrics, t: RunTimes): DeviceSide {
  const w = windowPipeline(m);
  const windowStepNs = m.perStep.durNs;
  const busyNs = deviceBusyNs(m);
  const gpuBound = busyNs >= GPU_BOUND_SHARE * windowStepNs;
  // The profiler's cost is the host's: it records every op the host dispatches, so a window longer than the run shows
  // it as GPU idle (the refill after each drain, launch gaps), not as longer kernels. Only kernels that alone exceed the
  // run's step put it on the GPU timeline. llm.c's GPT-2 on an H200, two runs of one loop: with attention written out
  // the window was GPU-bound (86.9 ms of kernels in a 101 ms window, a 92.7 ms run), with SDPA it was not (51.7 in 66.0,
  // a 57.5 ms run); both windows idle 14 ms a step, and both runs 5.8 ms once the kernels are taken as measured. Scaled
  // whole to the run, the first kept 12.9 ms of serial costs and its compile step read 35.0 ms, measured 23.2.
  const gpuScale =
    gpuBound && busyNs > t.stepLessWaitsNs && windowStepNs > (1 + MIN_PROFILER_COST_SHARE) * t.stepLessWaitsNs ? t.stepLessWaitsNs / windowStepNs : 1;
  const scaleText =
    gpuScale !== 1
      ? `, x ${fmtMs(t.stepLessWaitsNs)} / ${fmtMs(windowStepNs)} (the window's kernels alone exceed the run's step: the profiler's own cost is on the GPU timeline too)`
      : '';
  const gpu: Stage = { ...w.stages.gpu, ns: (w.stages.gpu.ns ?? 0) * gpuScale, evidence: `the profiled window's ${w.stages.gpu.evidence}${scaleText}` };
  const comm: Stage = { ...w.stages.comm, ns: (w.stages.comm.ns ?? 0) * gpuScale };
  const deviceRunNs = (gpu.ns ?? 0) + (comm.ns ?? 0);
  const idleInWaitsNs = gpuIdleInWaitsNs(t.waitNs, t.stalls, m, deviceRunNs);
  const chainNs = t.stepNs - idleInWaitsNs;
  const idleRunNs = Math.max(0, chainNs - deviceRunNs);
  const idleWindowNs = Math.max(0, windowStepNs - busyNs - m.perStep.idleByCauseNs.dataloader);
  const share = idleWindowNs > 0 ? idleRunNs / idleWindowNs : 0;
  const serial = w.serial
    .map((c) => ({
      ...c,
      ns: c.ns * share,
      how: 'assumed' as const,
      evidence: `${c.evidence} in the window; the run idles ${fmtMs(idleRunNs)} a step outside the profiler (its step less the GPU's idle in DataLoader waits, less the GPU's work), split as in the window`,
    }))
    .filter((c) => c.ns > 0);
  return { gpu, comm, gpuScale, serial, idleInWaitsNs, chainNs };
}

/** Without a window the host and the GPU are one stage: the step less its DataLoader waits. */
function deviceWithoutWindow(t: RunTimes): DeviceSide {
  return {
    gpu: {
      ns: t.stepLessWaitsNs,
      how: 'assumed',
      label: 'the host and GPU work',
      evidence: `no profiler window tells the host and the GPU apart: the step less its DataLoader wait, ${fmtMs(t.stepLessWaitsNs)}`,
    },
    comm: { ns: 0, how: 'assumed', evidence: 'no profiler window: communication not told apart' },
    gpuScale: 1,
    serial: [],
    idleInWaitsNs: t.waitNs,
    chainNs: t.stepLessWaitsNs,
  };
}

/** Whether the loader's records say how long an epoch is: its epoch starts are then the loader's own cost. */
function hasEpochModel(loader: LoaderFacts | null): loader is LoaderFacts {
  return loader !== null && loader.stepsPerEpoch !== null && loader.cpuNsPerBatch !== null && (loader.workers ?? 0) > 0;
}

/**
 * The epoch starts. Stalls at epoch starts (the workers start again), or long stalls many steps apart that hold most
 * of the waiting, are a serial cost: between them the loader keeps up, so its rate is not what they show. Where the
 * loader's records say how long an epoch is, its epoch starts are the loader's own cost (pipeline.ts epochStartNs),
 * which changes with the worker count; the wait at each is the probe's measure, else the stalls at epoch starts (an
 * older probe), else the model's fill.
 */
function epochStartCosts(t: RunTimes, loader: LoaderFacts | null, split: EpochSteps | null): EpochStarts {
  const s = t.stalls;
  const longStalls =
    s !== null &&
    (s.when === 'epoch-starts' ||
      (s.when === 'periodic' && (s.everySteps ?? 0) >= LONG_STALL_PERIOD_STEPS && s.waitShareInStalls >= LONG_STALL_WAIT_SHARE));
  if (hasEpochModel(loader)) {
    if (split) {
      // The steps that took an epoch's first batch against the others: all an epoch start adds (the fork in `iter()`,
      // outside the loop's waits, as well as the wait for the first batch) is its cost; the loader's period and the host
      // are what the steps within the epochs show. examples/pace/cpu/epochs.py on the 2-core VM: 360 ms epoch-start
      // steps (312 ms of it waiting) every 6 steps against 8.5 ms within the epochs; read from the whole run's waits
      // less the probe's epochFillS (343 ms, the fork in it), the loader seemed to keep up and the fork (48 ms an epoch)
      // stayed in the host, which then bound after persistent workers, where the loop measured waiting 80% of its step.
      // Without the probe's wait for the first batch, an epoch start's cost is what the measured mean holds past the
      // steps within the epochs, once every stepsPerEpoch steps (the model's spacing): the statistics leave out steps
      // the probe's own work slowed, now and then an epoch start, so their share of epoch starts is not one an epoch,
      // and the starts' own mean difference would leave the calibration to carry that share into every fix's step.
      const withinNs = split.otherMeanS * 1e9;
      const withinWaitNs = Math.min(withinNs, split.otherWaitS * 1e9);
      const epochNsPerStep = Math.max(0, t.stepNs - withinNs);
      return {
        serial: [],
        restWaitNs: withinWaitNs,
        epochNsPerStep,
        epochWaitNs: loader.epochFillNs,
        epochExtraNs: epochNsPerStep * (loader.stepsPerEpoch ?? 1),
        within: { stepNs: withinNs, waitNs: withinWaitNs, stepLessWaitsNs: withinNs - withinWaitNs, stalls: null },
      };
    }
    const epochWaitNs = loader.epochFillNs ?? (s?.when === 'epoch-starts' ? s.meanStallS * 1e9 : null);
    const epochNsPerStep = epochWaitNs !== null ? epochWaitNs / (loader.stepsPerEpoch ?? 1) : epochStartNs(loader, loader.workers);
    return { serial: [], restWaitNs: Math.max(0, t.waitNs - epochNsPerStep), epochNsPerStep, epochWaitNs, epochExtraNs: null, within: null };
  }
  if (!(longStalls && t.waitNs > 0))
    return { serial: [], restWaitNs: t.waitNs, epochNsPerStep: 0, epochWaitNs: null, epochExtraNs: null, within: null };
  const ns = t.waitNs * s.waitShareInStalls;
  const cost: SerialCost = {
    kind: 'epoch-starts',
    ns,
    perStep: null,
    how: s.when === 'epoch-starts' ? 'measured' : 'assumed',
    evidence:
      s.when === 'epoch-starts'
        ? `${s.stalledSteps} of ${s.measuredSteps} steps stalled ${fmtMs(s.meanStallS * 1e9)} each at the start of an epoch (the workers start again): ${fmtMs(ns)} a step on average`
        : `${s.stalledSteps} of ${s.measuredSteps} steps stalled ${fmtMs(s.meanStallS * 1e9)} each, every ${s.everySteps} steps, holding ${fmtPct(s.waitShareInStalls)} of the waiting: the start of each epoch, most likely (the workers start again; the DataLoader's own records would tell): ${fmtMs(ns)} a step on average`,
  };
  return { serial: [cost], restWaitNs: t.waitNs - ns, epochNsPerStep: 0, epochWaitNs: null, epochExtraNs: null, within: null };
}

/**
 * Whether the loop waits on its loader outside the epoch starts: INPUT_BINDS_SHARE of the step they leave (within the
 * epochs where the steps tell them apart).
 */
function loaderWaitedOn(t: RunTimes, epochs: EpochStarts): boolean {
  return epochs.restWaitNs >= INPUT_BINDS_SHARE * (epochs.within?.stepNs ?? t.stepNs);
}

/**
 * The input stage: measured in the workers (their CPU a batch; their wall time a batch where the loop waits on them),
 * else inferred from the loop's waits. Returns the loader's facts as settled here (the worker's time a batch, and the
 * workers' start-up from the wait at epoch starts less the model's fill).
 */
function inputStage(
  t: RunTimes,
  facts: LoaderFacts | null,
  epochs: EpochStarts,
  idleInWaitsNs: number,
  medianS: number,
  fedByDataLoader: boolean,
): { input: Stage; loader: LoaderFacts | null } {
  const { stepNs: S, waitNs: W } = t;
  const within = epochs.within;
  const withinText = within
    ? `; within its epochs (the steps that took an epoch's first batch left out) ${fmtMs(within.waitNs)} of a ${fmtMs(within.stepNs)} step`
    : '';
  const idleText =
    idleInWaitsNs < (within?.waitNs ?? W)
      ? `; the GPU idles ${fmtMs(idleInWaitsNs)} a step of ${within ? 'those' : 'it'} and runs work queued before the waits through the rest`
      : '';
  const waitsText = `the loop waits ${fmtMs(W)} a step on the DataLoader (${fmtPct(W / S)} of the mean step ${fmtMs(S)}, median ${fmtMs(medianS * 1e9)})${stallText(t.stalls)}${withinText}${idleText}`;
  const binds = loaderWaitedOn(t, epochs);
  let loader = facts;
  let input: Stage;
  if (loader && loader.cpuNsPerBatch !== null && loader.workers !== null && loader.workers > 0) {
    const workers = loader.workers;
    const cpuPerBatch = `${fmtMs(loader.cpuNsPerBatch)} of CPU a batch (read from /proc)`;
    const keeps = loader.processCores !== null ? ` and keeps ${loader.processCores.toFixed(1)} busy itself` : '';
    const coresText = loader.cpuCores !== null ? `; the process may use ${loader.cpuCores} cores${keeps}` : '';
    if (binds) {
      // The loader binds: its workers work without pause, a step's batches every mean step (less the epoch starts'
      // waits; the host and GPU's serial costs pass inside that period). Their wall time a batch is what the waits show;
      // a worker spends no more CPU on a batch than that: a larger CPU figure holds the start-up of workers forked again
      // at each epoch, which the epoch starts count.
      const periodNs = Math.max(0, S - epochs.epochNsPerStep);
      const wallNs = (periodNs * workers) / loader.batchesPerStep;
      const cpuText = loader.cpuNsPerBatch > wallNs ? `${cpuPerBatch}, taken as ${fmtMs(wallNs)}: it holds the workers' start-up` : cpuPerBatch;
      loader = { ...loader, batchNsPerWorker: wallNs, cpuNsPerBatch: Math.min(loader.cpuNsPerBatch, wallNs) };
      input = {
        ns: periodNs,
        how: 'measured',
        evidence: `${workers} worker(s) deliver a step's batches every ${fmtMs(periodNs)} (the loop waits for them): each takes ${fmtMs(wallNs)} a batch, with ${cpuText}${coresText}; ${waitsText}`,
      };
    } else {
      const periodNs = (loader.cpuNsPerBatch * loader.batchesPerStep) / Math.min(workers, workerCap(loader));
      input = {
        ns: periodNs,
        how: 'measured',
        evidence: `the workers spend ${cpuPerBatch}${coresText}: ${workers} worker(s) make a step's batches in ${fmtMs(periodNs)} at the least; ${waitsText}`,
      };
    }
  } else if (binds)
    input = {
      ns: Math.max(0, S - epochs.epochNsPerStep),
      how: 'assumed',
      evidence: `${waitsText}: the loader delivers about one batch per mean step, so its period is the mean step${epochs.epochNsPerStep > 0 ? ' less the epoch starts' : ''}`,
    };
  else input = { ns: null, how: 'assumed', evidence: `${waitsText}: the loader keeps up; ${unmeasuredLoaderWhy(loader, fedByDataLoader)}` };
  return { input, loader };
}

/**
 * Why a loader that keeps up has no measured capacity, in the user's terms: `fedByDataLoader`, the step records counted
 * DataLoader batches (so a DataLoader did feed the steps, only its own timings are missing).
 */
function unmeasuredLoaderWhy(loader: LoaderFacts | null, fedByDataLoader: boolean): string {
  if (loader === null)
    return fedByDataLoader
      ? "a DataLoader fed the steps, but the run's records hold none of its own timings (its workers' time a batch), so what it could deliver is not measured"
      : 'no torch DataLoader fed the steps (the batches come from the loop itself)';
  if ((loader.workers ?? 0) === 0) return "the DataLoader loads in the training process (num_workers=0): its time is the host's";
  return "its workers' CPU time is not in the run's records";
}

/**
 * The host: the stepping thread's CPU time where it cannot hold a spin on the GPU; the step less the GPU's work where
 * the GPU idles with nothing else to explain it; a loop that spins in a drain each step (drainSpin), whose refill then
 * replaces the window's syncs and gaps among the serial costs.
 */
function hostStage(ev: RunEvidence, m: TraceMetrics | null, t: RunTimes, d: DeviceSide): { stage: Stage; refill: SerialCost | null } {
  const st = ev.steps;
  const cpuS = st.medianHostCpuS ?? null;
  // A run whose window shows no GPU work (or has no window a GPU trace could give) and whose steps were not timed on a
  // GPU runs on the CPU: its thread's CPU time is the work.
  const noGpuWork = (st.medianStepsInFlight ?? null) === null && (m === null || deviceBusyNs(m) === 0);
  const problem = cpuS === null ? null : hostTimeProblem(st.medianStepsInFlight ?? null, m);
  const deviceRunNs = (d.gpu.ns ?? 0) + (d.comm.ns ?? 0);
  let host: Stage =
    cpuS === null
      ? {
          ns: null,
          how: 'assumed',
          evidence: "the run's records hold too few readings of the training thread's CPU time to time the host, and the profiled window's host time carries the profiler's own cost",
        }
      : noGpuWork || problem === null
        ? hostWork(
            cpuS * 1e9,
            m,
            ev.threads ?? null,
            noGpuWork,
            m !== null && !noGpuWork && deviceRunNs >= GPU_BOUND_SHARE * d.chainNs,
            st.medianBackwardS && st.medianBackwardProfiledS ? { plainS: st.medianBackwardS, profiledS: st.medianBackwardProfiledS } : null,
          )
        : { ns: null, how: 'assumed', evidence: `the stepping thread's CPU time is ${fmtMs(cpuS * 1e9)} a step, not taken as the host's own work: ${problem}` };
  if (m) host = hostFromUnexplainedIdle(m, t, d, host, cpuS) ?? host;
  const spin = m && cpuS !== null ? drainSpin(m, cpuS * 1e9, (st.medianS ?? st.meanS ?? 0) * 1e9, d.chainNs, deviceRunNs) : null;
  return spin ? { stage: spin.host, refill: spin.refill } : { stage: host, refill: null };
}

/**
 * The GPU idles a tenth of the run's step or more with no sync, DataLoader wait or copy to explain it: the host side sets
 * the pace, whatever its thread's clock says (the GIL held by other threads, the scheduler: time it does not see).
 * Launch gaps a GPU-bound window shows are serial (the host behind in parts of the step), already explained; the
 * stalls are DataLoader waits, already out of the chain. null where the idle is explained.
 */
function hostFromUnexplainedIdle(m: TraceMetrics, t: RunTimes, d: DeviceSide, host: Stage, cpuS: number | null): Stage | null {
  const deviceRunNs = (d.gpu.ns ?? 0) + (d.comm.ns ?? 0);
  const idleRunNs = d.chainNs - deviceRunNs;
  const explainedNs = d.serial.filter((c) => c.kind !== 'epoch-starts').reduce((a, c) => a + c.ns, 0);
  const unexplained = idleRunNs - explainedNs >= HOST_BINDS_IDLE_SHARE * t.stepNs && syncBlockedNs(m) <= HOST_SYNC_MAX_SHARE * m.perStep.durNs;
  if (!unexplained || (host.ns !== null && host.ns >= d.chainNs - explainedNs)) return null;
  const cpuClock = cpuS !== null ? ` (its thread's CPU time, ${fmtMs(cpuS * 1e9)}, does not see all of it: the GIL held by other threads, the scheduler)` : '';
  // No GPU work at all: a CPU run, where no GPU idles (issue 47 item 4: "the GPU idles 87%" on a CPU run).
  if (deviceRunNs === 0)
    return {
      ns: d.chainNs - explainedNs,
      how: 'assumed',
      evidence: `no GPU work in the run (a CPU run): the host side does all of the run's ${fmtMs(d.chainNs)} step (less the DataLoader waits) and sets the pace${cpuClock}`,
    };
  return {
    ns: d.chainNs - explainedNs,
    how: 'assumed',
    evidence: `the GPU works ${fmtMs(deviceRunNs)} of the run's ${fmtMs(d.chainNs)} step (less the GPU's idle in DataLoader waits) and idles ${fmtPct((idleRunNs - explainedNs) / t.stepNs)} of it with no sync, copy or DataLoader wait to explain it: the host side sets the pace${cpuS !== null ? ` (its thread's CPU time, ${fmtMs(cpuS * 1e9)}, does not see all of it: the GIL held by other threads, the scheduler)` : ''}`,
  };
}

/**
 * A loader the loop does not wait on keeps up: its period is at most the rest of the step. A figure above that (the
 * workers' CPU a batch over the cores left to them) contradicts what the run measured, and the run wins: the loader's
 * times are scaled down to the rest of the step, and its evidence says so. On an H100, timm's train.py with 4 workers
 * (329 ms of CPU a batch) put the loader at 82.2 ms above the GPU's 71.0 ms while the loop waited 1.6% of its 78.8 ms
 * step: taken as binding, it hid bf16 (measured 43.1 ms with bf16, channels_last and 12 workers).
 */
export function keptUp(p: Omit<Pipeline, 'calibration'>): Omit<Pipeline, 'calibration'> {
  const l = p.loader;
  const input = l !== null && l.workers !== null ? (loaderPeriodNs(l, l.workers) ?? p.stages.input.ns) : p.stages.input.ns;
  if (input === null || l === null) return p;
  const rest = stepOf({ ...p, calibration: 1, loader: null, stages: { ...p.stages, input: { ns: null, how: 'assumed', evidence: '' } } }).stepNs;
  if (!(rest > 0) || input <= rest) return p;
  // Just under the rest: equal periods would leave the binding stage to rounding.
  const f = (rest / input) * (1 - 1e-9);
  return {
    ...p,
    stages: {
      ...p.stages,
      input: {
        ns: rest * (1 - 1e-9),
        how: 'assumed',
        evidence: `${p.stages.input.evidence}; that is above the rest of the step (${fmtMs(rest)}) while the loop hardly waits: the loader keeps up, so its period is taken as at most ${fmtMs(rest)} (the run's measure wins over the workers' CPU reading)`,
      },
    },
    loader: {
      ...l,
      batchNsPerWorker: l.batchNsPerWorker === null ? null : l.batchNsPerWorker * f,
      cpuNsPerBatch: l.cpuNsPerBatch === null ? null : l.cpuNsPerBatch * f,
    },
  };
}

/** The stepping thread's CPU time this share of the step or more: it never slept, so a wait in it spun. */
const SPIN_CPU_SHARE = 0.9;
/** The GPU's work this share of the run's step or more: a spin through it is too much of the CPU time to ignore. */
const SPIN_MIN_GPU_SHARE = 0.1;

/**
 * A loop that drains the GPU's queue every step (a sync or a blocking copy each step: generate()'s stopping check, a
 * loss read with .item()) and whose stepping thread's CPU time is about its whole step: the thread spun while it waited
 * for the queued work (CUDA spins when there are more cores than GPUs), so its CPU time holds that wait and is not its
 * work. After each drain the GPU has nothing queued until the host launches again: that idle, all of it, is the
 * drains' `refill`, on the GPU's side (pipeline.ts), and the host's own work holds it. That own work is the window's
 * stepping thread outside syncs, copies and the DataLoader, over the profiler's slowdown of it, which the idle tells:
 * in such a loop the GPU's idle outside the DataLoader is the host's work while nothing is queued, in the window and
 * in the run alike, so their ratio is how much the profiler slowed the host. On the H200, a static-cache generate() at
 * batch 8 in fp32 (examples/levers/runs/h200/hf_generate_static_b8_fp32): 2.56 ms of CPU a 2.60 ms step, the GPU
 * 1.18 ms of it; bf16 weights then took the step from 2.76 to 2.19 ms (plain runs of one call), where the CPU time as
 * the host's work left nothing to gain. Null where the loop is not such a loop.
 */
export function drainSpin(
  m: TraceMetrics,
  cpuNs: number,
  medianStepNs: number,
  chainNs: number,
  deviceNs: number,
): { host: Stage; refill: SerialCost } | null {
  const free = m.examples.hostFreeNsPerStep ?? null;
  if (free === null || m.perStep.syncDrains < 1 || !(medianStepNs > 0) || cpuNs < SPIN_CPU_SHARE * medianStepNs) return null;
  if (deviceNs < SPIN_MIN_GPU_SHARE * chainNs || deviceNs >= GPU_BOUND_SHARE * chainNs) return null;
  const idleRun = chainNs - deviceNs;
  const idleWin = m.perStep.durNs - deviceBusyNs(m) - m.perStep.idleByCauseNs.dataloader;
  if (!(idleRun > 0) || !(idleWin > idleRun)) return null;
  const slowdown = idleWin / idleRun;
  const hostNs = free / slowdown;
  return {
    host: {
      ns: hostNs,
      how: 'assumed',
      evidence: `the stepping thread's CPU time, ${fmtMs(cpuNs)} a step, is the whole step (median ${fmtMs(medianStepNs)}) of a loop that drains the GPU's queue ${m.perStep.syncDrains.toFixed(1)} times a step: it spun waiting for the GPU; its own work is the window's stepping thread outside syncs, copies and the DataLoader, ${fmtMs(free)} a step, over the profiler's slowdown ${slowdown.toFixed(1)}x (the GPU's idle while nothing is queued: ${fmtMs(idleWin)} a step in the window, ${fmtMs(idleRun)} in the run)`,
    },
    refill: {
      kind: 'refill',
      ns: idleRun,
      perStep: m.perStep.syncDrains,
      how: 'measured',
      evidence: `after each drain the GPU waits for the host's next launches: ${fmtMs(idleRun)} a step (the run's step less the GPU's work and its DataLoader waits), the host's work in series with the GPU's`,
    },
  };
}

/** The loader's partial last batches, as the plan meets them (a fix that compiles the model); null when all are full. */
function partialBatchOf(b: StepBatch | undefined): PartialBatch | null {
  return b && b.partialSteps > 0 && b.samplesPerStep !== null
    ? { samples: b.partialSamples, fullSamples: b.samplesPerStep, everySteps: b.partialEvery }
    : null;
}

function stallText(s: StepStats['stalls']): string {
  if (!s || s.when === 'none' || s.stalledSteps === 0) return '';
  const when = s.when === 'periodic' ? `, every ${s.everySteps} steps` : s.when === 'epoch-starts' ? ', at the start of each epoch' : '';
  return `; ${fmtPct(s.share)} of the steps stall (${s.stalledSteps} of ${s.measuredSteps}, ${fmtMs(s.meanStallS * 1e9)} each${when}), holding ${fmtPct(s.waitShareInStalls)} of the waiting`;
}
