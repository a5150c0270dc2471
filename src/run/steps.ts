/**
 * The steps of a measured run (pure): one definition of which steps count, how they are timed, and their statistics,
 * for doctor's report and tune's trials.
 *
 * - Timing: the GPU's own step times (CUDA events at step ends) when they cover at least half the timed steps (a clean
 *   end delivers all), else the host's wall clock between step hooks; one source for every figure, never a mix.
 * - Steady state: the first step always warms up (kernels load, allocator grows); past it, the steady part starts at
 *   the first step within STEADY_TOLERANCE of the pace of the run's second half (its median) whose window of up to
 *   STEADY_WINDOW steps has its median within it too.
 *   A run that never gets there is "not settled" and its second half is used. Steps slowed by doctor's own work are
 *   left out, unless nothing else was timed (`slowedByProbe`): the profiled window, the step after it (where the
 *   profiler stops), and every step whose record names the probe's work during it (`probeWork`: the trace being
 *   written, the model search), so the statistics are the plain program's. Where the steps after a CUDA window of a
 *   loop without a DataLoader run 10% slower or more than the steady ones before it, and so does the stepping
 *   thread's CPU time (CUPTI left attached: `cuptiSlowdownOf`), the steps before it.
 * - A bounded list: the collector may keep only a sample of a long run's step records; steps are numbered from 1, so
 *   the count is the last step's number, and every figure is over the steps kept (a uniform sample estimates it).
 */
import { median, quantile } from '../util/stats.js';
import type { ProbeRecord, StepRecord, StepSource } from './records.js';

export interface StepStats {
  /**
   * Steps the probe counted: the last step's number, or the end record's count where the probe sampled the steady
   * loop (exact also when only a sample of the records was kept).
   */
  steps: number;
  /** Steps in the statistics: the steady ones with a time, none slowed by the probe's work (unless no other was timed). */
  measuredSteps: number;
  meanS: number | null;
  medianS: number | null;
  p90S: number | null;
  minS: number | null;
  maxS: number | null;
  /** Sum of DataLoader waits / sum of step times, over the measured steps. */
  dataWaitShare: number | null;
  samplesPerS: number | null;
  /** Token positions per second (padding included), when every measured step's batches held token ids. */
  tokensPerS: number | null;
  /** Median samples and tokens per measured step (tune's throughput per value); null when a step could not tell. */
  samplesPerStep?: number | null;
  tokensPerStep?: number | null;
  /** Sequence length of the last measured step's token batches. */
  seqLen: number | null;
  /**
   * Where the step times come from: `gpu` (CUDA timing events at step ends: the GPU's pace, even while the host runs
   * ahead filling the launch queue) or `host` (wall clock between step hooks: without CUDA, or an older probe).
   */
  timing: 'gpu' | 'host';
  /** Median of the host wall-clock step times over the same steps (equal to medianS with host timing). */
  hostMedianS: number | null;
  /** What marked the steps (the last step's source, see StepRecord.stepSource); null for an older probe. */
  stepSource: StepSource | null;
  /**
   * The first step of the steady state; true when the step times settled, false when they never did (the second half
   * is used), null with too few steps to tell. Added in 0.2.
   */
  steadyFromStep?: number | null;
  settled?: boolean | null;
  /**
   * Median CPU time of the stepping thread per measured step (the probe's `hostCpuS`): the host's own time to issue a
   * step, outside the profiler. The probe reads that clock at every step for the first 64 steps, then for one step in
   * 16: null when fewer readings than `enoughCpuReadings` allows (an older probe sent none). Added in 0.2.
   */
  medianHostCpuS?: number | null;
  /**
   * Median wall time a measured step spent in backward calls (the probe's `backwardS`), and the same over the profiled
   * window's steps: their ratio is the profiler's cost on the host's launch work (pace/run.ts). Null when not told.
   */
  medianBackwardS?: number | null;
  medianBackwardProfiledS?: number | null;
  /**
   * Median number of steps the GPU was behind the host at the measured steps' ends (the step less the last step whose
   * GPU time the record had): 0, the GPU had done all the work issued; 1, it was still on this step; 2 or more, the
   * host ran ahead (it waits on the GPU: a full launch queue). Null without GPU timing. Added in 0.2.
   */
  medianStepsInFlight?: number | null;
  /**
   * The steps that stalled on the DataLoader and when (stallPatternOf): the mean step carries them, the median does
   * not. Null with too few steps to tell; absent from older reports.
   */
  stalls?: StallPattern | null;
  /**
   * The measured steps that took an epoch's first batches, one a worker (the workers started again unless persistent,
   * the prefetch queue empty), against the others: what an epoch start costs over a step within an epoch, and the step
   * and waits the loader keeps within its epochs (epochStepsOf). Absent where the DataLoader's records tell no epoch
   * start among the measured steps, or none of the others.
   */
  epochSteps?: EpochSteps;
  /**
   * Steps that are decode steps (generation: forward calls of the model on one new token per sequence), with the
   * tokens generated per second and the time to the first token; null for any other run. Added in 0.3.
   */
  decode?: DecodeStats | null;
  /**
   * The steps after the profiler window ran slower than the steady ones before it (`cuptiSlowdownOf`): the statistics
   * are then those of the steps before the window. Null otherwise; absent from older reports.
   */
  slowedAfterWindow?: SlowedAfterWindow | null;
}

