/**
 * Findings: what gpuwise tells the user (pure, nearly a leaf: it imports only the pace model's `Fix` type). Every finding carries its
 * evidence (numbers and example events), the code change to make, and what the change gains with the arithmetic
 * behind it. One type for analyze, doctor, memory, tune and the history, and one factory (`finding`): severity
 * follows the estimated gain (alone, or at the fix's step of the plan where that is more: `withPlanWorth`), never a
 * rule's own judgement. A step-time gain is made only by the pace model
 * (src/pace/gain.ts: a fix applied to the step's pipeline); memory gains by memory's findings (`memoryGainFrom`).
 */
import type { Fix } from '../pace/fix.js';
import type { FindingId } from './ids.js';

export type { FindingId } from './ids.js';

export type Severity = 'high' | 'medium' | 'low' | 'info';
export const SEVERITIES: readonly Severity[] = ['high', 'medium', 'low', 'info'];

/** What a change saves of the step. */
export interface EstimatedGain {
  /** Step time now (the basis the finding's share is of). */
  stepTimeNs: number;
  /** Step time expected once the cause is removed. */
  expectedStepTimeNs: number;
  /** 1 - expected / current (0..1). */
  savedFraction: number;
  /** How the expected step time was computed, in words and numbers. */
  arithmetic: string;
  /**
   * The stage that sets the pace now and once the fix is made (`input`, `host`, `gpu`, `comm`, `serial`: src/pace/).
   * Added after schema 1 of doctor and 2 of analyze: absent from older reports and from gains not made by the pace model.
   */
  boundNow?: 'input' | 'host' | 'gpu' | 'comm' | 'serial';
  boundAfter?: 'input' | 'host' | 'gpu' | 'comm' | 'serial';
  /**
   * The fix's batch over the run's (a 4x batch: 4), present only when the fix changes it. The two step times are then
   * per batch of today's size, not per step: the time per sample, so the speed-up is in samples/s (a step of the
   * bigger batch takes expectedStepTimeNs x batchScale). Added within schema 1 of doctor and 2 of analyze.
   */
  batchScale?: number;
  /**
   * What a batch holds where `batchScale` is set: sequences whose steps each yield a token (a generation loop's decode
   * steps: the speed-up is in tokens/s), else samples. Added within schema 1 of doctor.
   */
  batchUnit?: 'tokens';
}

/** What a memory change frees (memory findings: they save bytes, not step time). */
export interface MemoryGain {
  /** Bytes the change frees at the peak (or at the failure). */
  savedBytes: number;
  /** The bytes they are a share of: the peak allocated (or the allocated bytes at the failure). */
  ofBytes: number;
  /** savedBytes / ofBytes (0..1). */
  savedFraction: number;
  /** The run failed for want of memory and this change removes the cause: it lets the run go on. */
  unblocksRun: boolean;
  arithmetic: string;
}

export interface Finding {
  /** Stable identifier, e.g. `dataloader-bound` (findings/ids.ts). */
  id: FindingId;
  severity: Severity;
  title: string;
  /** Ranks the finding was seen on (one entry for single-GPU traces; empty for a memory snapshot). */
  ranks: number[];
  /** Human-readable evidence lines: figures, example event names and timestamps. */
  evidence: string[];
  /** The same figures, machine-readable. */
  data: Record<string, number | string | boolean | null>;
  recommendation: Recommendation;
  estimatedGain: EstimatedGain | null;
  /**
   * What the fix changes in the step's pipeline (src/pace/fix.ts), as data: the gain is this fix applied to the
   * pipeline, and the plan composes the fixes. Absent for findings without a step-time fix. Added after schema 1 of
   * doctor and 2 of analyze (absent from older reports).
   */
  fix?: Fix;
  /** Memory findings only: the bytes the change frees (their severity comes from it). */
  memoryGain?: MemoryGain | null;
  /**
   * `advice`: a change of set-up to weigh (a bigger batch, another parallel layout: doctor's what-ifs), not a defect
   * to fix; absent for defects. Advice is at most medium and, on a tie of gain, ranks after a defect (rank.ts).
   */
  kind?: 'advice';
  /**
   * What the fix saves at its step of the run's plan (1 - expected / the step before it), where it is a step and saves
   * more there than alone: a fix that gains little while another stage binds can gain much once the plan has moved that
   * stage (pinned memory behind a starved loader: 1.01x alone, 1.18x as step 2). Severity follows the larger of the two
   * (`withPlanWorth`); within a severity the order stays by the gain alone, which needs no other fix first (rank.ts).
   * Added within schema 1 of doctor and 2 of analyze.
   */
  planSavedFraction?: number;
}

