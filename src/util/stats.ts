/**
 * Order statistics, defined once (pure): nearest-rank quantiles of a sorted list, so a reported median or p90 is
 * always one of the measured values (a step that happened), never an average of two.
 */

/** The q-quantile (0..1) of ascending `sorted` by the nearest-rank rule; null for an empty list. */
export function quantile(sorted: readonly number[], q: number): number | null {
  if (sorted.length === 0) return null;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[i] ?? null;
}

/** The median of any list (sorted here), by the same rule. */
export function median(values: readonly number[]): number | null {
  return quantile([...values].sort((a, b) => a - b), 0.5);
}
