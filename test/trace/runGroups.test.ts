/** Grouping trace files into runs (trace/runGroups.ts): by distributedInfo and time, on hand-made identities. */
import { describe, expect, it } from 'vitest';
import { type TraceIdentity, describeSplit, groupRuns, listRanks } from '../../src/trace/runGroups.js';

const S = 1e9;
const id = (path: string, rank: number | null, worldSize: number, start: number | null, end: number | null = start === null ? null : start + 10): TraceIdentity => ({
  path,
  rank,
  worldSize,
  backend: rank === null ? null : 'nccl',
  startNs: start === null ? null : start * S,
  endNs: end === null ? null : end * S,
});

describe('groupRuns', () => {
  it('ranks that overlap in time form one run; a later window of the same ranks another', () => {
    const ids = [id('w1r0', 0, 2, 0), id('w1r1', 1, 2, 1), id('w2r0', 0, 2, 100), id('w2r1', 1, 2, 101)];
    const g = groupRuns(ids);
    expect(g.map((x) => x.members)).toEqual([
      [0, 1],
      [2, 3],
    ]);
    expect(g.map((x) => x.label)).toEqual(['ranks 0-1 of 2 (nccl)', 'ranks 0-1 of 2 (nccl)']);
    expect(describeSplit(ids, g)).toMatch(/a rank appears in several files/);
  });

  it('ranks of one run that do not overlap in time are not matched (another window), nor different world sizes', () => {
    const g = groupRuns([id('a', 0, 2, 0), id('b', 1, 2, 50), id('c', 1, 4, 0)]);
    expect(g).toHaveLength(3);
    expect(g[0]!.notes).toEqual(['rank 1 of 2 not among the inputs']);
  });

  it('without a base time, distributedInfo alone decides', () => {
    const g = groupRuns([id('a', 0, 2, null), id('b', 1, 2, null), id('c', 1, 2, null)]);
    expect(g.map((x) => x.members)).toEqual([[0, 1], [2]]);
  });

  it('single-process traces are runs of their own, in the order given; a rank outside the world is said', () => {
    const g = groupRuns([id('s1', null, 1, 0), id('s2', null, 1, 0), id('x', 5, 2, 0)]);
    expect(g.map((x) => x.label)).toEqual(['a single-process trace', 'a single-process trace', 'rank 5 of 2 (nccl)']);
    expect(g[2]!.notes).toContain('rank 5 is outside a world of 2');
  });

  it('listRanks compresses runs of ranks', () => {
    expect(listRanks([0, 1, 2, 3, 5, 7, 8])).toBe('0-3, 5, 7-8');
  });
});
