/** The tune report: exit status, notes, and the terminal text, on trials simulated from H200 measurements. */
import { describe, expect, it } from 'vitest';
import { conclude } from '../../src/tune/predict.js';
import { type TuneTrial, buildTuneReport, renderTuneText } from '../../src/tune/report.js';
import { renderTuneMarkdown, tuneAnswer } from '../../src/tune/markdown.js';
import { CARDS, measuredCurves, runSearch, simulateTrial } from './simulate.js';

const space = { name: 'batch_size', lo: 1, hi: 1024, start: 4, multipleOf: 1, maxTrials: 3 };
const gpt2 = measuredCurves().find((c) => c.id === 'gpt2 amp_bf16 adamw');
const card = CARDS[2] as (typeof CARDS)[number];

function report(nvml: boolean, edit: (t: TuneTrial[]) => TuneTrial[] = (t) => t, interrupted = false) {
  if (!gpt2) throw new Error('no GPT-2 curve');
  const r = runSearch(space, (b) => simulateTrial(gpt2, card, { fragmentation: 1.03, nvml }, b));
  const trials = edit(
    r.trials.map((t, i) => ({
      ...t,
      index: i + 1,
      kind: 'search' as const,
      reason: 'r',
      command: ['python', 't.py'],
      runDir: `/runs/${i}`,
    })),
  );
  return buildTuneReport({
    version: '0',
    space,
    stepsPerTrial: 8,
    margin: 0.1,
    maxTrials: 3,
    outDir: '/runs',
    trials,
    stopReason: 'done',
    result: conclude(space, trials, 0.1),
    interrupted,
  });
}