/**
 * Kineto leaves CUPTI attached to the process once a profiler stops (unless TEARDOWN_CUPTI=1): every CUDA launch after
 * doctor's window then pays CUPTI's callback. A compiled ResNet-50 on an H200 ran 23-24 ms a step before the window
 * and 30-32 ms after it (plainly 24-27 ms). The probe now detaches it at its window's stop (python/gpuwise/probe/window.py),
 * but not where a profiler of the script's takes over, the script set TEARDOWN_CUPTI itself, or CUDA is older than 12.6;
 * for those windows, and runs recorded before, doctor takes the pace from the steps before the window where those after
 * it are this much slower.
 */
export const AFTER_WINDOW_SLOWDOWN = 0.1;
/** Steady steps needed on each side of the window to tell. */
export const MIN_STEPS_BESIDE_WINDOW = 8;
/** Backward calls timed outside the window before their median is told (a few steps' noise otherwise). */
const MIN_BACKWARD_READINGS = 4;
/** CPU readings needed on each side: the probe reads the thread's CPU clock for one step in 16 after its first 64. */
export const MIN_CPU_READINGS_BESIDE_WINDOW = 4;

export interface SlowedAfterWindow {
  /** The window's first step: the statistics' steps end before it. */
  windowFirstStep: number;
  /** Median step after the window over the median steady step before it, less 1. */
  slowdown: number;
  stepsBefore: number;
  stepsAfter: number;
}

/**
 * Among the unslowed timed steps (in step order), the steady ones before a profiled window when the steps after it
 * are AFTER_WINDOW_SLOWDOWN slower or more, and so is the stepping thread's CPU time a step; null when there is no
 * window, too few steps on either side, a loop fed by a DataLoader, or no such slowdown.
 */
export function cuptiSlowdownOf(
  plain: readonly StepRecord[],
  ordered: readonly StepRecord[],
  timeOf: (s: StepRecord) => number,
): { before: StepRecord[]; slowed: SlowedAfterWindow } | null {
  // A loop fed by a DataLoader keeps its steps: its first steps take batches its workers prefetched before they ran,
  // the later ones wait or share the cores with the workers (a ResNet-50 with 12 workers on an H100: 43 ms a step
  // before the window, 47 after, its own CPU time up 24% too), and a few steps cannot show how often its stalls come
  // (the GAN of examples/levers: 50% "slower" after the window, in its waits).
  if (plain.some((s) => s.batches > 0)) return null;
  const profiled = ordered.filter((s) => s.profiled).map((s) => s.step);
  if (profiled.length === 0) return null;
  const first = Math.min(...profiled);
  const last = Math.max(...profiled);
  const beforeAll = plain.filter((s) => s.step < first);
  const before = beforeAll.slice(steadyStart(beforeAll.map(timeOf)).start);
  const after = plain.filter((s) => s.step > last);
  if (before.length < MIN_STEPS_BESIDE_WINDOW || after.length < MIN_STEPS_BESIDE_WINDOW) return null;
  const ratio = (a: readonly number[], b: readonly number[]) => (median(a) as number) / (median(b) as number);
  const slowdown = ratio(after.map(timeOf), before.map(timeOf)) - 1;
  if (slowdown < AFTER_WINDOW_SLOWDOWN) return null;
  // CUPTI's callbacks run on the launching thread: its own CPU time a step must have grown too. A run slower for
  // another reason (a second process on the GPU, workers contending for the cores, the prefetched batches used up)
  // keeps its steps; so does a probe that did not send that time.
  const cpuOf = (xs: readonly StepRecord[]) =>
    xs.map((s) => s.hostCpuS).filter((t): t is number => typeof t === 'number' && Number.isFinite(t));
  const cpuBefore = cpuOf(before);
  const cpuAfter = cpuOf(after);
  if (cpuBefore.length < MIN_CPU_READINGS_BESIDE_WINDOW || cpuAfter.length < MIN_CPU_READINGS_BESIDE_WINDOW) return null;
  if (ratio(cpuAfter, cpuBefore) - 1 < AFTER_WINDOW_SLOWDOWN) return null;
  return { before, slowed: { windowFirstStep: first, slowdown, stepsBefore: before.length, stepsAfter: after.length } };
}

