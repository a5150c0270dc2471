/**
 * The one place a step-time gain is made (pure): a fix applied to a pipeline, the expected step read off the result.
 * Every finding's `estimatedGain` comes from here (memory's findings free bytes, not time), so analyze, doctor, the
 * what-ifs and the plan give one answer for one fix on one pipeline.
 */
import type { EstimatedGain } from '../findings/finding.js';
import { fmtMs } from '../util/format.js';
import { applyFix, type Fix, fixEffect } from './fix.js';
import { applyJobFix, type Job, jobStepOf } from './job.js';
import { measuredStep, type PaceStep, type Pipeline, type StageName, stageLabel, stepOf } from './pipeline.js';

/** The bound in words ("the GPU"), for "then the GPU binds". */
function capital(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}

export function boundWords(p: Pipeline, bound: StageName | 'serial'): string {
  return bound === 'serial' ? 'the blocking waits (syncs, copies, gaps)' : bound === 'comm' ? 'communication' : stageLabel(p, bound);
}

/**
 * The gain of `fix` on `p`: the step now and the step expected once it is made (per batch of the run's size), with
 * the rule's arithmetic and the pipeline's. A fix the pipeline leaves nothing of keeps a gain of 0 (severity info),
 * so the report says why; null only without a step to measure against.
 */
export function gainOf(p: Pipeline, fix: Fix): EstimatedGain | null {
  if (!(p.stepNs > 0)) return null;
  const before = stepOf(p);
  const q = applyFix(p, fix);
  const after = stepOf(q);
  const now = before.perBatchNs;
  const expected = Math.min(now, Math.max(after.perBatchNs, now * 0.01));
  // A fix's own batch scale (a what-if's, modelled per the run's batch) multiplies the one its ops make.
  const fixScale = fix.batchScale ?? 1;
  const per =
    q.batchScale !== p.batchScale || fixScale !== 1
      ? ` per batch of ${fmtBatch(p.batchScale)} size (${fmtMs(after.stepNs * fixScale)} a step of the ${((q.batchScale / p.batchScale) * fixScale).toFixed(1)}x batch)`
      : '';
  const arithmetic =
    p.source === 'step'
      ? `${fix.arithmetic}: expect ${fmtMs(expected)} a step (now ${fmtMs(now)})`
      : `${fix.arithmetic}. On the ${p.source === 'run' ? "run's pipeline (outside the profiler)" : "window's pipeline"}: ${fixEffect(p, q)}. ` +
        (expected >= now * 0.999
          ? `${capital(boundWords(p, before.bound))} still sets the pace, so this fix alone leaves the step at ${fmtMs(now)}`
          : `Then ${boundWords(q, after.bound)} sets the pace: ${fmtMs(expected)}${per} (now ${fmtMs(now)}, set by ${boundWords(p, before.bound)})`);
  return {
    stepTimeNs: now,
    expectedStepTimeNs: expected,
    savedFraction: Math.max(0, (now - expected) / now),
    arithmetic,
    ...(p.source === 'step' ? {} : { boundNow: before.bound, boundAfter: after.bound }),
    ...batchScaleOf(p.batchScale, q.batchScale * fixScale),
  };
}

/**
 * The gain of `fix`, made on the ranks `among` names (all where none), on a job of several ranks (job.ts): the job's
 * step now and once it is made, each the slowest rank's own step; the ranks' stages before and after in the
 * arithmetic. Clamped as gainOf is: a fix the job leaves nothing of gains 0, and says which rank still binds.
 */
