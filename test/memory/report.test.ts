import { describe, expect, it } from 'vitest';
import { diffSnapshots } from '../../src/memory/diff.js';
import { analyze } from '../../src/memory/report.js';
import { liveAt } from '../../src/memory/replay.js';
import { MiB, analyzeFixture, loadSnapshot, truth } from './helpers.js';

const bytesOf = (cats: { category: string; bytes: number }[], c: string): number => cats.find((x) => x.category === c)?.bytes ?? 0;

describe('real snapshot: GPT-2 124M, bf16 autocast, AdamW, 4 steps on an H200', () => {
  const { report, replay } = analyzeFixture('memory_snapshot.pickle.gz');
  const meta = truth('memory_snapshot.meta.json') as { peak_alloc: number; peak_reserved: number };

  it('matches torch.cuda.max_memory_allocated() and max_memory_reserved() to the byte', () => {
    expect(report.totals.peakAllocatedBytes).toBe(meta.peak_alloc);
    expect(report.totals.peakReservedBytes).toBe(meta.peak_reserved);
  });

  it('replays block sizes that agree with every block of the final state', () => {
    expect(report.history.blockSizes.simulated).toBe(true);
    expect(report.history.blockSizes.checked).toBeGreaterThan(100);
    expect(report.history.blockSizes.matched).toBe(report.history.blockSizes.checked);
    expect(report.history.complete).toBe(true);
  });

  it('final totals are the sums over the final segments', () => {
    const snap = loadSnapshot('memory_snapshot.pickle.gz');
    let reserved = 0;
    let allocated = 0;
    let requested = 0;
    for (const s of snap.segments) {
      reserved += s.totalBytes;
      for (const b of s.blocks) {
        if (b.state === 'active_allocated') {
          allocated += b.sizeBytes;
          requested += b.requestedBytes;
        }
      }
    }
    expect(report.totals.finalReservedBytes).toBe(reserved);
    expect(report.totals.finalAllocatedBytes).toBe(allocated);
    expect(report.totals.finalRoundingWasteBytes).toBe(allocated - requested);
    // The replayed curve ends where the final state is.
    expect(replay.allocatedBytes[replay.trace.length - 1]).toBe(allocated);
    expect(replay.reservedBytes[replay.trace.length - 1]).toBe(reserved);
  });

  it('the live set at the peak adds up to the peak, and activations dominate it', () => {
    expect(report.peak.bytes).toBe(report.totals.peakAllocatedBytes);
    expect(report.peak.byCategory.reduce((s, c) => s + c.bytes, 0)).toBe(report.peak.bytes);
    expect(report.peak.byCategory[0]!.category).toBe('activations');
    // The peak is in backward: gradients of the loss are the autograd temporaries.
    expect(bytesOf(report.peak.byCategory, 'autograd_temporaries')).toBeGreaterThan(1024 * MiB);
  });

  it('finds AdamW state at twice the fp32 parameters (124M parameters, ~475 MiB)', () => {
    const params = bytesOf(report.final.byCategory, 'parameters');
    const state = bytesOf(report.final.byCategory, 'optimizer_state');
    expect(params).toBeGreaterThan(124e6 * 4 * 0.99);
    expect(params).toBeLessThan(124e6 * 4 * 1.05);
    expect(state / params).toBeGreaterThan(1.98);
    expect(state / params).toBeLessThan(2.05);
  });

  it('keeps the timeline small and its peak marked', () => {
    const tl = report.timeline;
    expect(tl.tUs.length).toBeLessThanOrEqual(1000);
    expect(tl.allocatedBytes[tl.peakPoint]).toBe(report.totals.peakAllocatedBytes);
    expect(Math.max(...tl.reservedBytes)).toBe(report.totals.peakReservedBytes);
    expect(tl.tUs[tl.tUs.length - 1]).toBe(report.history.durationUs);
  });

  it('raises no high-severity finding on a healthy run', () => {
    expect(report.oom).toBeNull();
    expect(report.findings.filter((f) => f.severity === 'high')).toEqual([]);
  });
});