/**
 * Whether `readings` CPU readings over `steps` measured steps tell the host's time a step: half the steps, or one in 32
 * of a long run (half the probe's one in 16: steps ended on another thread carry none) and at least
 * MIN_CPU_READINGS_BESIDE_WINDOW.
 */
export function enoughCpuReadings(readings: number, steps: number): boolean {
  return readings > 0 && (readings * 2 >= steps || (readings >= MIN_CPU_READINGS_BESIDE_WINDOW && readings * 32 >= steps));
}

/** A step stalls when its DataLoader wait is at least this share of the median step. */
export const STALL_MIN_SHARE_OF_MEDIAN = 0.5;
/** Stalls are periodic when at least this share of the spacings between them is within one step of their median. */
const PERIODIC_SHARE = 0.6;
/** Stalls are at epoch starts when at least this share of their waiting falls within EPOCH_START_STEPS of one. */
const EPOCH_START_SHARE = 0.5;
const EPOCH_START_STEPS = 2;

/** The measured steps split at epoch starts (StepStats.epochSteps); times are means over each part, in seconds. */
export interface EpochSteps {
  /** Measured steps that took an epoch's first batches (one a worker), their mean time and mean DataLoader wait. */
  startSteps: number;
  startMeanS: number;
  startWaitS: number;
  /** The other measured steps (within epochs), their mean time and mean DataLoader wait. */
  otherSteps: number;
  otherMeanS: number;
  otherWaitS: number;
}

/**
 * The measured steps split into those that took an epoch's first `firstBatches` batches (one a worker: each worker's
 * first batch waits for its own start-up, and the workers start one after another) and the others; null where either
 * part is empty. `epochStarts` must hold every epoch start (epochStartsOf fills in those the loader's records, read
 * about once a second, skipped); `all` is every step recorded, for the batches each took.
 */
export function epochStepsOf(
  steps: readonly { step: number; timeS: number; waitS: number }[],
  epochStarts: readonly number[],
  all: readonly { step: number; batches: number }[] = [],
  firstBatches = 1,
): EpochSteps | null {
  const batchesOf = new Map(all.map((s) => [s.step, s.batches]));
  const firsts = new Set<number>();
  for (const e of epochStarts) {
    // The steps after the epoch start until they have taken firstBatches batches (one a step where not recorded).
    for (let step = e + 1, taken = 0; taken < Math.max(1, firstBatches); step++) {
      firsts.add(step);
      taken += Math.max(1, batchesOf.get(step) ?? 1);
    }
  }
  const start = steps.filter((s) => firsts.has(s.step));
  const other = steps.filter((s) => !firsts.has(s.step));
  if (start.length === 0 || other.length === 0) return null;
  const mean = (xs: typeof steps, f: (s: (typeof steps)[number]) => number) => xs.reduce((a, s) => a + f(s), 0) / xs.length;
  return {
    startSteps: start.length,
    startMeanS: mean(start, (s) => s.timeS),
    startWaitS: mean(start, (s) => s.waitS),
    otherSteps: other.length,
    otherMeanS: mean(other, (s) => s.timeS),
    otherWaitS: mean(other, (s) => s.waitS),
  };
}

