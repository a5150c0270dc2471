/**
 * The pace model's accuracy on this machine, by lever (pure): `tune --plan` stores, for every plan step it measured,
 * the plan's prediction and the measurement (io/runStore.ts, table lever_trial); `gpuwise runs --accuracy` reads
 * them. The error compares ratios, not steps: the plan predicts the step after a fix from the diagnosis's step
 * (predicted / predictedFrom) and a trial measures it from the configuration it was tried on (measured /
 * measuredFrom), and the two start from different runs. error = predicted ratio / measured ratio - 1: +0.20 means
 * the step came out 20% shorter than predicted (the model under-promised), -0.20 that it was 20% longer.
 */
import { median } from '../util/stats.js';

export interface LeverPair {
  hostname: string | null;
  stepId: string;
  lever: string | null;
  predictedFromS: number | null;
  predictedS: number | null;
  measuredFromS: number | null;
  measuredS: number | null;
  kept: boolean;
  atMs: number;
}

export interface LeverAccuracy {
  /** The plan step's finding id (dataloader-bound, mixed-precision, ...). */
  stepId: string;
  pairs: number;
  /** Median and largest |error| over the pairs, and the median signed error (see the module comment). */
  medianError: number;
  medianAbsError: number;
  maxAbsError: number;
  /** Median measured ratio (measured / measured from) and predicted ratio. */
  medianMeasuredRatio: number;
  medianPredictedRatio: number;
  kept: number;
}

/** The error of one pair, or null where either side is missing. */
export function pairError(p: LeverPair): number | null {
  if (p.predictedS === null || p.predictedFromS === null || p.measuredS === null || p.measuredFromS === null) return null;
  if (!(p.predictedFromS > 0 && p.measuredFromS > 0 && p.measuredS > 0)) return null;
  return p.predictedS / p.predictedFromS / (p.measuredS / p.measuredFromS) - 1;
}

/** Accuracy by plan step id over the pairs of `hostname` (all hosts when null), plan steps with a prediction only. */
export function leverAccuracy(pairs: readonly LeverPair[], hostname: string | null): LeverAccuracy[] {
  const by = new Map<string, { e: number[]; mr: number[]; pr: number[]; kept: number }>();
  for (const p of pairs) {
    if (hostname !== null && p.hostname !== hostname) continue;
    const e = pairError(p);
    if (e === null) continue;
    const g = by.get(p.stepId) ?? { e: [], mr: [], pr: [], kept: 0 };
    g.e.push(e);
    g.mr.push((p.measuredS as number) / (p.measuredFromS as number));
    g.pr.push((p.predictedS as number) / (p.predictedFromS as number));
    if (p.kept) g.kept++;
    by.set(p.stepId, g);
  }
  return [...by.entries()]
    .map(([stepId, g]) => ({
      stepId,
      pairs: g.e.length,
      medianError: median(g.e) as number,
      medianAbsError: median(g.e.map(Math.abs)) as number,
      maxAbsError: Math.max(...g.e.map(Math.abs)),
      medianMeasuredRatio: median(g.mr) as number,
      medianPredictedRatio: median(g.pr) as number,
      kept: g.kept,
    }))
    .sort((a, b) => b.pairs - a.pairs || a.stepId.localeCompare(b.stepId));
}

const pct = (x: number) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(0)}%`;

/**
 * A plan step's record on this machine in a line, under the step (doctor's plan): what its trials measured against what
 * the model predicted, as ratios of the step before the fix (the module comment says why ratios).
 */
export function measuredHereText(a: LeverAccuracy): string {
  const off = Math.abs(a.medianError) < 0.1 ? 'as predicted' : a.medianError > 0 ? 'more than predicted' : 'less than predicted';
  return `on this machine, tune --plan measured this fix at x${a.medianMeasuredRatio.toFixed(2)} of the step before it where x${a.medianPredictedRatio.toFixed(2)} was predicted (${a.pairs} trial${a.pairs === 1 ? '' : 's'}): it gave ${off}`;
}

/** The terminal table of `gpuwise runs --accuracy`. */
export function renderLeverAccuracy(rows: readonly LeverAccuracy[], where: string, host: string | null): string {
  if (rows.length === 0)
    return `No plan step measured yet${host ? ` on ${host}` : ''} (${where}): gpuwise tune --plan -- CMD measures each injectable step of doctor's plan and stores the pair here.\n`;
  const head = ['lever (plan step)', 'pairs', 'predicted', 'measured', 'error (median)', '|error| median', '|error| max', 'kept'];
  const body = rows.map((r) => [
    r.stepId,
    String(r.pairs),
    `x${r.medianPredictedRatio.toFixed(2)}`,
    `x${r.medianMeasuredRatio.toFixed(2)}`,
    pct(r.medianError),
    `${(r.medianAbsError * 100).toFixed(0)}%`,
    `${(r.maxAbsError * 100).toFixed(0)}%`,
    `${r.kept}/${r.pairs}`,
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => (b[i] as string).length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number))).join('  ');
  return [
    `The pace model's accuracy${host ? ` on ${host}` : ''}, by lever (${where}): the step after each fix as a share of the step before it, predicted by doctor's plan and measured by tune --plan`,
    '',
    line(head),
    ...body.map(line),
    '',
    'error = predicted ratio / measured ratio - 1: positive, the fix gave more than predicted; negative, less.',
    '',
  ].join('\n');
}
