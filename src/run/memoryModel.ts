/**
 * One interface for "what peak would this run reach at another batch" (pure), with two implementations:
 * - the planner calibrated on the run (planner/fromRun.ts): for models whose block layout the planner reads;
 * - the per-sample line: peak = resident bytes + bytes per sample x batch, from the run's one measured peak (any
 *   module; run/setup.ts residentBytes says what is resident).
 * doctor's what-ifs are specs evaluated against a MemoryModel, and tune's memory line is the same per-sample line.
 */
import { fitsMemory } from '../gpus/memoryFit.js';
import { calibratedPeakBytes, type PlannerCalibration, type WhatIfBasis } from '../planner/fromRun.js';
import { type Plan, plannerFitTerms } from '../planner/plan.js';

export interface MemoryModel {
  basis: WhatIfBasis;
  /**
   * Predicted peak allocated bytes per GPU at this per-GPU micro-batch, the run's set-up otherwise (`gradAccum`: with
   * that many accumulated micro-batches; the per-sample line ignores it).
   */
  peak(batch: number, gradAccum?: number): number;
  /** Whether that peak fits the budget by the planner's fit rule (2% slack, plus fragmentation where modelled). */
  fits(batch: number, gradAccum?: number): boolean;
  /** Bytes the allocator may use (card minus CUDA context [and NCCL buffers]). */
  budgetBytes: number;
  /** How the model was built, in words and numbers. */
  describe: string;
}

/** Largest micro-batches a what-if considers. */
export const BATCH_LIMIT = 1 << 16;

/** The planner, calibrated on the run: `planAt(b, accum)` evaluates the run's set-up at micro-batch b. */
export function plannerMemoryModel(
  cal: PlannerCalibration,
  planAt: (batch: number, gradAccum?: number) => Plan,
  describe: string,
): MemoryModel {
  const cache = new Map<string, { peak: number; fits: boolean }>();
  const at = (b: number, accum?: number) => {
    const key = `${b}/${accum ?? ''}`;
    let e = cache.get(key);
    if (!e) {
      const plan = planAt(b, accum);
      const peak = calibratedPeakBytes(cal, plan);
      e = { peak, fits: fitsMemory(peak, plan.budgetBytes, plannerFitTerms(plan.memory.fragmentationBytes)) };
      cache.set(key, e);
    }
    return e;
  };
  return {
    basis: cal.basis,
    peak: (b, accum) => at(b, accum).peak,
    fits: (b, accum) => at(b, accum).fits,
    budgetBytes: planAt(1).budgetBytes,
    describe,
  };
}

export interface PerSampleLine {
  /** Resident bytes whatever the batch. */
  fixedBytes: number;
  perSampleBytes: number;
}

/** peak(b) = fixed + perSample x b; fits by the planner's fit rule (no fragmentation term: not modelled). */
export function perSampleMemoryModel(line: PerSampleLine, budgetBytes: number, describe: string): MemoryModel {
  const peak = (b: number) => line.fixedBytes + line.perSampleBytes * b;
  return { basis: 'measured-per-sample', peak, fits: (b) => fitsMemory(peak(b), budgetBytes, plannerFitTerms()), budgetBytes, describe };
}

/** The per-sample line through one measured peak; null when the peak is not above the resident bytes. */
export function perSampleLineFrom(residentBytes: number, measuredPeakBytes: number, batch: number): PerSampleLine | null {
  if (!(batch > 0) || !(measuredPeakBytes > residentBytes)) return null;
  return { fixedBytes: residentBytes, perSampleBytes: (measuredPeakBytes - residentBytes) / batch };
}

/** Largest positive batch that fits (0 when 1 does not), for a model whose peak grows with the batch. */
export function largestBatch(model: Pick<MemoryModel, 'fits'>, limit = BATCH_LIMIT): number {
  let lo = 0;
  let hi = 1;
  while (hi <= limit && model.fits(hi)) {
    lo = hi;
    hi *= 2;
  }
  if (hi > limit) return lo;
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (model.fits(mid)) lo = mid;
    else hi = mid;
  }
  return lo;
}