/** How the DataLoader waits fall over the steps: a few long stalls, every N steps or at epoch starts, or spread. */
export interface StallPattern {
  /** Measured steps that stalled (their wait at least STALL_MIN_SHARE_OF_MEDIAN of the median step). */
  stalledSteps: number;
  measuredSteps: number;
  /** stalledSteps / measuredSteps. */
  share: number;
  /** Mean wait of a stalled step (s). */
  meanStallS: number;
  /** Share of all the measured steps' DataLoader waiting that the stalls hold. */
  waitShareInStalls: number;
  /**
   * `periodic`: every `everySteps` steps (workers delivering in turn: the pool is slower than the loop); `epoch-starts`:
   * after the loader's iterator was created (the DataLoader's own records say when); `irregular` otherwise; `none`:
   * no step stalled.
   */
  when: 'periodic' | 'epoch-starts' | 'irregular' | 'none';
  everySteps: number | null;
}

/**
 * The spacings between consecutive `marked` steps (a subset of `steps`, both in step order) that have every step
 * between them in `steps`: the records of a long run skip steps (the probe's bursts past its head, doctor's spread
 * sample), and a spacing across such a gap is not the period a pattern recurs at.
 */
export function wholeSpacings(steps: readonly { step: number }[], marked: readonly { step: number }[]): number[] {
  const indexOf = new Map(steps.map((s, i) => [s.step, i]));
  const out: number[] = [];
  for (let i = 1; i < marked.length; i++) {
    const a = marked[i - 1]!.step;
    const b = marked[i]!.step;
    if ((indexOf.get(b) as number) - (indexOf.get(a) as number) === b - a) out.push(b - a);
  }
  return out;
}

/** The steps a process counted, from its end record (0 without one): more than its step records once the probe sampled
 * its steady loop. */
export function countedStepsOf(records: readonly ProbeRecord[]): number {
  const end = records.find((r) => r.type === 'end');
  return end?.type === 'end' ? end.steps : 0;
}

/** The stall pattern of measured steps (step number, time and wait, in step order); `epochStarts`: steps an epoch began at. */
export function stallPatternOf(
  steps: readonly { step: number; timeS: number; waitS: number }[],
  epochStarts: readonly number[] = [],
): StallPattern | null {
  if (steps.length < STEADY_MIN_STEPS) return null;
  const median = quantile(
    steps.map((s) => s.timeS).sort((a, b) => a - b),
    0.5,
  ) as number;
  const stalled = steps.filter((s) => s.waitS >= STALL_MIN_SHARE_OF_MEDIAN * median);
  const totalWait = steps.reduce((a, s) => a + s.waitS, 0);
  const stallWait = stalled.reduce((a, s) => a + s.waitS, 0);
  const base = {
    stalledSteps: stalled.length,
    measuredSteps: steps.length,
    share: stalled.length / steps.length,
    meanStallS: stalled.length ? stallWait / stalled.length : 0,
    waitShareInStalls: totalWait > 0 ? stallWait / totalWait : 0,
  };
  if (stalled.length === 0) return { ...base, when: 'none', everySteps: null };
  const nearEpoch = stalled.filter((s) => epochStarts.some((e) => s.step >= e && s.step - e <= EPOCH_START_STEPS));
  if (epochStarts.length > 0 && stallWait > 0 && nearEpoch.reduce((a, s) => a + s.waitS, 0) >= EPOCH_START_SHARE * stallWait)
    return { ...base, when: 'epoch-starts', everySteps: null };
  const gaps = wholeSpacings(steps, stalled);
  if (gaps.length >= 2) {
    const m = quantile(
      [...gaps].sort((a, b) => a - b),
      0.5,
    ) as number;
    if (m >= 2 && gaps.filter((g) => Math.abs(g - m) <= 1).length >= PERIODIC_SHARE * gaps.length)
      return { ...base, when: 'periodic', everySteps: m };
  }
  return { ...base, when: 'irregular', everySteps: null };
}

/**
 * A generation loop seen through its steps (one step per forward call of the model): decode steps feed one token per
 * sequence (`seqLen` 1: `generate()` with a KV cache, or an inference loop), prefill steps the prompt (`seqLen` > 1:
 * each starts a prompt, its time is the time to its first token). Over the measured steps.
 */