export function jobGainOf(job: Job, fix: Fix, among: readonly number[] = []): EstimatedGain | null {
  if (!(job.stepNs > 0)) return null;
  const before = jobStepOf(job);
  const q = applyJobFix(job, fix, among);
  const after = jobStepOf(q);
  const now = before.perBatchNs;
  const expected = Math.min(now, Math.max(after.perBatchNs, now * 0.01));
  const effects = job.ranks
    .map((r, i) => ({ rank: r.rank, effect: fixEffect(r.pipeline, (q.ranks[i] as Job['ranks'][number]).pipeline) }))
    .filter((e) => e.effect !== 'no stage changes')
    .map((e) => `rank ${e.rank}: ${e.effect}`);
  const arithmetic =
    `${fix.arithmetic}. On the job's ${job.ranks.length} ranks (each rank's own work, its wait for the others taken out; the job goes at the pace of the longest): ` +
    `${effects.join('; ') || 'no stage changes'}. ` +
    (expected >= now * 0.999
      ? `${capital(boundWords(before.pipeline, before.bound))} of rank ${before.rank} still sets the pace, so this fix alone leaves the step at ${fmtMs(now)}`
      : `Then ${boundWords(after.pipeline, after.bound)} of rank ${after.rank} sets the pace: ${fmtMs(expected)} (now ${fmtMs(now)}, set by ${boundWords(before.pipeline, before.bound)} of rank ${before.rank})`);
  return {
    stepTimeNs: now,
    expectedStepTimeNs: expected,
    savedFraction: Math.max(0, (now - expected) / now),
    arithmetic,
    boundNow: before.bound,
    boundAfter: after.bound,
    ...batchScaleOf(before.pipeline.batchScale, after.pipeline.batchScale * (fix.batchScale ?? 1)),
  };
}

/** The gain's `batchScale`, only where the fix changed the batch: its times are then per batch of today's size. */
function batchScaleOf(before: number, after: number): { batchScale?: number } {
  return after !== before ? { batchScale: after / before } : {};
}

/**
 * What a time is per once a fix changed the batch: the run's batch of samples (the same samples in less time, so the
 * speed-up is in samples/s), not a step, which the bigger batch makes longer. Issue 47: "4x larger batch" said "per step".
 */
export const PER_RUN_BATCH = "per batch of today's size";

/** PER_RUN_BATCH, or its decode-step form where each sequence of the batch yields a token a step. */
export function perRunBatch(unit?: 'tokens'): string {
  return unit === 'tokens' ? "per today's batch of tokens" : PER_RUN_BATCH;
}

/** The bigger batch's own step: a time per the run's batch (a gain's expected step) times the batch multiple. */
export function bigBatchStepNs(perRunBatchNs: number, batchScale: number): number {
  return perRunBatchNs * batchScale;
}

/** "4x", "1.5x": a batch multiple. */
export function fmtBatchScale(k: number): string {
  return Number.isInteger(k) ? `${k}x` : `${k.toFixed(1)}x`;
}

/** "1.90x" a step's speed-up, or "4.00x the samples/s" where the batch changed (batchScale not 1). */
export function speedupText(fromNs: number, toNs: number, batchScale = 1, unit?: 'tokens'): string {
  if (!(toNs > 0)) return '';
  return `${(fromNs / toNs).toFixed(2)}x${batchScale !== 1 ? ` the ${unit ?? 'samples'}/s` : ''}`;
}

function fmtBatch(scale: number): string {
  return scale === 1 ? "today's" : `${scale}x today's`;
}

/** A change measured or modelled as a whole: the step `stepNs` becomes `expectedNs` (measured elsewhere, another layout). */
export function wholeStepFix(label: string, stepNs: number, expectedNs: number, arithmetic: string): Fix {
  return { label, ops: [{ kind: 'step', factor: stepNs > 0 ? Math.max(0, expectedNs / stepNs) : 1 }], arithmetic };
}

/** The gain of a change measured or modelled as a whole, on the measured step alone. */
export function wholeStepGain(stepNs: number, expectedNs: number, arithmetic: string): EstimatedGain | null {
  const fix = wholeStepFix('', stepNs, expectedNs, arithmetic);
  return expectedNs < stepNs ? gainOf(measuredStep(stepNs, 'the measured step'), fix) : null;
}

/** The step with a k-times batch (the batch op: per-sample work grows k times, per-step costs do not; batch.ts). */
export function batchedStepOf(p: Pipeline, k: number): PaceStep {
  return stepOf(applyFix(p, { label: `batch x${k}`, ops: [{ kind: 'batch', k }], arithmetic: '' }));
}

/** Samples/s with a k-times batch against now. */
export function batchThroughputFactor(p: Pipeline, k: number): number {
  const now = stepOf(p).perBatchNs;
  const after = batchedStepOf(p, k).perBatchNs;
  return after > 0 ? now / after : 1;
}
