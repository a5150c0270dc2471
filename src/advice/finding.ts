/**
 * Findings: what gpuwise tells the user. Every finding carries its evidence
 * (numbers and example events), the code change to make, and the estimated
 * gain with the arithmetic behind it. Severity follows the gain alone.
 */
export type Severity = 'high' | 'medium' | 'low' | 'info';
export const SEVERITIES: readonly Severity[] = ['high', 'medium', 'low', 'info'];

export interface EstimatedGain {
  /** Mean step time now. */
  stepTimeNs: number;
  /** Step time expected once the cause is removed. */
  expectedStepTimeNs: number;
  /** 1 - expected / current (0..1). */
  savedFraction: number;
  /** How the expected step time was computed, in words and numbers. */
  arithmetic: string;
}

export interface Finding {
  /** Stable identifier, e.g. `dataloader-bound`. */
  id: string;
  severity: Severity;
  title: string;
  /** Ranks the finding was seen on (one entry for single-GPU traces). */
  ranks: number[];
  /** Human-readable evidence lines: figures, example event names and timestamps. */
  evidence: string[];
  /** The same figures, machine-readable. */
  data: Record<string, number | string | boolean | null>;
  recommendation: Recommendation;
  estimatedGain: EstimatedGain | null;
}

export const FRAMEWORKS = ['transformers', 'lightning', 'accelerate'] as const;
/** A training framework whose own switch a fix can be phrased in (doctor knows which one runs). */
export type Framework = (typeof FRAMEWORKS)[number];

export interface Recommendation {
  summary: string;
  /** Plain PyTorch code. */
  code: string;
  /** The same change as the framework's own switch, where it has one (shown beside the code when the framework is in use). */
  frameworks?: Partial<Record<Framework, string>>;
}

/** Documented thresholds: high when removing the cause saves >= 25% of the step, medium 5-25%, low below. */
export const HIGH_GAIN = 0.25;
export const MEDIUM_GAIN = 0.05;

export function severityForGain(gain: EstimatedGain | null): Severity {
  if (gain === null || !(gain.savedFraction > 0)) return 'info';
  if (gain.savedFraction >= HIGH_GAIN) return 'high';
  if (gain.savedFraction >= MEDIUM_GAIN) return 'medium';
  return 'low';
}

export function severityRank(s: Severity): number {
  return SEVERITIES.indexOf(s);
}

/** Builds a gain from the current step and the time saved, clamping to sane bounds. */
export function gainFrom(stepTimeNs: number, savedNs: number, arithmetic: string): EstimatedGain | null {
  if (!(stepTimeNs > 0) || !(savedNs > 0)) return null;
  const saved = Math.min(savedNs, stepTimeNs * 0.99);
  return { stepTimeNs, expectedStepTimeNs: stepTimeNs - saved, savedFraction: saved / stepTimeNs, arithmetic };
}