export interface DecodeStats {
  decodeSteps: number;
  prefillSteps: number;
  /** Sequences per decode step (the mode of their samples); null when no step told. */
  batch: number | null;
  /** Median time of a decode step; of a prefill step (its forward over the prompt and the first token: time to first token). */
  decodeStepS: number | null;
  prefillStepS: number | null;
  /** Median prompt length (the prefill steps' sequence length). */
  promptLen: number | null;
  /** Tokens generated per second: one per sequence per decode step and the first one each prefill makes, over all their time. */
  tokensPerS: number | null;
  /** Decode steps per prefill step (a prompt's new tokens less its first); null without prefill steps. */
  decodeStepsPerPrefill: number | null;
}

/**
 * Steps in order with the decode steps a captured graph replays told as such. A generation loop whose decoding forward
 * is a CUDA graph (a static KV cache) calls its model eagerly for each prompt, a step whose input the probe reads (the
 * batch, the prompt's length), then replays the graph once a new token, steps with no input to read. A replay after
 * such a prompt, where neither an optimizer nor a backward marks the steps, decodes one token for each of the
 * prompt's sequences. Other steps are returned as they are.
 */
export function withGraphDecodeSteps(ordered: readonly StepRecord[]): StepRecord[] {
  let prompt: StepRecord | null = null;
  return ordered.map((s) => {
    if (s.stepSource === 'forward') {
      prompt = typeof s.seqLen === 'number' && s.seqLen > 1 && s.samples !== null ? s : null;
      return s;
    }
    if (s.stepSource !== 'graph' || prompt === null || s.samples !== null) return s;
    return { ...s, samples: prompt.samples, tokens: prompt.samples, seqLen: 1 };
  });
}

/**
 * Decode statistics of measured steps, or null when they are not decode steps: steps marked by forward calls or
 * graph replays (no backward, no optimizer) most of which feed one token per sequence.
 */
export function decodeStatsOf(
  measured: readonly StepRecord[],
  timeOf: (s: StepRecord) => number,
  stepSource: StepSource | null,
): DecodeStats | null {
  if (stepSource !== 'forward' && stepSource !== 'graph') return null;
  const decode = measured.filter((s) => s.seqLen === 1);
  const prefill = measured.filter((s) => typeof s.seqLen === 'number' && s.seqLen > 1);
  if (decode.length === 0 || decode.length * 2 < measured.length) return null;
  const mid = (xs: number[]) =>
    quantile(
      [...xs].sort((a, b) => a - b),
      0.5,
    );
  const counts = new Map<number, number>();
  for (const s of decode) if (s.samples !== null) counts.set(s.samples, (counts.get(s.samples) ?? 0) + 1);
  const batch = [...counts].sort((a, b) => b[1] - a[1] || b[0] - a[0])[0]?.[0] ?? null;
  const all = [...decode, ...prefill];
  const time = all.reduce((a, s) => a + timeOf(s), 0);
  const generated = all.every((s) => s.samples !== null) ? all.reduce((a, s) => a + (s.samples as number), 0) : null;
  return {
    decodeSteps: decode.length,
    prefillSteps: prefill.length,
    batch,
    decodeStepS: mid(decode.map(timeOf)),
    prefillStepS: prefill.length ? mid(prefill.map(timeOf)) : null,
    promptLen: prefill.length ? mid(prefill.map((s) => s.seqLen as number)) : null,
    tokensPerS: generated !== null && time > 0 ? generated / time : null,
    decodeStepsPerPrefill: prefill.length ? decode.length / prefill.length : null,
  };
}

/** Steps whose median must lie within this share of the settled pace for the steady state to start. */
export const STEADY_TOLERANCE = 0.1;
/** Steps in the moving window of the steady-state test (fewer in short runs). */
export const STEADY_WINDOW = 5;
/** Below this many timed steps the steady state is not tested: all but the first count. */
const STEADY_MIN_STEPS = 4;

/**
 * Steps the GPU was behind the host at each step's end, by step: the step less the last step whose GPU time any record
 * up to it carried (a record lists the steps whose end event the GPU had reached when it was sent).
 */
export function stepsInFlightOf(ordered: readonly StepRecord[]): Map<number, number> {
  const out = new Map<number, number>();
  let done = 0;
  for (const s of ordered) {
    for (const pair of s.gpuStepTimes ?? []) if (pair[0] > done && pair[0] <= s.step) done = pair[0];
    if (done > 0) out.set(s.step, s.step - done);
  }
  return out;
}

