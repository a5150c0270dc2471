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
 *   written, the model search), so the statistics are the plain program's.
 * - A bounded list: the collector may keep only a sample of a long run's step records; steps are numbered from 1, so
 *   the count is the last step's number, and every figure is over the steps kept (a uniform sample estimates it).
 */
import { quantile } from '../util/stats.js';
import type { ProbeRecord, StepRecord, StepSource } from './records.js';

export interface StepStats {
  /** Steps the probe saw (the last step's number: exact also when only a sample of the records was kept). */
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
   * step, outside the profiler. Null when fewer than half the measured steps carry it (an older probe). Added in 0.2.
   */
  medianHostCpuS?: number | null;
  /**
   * Median number of steps the GPU was behind the host at the measured steps' ends (the step less the last step whose
   * GPU time the record had): 0, the GPU had done all the work issued; 1, it was still on this step; 2 or more, the
   * host ran ahead (it waits on the GPU: a full launch queue). Null without GPU timing. Added in 0.2.
   */
  medianStepsInFlight?: number | null;
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
      for (const pair of r.gpuStepTimes) if (Array.isArray(pair) && Number.isFinite(pair[0]) && Number.isFinite(pair[1]) && pair[1] >= 0) out.set(pair[0], pair[1]);
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

export function stepStats(steps: readonly StepRecord[], gpuTimes: ReadonlyMap<number, number> = new Map()): StepStats {
  const ordered = [...steps].sort((a, b) => a.step - b.step);
  const hostTimed = ordered.filter((s, i) => i > 0 && s.stepTimeS !== null && Number.isFinite(s.stepTimeS));
  const gpuTimed = ordered.filter((s, i) => i > 0 && gpuTimes.has(s.step));
  const timing: 'gpu' | 'host' = gpuTimed.length > 0 && gpuTimed.length * 2 >= hostTimed.length ? 'gpu' : 'host';
  const timed = timing === 'gpu' ? gpuTimed : hostTimed;
  const timeOf = (s: StepRecord) => (timing === 'gpu' ? (gpuTimes.get(s.step) as number) : (s.stepTimeS as number));
  const slowed = slowedByProbe(ordered);
  const plain = timed.filter((s) => !slowed.has(s.step));
  const candidates = plain.length > 0 ? plain : timed;
  const steady = steadyStart(candidates.map(timeOf));
  const measured = candidates.slice(steady.start);
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
  const inFlightByStep = stepsInFlightOf(ordered);
  const inFlight = measured.map((s) => inFlightByStep.get(s.step)).filter((n): n is number => n !== undefined);
  return {
    steps: Math.max(ordered.length, last?.step ?? 0),
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
    medianHostCpuS: hostCpu.length > 0 && hostCpu.length * 2 >= measured.length ? quantile(sortedOf(hostCpu), 0.5) : null,
    medianStepsInFlight: timing === 'gpu' && inFlight.length > 0 ? quantile(sortedOf(inFlight), 0.5) : null,
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
