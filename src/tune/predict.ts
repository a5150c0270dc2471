/**
 * The search of `gpuwise tune` (pure): peak memory is close to affine in the batch, peak(b) = fixed + perValue x b,
 * so the trials measured so far predict the largest value that fits, and each next trial verifies a prediction
 * instead of bisecting blindly. Definitions and the evidence for the constants: docs/tune.md.
 */
import { fmtInt } from '../util/format.js';
import { largestWithinLimit, peakLimitBytes } from '../gpus/memoryFit.js';
import { CALIBRATION } from '../planner/calibration.js';
import { type MemoryModel, perSampleMemoryModel } from '../run/memoryModel.js';
import { residentBytes } from '../run/setup.js';
import { plannerLine } from './plannerHint.js';
import type { DeviceBudget, MemoryLine } from './line.js';
import type { TrialSummary } from './trial.js';
import { MiB } from '../util/units.js';

export type { DeviceBudget, MemoryLine } from './line.js';


/** Every constant of the search in one place. */
export const TUNE = {
  /**
   * At the limit the allocator needs a little more than the bytes allocated (block rounding, fragmentation it cannot
   * release). The planner's fit slack, checked against the largest batch measured under a memory cap.
   */
  allocatorSlack: CALIBRATION.fitSlack,
  /**
   * Aim this far under the line's prediction: the slack is the main unknown (a fragmentation of 1.00 to 1.08 x the
   * allocated peak still lands within 10% of the true limit and under it; test/tune/search.test.ts).
   */
  aim: 0.94,
  /** When the largest value that fits is already within 10% of the prediction, a failure costs nothing: aim closer. */
  aimBold: 1,
  /** After a value ran out of memory above the line's prediction, try this share of it. */
  underOom: 0.9,
  /** No further trial when it could only raise the verified value by less than this share. */
  stopWithin: 0.03,
  /** Memory outside the allocator when NVML cannot tell: the CUDA context (planner calibration). */
  cudaContextBytes: CALIBRATION.cudaContextBytes,
  ncclBufferBytes: CALIBRATION.ncclBufferBytes,
  /** A measured non-allocator figure below this is a sample taken before the peak: ignored. */
  minNonAllocatorBytes: 256 * MiB,
  /** Goldilocks: the smallest value whose throughput is at least this share of the best measured. */
  goldilocksShare: 0.95,
} as const;

export interface SearchSpace {
  /** The parameter's name (`batch_size`). */
  name: string;
  lo: number;
  hi: number;
  /** First value tried (default lo). */
  start: number;
  /** Values tried and recommended are multiples of this (1 = any integer). */
  multipleOf: number;
  /** Trials of the search (the --curve points come on top). */
  maxTrials: number;
}

const isMeasured = (t: TrialSummary) => t.outcome === 'ok' && t.peakAllocatedBytes !== null && t.peakAllocatedBytes > 0;

export function deviceBudget(trials: TrialSummary[]): DeviceBudget | null {
  const totals = trials.map((t) => t.deviceTotalBytes).filter((x): x is number => x !== null && x > 0);
  if (totals.length === 0) return null;
  const totalBytes = Math.min(...totals);
  const measured = trials.map((t) => t.nonAllocatorBytes).filter((x): x is number => x !== null && x >= TUNE.minNonAllocatorBytes);
  const world = Math.max(1, ...trials.map((t) => t.worldSize));
  const nonAllocatorBytes = measured.length ? Math.max(...measured) : TUNE.cudaContextBytes + (world > 1 ? TUNE.ncclBufferBytes : 0);
  return {
    totalBytes,
    nonAllocatorBytes,
    nonAllocatorSource: measured.length ? 'nvml' : 'calibration',
    allocatorLimitBytes: peakLimitBytes(totalBytes - nonAllocatorBytes, TUNE.allocatorSlack),
  };
}

/**
 * The fixed part known from the model record alone: the resident bytes of run/setup.ts (weights, buffers, optimizer
 * state, cuBLAS workspace; the same definition as doctor's per-sample what-ifs), a lower bound of the line's intercept,
 * so the slope it gives errs high (safe).
 */
export function modelRecordLine(t: TrialSummary): MemoryLine | null {
  if (!isMeasured(t) || t.model === null || t.value <= 0) return null;
  const m = t.model;
  const fixed = residentBytes({ weightBytes: m.weightBytes, buffersBytes: 0, optimizerStateBytes: m.optimizerStateBytes });
  const peak = t.peakAllocatedBytes as number;
  if (fixed >= peak) return null;
  return { fixedBytes: fixed, perValueBytes: (peak - fixed) / t.value, source: 'one-trial+model', values: [t.value], note: null };
}

