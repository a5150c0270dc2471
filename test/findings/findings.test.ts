/** The one Finding factory (severity from the gain only) and the one ranking and merging. */
import { describe, expect, it } from 'vitest';
import { type Finding, type FindingParts, finding, memoryGainFrom, withGain } from '../../src/findings/finding.js';
import type { FindingId } from '../../src/findings/ids.js';
import { wholeStepGain } from '../../src/pace/gain.js';
import { mergeById, sortFindings } from '../../src/findings/rank.js';

// Names stand for ids here: the order and the merge read only the id's equality.
const parts = (name: string, saved: number | null, ranks = [0]): FindingParts => ({
  id: name as FindingId,
  title: name,
  ranks,
  evidence: [],
  data: {},
  recommendation: { summary: '', code: '' },
  estimatedGain: saved === null ? null : wholeStepGain(100, 100 - saved, 'x'),
});

describe('finding: severity from the gain only', () => {
  it('puts the edges at 5% and 25% of the step', () => {
    expect(finding(parts('a', 25)).severity).toBe('high');
    expect(finding(parts('a', 24.9)).severity).toBe('medium');
    expect(finding(parts('a', 5)).severity).toBe('medium');
    expect(finding(parts('a', 4.9)).severity).toBe('low');
    expect(finding(parts('a', null)).severity).toBe('info');
  });
  it('memory findings: high only when the change lets a failed run go on, else medium from 5% of the peak', () => {
    const mem = (saved: number, unblocks: boolean) => finding({ ...parts('m', null, []), memoryGain: memoryGainFrom(saved, 100, unblocks, 'x') });
    expect(mem(3, true).severity).toBe('high');
    expect(mem(90, false).severity).toBe('medium');
    expect(mem(5, false).severity).toBe('medium');
    expect(mem(4.9, false).severity).toBe('low');
    expect(mem(0, false).severity).toBe('info');
  });
  it('withGain re-derives the severity', () => {
    const f = finding(parts('a', 30));
    expect(withGain(f, wholeStepGain(100, 100 - 10, 'y')).severity).toBe('medium');
  });
});

describe('ranking and merging', () => {
  it('orders by severity, then the step saved, then the memory freed', () => {
    const list: Finding[] = [
      finding(parts('low', 2)),
      finding({ ...parts('mem', null, []), memoryGain: memoryGainFrom(50, 100, false, '') }),
      finding(parts('med', 10)),
      finding(parts('high', 40)),
      finding(parts('med2', 20)),
    ];
    expect(sortFindings(list).map((f) => f.id)).toEqual(['high', 'med2', 'med', 'mem', 'low']);
  });
  it('merges the same finding of several ranks, keeping the larger gain and every rank', () => {
    const merged = mergeById([finding(parts('a', 10, [1])), finding(parts('b', 10, [0])), finding(parts('a', 30, [0]))]);
    expect(merged.map((f) => [f.id, f.ranks, f.estimatedGain?.savedFraction])).toEqual([
      ['a', [0, 1], 0.3],
      ['b', [0], 0.1],
    ]);
  });
});
