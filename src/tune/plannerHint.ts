/**
 * The planner's help to a one-trial prediction (pure): when the model carries a Hugging Face config the planner
 * understands, its memory model gives the shape of the line (fixed part and bytes per sample); the measured peak of
 * the trial scales it. Used only when the value is the per-rank batch (samples per step = value) and the sequence
 * length is known.
 */
import { describeModel } from '../planner/modelSummary.js';
import { predictMemory } from '../planner/memory.js';
import type { ModelDescription } from '../planner/model.js';
import type { Checkpointing, Parallelism } from '../planner/setup.js';
import { inferCheckpointing, inferCompiled, inferOptimizer, inferPrecision } from '../run/setup.js';
import type { DeviceBudget, MemoryLine } from './line.js';
import type { TrialSummary } from './trial.js';

/** The planner's prediction at the trial's value may differ from the measured peak by this much for a set-up to count. */
export const PLANNER_MATCH = 0.06;

/**
 * The set-up from the one set-up inference of run/setup.ts (optimizer kind, precision, compiled, checkpointing); where
 * the records leave the precision open (fp32 weights, no autocast record), each candidate with the checkpointing
 * inferred for it, kept when its predicted peak at the trial's value is within PLANNER_MATCH of the measurement; of
 * these the one predicting the smallest largest value (the safe side). Null when none matches or the planner cannot
 * describe the run.
 */
export function plannerLine(t: TrialSummary, budget: DeviceBudget | null): MemoryLine | null {
  const facts = t.model;
  const peak = t.peakAllocatedBytes;
  if (!budget || !facts?.hfConfig || t.seqLen === null || t.samplesPerStep !== t.value || peak === null || t.value <= 0) return null;
  let model: ModelDescription;
  try {
    model = describeModel(facts.hfConfig);
  } catch {
    return null;
  }
  const optimizer = inferOptimizer(facts.optimizerClass, facts.optimizerStateBytes).value;
  const precisions = inferPrecision({ mainDtype: facts.mainDtype }, facts.autocastDtype, null).candidates;
  const compiled = inferCompiled({ compiled: facts.compiled, compiledEvidence: null }, null);
  if (optimizer === null || precisions.length === 0) return null;
  const world = Math.max(1, t.worldSize);
  const par: Parallelism = { dp: world > 1 ? 'ddp' : 'none', dpSize: world, tp: 1, pp: 1, reshardAfterForward: true, cpuOffload: false };
  const seq = t.seqLen;
  let best: (MemoryLine & { predicted: number }) | null = null;
  for (const precision of precisions) {
    const predict = (b: number, checkpointing: Checkpointing) =>
      predictMemory(model, { microBatch: b, seq, precision, optimizer, checkpointing, gradAccum: 1, mode: 'train' }, par).peakAllocatedBytes;
    const checkpointing = inferCheckpointing(peak, (c) => predict(t.value, c), compiled).value;
    const at = (b: number) => predict(b, checkpointing);
    const p1 = at(t.value);
    if (!(p1 > 0) || Math.abs(p1 - peak) / peak > PLANNER_MATCH) continue;
    // The slope where the batch's activations bind (well above the trial's value), scaled to the measurement.
    const [bA, bB] = [4 * t.value, 8 * t.value];
    const slope = (at(bB) - at(bA)) / (bB - bA);
    if (!(slope > 0)) continue;
    const k = peak / p1;
    const line: MemoryLine = {
      fixedBytes: k * (at(bB) - slope * bB),
      perValueBytes: k * slope,
      source: 'one-trial+planner',
      values: [t.value],
      note: `${precision}, checkpointing ${checkpointing}, seq ${seq}`,
    };
    const predicted = (budget.allocatorLimitBytes - line.fixedBytes) / line.perValueBytes;
    if (best === null || predicted < best.predicted) best = { ...line, predicted };
    }
  if (best === null) return null;
  const { predicted: _p, ...line } = best;
  return line;
}