/**
 * The memory line from the trials: through the two largest values measured (closest to the limit; a small value's
 * peak may be the optimizer's step rather than the batch's), else from one trial with the planner's or the model
 * record's fixed part. Trials whose peak came from the optimizer's first step are used only when nothing else is.
 */
export function fitMemoryLine(trials: TrialSummary[], budget: DeviceBudget | null): MemoryLine | null {
  const all = trials.filter(isMeasured);
  const onBatch = all.filter((t) => !t.peakFromFirstStep);
  const byValue = new Map<number, TrialSummary>();
  for (const t of (onBatch.length ? onBatch : all).sort((a, b) => a.value - b.value)) byValue.set(t.value, t);
  const pts = [...byValue.values()];
  if (pts.length >= 2) {
    const a = pts[pts.length - 2] as TrialSummary;
    const b = pts[pts.length - 1] as TrialSummary;
    const slope = ((b.peakAllocatedBytes as number) - (a.peakAllocatedBytes as number)) / (b.value - a.value);
    if (slope > 0)
      return {
        fixedBytes: (b.peakAllocatedBytes as number) - slope * b.value,
        perValueBytes: slope,
        source: 'two-trials',
        values: [a.value, b.value],
        note: null,
      };
  }
  const last = pts[pts.length - 1];
  if (!last) return null;
  return (
    plannerLine(last, budget) ??
    modelRecordLine(last) ?? {
      fixedBytes: 0,
      perValueBytes: (last.peakAllocatedBytes as number) / last.value,
      source: 'one-trial',
      values: [last.value],
      note: 'no model record: fixed part taken as 0',
    }
  );
}

/**
 * The line as the run model's MemoryModel (run/memoryModel.ts): the per-sample line doctor's what-ifs use, fitting the
 * allocator's share of the device (total - memory outside the allocator) by the planner's 2% rule, which is the same
 * test as peak <= allocatorLimitBytes.
 */
export function lineMemoryModel(line: MemoryLine, budget: DeviceBudget): MemoryModel {
  return perSampleMemoryModel(
    { fixedBytes: line.fixedBytes, perSampleBytes: line.perValueBytes },
    budget.totalBytes - budget.nonAllocatorBytes,
    `tune's line (${line.source}): ${line.fixedBytes.toFixed(0)} B + ${line.perValueBytes.toFixed(0)} B per value`,
  );
}

/** Largest value whose predicted peak stays within `limitBytes` (Infinity when memory does not grow with the value). */
export function largestWithin(line: MemoryLine, limitBytes: number): number {
  return largestWithinLimit(line.fixedBytes, line.perValueBytes, limitBytes);
}

export type Decision = { next: number; reason: string; predicted: number | null } | { next: null; reason: string };

const roundDown = (v: number, m: number) => Math.floor(v / m) * m;

function bounds(trials: TrialSummary[]): { maxOk: number | null; minOom: number | null } {
  const ok = trials.filter((t) => t.outcome === 'ok').map((t) => t.value);
  const oom = trials.filter((t) => t.outcome === 'oom').map((t) => t.value);
  return { maxOk: ok.length ? Math.max(...ok) : null, minOom: oom.length ? Math.min(...oom) : null };
}

/** The first value to try: `start` rounded to the multiple, within [lo, hi]. */
export function firstValue(space: SearchSpace): number {
  const m = space.multipleOf;
  const v = roundDown(Math.min(space.hi, Math.max(space.lo, space.start)), m);
  if (v >= space.lo) return v;
  const up = Math.ceil(space.lo / m) * m;
  return up <= space.hi ? up : space.lo;
}

/**
 * What to try next, or why to stop. Memory figures: aim under the line's prediction of the largest value that fits
 * (never at or above a value that ran out of memory). Without them (no CUDA, no probe): bisect between the largest
 * value that ran and the smallest that did not (or hi), halfway in log scale.
 */
