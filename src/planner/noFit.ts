/**
 * A plan that does not fit is an answer: why (what it needs at which phase against the budget) and what would
 * fit (the largest micro-batch, the single changes that bring it under the budget, or a layout that does). Pure.
 */
import { type Plan, type PlanRequest, fitsIn, maxMicroBatch, memorySavers, planFlags, searchPlans } from './plan.js';

/** GPU counts tried when nothing fits the ones given (8 per node beyond a node). */
const MORE_GPUS = [2, 4, 8, 16, 32, 64];

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
    else {
      // Nothing fits these GPUs: the fewest more of the same card (within a node, then whole nodes) that would.
      const hw = req.hardware;
      const perNode = Math.max(hw.gpusPerNode, 8);
      for (const [gpus, nodes] of MORE_GPUS.map((n): [number, number] => (n <= perNode ? [n, 1] : [perNode, n / perNode]))) {
        if (gpus * nodes <= hw.gpusPerNode * hw.nodes) continue;
        const wider = searchPlans({ ...req, hardware: { ...hw, gpusPerNode: gpus, nodes } }, { maxMicroBatch: 1 }).plans[0];
        if (wider) {
          changes.push(`more GPUs: --gpus ${gpus}${nodes > 1 ? ` --nodes ${nodes}` : ''} ${planFlags(wider)} fits`);
          break;
        }
      }
    }
  }
  return { explanation, maxMicroBatch: mb.microBatch, changes };
}