export const FRAMEWORKS = ['transformers', 'lightning', 'accelerate'] as const;
/** A training framework whose own switch a fix can be phrased in (doctor knows which one runs). */
export type Framework = (typeof FRAMEWORKS)[number];

export interface Recommendation {
  summary: string;
  /** Plain PyTorch code. */
  code: string;
  /** The same change as the framework's own switch, where it has one (doctor leads with it when that framework runs: advice/framework.ts). */
  frameworks?: Partial<Record<Framework, string>>;
}

/** Everything of a finding but its severity, which the factory derives. */
export type FindingParts = Omit<Finding, 'severity'>;

/** Documented thresholds: high when removing the cause saves >= 25% of the step, medium 5-25%, low below. */
export const HIGH_GAIN = 0.25;
export const MEDIUM_GAIN = 0.05;

function severityForFraction(f: number): Severity {
  if (!(f > 0)) return 'info';
  if (f >= HIGH_GAIN) return 'high';
  if (f >= MEDIUM_GAIN) return 'medium';
  return 'low';
}

export function severityForGain(gain: EstimatedGain | null): Severity {
  return gain === null ? 'info' : severityForFraction(gain.savedFraction);
}

/**
 * A memory change that lets a run that ran out of memory go on is high. Otherwise freed memory is headroom, not time:
 * medium from MEDIUM_GAIN of the peak, low below (it never outranks a high step-time finding).
 */
export function severityForMemoryGain(gain: MemoryGain | null | undefined): Severity {
  if (!gain || !(gain.savedFraction > 0)) return 'info';
  if (gain.unblocksRun) return 'high';
  return gain.savedFraction >= MEDIUM_GAIN ? 'medium' : 'low';
}

/**
 * The finding once the plan is made: a fix that saves more at its step of the plan than alone is worth what it saves
 * there, so its severity follows the larger share (never lowered; advice is not planned). `planSaved`: 1 - expected /
 * the step before it, at its step.
 */
export function withPlanWorth<F extends Finding>(f: F, planSaved: number): F {
  const alone = f.estimatedGain?.savedFraction ?? 0;
  if (!(planSaved > alone)) return f;
  const severity = severityForFraction(planSaved);
  return { ...f, planSavedFraction: planSaved, severity: SEVERITIES.indexOf(severity) < SEVERITIES.indexOf(f.severity) ? severity : f.severity };
}

/** The one factory: a finding whose severity follows its gain (the step-time gain, else the memory gain). */
export function finding(p: FindingParts): Finding {
  const severity = p.estimatedGain !== null ? severityForGain(p.estimatedGain) : severityForMemoryGain(p.memoryGain);
  return { ...p, severity };
}

/**
 * A finding that is advice to weigh (findings/rank.ts ranks it after a defect of equal gain): severity from the gain
 * as for any finding, but never above medium: a set-up change changes more than the step time (a bigger batch changes
 * the optimisation), so it is weighed, not applied as a fix.
 */
export function adviceFinding(p: Omit<FindingParts, 'kind'>): Finding {
  const f = finding({ ...p, kind: 'advice' });
  return f.severity === 'high' ? { ...f, severity: 'medium' } : f;
}

/** The same finding with a new gain, its severity following it. */
export function withGain(f: Finding, estimatedGain: EstimatedGain | null): Finding {
  const parts = { ...withoutSeverity(f), estimatedGain };
  return f.kind === 'advice' ? adviceFinding(parts) : finding(parts);
}

function withoutSeverity(f: Finding): FindingParts {
  const { severity: _severity, ...parts } = f;
  return parts;
}

/** Builds a memory gain; null when nothing is freed. */
export function memoryGainFrom(savedBytes: number, ofBytes: number, unblocksRun: boolean, arithmetic: string): MemoryGain | null {
  if (!(savedBytes > 0)) return null;
  const savedFraction = ofBytes > 0 ? Math.min(1, savedBytes / ofBytes) : 1;
  return { savedBytes, ofBytes, savedFraction, unblocksRun, arithmetic };
}