export function decideNext(space: SearchSpace, trials: TrialSummary[], maxTrials = space.maxTrials): Decision {
  if (trials.length === 0) return { next: firstValue(space), reason: 'first trial', predicted: null };
  const last = trials[trials.length - 1] as TrialSummary;
  if (last.outcome === 'failed' || last.outcome === 'timeout')
    return {
      next: null,
      reason: `trial at ${space.name}=${last.value} ${last.outcome === 'timeout' ? 'timed out' : 'failed'}, not for lack of memory: the search stops`,
    };
  if (last.outcome === 'interrupted') return { next: null, reason: 'interrupted' };
  if (trials.length >= maxTrials) return { next: null, reason: `${maxTrials} trials used (--max-trials)` };
  const m = space.multipleOf;
  const { maxOk, minOom } = bounds(trials);
  if (maxOk === null) {
    const smallest = Math.min(...trials.map((t) => t.value));
    if (smallest <= space.lo) return { next: null, reason: `even ${space.name}=${space.lo} runs out of memory` };
    return { next: space.lo, reason: `${space.name}=${smallest} ran out of memory: trying the lower end`, predicted: null };
  }
  if (maxOk >= space.hi) return { next: null, reason: `the upper end ${space.name}=${space.hi} fits` };
  const upper = Math.min(space.hi, minOom !== null ? minOom - 1 : space.hi);
  const upperM = roundDown(upper, m);
  if (upperM <= maxOk) return { next: null, reason: `${space.name}=${maxOk} fits and ${minOom} does not: the limit is found` };

  const budget = deviceBudget(trials);
  const line = budget ? fitMemoryLine(trials, budget) : null;
  if (budget && line) {
    const predicted = largestWithin(line, budget.allocatorLimitBytes);
    // Bold when what already fits is within 10% of the prediction (a failure then costs nothing), else safe.
    const aim = Number.isFinite(predicted) && maxOk >= 0.9 * predicted ? TUNE.aimBold : TUNE.aim;
    let c = Number.isFinite(predicted) ? Math.floor(predicted * aim) : upper;
    let why = Number.isFinite(predicted)
      ? `the ${line.source === 'two-trials' ? 'line through two trials' : 'first trial'} predicts ${predicted}; aiming ${Math.round((1 - aim) * 100)}% under`
      : 'memory does not grow with the value: trying the upper end';
    if (minOom !== null && c >= minOom) {
      // The line is too optimistic: it says a value that ran out of memory fits. Just under that value.
      c = Math.floor(minOom * TUNE.underOom);
      why = `the line predicts ${predicted} but ${minOom} ran out of memory: ${Math.round(TUNE.underOom * 100)}% of ${minOom}`;
    }
    c = roundDown(Math.min(c, upper), m);
    if (c <= maxOk) {
      // Small values: one step is worth several percent, and the line (with its slack) may be a step short.
      const step = maxOk + m;
      if (predicted >= maxOk && step <= upper && m / maxOk >= TUNE.stopWithin)
        return { next: step, reason: `the line predicts ${predicted}: one step above ${maxOk}`, predicted };
      if (line.source === 'two-trials' || minOom !== null)
        return { next: null, reason: `the prediction (${predicted}) is not above ${space.name}=${maxOk}, which fits` };
      // A one-trial line is conservative: step past the verified value once to measure the slope.
      c = roundDown(Math.min(upper, Math.max(maxOk + m, Math.floor(maxOk * 1.25))), m);
      why = 'the first trial is already at the (conservative) predicted limit: 25% above it, to measure the slope';
      if (c <= maxOk) return { next: null, reason: 'no value left between the bounds' };
    }
    if (line.source === 'two-trials' && (c - maxOk) / maxOk < TUNE.stopWithin)
      return {
        next: null,
        reason: `the prediction (${predicted}) is within ${TUNE.stopWithin * 100}% of ${space.name}=${maxOk}, which fits`,
      };
    return { next: c, reason: why, predicted: Number.isFinite(predicted) ? predicted : null };
  }
  // No memory figures: halfway in log scale between what fits and what does not (or hi).
  const top = minOom ?? space.hi + 1;
  let c = roundDown(Math.floor(Math.sqrt(maxOk * top)), m);
  if (c <= maxOk) c = maxOk + m;
  if (c > upper) return { next: null, reason: `no ${m > 1 ? `multiple of ${m} ` : 'value '}left between ${maxOk} (fits) and ${top}` };
  return {
    next: c,
    reason: `no memory figures: bisecting between ${maxOk} and ${minOom ?? `${space.hi} (hi)`} in log scale`,
    predicted: null,
  };
}

export interface TuneResult {
  /** The largest value that ran without running out of memory (verified by a trial). */
  largestOk: number | null;
  /** The smallest value that ran out of memory. */
  smallestOom: number | null;
  /**
   * Why largestOk is the largest that fits (issue 47): `oom` (a value above it ran out of memory), `limit` (it is the
   * upper limit, or no multiple is left above it); null when nothing above it was tried (--max-trials, a prediction's
   * stop): then it is only the largest tried.
   */
  verified: 'oom' | 'limit' | null;
  /** The line's largest value that fits (no margin), within [largestOk, smallestOom). */
  predictedLargest: number | null;
  /**
   * The largest value at or under largestOk whose predicted peak, as nvidia-smi would show it (allocated x the measured
   * reserved/allocated ratio + memory outside the allocator), leaves `margin` of the GPU free; without memory figures,
   * none (null): no memory figures to apply the margin to (issue 47).
   */
  recommended: number | null;
  recommendedPeakBytes: number | null;
  /** The smallest value whose throughput is within 5% of the best measured (the curve's knee). */
  goldilocks: number | null;
  goldilocksReason: string;
  line: MemoryLine | null;
  budget: DeviceBudget | null;
  /** reserved / allocated at the largest measured value (at least 1). */
  reservedRatio: number | null;
}

