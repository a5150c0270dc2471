/**
 * The stall pattern of a run's steps (run/steps.ts, `stallPatternOf`) on synthetic series whose answer is known: a
 * loader whose workers deliver in turn stalls every N steps. Read over every step, and over the records a long run
 * keeps (the probe's bursts of 32 steps in 1024 past its head; doctor's spread sample): the spacing between two
 * stalls with steps missing between them is not the period.
 */
import { describe, expect, it } from 'vitest';
import { stallPatternOf } from '../../src/run/steps.js';

/** Steps of 20 ms that wait 1 ms, and 60 ms more every `every` steps (a stall). */
const series = (n: number, every: number) =>
  Array.from({ length: n }, (_, i) => {
    const step = i + 1;
    const stalled = step % every === 0;
    return { step, timeS: stalled ? 0.08 : 0.02, waitS: stalled ? 0.061 : 0.001 };
  });
/** What the probe records of a long run: the first `head` steps, then step % 1024 < 32. */
const sampled = <T extends { step: number }>(xs: T[], head: number) => xs.filter((s) => s.step < head || s.step % 1024 < 32);

describe('the stall pattern', () => {
  it('finds stalls every 9 steps over every step', () => {
    expect(stallPatternOf(series(900, 9))).toMatchObject({ when: 'periodic', everySteps: 9 });
  });

  it('finds stalls every 40 steps in the records of a sampled run (the spacing across a gap is not the period)', () => {
    const kept = sampled(series(40_000, 40), 256);
    expect(kept.length).toBeLessThan(3000);
    expect(stallPatternOf(kept)).toMatchObject({ when: 'periodic', everySteps: 40 });
  });

  it('calls stalls that come at no period irregular', () => {
    const xs = series(900, 1_000_000).map((s) => ([3, 50, 51, 200, 420, 777].includes(s.step) ? { ...s, timeS: 0.08, waitS: 0.061 } : s));
    expect(stallPatternOf(xs)).toMatchObject({ when: 'irregular', stalledSteps: 6 });
  });
});
