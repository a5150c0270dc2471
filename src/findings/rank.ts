/**
 * Ranking and merging findings (pure): one order for every report (severity, then the share of the step saved, then
 * the share of memory freed) and one rule for the same finding seen on several ranks.
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

/** An advice (kind `advice`) within this share of the step of a defect's gain ranks after it. */
export const ADVICE_SIMILAR_GAIN = 0.05;

/** The gain used for ordering: an advice's is lowered by ADVICE_SIMILAR_GAIN, so a defect of similar gain comes first. */
function orderGainOf(f: Finding): number {
  return stepGainOf(f) - (f.kind === 'advice' ? ADVICE_SIMILAR_GAIN : 0);
}

/**
 * Severity first, then the step saved (an advice counted ADVICE_SIMILAR_GAIN lower), then the memory freed; a stable
 * sort keeps the sources' order for ties.
 */
export function compareFindings(a: Finding, b: Finding): number {
  return (
    severityRank(a.severity) - severityRank(b.severity) ||
    orderGainOf(b) - orderGainOf(a) ||
    (b.memoryGain?.savedFraction ?? 0) - (a.memoryGain?.savedFraction ?? 0)
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
