/**
 * A plan that does not fit is an answer: why (what it needs at which phase against the budget) and what would
 * fit (the largest micro-batch, the single changes that bring it under the budget, or a layout that does). Pure.
 */
import { type Plan, type PlanRequest, fitsIn, maxMicroBatch, memorySavers, planFlags, searchPlans } from './plan.js';

export interface WouldFit {
  explanation: string;
  /** The largest micro-batch that fits the same set-up, 0 when none. */
  maxMicroBatch: number;
  /** Changes that each make it fit, as flags or words. */
  changes: string[];
}

export function whatWouldFit(req: PlanRequest, plan: Plan): WouldFit {
  const gib = (b: number) => `${(b / 1024 ** 3).toFixed(1)} GiB`;
  const explanation = `needs ${gib(plan.memory.peakAllocatedBytes)} at ${plan.memory.bindingPhase} but the budget is ${gib(plan.budgetBytes)}`;
  const mb = maxMicroBatch(req);
  const changes = memorySavers(req, plan, 6)
    .filter((sv) => fitsIn({ peakAllocatedBytes: plan.memory.peakAllocatedBytes - sv.savedBytes, fragmentationBytes: plan.memory.fragmentationBytes }, plan.budgetBytes))
    .map((sv) => `${sv.change} (-${gib(sv.savedBytes)})`);
  if (mb.microBatch === 0 && changes.length === 0) {
    const best = searchPlans(req, { maxMicroBatch: 1 }).plans[0];
    if (best) changes.push(`this layout fits: ${planFlags(best)}`);
  }
  return { explanation, maxMicroBatch: mb.microBatch, changes };
}
