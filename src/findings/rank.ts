/**
 * Ranking and merging findings (pure): one order for every report and one rule for the same finding seen on several
 * ranks. The order (docs/reference/doctor.md, "The order of findings"): severity; within a severity, the share of the step saved, largest
 * first; then the share of memory freed; on a tie a defect before an advice (a set-up change to weigh); a stable sort
 * keeps the sources' order for what is left. Nothing else moves a finding: a list read top-down is "most gain first"
 * within each severity.
 */
import { type Finding, type Severity, SEVERITIES } from './finding.js';

export function severityRank(s: Severity): number {
  const i = SEVERITIES.indexOf(s);
  return i < 0 ? SEVERITIES.length : i;
}

/** The share of the step a finding saves (0 without a step-time gain). */
export function stepGainOf(f: Pick<Finding, 'estimatedGain'>): number {
  return f.estimatedGain?.savedFraction ?? 0;
}

/** The share of memory a finding frees (0 without a memory gain). */
export function memoryGainOf(f: Pick<Finding, 'memoryGain'>): number {
  return f.memoryGain?.savedFraction ?? 0;
}

const adviceLast = (f: Pick<Finding, 'kind'>): number => (f.kind === 'advice' ? 1 : 0);

/** Severity, then the step saved, then the memory freed, then defects before advice. */
export function compareFindings(a: Finding, b: Finding): number {
  return (
    severityRank(a.severity) - severityRank(b.severity) ||
    stepGainOf(b) - stepGainOf(a) ||
    memoryGainOf(b) - memoryGainOf(a) ||
    adviceLast(a) - adviceLast(b)
  );
}

export function sortFindings<F extends Finding>(list: readonly F[]): F[] {
  return [...list].sort(compareFindings);
}

/**
 * The same finding (same id) from two ranks: the one with the larger gain is kept, with both ranks' numbers in
 * `ranks` (sorted).
 */
export function mergeSameFinding<F extends Finding>(a: F, b: F): F {
  const keep = stepGainOf(b) > stepGainOf(a) ? b : a;
  return { ...keep, ranks: [...new Set([...a.ranks, ...b.ranks])].sort((x, y) => x - y) };
}

/** Merges findings with the same id (mergeSameFinding), in first-seen order. */
export function mergeById<F extends Finding>(list: readonly F[]): F[] {
  const byId = new Map<string, F>();
  for (const f of list) {
    const prev = byId.get(f.id);
    byId.set(f.id, prev ? mergeSameFinding(prev, f) : f);
  }
  return [...byId.values()];
}
