/**
 * A model split by hand over GPUs (analyze's `model-parallel-bubble`) whose whole model fits on one GPU: data
 * parallelism over the same GPUs removes the bubble, so doctor, which knows the model's bytes from the probe, leads the
 * finding with it (pure). Whether it fits comes from the planner: the planner's memory model at 1/n of the batch per
 * GPU when the model has a block layout it reads (DDP, else FSDP2), else a bound from the probe's bytes (every GPU
 * holding the whole model's weights, gradients, DDP's gradient buckets and optimizer state, plus the largest peak the
 * split measured on its own GPU, which holds the activations of its share of the layers for the whole batch: at 1/n of
 * the batch the whole model's activations are about that much when the stages are balanced), against the planner's
 * budget and fit rule. The fit goes to the rule as its context; the rule (advice/rules/modelParallel.ts) computes the
 * data-parallel step and decides whether it leads.
 */
import { modelParallelFigures } from '../advice/rules/modelParallel.js';
import type { DataParallelAlternative } from '../advice/rules/rule.js';
import { fitsBudget } from '../planner/fromRun.js';
import { budgetBytes, evaluatePlan, ofBudgetText } from '../planner/plan.js';
import type { Hardware, Parallelism } from '../planner/setup.js';
import type { ModelDescription } from '../planner/model.js';
import type { ModelRecord } from '../run/records.js';
import { modelBytes } from '../run/setup.js';
import type { TraceMetrics } from '../trace/metrics/types.js';
import type { RunSetup } from '../run/setup.js';
import { trainingSetupOf } from './runSetup.js';

export interface DataParallelFit {
  layout: 'ddp' | 'fsdp';
  gpus: number;
  /** Predicted peak allocated bytes per GPU, and the budget it fits in. */
  peakBytes: number;
  budgetBytes: number;
  /** `planner` (the planner's memory model of the model's config) or `probe-bound` (the probe's bytes, an upper bound). */
  basis: 'planner' | 'probe-bound';
}

/** DDP if it fits on each GPU, else FSDP2 if sharded it fits, else null. */
export function dataParallelFit(
  gpus: number,
  model: ModelRecord,
  setup: RunSetup,
  hw: Hardware,
  planModel: ModelDescription | null,
): DataParallelFit | null {
  const budget = budgetBytes(hw, gpus);
  const s = planModel && setup.microBatch !== null && setup.microBatch >= gpus ? trainingSetupOf(setup, Math.floor(setup.microBatch / gpus)) : null;
  if (planModel && s !== null) {
    for (const dp of ['ddp', 'fsdp'] as const) {
      const par: Parallelism = { dp, dpSize: gpus, tp: 1, pp: 1, reshardAfterForward: true, cpuOffload: false };
      const plan = evaluatePlan({ model: planModel, hardware: hw, setup: s, parallelism: par });
      if (plan.fits) return { layout: dp, gpus, peakBytes: plan.memory.peakAllocatedBytes, budgetBytes: plan.budgetBytes, basis: 'planner' };
    }
    return null;
  }
  const measured = setup.measuredPeakAllocatedBytes;
  if (measured === null) return null;
  const b = modelBytes(model);
  // Weights, gradients, DDP's buckets (a second copy of the gradients) and the optimizer state, whole on every GPU.
  const whole = b.weightBytes + 2 * b.trainableBytes + b.optimizerStateBytes;
  const ddp = whole + b.buffersBytes + measured;
  if (fitsBudget(ddp, budget)) return { layout: 'ddp', gpus, peakBytes: ddp, budgetBytes: budget, basis: 'probe-bound' };
  const fsdp = whole / gpus + b.buffersBytes + measured;
  if (fitsBudget(fsdp, budget)) return { layout: 'fsdp', gpus, peakBytes: fsdp, budgetBytes: budget, basis: 'probe-bound' };
  return null;
}

/**
 * The data-parallel alternative to a split model, as the rule's context (advice/rules/rule.ts DataParallelAlternative):
 * null when the trace shows no split, or the model, set-up or hardware are not known, or nothing fits.
 */
export function dataParallelAlternativeOf(
  metrics: TraceMetrics,
  model: ModelRecord | null,
  setup: RunSetup | null,
  hw: Hardware | null,
  planModel: ModelDescription | null,
): DataParallelAlternative | null {
  const fig = modelParallelFigures(metrics);
  if (!fig || !model || !setup || !hw) return null;
  const fit = dataParallelFit(fig.devices.length, model, setup, hw, planModel);
  if (!fit) return null;
  return {
    layout: fit.layout,
    peakBytes: fit.peakBytes,
    basis: fit.basis,
    budgetText: ofBudgetText(fit.budgetBytes),
    gradBytes: modelBytes(model).trainableBytes,
    linkBytesPerS: hw.gpu.intraNodeBandwidth,
  };
}