/** Throughput of a trial, in the unit the trials share: samples/s when every measured trial has it, else tokens/s. */
export function throughputOf(trials: TrialSummary[]): { unit: 'samples/s' | 'tokens/s' | null; of: (t: TrialSummary) => number | null } {
  const ok = trials.filter((t) => t.outcome === 'ok');
  if (ok.length && ok.every((t) => t.samplesPerS !== null)) return { unit: 'samples/s', of: (t) => t.samplesPerS };
  if (ok.length && ok.every((t) => t.tokensPerS !== null)) return { unit: 'tokens/s', of: (t) => t.tokensPerS };
  return { unit: null, of: () => null };
}

export function goldilocks(trials: TrialSummary[]): { value: number | null; reason: string } {
  const { unit, of } = throughputOf(trials);
  const ok = trials.filter((t) => t.outcome === 'ok' && of(t) !== null).sort((a, b) => a.value - b.value);
  if (unit === null || ok.length === 0)
    return { value: null, reason: 'no throughput measured (the probe could not count samples or tokens per step)' };
  const best = ok.reduce((b, t) => ((of(t) as number) > (of(b) as number) ? t : b));
  const knee = ok.find((t) => (of(t) as number) >= TUNE.goldilocksShare * (of(best) as number)) as TrialSummary;
  const share = (of(knee) as number) / (of(best) as number);
  return {
    value: knee.value,
    reason:
      knee.value === best.value
        ? `the best measured throughput, ${fmtRate(of(best) as number)} ${unit}`
        : `${Math.round(share * 100)}% of the best measured throughput (${fmtRate(of(best) as number)} ${unit} at ${best.value}) with a smaller batch`,
  };
}

function fmtRate(x: number): string {
  return x >= 100 ? fmtInt(x) : x.toPrecision(3);
}

export function conclude(space: SearchSpace, trials: TrialSummary[], margin: number): TuneResult {
  const { maxOk, minOom } = bounds(trials);
  const budget = deviceBudget(trials);
  const line = budget ? fitMemoryLine(trials, budget) : null;
  const measured = trials.filter((t) => isMeasured(t) && t.peakReservedBytes !== null).sort((a, b) => b.value - a.value)[0];
  const reservedRatio = measured ? Math.max(1, (measured.peakReservedBytes as number) / (measured.peakAllocatedBytes as number)) : null;
  let predictedLargest: number | null = null;
  let recommended: number | null = null;
  let recommendedPeakBytes: number | null = null;
  const m = space.multipleOf;
  if (line && budget && maxOk !== null) {
    const p = largestWithin(line, budget.allocatorLimitBytes);
    const cap = minOom !== null ? minOom - 1 : Number.POSITIVE_INFINITY;
    predictedLargest = Number.isFinite(p) ? Math.max(maxOk, Math.min(p, cap)) : null;
    const rr = reservedRatio ?? 1;
    // Device use = allocated x reserved/allocated + outside the allocator <= (1 - margin) x total.
    const allowedAllocated = ((1 - margin) * budget.totalBytes - budget.nonAllocatorBytes) / rr;
    const v = roundDown(Math.min(maxOk, largestWithin(line, allowedAllocated)), m);
    if (v >= space.lo) {
      recommended = v;
      recommendedPeakBytes = lineMemoryModel(line, budget).peak(v) * rr + budget.nonAllocatorBytes;
    }
  }
  const g = goldilocks(trials);
  return {
    largestOk: maxOk,
    smallestOom: minOom,
    verified: maxOk === null ? null : minOom !== null && minOom > maxOk ? 'oom' : maxOk + m > space.hi ? 'limit' : null,
    predictedLargest,
    recommended,
    recommendedPeakBytes,
    goldilocks: g.value,
    goldilocksReason: g.reason,
    line,
    budget,
    reservedRatio,
  };
}

/** Extra values for the throughput curve: `n` values spread in log scale over [lo, largestOk], not yet tried. */
export function curveValues(space: SearchSpace, trials: TrialSummary[], n: number): number[] {
  const { maxOk } = bounds(trials);
  if (maxOk === null || n <= 0) return [];
  const tried = new Set(trials.map((t) => t.value));
  const lo = Math.max(space.lo, space.multipleOf);
  const out: number[] = [];
  for (let i = 1; i <= n; i++) {
    const x = Math.exp(Math.log(lo) + ((Math.log(maxOk) - Math.log(lo)) * i) / (n + 1));
    const v = Math.round(x / space.multipleOf) * space.multipleOf;
    if (v >= space.lo && v < maxOk && !tried.has(v) && !out.includes(v)) out.push(v);
  }
  return out;
}