/** Every `[step, seconds]` GPU step time a rank's records carry (step and end records). */
export function gpuStepTimesOf(records: readonly ProbeRecord[]): Map<number, number> {
  const out = new Map<number, number>();
  for (const r of records)
    if ((r.type === 'step' || r.type === 'end') && Array.isArray(r.gpuStepTimes))
      for (const pair of r.gpuStepTimes)
        if (Array.isArray(pair) && Number.isFinite(pair[0]) && Number.isFinite(pair[1]) && pair[1] >= 0) out.set(pair[0], pair[1]);
  return out;
}

/**
 * Index of the first steady step in `times` (in step order), and whether the run settled: the first window of steps
 * whose median is within STEADY_TOLERANCE of the median of the second half.
 */
export function steadyStart(times: readonly number[]): { start: number; settled: boolean | null } {
  const n = times.length;
  if (n < STEADY_MIN_STEPS) return { start: 0, settled: null };
  const pace = quantile(
    [...times.slice(Math.floor(n / 2))].sort((a, b) => a - b),
    0.5,
  ) as number;
  const w = Math.max(2, Math.min(STEADY_WINDOW, Math.floor(n / 4)));
  const near = (x: number) => Math.abs(x - pace) <= STEADY_TOLERANCE * pace;
  for (let k = 0; k + w <= n; k++) {
    // the steady part starts at a step at the pace, followed by a window at the pace (one fast step is not enough)
    if (!near(times[k] as number)) continue;
    const m = quantile(
      [...times.slice(k, k + w)].sort((a, b) => a - b),
      0.5,
    ) as number;
    if (near(m)) return { start: k, settled: true };
  }
  return { start: Math.floor(n / 2), settled: false };
}

/**
 * The steps doctor's own work slowed: profiled ones, the step after a profiled one (the profiler stops at its start;
 * the trace was written in it before the probe wrote traces off the training thread: 0.6-1.8 s on the H200 runs), and
 * those whose record names the probe's work (`probeWork`).
 */
export function slowedByProbe(ordered: readonly StepRecord[]): Set<number> {
  const out = new Set<number>();
  for (const s of ordered) {
    if (s.profiled) {
      out.add(s.step);
      out.add(s.step + 1);
    }
    if (typeof s.probeWork === 'string') out.add(s.step);
  }
  return out;
}

/**
 * `epochStarts`: the steps at which a DataLoader's iterator was created (its `loader` records), to tell stalls at epoch
 * starts; empty when not known.
 */
