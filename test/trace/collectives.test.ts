import { describe, expect, it } from 'vitest';
import { diagnose } from '../../src/advice/engine.js';
import { collectiveKey } from '../../src/trace/metrics/collectives.js';
import { SynthTrace, rankOfText } from '../helpers/synth.js';

const NCCL = 'ncclDevKernel_AllReduce_Sum_f32_RING_LL';

/** A rank whose step s all-reduces in each process group listed, with NCCL sequence numbers. */
function rank(r: number, groups: string[], computeUs: number, seqOf: (group: string, s: number) => number | string) {
  const t = new SynthTrace();
  for (let s = 0; s < 3; s++) {
    const t0 = 1000 + s * 5000;
    t.step(s, t0, 4999);
    t.kernel('gemm_kernel', t0 + 1, t0 + 10, computeUs);
    let at = t0 + 10 + computeUs;
    for (const g of groups) {
      // Each group's all-reduce ends 200 µs after the previous group's.
      const end = t0 + 10 + 2000 + 100 + groups.indexOf(g) * 200;
      const seq = seqOf(g, s);
      t.kernel(NCCL, t0 + 5, at, end - at, {
        stream: 20,
        args: { 'Collective name': 'allreduce', 'Process Group Name': g, Seq: typeof seq === 'string' ? `@@${seq}@@` : seq, 'In msg nelems': 1e6, dtype: 'Float' },
      });
      at = end;
    }
  }
  t.meta.distributedInfo = { backend: 'nccl', rank: r, world_size: 2 };
  // A sequence number given as text is written as a bare JSON number of any width.
  return rankOfText(t.toJSON().replace(/"@@(\d+)@@"/g, '$1'), `rank${r}`);
}

describe('collective timings', () => {
  it('keys collectives by process group and sequence number, so an extra group on one rank does not shift the match', () => {
    const r0 = rank(0, ['0'], 1000, (_g, s) => 10 + s);
    // Rank 1 also all-reduces in a group of its own first: matching by order would pair the wrong collectives.
    const r1 = rank(1, ['7', '0'], 1800, (g, s) => (g === '0' ? 10 + s : 100 + s));
    expect(r0.collectives.matchedBy).toBe('sequence');
    expect(r0.collectives.count).toBe(3);
    expect(r1.collectives.count).toBe(6);
    expect(collectiveKey(r0.collectives, 0)).toBe('0#allreduce#10');
    const f = diagnose([r0.metrics, r1.metrics], [r0.collectives, r1.collectives]).find((x) => x.id === 'rank-imbalance')!;
    expect(f.data.matchedCollectives).toBe(3);
    // Group 0's all-reduce takes 1100 µs on rank 0 and 200 µs on rank 1 (paired by order, 300 µs: wait 800 µs).
    expect(f.data.maxWaitNsPerStep).toBe(900_000);
    expect(f.evidence.join('\n')).toMatch(/by process group and sequence number/);
  });

  it('keeps sequence numbers wider than 2^53 exact', () => {
    const big = ['9007199254740993', '9007199254740994', '9007199254740995'];
    const r0 = rank(0, ['0'], 1000, (_g, s) => big[s]!);
    expect(r0.collectives.seqText.size).toBe(3);
    expect(Array.from({ length: 3 }, (_, k) => collectiveKey(r0.collectives, k))).toEqual(big.map((b) => `0#allreduce#${b}`));
  });

  it('leaves out collectives outside the analysed steps', () => {
    const t = new SynthTrace();
    t.step(0, 1000, 999);
    t.kernel('gemm_kernel', 1001, 1010, 500);
    t.kernel(NCCL, 1005, 1600, 300, { stream: 20, args: { 'Collective name': 'allreduce' } });
    // After the last step: the profiler's tail, not a step's.
    t.kernel(NCCL, 3000, 5000, 300, { stream: 20, args: { 'Collective name': 'allreduce' } });
    const { collectives } = rankOfText(t.toJSON());
    expect(collectives.count).toBe(1);
    expect(collectives.matchedBy).toBe('order');
    expect(collectiveKey(collectives, 0)).toBe('order#allreduce#0');
  });
});
