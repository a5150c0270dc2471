import { describe, expect, it } from 'vitest';
import { unionOf, unionOfColumns } from '../../src/trace/metrics/intervals.js';
import { median } from '../../src/trace/metrics/kernels.js';
import { Medians } from '../../src/trace/metrics/select.js';

/** A deterministic pseudo-random sequence (mulberry32). */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The medians of each series, walking the values as often as Medians asks, and how many walks that took. */
function viaPasses(series: number[][]): { medians: number[]; passes: number } {
  const m = new Medians(series.length);
  const counts = series.map((v) => v.length);
  let passes = 0;
  do {
    passes++;
    for (const [s, values] of series.entries()) for (const v of values) m.visit(s, v);
  } while (m.endPass(counts));
  return { medians: m.results(), passes };
}

describe('Medians: exact medians without holding the values', () => {
  it('agrees with sorting on odd and even counts, negatives, fractions, repeats, and many values', () => {
    const r = rng(7);
    const cases: number[][] = [
      [],
      [5],
      [3, 1],
      [2, 2, 2, 2],
      [-0, 0, -5, 7.25, 1e12, -1e-9],
      Array.from({ length: 1001 }, () => Math.round(r() * 1e6)),
      Array.from({ length: 50_000 }, () => Math.round((r() - 0.3) * 1e7)), // more candidates than one collect
      Array.from({ length: 40_000 }, () => 1234), // every value identical: the 64-bit path
      Array.from({ length: 30_000 }, (_, i) => (i % 3 === 0 ? 10 : 10 + Math.floor(r() * 3))), // heavy repeats, even count
    ];
    const { medians } = viaPasses(cases);
    // + 0: a median of zeros may come back as -0 or +0.
    for (const [i, values] of cases.entries()) expect(medians[i]! + 0, `case ${i}`).toBe(median(values) + 0);
  });

  it('shares passes between series', () => {
    const r = rng(3);
    const a = Array.from({ length: 20_000 }, () => r() * 1000);
    const b = Array.from({ length: 7 }, () => r());
    const both = viaPasses([a, b]);
    const alone = viaPasses([a]);
    expect(both.medians).toEqual([median(a), median(b)]);
    expect(both.passes).toBe(alone.passes);
  });
});

describe('unionOfColumns: the union of intervals kept as columns', () => {
  it('equals the union of the same intervals as pairs, in any order, empty ones dropped', () => {
    const r = rng(5);
    const pairs: [number, number][] = Array.from({ length: 2000 }, () => {
      const a = Math.round(r() * 1e6);
      return [a, a + Math.round((r() - 0.05) * 5000)]; // some empty or reversed
    });
    const u = unionOfColumns(Float64Array.from(pairs, (p) => p[0]), Float64Array.from(pairs, (p) => p[1]), pairs.length);
    const want = unionOf(pairs);
    expect(u.n).toBe(want.n);
    expect([...u.start]).toEqual([...want.start.subarray(0, want.n)]);
    expect([...u.end]).toEqual([...want.end.subarray(0, want.n)]);
    expect(u.n).toBeGreaterThan(10);
    expect(u.n).toBeLessThan(2000); // overlaps were merged
  });
});