export function stepStats(
  steps: readonly StepRecord[],
  gpuTimes: ReadonlyMap<number, number> = new Map(),
  epochStarts: readonly number[] = [],
  /** The window's `profile-end` said CUPTI was detached (the script's TEARDOWN_CUPTI=1): no slowdown to look for. */
  cuptiDetached = false,
  /** The steps the process counted (its end record): more than its records tell once the probe sampled its steady loop. */
  countedSteps = 0,
  /** The batches an epoch start holds up: one a DataLoader worker (epochStepsOf). */
  epochStartBatches = 1,
): StepStats {
  const ordered = withGraphDecodeSteps([...steps].sort((a, b) => a.step - b.step));
  const hostTimed = ordered.filter((s, i) => i > 0 && s.stepTimeS !== null && Number.isFinite(s.stepTimeS));
  const gpuTimed = ordered.filter((s, i) => i > 0 && gpuTimes.has(s.step));
  const timing: 'gpu' | 'host' = gpuTimed.length > 0 && gpuTimed.length * 2 >= hostTimed.length ? 'gpu' : 'host';
  const timed = timing === 'gpu' ? gpuTimed : hostTimed;
  const timeOf = (s: StepRecord) => (timing === 'gpu' ? (gpuTimes.get(s.step) as number) : (s.stepTimeS as number));
  const slowed = slowedByProbe(ordered);
  const plain = timed.filter((s) => !slowed.has(s.step));
  const candidates = plain.length > 0 ? plain : timed;
  // Only the GPU's own step times see CUPTI's cost reliably; a CPU run has no CUPTI.
  const afterWindow = timing === 'gpu' && !cuptiDetached ? cuptiSlowdownOf(plain, ordered, timeOf) : null;
  const steady = afterWindow ? { start: 0, settled: true } : steadyStart(candidates.map(timeOf));
  const measured = afterWindow ? afterWindow.before : candidates.slice(steady.start);
  const times = measured.map(timeOf).sort((a, b) => a - b);
  const hostTimes = measured
    .map((s) => s.stepTimeS)
    .filter((t): t is number => t !== null && Number.isFinite(t))
    .sort((a, b) => a - b);
  const total = times.reduce((a, b) => a + b, 0);
  const wait = measured.reduce((a, s) => a + s.dataWaitS, 0);
  const samplesKnown = measured.length > 0 && measured.every((s) => s.samples !== null);
  const samples = measured.reduce((a, s) => a + (s.samples ?? 0), 0);
  const tokensKnown = measured.length > 0 && measured.every((s) => typeof s.tokens === 'number');
  const tokens = measured.reduce((a, s) => a + (s.tokens ?? 0), 0);
  const last = ordered[ordered.length - 1];
  const sortedOf = (xs: number[]) => xs.sort((a, b) => a - b);
  const hostCpu = measured.map((s) => s.hostCpuS).filter((t): t is number => typeof t === 'number' && Number.isFinite(t));
  const backwardOf = (xs: readonly StepRecord[]) =>
    sortedOf(xs.map((s) => s.backwardS).filter((t): t is number => typeof t === 'number' && Number.isFinite(t) && t > 0));
  const backward = backwardOf(measured);
  // The window's steps but its first (the profiler starts in it) and its last (it stops there).
  const profiled = ordered.filter((s) => s.profiled);
  const backwardProfiled = backwardOf(profiled.slice(1, -1));
  const inFlightByStep = stepsInFlightOf(ordered);
  const inFlight = measured.map((s) => inFlightByStep.get(s.step)).filter((n): n is number => n !== undefined);
  const timedWaits = measured.map((s) => ({ step: s.step, timeS: timeOf(s), waitS: s.dataWaitS }));
  const epochSteps = epochStepsOf(timedWaits, epochStarts, ordered, epochStartBatches);
  return {
    steps: Math.max(ordered.length, last?.step ?? 0, countedSteps),
    measuredSteps: measured.length,
    meanS: times.length ? total / times.length : null,
    medianS: quantile(times, 0.5),
    p90S: quantile(times, 0.9),
    minS: times[0] ?? null,
    maxS: times[times.length - 1] ?? null,
    dataWaitShare: total > 0 ? Math.min(1, wait / total) : null,
    samplesPerS: samplesKnown && total > 0 ? samples / total : null,
    tokensPerS: tokensKnown && total > 0 ? tokens / total : null,
    samplesPerStep: samplesKnown ? quantile(sortedOf(measured.map((s) => s.samples as number)), 0.5) : null,
    tokensPerStep: tokensKnown ? quantile(sortedOf(measured.map((s) => s.tokens as number)), 0.5) : null,
    timing,
    hostMedianS: quantile(hostTimes, 0.5),
    seqLen: tokensKnown ? (measured[measured.length - 1]?.seqLen ?? null) : null,
    stepSource: last?.stepSource ?? null,
    steadyFromStep: measured[0]?.step ?? null,
    settled: steady.settled,
    medianHostCpuS: enoughCpuReadings(hostCpu.length, measured.length) ? quantile(sortedOf(hostCpu), 0.5) : null,
    medianBackwardS: backward.length >= MIN_BACKWARD_READINGS ? quantile(backward, 0.5) : null,
    medianBackwardProfiledS: backwardProfiled.length >= 2 ? quantile(backwardProfiled, 0.5) : null,
    medianStepsInFlight: timing === 'gpu' && inFlight.length > 0 ? quantile(sortedOf(inFlight), 0.5) : null,
    stalls: stallPatternOf(timedWaits, epochStarts),
    ...(epochSteps ? { epochSteps } : {}),
    decode: decodeStatsOf(measured, timeOf, last?.stepSource ?? null),
    slowedAfterWindow: afterWindow?.slowed ?? null,
  };
}

export interface StepTimeline {
  step: number[];
  stepTimeS: (number | null)[];
  dataWaitS: number[];
}

/** Enough points for any chart; keeps report.json small for runs of millions of steps. */
export const STEP_TIMELINE_MAX_POINTS = 5000;

