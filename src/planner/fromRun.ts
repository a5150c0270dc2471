/**
 * The planner calibrated on a measured run (doctor's what-ifs, later `tune`). Two ways to predict the peak of
 * `torch.cuda.max_memory_allocated()` at another set-up from one measured step:
 *
 *  - planner-calibrated (the model has a block layout the planner reads): run the planner at the measured set-up,
 *    keep its batch-independent part R (weights, master weights, optimizer state, buckets, workspaces: exact from
 *    the parameter count) and scale the rest by s = (measured - R) / (predicted - R). A what-if's calibrated peak
 *    is R' + s (P' - R'), with R' and P' the planner's figures for the what-if. The error the planner makes is
 *    thus assumed to lie in what grows with the batch (activations, loss buffers), which the committed
 *    measurements support: calibrated at the smallest measured batch, this predicts the other batches of the
 *    same model within 1.5% (median 0.6%; test/doctor/whatIfs.test.ts), against 1.5% / 9.8% uncalibrated.
 *    When the batch-dependent part is under 5% of either figure, the difference is added as an offset instead.
 *  - measured-per-sample (any nn.Module): peak = resident + perSample x micro-batch, from the one measured peak
 *    (run/memoryModel.ts, with the resident bytes of run/setup.ts).
 *
 * Step time: the planner's prediction plus the run's measured excess (measured - predicted at the run's own
 * set-up): time the model does not know (Python, data loading, launches) is taken as a fixed cost per step.
 * When the planner over-predicts the run, its predictions are scaled by measured / predicted instead (a fixed
 * negative offset could make small steps take no time).
 */
import { evaluatePlan, fitsIn, type Plan, type PlanRequest } from './plan.js';
import { fmtGiB } from '../util/format.js';

/** Where a what-if's numbers come from. `planner`: the planner alone (no measured peak to calibrate on). */
export type WhatIfBasis = 'planner-calibrated' | 'planner' | 'measured-per-sample';

/** Below this share of the peak, the batch-dependent part is too small to scale: an offset is used. */
const MIN_VARIABLE_SHARE = 0.05;

export interface PlannerCalibration {
  basis: 'planner-calibrated' | 'planner';
  /** The planner's peak allocated bytes at the run's own set-up. */
  predictedPeakBytes: number;
  /** What the run measured (equal to the prediction for the `planner` basis). */
  measuredPeakBytes: number;
  /** (predicted - measured) / measured: the planner's own error on this run. */
  errorFraction: number;
  /** The planner's batch-independent bytes at the run's set-up. */
  residentBytes: number;
  /** Factor applied to the batch-dependent part (null: an offset is used). */
  variableScale: number | null;
  /** Bytes added to every prediction when no scale is used. */
  offsetBytes: number;
  /** One line: how predictions are corrected. */
  method: string;
  predictedStepS: number | null;
  measuredStepS: number | null;
  stepErrorFraction: number | null;
  /** Seconds added to each predicted step (the run's time the planner does not model), or null when scaled. */
  stepOffsetS: number | null;
  /** Factor on predicted step times when the planner over-predicted the run. */
  stepScale: number | null;
}

/** True when the GPU description has the rates the time model needs (an unknown GPU has only its memory). */
export function hasRates(req: PlanRequest): boolean {
  return req.hardware.gpu.bf16Tflops > 0 || req.hardware.gpu.fp32Tflops > 0;
}

/** Calibrates the planner on one measured step (null measurements give the uncalibrated `planner` basis). */
export function calibratePlanner(req: PlanRequest, measuredPeakBytes: number | null, measuredStepS: number | null): PlannerCalibration {
  const plan = evaluatePlan(req);
  const pred = plan.memory.peakAllocatedBytes;
  const resident = Math.min(plan.memory.residentBytes, pred);
  const measured = measuredPeakBytes ?? pred;
  const varPred = pred - resident;
  const varMeas = measured - resident;
  const scalable = varPred > MIN_VARIABLE_SHARE * pred && varMeas > MIN_VARIABLE_SHARE * measured;
  const variableScale = measuredPeakBytes === null ? 1 : scalable ? varMeas / varPred : null;
  const offsetBytes = variableScale === null ? measured - pred : 0;
  const predictedStepS = hasRates(req) ? plan.time.stepTimeMs / 1000 : null;
  let stepOffsetS: number | null = null;
  let stepScale: number | null = null;
  if (predictedStepS !== null && measuredStepS !== null && predictedStepS > 0) {
    if (measuredStepS >= predictedStepS) stepOffsetS = measuredStepS - predictedStepS;
    else stepScale = measuredStepS / predictedStepS;
  }
  const gib = (b: number) => fmtGiB(b, 2);
  const method =
    measuredPeakBytes === null
      ? 'uncalibrated: no measured peak to calibrate on'
      : variableScale !== null
        ? `batch-independent ${gib(resident)} kept, the rest scaled by ${variableScale.toFixed(3)} (measured ${gib(varMeas)} / predicted ${gib(varPred)})`
        : `offset of ${gib(offsetBytes)} added (the batch-dependent part is under ${MIN_VARIABLE_SHARE * 100}% of the peak)`;
  return {
    basis: measuredPeakBytes === null ? 'planner' : 'planner-calibrated',
    predictedPeakBytes: pred,
    measuredPeakBytes: measured,
    errorFraction: (pred - measured) / measured,
    residentBytes: resident,
    variableScale,
    offsetBytes,
    method,
    predictedStepS,
    measuredStepS,
    stepErrorFraction:
      predictedStepS !== null && measuredStepS !== null && measuredStepS > 0 ? (predictedStepS - measuredStepS) / measuredStepS : null,
    stepOffsetS,
    stepScale,
  };
}

/** The calibrated peak allocated bytes of a plan evaluated for a what-if. */
export function calibratedPeakBytes(cal: PlannerCalibration, plan: Plan): number {
  const p = plan.memory.peakAllocatedBytes;
  if (cal.variableScale === null) return Math.max(0, p + cal.offsetBytes);
  const r = Math.min(plan.memory.residentBytes, p);
  return r + (p - r) * cal.variableScale;
}

/** The calibrated step time of a what-if plan in seconds; null without the GPU's rates. */
export function calibratedStepS(cal: PlannerCalibration, plan: Plan): number | null {
  if (cal.predictedStepS === null) return null;
  const t = plan.time.stepTimeMs / 1000;
  if (cal.stepOffsetS !== null) return t + cal.stepOffsetS;
  if (cal.stepScale !== null) return t * cal.stepScale;
  return t;
}

/**
 * The planner's fit rule (`fitsIn` of plan.ts): the peak with its 2% slack, plus the hole fragmentation leaves
 * for the largest blocks (the planner's `fragmentationBytes`; unknown, so 0, for the per-sample model).
 */
export function fitsBudget(peakBytes: number, budgetBytes: number, fragmentationBytes = 0): boolean {
  return fitsIn({ peakAllocatedBytes: peakBytes, fragmentationBytes }, budgetBytes);
}
