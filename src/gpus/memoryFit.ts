/**
 * Does it fit: the one rule every pillar decides GPU memory by (pure, a leaf). A peak fits a budget when the peak
 * times its slack, plus the hole fragmentation leaves for the largest blocks, is within the budget. Each caller keeps
 * its own figures (the planner's calibrated slack and fragmentation, tune's budget less what lies outside the
 * allocator, analyze's reserved bytes against the card with a share kept free); the rule and its inverse are here:
 *   - the planner's plans and doctor's what-ifs (planner/plan.ts fitsIn, run/memoryModel.ts);
 *   - tune's memory line (tune/predict.ts: the allocator's limit and the largest value within it);
 *   - analyze's under-used GPU (advice/rules/compute.ts: the batch multiple its memory allows).
 */

export interface FitTerms {
  /** The peak is multiplied by this before the comparison (the allocator's rounding and caching: 1.02 in the planner). */
  slack?: number;
  /** Bytes added to the peak after the slack (the hole fragmentation leaves for the largest blocks). */
  holeBytes?: number;
}

/** Whether `peakBytes` fits `budgetBytes`: peak x slack + hole <= budget. */
export function fitsMemory(peakBytes: number, budgetBytes: number, terms: FitTerms = {}): boolean {
  return peakBytes * (terms.slack ?? 1) + (terms.holeBytes ?? 0) <= budgetBytes;
}

/** The most a peak may be and still fit `budgetBytes` with `slack` (no hole): budget / slack. */
export function peakLimitBytes(budgetBytes: number, slack = 1): number {
  return budgetBytes / slack;
}

/**
 * The largest whole n whose peak `fixedBytes + perUnitBytes x n` stays within `limitBytes` (a peak limit: the slack
 * already taken off, peakLimitBytes); unbounded when the peak does not grow with n.
 */
export function largestWithinLimit(fixedBytes: number, perUnitBytes: number, limitBytes: number): number {
  if (perUnitBytes <= 0) return Number.POSITIVE_INFINITY;
  return Math.floor((limitBytes - fixedBytes) / perUnitBytes);
}