/** Every step's time and DataLoader wait, thinned to every k-th step past STEP_TIMELINE_MAX_POINTS. */
export function stepTimelineOf(steps: readonly StepRecord[]): StepTimeline {
  const ordered = [...steps].sort((a, b) => a.step - b.step);
  const stride = Math.max(1, Math.ceil(ordered.length / STEP_TIMELINE_MAX_POINTS));
  const out: StepTimeline = { step: [], stepTimeS: [], dataWaitS: [] };
  for (let i = 0; i < ordered.length; i += stride) {
    const s = ordered[i] as StepRecord;
    out.step.push(s.step);
    out.stepTimeS.push(s.stepTimeS !== null && Number.isFinite(s.stepTimeS) ? s.stepTimeS : null);
    out.dataWaitS.push(s.dataWaitS);
  }
  return out;
}

/**
 * The batch of a run, read from its full batches: the mode over the steps of (batches per step, samples per step),
 * the batches being the DataLoader's or, where the model's input gave the samples, its forward calls (the probe's
 * `forwards`; a run recorded before it has no size then), never the last step's (a dataset whose size is not a
 * multiple of the batch ends each epoch on a partial batch: `FakeData(1000)` in batches of 64 ends on 40, which was
 * once read as "batch 40"). Steps with fewer samples than the
 * mode are the partial ones: the loader hands them out (`drop_last=False`). Batches whose size varies from step to step
 * (no size holds half the steps: bucketed or packed batches) are read by their median instead, and none is partial.
 */
export interface StepBatch {
  /** Samples per batch of the full batches (the modal step's samples over its batches, rounded); null when no step told. */
  microBatch: number | null;
  /** Batches (DataLoader batches, or the model's forward calls) per step in the modal step (gradient accumulation); 1 when none told. */
  gradAccum: number;
  /** Samples in the modal step. */
  samplesPerStep: number | null;
  /** Steps with a size that hold fewer samples than the modal step, and their distinct sizes (ascending). */
  partialSteps: number;
  partialSamples: number[];
  /** Steps between consecutive partial steps when they recur at one period (each epoch's last batch); null otherwise. */
  partialEvery: number | null;
  /** Steps with a size. */
  sizedSteps: number;
}

export function batchOfSteps(steps: readonly StepRecord[]): StepBatch {
  // The batches of a step: the DataLoader's, else the model's forward calls whose inputs were summed (model-input) in a
  // training step. Where forward calls are the steps (inference, generation), batching is the decode levers' (decode.ts).
  const batchesOf = (s: StepRecord) =>
    s.batches > 0 ? s.batches : s.batchSource === 'model-input' && s.stepSource !== 'forward' ? (s.forwards ?? 0) : 0;
  const sized = [...steps]
    .map((s) => ({ step: s.step, batches: batchesOf(s), samples: s.samples ?? 0 }))
    .filter((s) => s.samples > 0 && s.batches > 0)
    .sort((a, b) => a.step - b.step);
  const counts = new Map<string, { batches: number; samples: number; n: number }>();
  for (const s of sized) {
    const key = `${s.batches}|${s.samples}`;
    const e = counts.get(key) ?? { batches: s.batches, samples: s.samples, n: 0 };
    e.n++;
    counts.set(key, e);
  }
  // The most frequent (batches, samples); a tie goes to the larger step (a partial batch is never the larger).
  const mode = [...counts.values()].sort((a, b) => b.n - a.n || b.samples - a.samples)[0];
  const none = { partialSteps: 0, partialSamples: [], partialEvery: null, sizedSteps: sized.length };
  if (!mode) return { microBatch: null, gradAccum: 1, samplesPerStep: null, ...none };
  if (mode.n * 2 < sized.length) {
    const mid = (xs: number[]) =>
      quantile(
        xs.sort((a, b) => a - b),
        0.5,
      ) as number;
    const batches = mid(sized.map((s) => s.batches));
    const samples = mid(sized.map((s) => s.samples));
    return { microBatch: Math.round(samples / batches), gradAccum: Math.round(batches), samplesPerStep: samples, ...none };
  }
  const partial = sized.filter((s) => s.samples < mode.samples);
  const gaps = new Set(wholeSpacings(sized, partial));
  return {
    microBatch: Math.round(mode.samples / mode.batches),
    gradAccum: mode.batches,
    samplesPerStep: mode.samples,
    partialSteps: partial.length,
    partialSamples: [...new Set(partial.map((s) => s.samples))].sort((a, b) => a - b),
    partialEvery: gaps.size === 1 ? ([...gaps][0] as number) : null,
    sizedSteps: sized.length,
  };
}