describe('tune report', () => {
  it('renders the trials, the memory line, the three answers', () => {
    const rep = report(true);
    expect(rep).toMatchObject({
      schemaVersion: 1,
      command: 'tune',
      exitCode: 0,
      memoryFigures: true,
      throughputUnit: 'samples/s',
      searchTrials: 3,
    });
    const text = renderTuneText(rep);
    expect(text).toContain('gpuwise tune: batch_size in 1..1024 on NVIDIA H100 80GB HBM3 (79.6 GiB), 8 steps per trial');
    expect(text).toMatch(/ {2}# {2}batch_size {2}outcome {2}peak alloc {2}peak reserved +step {2}samples\/s {2}tokens\/s\n/);
    expect(text).toMatch(/Memory: peak allocated = 1\.\d\d GiB \+ 1\.3\d GiB x batch_size \(from the trials at \d+ and \d+\)/);
    expect(text).toContain('(measured by NVML)');
    expect(text).toContain(`Largest that fits: batch_size=${rep.result.largestOk} (verified`);
    expect(text).toMatch(/Recommended: batch_size=\d+ \(leaves 10% of the GPU memory free: about [\d.]+ GiB of 79\.6 GiB in use\)/);
    expect(text).toMatch(/Goldilocks: batch_size=\d+/);
  });

  it('exit status: 1 when nothing fits or a trial failed, 130 when interrupted; notes say what was assumed', () => {
    expect(report(false).notes.join('\n')).toContain('not measured (no NVML per-process figures): 742 MiB assumed');
    expect(report(true, (ts) => ts.map((t) => ({ ...t, outcome: 'oom' as const }))).exitCode).toBe(1);
    expect(report(true, (ts) => [...ts, { ...(ts[0] as TuneTrial), index: 4, outcome: 'failed' as const }]).exitCode).toBe(1);
    expect(report(true, (t) => t, true).exitCode).toBe(130);
    const retries = report(true, (ts) => ts.map((t, i) => (i === 1 ? { ...t, allocRetries: 3 } : t)));
    expect(retries.notes.join('\n')).toMatch(/trial 2 \(batch_size=\d+\): the allocator had to free its cache 3 time\(s\) to fit/);
  });
});

describe("docs/tune.md's simulated report", () => {
  it('is what renderTuneText prints for these simulated trials (issue 47 item 8: every quoted output generated and tested)', async () => {
    const { readFileSync } = await import('node:fs');
    const { join } = await import('node:path');
    const doc = readFileSync(join(__dirname, '..', '..', 'docs', 'tune.md'), 'utf8');
    const start = doc.indexOf('```\ngpuwise tune: batch_size in 1..1024 on NVIDIA H100');
    expect(start, 'docs/tune.md quotes the simulated H100 report').toBeGreaterThan(0);
    const quoted = doc.slice(start + 4, doc.indexOf('\n```', start + 4));
    expect(quoted).toBe(renderTuneText(report(true)).replace(/\n+$/, ''));
  });
});

describe('what tune says it verified, and its margin (issue 47 item 5)', () => {
  const sp = { name: 'batch_size', lo: 1, hi: 40, start: 4, multipleOf: 1, maxTrials: 3 };
  const trial = (index: number, value: number, outcome: 'ok' | 'oom' = 'ok'): TuneTrial => ({
    value,
    outcome,
    detail: outcome === 'ok' ? 'OK (8 steps)' : 'out of memory on rank 0 in step 1',
    ranks: 1,
    steps: outcome === 'ok' ? 8 : 0,
    peakAllocatedBytes: null,
    peakReservedBytes: null,
    peakFromFirstStep: false,
    allocRetries: null,
    nonAllocatorBytes: null,
    deviceTotalBytes: null,
    deviceName: null,
    worldSize: 1,
    stepTimeS: outcome === 'ok' ? 0.001 * value : null,
    stepTimeFrom: outcome === 'ok' ? 'host' : null,
    samplesPerS: outcome === 'ok' ? 1000 + value : null,
    tokensPerS: null,
    samplesPerStep: outcome === 'ok' ? value : null,
    seqLen: null,
    recoveredOom: false,
    model: null,
    index,
    kind: 'search',
    reason: 'r',
    command: ['python', 't.py'],
    runDir: `/runs/${index}`,
  });
  const rep = (trials: TuneTrial[], stopReason: string) =>
    buildTuneReport({ version: '0', space: sp, stepsPerTrial: 8, margin: 0.1, maxTrials: 3, outDir: '/runs', trials, stopReason, result: conclude(sp, trials, 0.1), interrupted: false });

  it('--max-trials 3 stopped at 22 of 1..40 with nothing above it tried: "largest tried", never "verified"', () => {
    const r = rep([trial(1, 4), trial(2, 12), trial(3, 22)], '3 trials used (--max-trials)');
    expect(r.result.verified).toBeNull();
    const text = renderTuneText(r);
    expect(text).toContain('Largest tried: batch_size=22 (nothing above it tried: --max-trials)\n');
    expect(text).not.toMatch(/verified|Largest that fits/);
    const md = renderTuneMarkdown(r);
    expect(md).toContain('**Largest tried: batch_size=22 (nothing above it tried: --max-trials)**');
    expect(md).not.toMatch(/verified|Largest that fits/);
  });

  it('verified when a value above it ran out of memory, or the upper limit ran', () => {
    const oom = rep([trial(1, 4), trial(2, 22), trial(3, 30, 'oom')], '3 trials used (--max-trials)');
    expect(oom.result.verified).toBe('oom');
    expect(renderTuneText(oom)).toContain('Largest that fits: batch_size=22 (verified; 30 ran out of memory)\n');
    const top = rep([trial(1, 4), trial(2, 40)], 'the upper limit fits');
    expect(top.result.verified).toBe('limit');
    expect(renderTuneText(top)).toContain('Largest that fits: batch_size=40 (verified: the upper limit, 40)\n');
    expect(tuneAnswer(top)[0]).toBe('Largest that fits: batch_size=40 (verified: the upper limit, 40)');
  });

  it('without memory figures, --md and the page recommend no margin', () => {
    const r = rep([trial(1, 4), trial(2, 22), trial(3, 30, 'oom')], '3 trials used (--max-trials)');
    const md = renderTuneMarkdown(r);
    expect(md).not.toMatch(/Recommended: batch_size=\d+|leaves 10% of the GPU memory free/);
    expect(md).toContain('Recommended: no margin: the trials measured no memory figures to apply 10% to');
    expect(tuneAnswer(r).join('\n')).not.toMatch(/leaves 10%/);
    expect(renderTuneText(r)).not.toMatch(/Recommended: batch_size=/);
  });
});
