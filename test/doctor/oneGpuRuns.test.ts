/**
 * Runs recorded on one H100 (issue 19: shared GPUs, a rank that dies, a rank that hangs), re-diagnosed with
 * `doctor --from` from examples/doctor/runs/h100-onegpu. The truth each is checked against is in its README.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO, rediagnosed } from './helpers.js';

const RUNS = join(REPO, 'examples', 'doctor', 'runs', 'h100-onegpu');
const from = (name: string) => rediagnosed(join(RUNS, name));
/** The same script alone on the same GPU (shared_gpu_alone, README): its steady median step. */
const ALONE_MEDIAN_S = 0.0539;

describe('one H100, re-diagnosed with --from', () => {
  it('another user\'s job on the GPU: gpu-shared names it, and the steps it did not touch are the alone pace', async () => {
    const r = await from('shared_gpu_foreign');
    const f = r.findings.find((x) => x.id === 'gpu-shared');
    expect(f?.severity).toBe('high');
    expect(f?.title).toMatch(/^GPU 0 is shared: pid \d+'s steps took \d+% longer while pid \d+ python3 examples\/realworld\/ddp_torchrun.py --seconds 35 \(root\) ran work on it$/);
    const split = f?.evidence.find((e) => /while the other process\(es\) ran work/.test(e)) ?? '';
    const [, contended, alone] = /median step ([\d.]+) ms over \d+ steps while.* ([\d.]+) ms over \d+ steps while they did not/.exec(split) ?? [];
    // The steps measured alone inside the run against the same script run alone: within 25%.
    expect(Math.abs(Number(alone) / 1e3 / ALONE_MEDIAN_S - 1)).toBeLessThan(0.25);
    expect(Number(contended)).toBeGreaterThan(Number(alone) * 1.3);
    const foreign = r.gpus?.[0]?.processes?.find((p) => !p.job);
    expect(foreign?.command).toContain('--seconds 35');
    // One process, no RANK: no per-rank view, no cross-rank finding.
    expect(r.distributed).toBeUndefined();
  });

  it('two processes of one doctor run on one GPU: each one\'s slowdown, the other named (not itself), no rank findings', async () => {
    const r = await from('shared_gpu_two_procs');
    const f = r.findings.find((x) => x.id === 'gpu-shared');
    expect(f?.title).toMatch(/^GPU 0 is shared: pid (\d+)'s steps took \d+% longer while pid (?!\1)\d+ \(this run\) ran work on it$/);
    expect(f?.evidence.filter((e) => /while the other process\(es\) ran work/.test(e))).toHaveLength(2);
    // Two scripts that are not ranks of one job (no RANK, both "rank 0") are never compared as ranks.
    expect(r.findings.map((x) => x.id)).not.toContain('rank-imbalance');
    expect(r.distributed).toBeUndefined();
  });

  it('a gloo rank raises: rank 1 is the cause, rank 0\'s "Connection closed by peer" what followed', async () => {
    const r = await from('gloo_crash_rank1');
    expect(r.run.outcome).toBe('crashed');
    expect(r.run.outcomeText).toMatch(/^crashed on rank 1 in step 21: RuntimeError: rank 1: a bad batch at step 20 \(drill\).*; after it rank 0 failed in a collective once its peer was gone/);
  });

  it('a gloo rank SIGKILLed: torchrun\'s root cause names it', async () => {
    const r = await from('gloo_kill_rank1');
    expect(r.run.firstFailure).toMatchObject({ rank: 1, kind: 'killed', error: "the launcher's root cause: exit code -9 (SIGKILL)" });
  });

  it('a gloo rank hangs: rank 1 behind in its own code, rank 0 waiting in DDP\'s buffer broadcast', async () => {
    const r = await from('gloo_hang_rank1');
    expect(r.run.outcome).toBe('hung');
    const byRank = new Map((r.run.hang?.ranks ?? []).map((s) => [s.rank, s]));
    expect(byRank.get(0)?.inCollective).toBe(true);
    expect(byRank.get(1)?.inCollective).toBe(false);
    expect(r.run.hang?.behindRanks).toEqual([1]);
    expect(byRank.get(1)?.stack.at(-1)).toMatch(/ddp_torchrun\.py:\d+ _drills$/);
  });
});