describe('synthetic snapshots with a known truth', () => {
  it('reports the categories and peaks the producing allocator model recorded', () => {
    const t = truth('train_p4.truth.json');
    const { report } = analyzeFixture('train_p4.pickle');
    expect(report.totals.peakAllocatedBytes).toBe(t.maxAllocatedBytes);
    expect(report.totals.finalReservedBytes).toBe(t.finalReservedBytes);
    expect(bytesOf(report.final.byCategory, 'parameters')).toBe(t.parameters);
    expect(bytesOf(report.final.byCategory, 'gradients')).toBe(t.gradients);
    expect(bytesOf(report.final.byCategory, 'optimizer_state')).toBe(t.optimizer_state);
    expect(report.findings).toEqual([]);
  });

  it('gives the same report for every pickle protocol', () => {
    const reports = [2, 3, 4, 5].map((p) => {
      const r = analyzeFixture(`train_p${p}.pickle`).report;
      return { ...r, input: null };
    });
    for (const r of reports.slice(1)) expect(r).toEqual(reports[0]);
  });

  it('reads the legacy bare list of segments with history blocks', () => {
    const legacy = analyzeFixture('legacy.pickle').report;
    const modern = analyzeFixture('train_p4.pickle').report;
    expect(legacy.input.legacy).toBe(true);
    expect(legacy.totals.finalAllocatedBytes).toBe(modern.totals.finalAllocatedBytes);
    expect(legacy.totals.finalReservedBytes).toBe(modern.totals.finalReservedBytes);
    expect(bytesOf(legacy.final.byCategory, 'parameters')).toBe(bytesOf(modern.final.byCategory, 'parameters'));
    expect(legacy.warnings.join(' ')).toMatch(/no allocator history/);
  });

  it('counts a block waiting for its stream as active, not allocated (both state spellings)', () => {
    const { report } = analyzeFixture('bigaddr_p5.pickle');
    expect(report.totals.finalActiveBytes).toBeGreaterThan(report.totals.finalAllocatedBytes);
    expect(report.warnings).toEqual([]);
  });

  it('explains an OOM in the forward pass by activations, with the batch that fits', () => {
    const t = truth('oom_activations.truth.json');
    const batch = t.batch as number;
    const { report } = analyzeFixture('oom_activations.pickle.gz', batch);
    const oom = report.oom!;
    expect(oom.requestedBytes).toBe(t.requestedBytes);
    expect(oom.phase).toBe('forward');
    expect(oom.deviceFreeBytes! + oom.reservedBytes).toBe(t.cap);
    expect(oom.live.byCategory[0]!.category).toBe('activations');
    const f = report.findings[0]!;
    expect(f.id).toBe('oom-activations');
    expect(f.severity).toBe('high');
    const fits = f.data.batchThatFits as number;
    const perSample = f.data.perSampleActivationBytes as number;
    expect(fits).toBeLessThan(batch);
    expect(fits).toBeGreaterThan(0);
    // What fits leaves the non-activation memory room within what the process could reach.
    const other = oom.allocatedBytes - bytesOf(oom.live.byCategory, 'activations');
    expect(fits * perSample + other).toBeLessThanOrEqual(t.cap as number);
    expect((fits + 1) * perSample + other).toBeGreaterThan(t.cap as number);
    expect(report.findings.map((x) => x.id)).not.toContain('forward-without-backward');
  });

  // A notebook cell on an H100 (examples/notebook, cell 4): 64 GiB tensors kept in a list until the next one failed,
  // beside a small model's optimizer state (1 MiB). The finding used to say "optimizer state hold the most".
  it('names the tensors your code keeps when they hold most of what is live, not the largest known category', () => {
    const { report } = analyzeFixture('notebook_oom_h100.pickle.gz');
    const f = report.findings[0]!;
    expect(report.oom!.requestedBytes).toBe(64 * 1024 * MiB);
    expect(f.id).toBe('oom-other');
    expect(f.title).toMatch(/tensors made outside forward, backward and the optimizer \(your code's\) hold the most$/);
    expect(f.title).not.toMatch(/optimizer state hold/);
  });

  it('without --batch the activation finding asks for it instead of guessing', () => {
    const f = analyzeFixture('oom_activations.pickle.gz').report.findings[0]!;
    expect(f.data.batchThatFits).toBeUndefined();
    expect(f.recommendation.summary).toMatch(/--batch/);
  });

  it('explains an OOM blocked by fragmentation with expandable segments', () => {
    const t = truth('oom_fragmentation.truth.json');
    const { report } = analyzeFixture('oom_fragmentation.pickle.gz');
    const oom = report.oom!;
    expect(oom.requestedBytes).toBe(t.requestedBytes);
    expect(oom.largestFreeBlockBytes!).toBeLessThan(oom.requestedBytes);
    expect(oom.reservedUnallocatedBytes).toBeGreaterThan(oom.requestedBytes);
    expect(report.findings[0]!.id).toBe('oom-fragmentation');
    expect(report.findings[0]!.recommendation.code).toContain('expandable_segments:True');
  });

  it('sees a per-process cap when the device had more free than the request', () => {
    const { report } = analyzeFixture('oom_fragmentation_capped.pickle.gz');
    const f = report.findings[0]!;
    expect(report.oom!.deviceFreeBytes!).toBeGreaterThan(report.oom!.requestedBytes);
    expect(f.data.capped).toBe(true);
    expect(f.id).toBe('oom-fragmentation');
    expect(f.evidence.join(' ')).toMatch(/set_per_process_memory_fraction/);
    // Without the cap the same history is read as a device that ran out.
    expect(analyzeFixture('oom_fragmentation.pickle.gz').report.findings[0]!.data.capped).toBe(false);
  });

  it('finds tensors kept across steps and names the line', () => {
    const t = truth('leak_step6.truth.json');
    const { report } = analyzeFixture('leak_step6.pickle');
    const f = report.findings.find((x) => x.id === 'kept-across-steps')!;
    expect(f).toBeDefined();
    expect(f.evidence.join('\n')).toContain(t.source as string);
  });

  it('finds forward passes kept alive without backward (evaluation under autograd)', () => {
    const { report } = analyzeFixture('eval_graphs.pickle');
    const f = report.findings.find((x) => x.id === 'forward-without-backward')!;
    expect(f.data.forwardPasses).toBe(4);
    expect(f.recommendation.code).toContain('inference_mode');
  });

  // A DCGAN on an H200 (examples/levers/gan_fakedata.py, the window of its doctor run): the peak falls in the backward
  // of D(G(z).detach()) while G's graph waits for the generator's own backward. Both passes have their backward, so
  // neither is a kept graph; the rule used to say "5 forward passes ... no backward between them".
  it('does not call a forward pass kept for a later backward a kept graph (a GAN)', () => {
    const { report } = analyzeFixture('gan_dcgan_h200.pickle.gz');
    expect(report.totals.peakAllocatedBytes).toBeGreaterThan(200 * MiB);
    expect(report.findings.map((x) => x.id)).not.toContain('forward-without-backward');
  });

  it('diff shows what grew, by category and source line', () => {
    const t = truth('leak_step6.truth.json');
    const d = diffSnapshots(analyzeFixture('leak_step2.pickle'), analyzeFixture('leak_step6.pickle'));
    expect(d.final.totalB - d.final.totalA).toBe(4 * (t.keptPerStepBytes as number));
    expect(d.final.bySource[0]!.key).toBe(t.source);
    expect(d.final.bySource[0]!.deltaBytes).toBe(4 * 32 * MiB);
    expect(d.final.byCategory.find((r) => r.key === 'parameters')!.deltaBytes).toBe(0);
  });

  it('liveAt(-1) is the state before the history', () => {
    const an = analyze(loadSnapshot('train_p4.pickle'), { path: 'x' });
    expect(liveAt(an.replay, -1)).toEqual([]);
  });
});
