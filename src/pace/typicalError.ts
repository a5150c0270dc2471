/**
 * How far the pace model's plan steps have been from the GPU (pure): each plan step's expected step carries the error
 * that most measured steps of its kind came within, the way Lighthouse publishes the error of its savings estimates.
 * The figures (typicalErrorData.ts) are made from the validation records, every plan step doctor predicted and a
 * plain run then measured on an H100 or H200 (test/pace/typicalError.test.ts writes and checks them; the records are
 * read in docs/validation/pace.md).
 */
import type { FindingId } from '../findings/ids.js';
import { fmtMs } from '../util/format.js';
import { TYPICAL_ERROR_DATA } from './typicalErrorData.js';

/** A kind of plan step, as the validation records group them. */
export type Lever = 'workers' | 'precision' | 'pinned' | 'syncs' | 'compile' | 'attention';

/** Share of the measured steps an error band covers (4 in 5). */
export const TYPICAL_COVER = 0.8;
/** Steps of one kind below which its band is the one over every kind. */
export const MIN_LEVER_STEPS = 5;

/** What a plan step's expected time has been off by, for steps of its kind. */
export interface TypicalError {
  /** The band, a share of the step: TYPICAL_COVER of the measured steps came within ± it. */
  share: number;
  /** The kind whose records gave it, or 'all' where that kind has too few. */
  lever: Lever | 'all';
  /** The measured steps it rests on. */
  steps: number;
}

const LEVER_OF: Partial<Record<FindingId, Lever>> = {
  'dataloader-bound': 'workers',
  'mixed-precision': 'precision',
  'no-tensor-cores': 'precision',
  'channels-last': 'precision',
  'pageable-h2d': 'pinned',
  'host-sync': 'syncs',
  fusion: 'compile',
  'launch-bound': 'compile',
  attention: 'attention',
};

/** The kind of plan step a finding's fix makes, or null where the records hold none of its kind. */
export function leverOf(id: string): Lever | null {
  return LEVER_OF[id as FindingId] ?? null;
}

/**
 * The smallest multiple of 5% that `cover` of the errors come within (nearest rank); null without errors. The one
 * rule the records' figures are made by.
 */
export function bandOf(errors: readonly number[], cover = TYPICAL_COVER): number | null {
  if (errors.length === 0) return null;
  const abs = errors.map(Math.abs).sort((a, b) => a - b);
  const at = abs[Math.min(abs.length - 1, Math.ceil(cover * abs.length) - 1)] as number;
  return Math.max(1, Math.ceil(at * 20 - 1e-9)) / 20;
}

/** The typical error of a plan step made by finding `id`'s fix: its kind's where enough steps were measured, else every kind's. */
export function typicalErrorOf(id: string): TypicalError {
  const lever = leverOf(id);
  const own = lever ? TYPICAL_ERROR_DATA.levers[lever] : undefined;
  if (lever && own && own.steps >= MIN_LEVER_STEPS) return { share: own.share, lever, steps: own.steps };
  return { share: TYPICAL_ERROR_DATA.all.share, lever: 'all', steps: TYPICAL_ERROR_DATA.all.steps };
}

/**
 * The range a step expected at `expectedNs` likely falls in: the steps of its kind measured p / (1 + error) with
 * |error| at most the band 4 in 5 times ("65.4-88.5 ms": a cold reader asked for the range, not a ± to work out).
 */
export function likelyRangeNs(expectedNs: number, e: TypicalError): [number, number] {
  return [expectedNs / (1 + e.share), expectedNs / Math.max(0.05, 1 - e.share)];
}

/** "likely 65.4-88.5 ms": the range in a plan line, the unit said once where both ends share it. */
export function likelyText(expectedNs: number, e: TypicalError): string {
  const [lo, hi] = likelyRangeNs(expectedNs, e).map(fmtMs) as [string, string];
  const unit = / \S+$/.exec(hi)?.[0] ?? '';
  return `likely ${lo.endsWith(unit) ? lo.slice(0, -unit.length) : lo}-${hi}`;
}

/** What the likely ranges of a plan mean, in words, for the note that closes a plan. */
export function typicalErrorWords(): string {
  return `${Math.round(TYPICAL_COVER * 5)} in 5 of doctor's ${TYPICAL_ERROR_DATA.all.steps} plan steps run on H100/H200 GPUs measured within the likely range of their kind of fix (docs/validation/pace.md)`;
}
