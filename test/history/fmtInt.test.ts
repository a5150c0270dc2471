/**
 * util/format.ts fmtInt: thousands separators as toLocaleString('en-US') writes them for the integers reports show
 * (below 2^53), without ICU, whose first call cost `gpuwise runs` 12-90 ms (bench/history/bench.mjs).
 */
import { describe, expect, it } from 'vitest';
import { fmtInt } from '../../src/util/format.js';

describe('fmtInt', () => {
  it("writes what toLocaleString('en-US') writes for a rounded number", () => {
    const values = [0, 7, 999, 1000, 12_345, 999_999, 1_000_000, 124_439_808, -1, -1234, -1_234_567, 12.5, 13.5, -2.5, 2 ** 53];
    for (let x = 1; x < 2 ** 53; x = x * 7 + 3) values.push(x, -x);
    for (const v of values) expect(fmtInt(v), String(v)).toBe(Math.round(v).toLocaleString('en-US'));
    expect(fmtInt(Number.NaN)).toBe('NaN');
    expect(fmtInt(-0.4)).toBe('0'); // toLocaleString writes -0
  });
});
