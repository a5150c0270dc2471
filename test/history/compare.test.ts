/** `gpuwise compare` (pure): the figures, the findings and the wording of what changed between two runs. */
import { describe, expect, it } from 'vitest';
import { doctorInput } from '../doctor/input.js';
import type { ProbeRecord, StepRecord } from '../../src/run/records.js';
import type { DoctorInput } from '../../src/doctor/reportTypes.js';
import type { FindingId } from '../../src/findings/ids.js';
import { buildDoctorReport } from '../../src/doctor/report.js';
import { commandChanges, compareFindings, compareRuns } from '../../src/history/compare.js';
import { runFigures } from '../../src/history/figures.js';
import { renderComparisonMarkdown, renderComparisonText, renderRunsTable, shortCommand, timeChangeText } from '../../src/history/render.js';

function step(pid: number, n: number, stepTimeS: number, dataWaitS: number, extra: Partial<StepRecord> = {}): StepRecord {
  return { v: 1, type: 'step', pid, rank: null, t: n, step: n, stepTimeS, dataWaitS, batches: 1, samples: 32, memory: null, profiled: false, ...extra };
}

function hello(pid: number, torch: string, worldSize: number | null, rank: number | null = null): ProbeRecord {
  return {
    v: 1,
    type: 'hello',
    pid,
    rank,
    t: 0,
    probeVersion: '0.2',
    python: '3.11.2',
    torch,
    cudnn: null,
    cuda: { available: true, initialized: true, version: '12.4', devices: [{ index: 0, name: 'NVIDIA H100', totalMemoryBytes: 80 * 1024 ** 3, capability: '9.0' }], currentDevice: 0 },
    hostname: 'h',
    argv: ['train.py'],
    localRank: rank,
    worldSize,
    stepHook: 'optimizer-step-post-hook',
    profileAt: 10,
    profileSteps: 5,
    maxSteps: null,
  } as ProbeRecord;
}

const mem = (reservedGiB: number) => ({
  device: 0,
  allocatedBytes: reservedGiB * 0.8 * 1024 ** 3,
  reservedBytes: reservedGiB * 1024 ** 3,
  peakAllocatedBytes: reservedGiB * 0.9 * 1024 ** 3,
  peakReservedBytes: reservedGiB * 1024 ** 3,
  allocRetries: 0,
  ooms: 0,
});

function report(records: ProbeRecord[], command: string[], over: Partial<DoctorInput> = {}) {
  const at = (min: number) => Date.UTC(2026, 10, 21, 7, min, 0);
  return buildDoctorReport(doctorInput(records, { command, startedAtMs: at(0), endedAtMs: at(1), gpuUnavailableReason: null, ...over }));
}

// Before: a DataLoader-bound loop (step 412 ms, of which 241 ms waiting); after: the wait gone.
const before = report(
  [hello(1, '2.3.1', null), ...[1, 2, 3, 4, 5, 6].map((i) => step(1, i, 0.412, 0.241, { memory: mem(30) }))],
  ['python', 'train.py', '--workers', '0', '--lr', '3e-4'],
);
const after = report(
  [hello(2, '2.4.0', null), ...[1, 2, 3, 4, 5, 6].map((i) => step(2, i, 0.171, 0.001, { memory: mem(22) }))],
  ['python', 'train.py', '--workers', '8', '--lr', '3e-4'],
);

describe('compareRuns', () => {
  const c = compareRuns({ label: 'A', id: 'a1', report: before }, { label: 'B', id: null, report: after });

  it('step time, throughput, DataLoader wait and memory before and after, with the relative change', () => {
    expect(c).toMatchObject({ schemaVersion: 1, tool: 'gpuwise', command: 'compare', outcomeChanged: false });
    expect(c.stepTime.medianS.before).toBeCloseTo(0.412, 12);
    expect(c.stepTime.medianS.after).toBeCloseTo(0.171, 12);
    expect(c.stepTime.medianS.change).toBeCloseTo(0.171 / 0.412 - 1, 12);
    expect(c.throughput.samplesPerS.before).toBeCloseTo(32 / 0.412, 9);
    expect(c.throughput.samplesPerS.change).toBeCloseTo(0.412 / 0.171 - 1, 9);
    expect(c.throughput.tokensPerS).toEqual({ before: null, after: null, change: null });
    expect(c.dataWaitShare.before).toBeCloseTo(0.241 / 0.412, 9);
    expect(c.memory.peakReservedBytes).toMatchObject({ before: 30 * 1024 ** 3, after: 22 * 1024 ** 3 });
  });

  it('findings by id: the DataLoader finding is gone', () => {
    expect(before.findings.map((f) => f.id)).toEqual(['dataloader-bound']);
    expect(after.findings).toEqual([]);
    expect(c.findings).toEqual([{ id: 'dataloader-bound', status: 'gone', before: expect.objectContaining({ severity: 'high' }), after: null }]);
  });

  it('the environment and the command arguments that differ, only those', () => {
    expect(c.environment).toEqual([{ field: 'torch', before: '2.3.1', after: '2.4.0' }]);
    expect(c.commandChanges).toEqual([{ before: ['--workers', '0'], after: ['--workers', '8'] }]);
  });

  it('says it the way a person reads it', () => {
    const text = renderComparisonText(c);
    expect(text).toContain('  median step 412 ms -> 171 ms (-58%, 2.4x faster)\n');
    expect(text).toContain('  samples/s 77.7 -> 187 (+141%)\n');
    expect(text).toContain('  DataLoader wait 58% -> 0.6% of step time (-58 points)\n');
    expect(text).toContain('  peak reserved 30.0 GiB -> 22.0 GiB (-27%)\n');
    expect(text).toMatch(/ {2}gone: HIGH dataloader-bound: The training loop waits on the DataLoader \(was about 58% of the step\)\n/);
    expect(text).toContain('  torch: 2.3.1 -> 2.4.0\n');
    expect(text).toContain('  command: --workers 0 -> --workers 8\n');
    const md = renderComparisonMarkdown(c);
    expect(md).toContain('- median step 412 ms → 171 ms (-58%, 2.4x faster)');
    expect(md).toContain('- command: `--workers 0` → `--workers 8`');
    // And the other way round: slower.
    expect(timeChangeText('median step', { before: 0.1, after: 0.12, change: 0.2 })).toBe('median step 100 ms -> 120 ms (+20%, 1.2x slower)');
  });

  it('an out-of-memory run after a change of batch size: the outcome changes', () => {
    const oom: ProbeRecord = { v: 1, type: 'exception', pid: 3, rank: null, t: 0, step: 2, exception: 'OutOfMemoryError', message: 'CUDA out of memory.', outOfMemory: true };
    const crashed = report([hello(3, '2.3.1', null), step(3, 1, 0.5, 0), step(3, 2, 0.5, 0), oom], ['python', 'train.py', '--batch', '64'], {
      exit: { code: 1, signal: null },
    });
    const cc = compareRuns({ label: 'A', id: null, report: before }, { label: 'B', id: null, report: crashed });
    expect(cc.outcomeChanged).toBe(true);
    expect(renderComparisonText(cc)).toContain('completed -> out-of-memory (ran out of GPU memory on rank 0 in step 3 (exit code 1))');
  });
});

describe('compare says what the two runs have in common before any ratio (issue 47 item 5)', () => {
  const runOf = (pid: number, samples: number, stepS: number, command: string[], gpu = 'NVIDIA H100') => {
    const h = hello(pid, '2.4.0', null);
    (h as { cuda: { devices: { name: string }[] } }).cuda.devices[0]!.name = gpu;
    return report([h, ...[1, 2, 3, 4, 5, 6].map((i) => step(pid, i, stepS, 0, { samples }))], command);
  };
  const headline = (text: string) => text.split('\n\n')[1] ?? '';

  it('a change of batch: the headline compares samples/s, the step time per batch second, no "slower"', () => {
    // Batch 16 at 20 ms (800 samples/s) -> batch 256 at 73.2 ms (3,497 samples/s: +337%): each step 3.7x longer.
    const c = compareRuns(
      { label: 'A', id: null, report: runOf(1, 16, 0.02, ['python', 'train.py', '--batch', '16']) },
      { label: 'B', id: null, report: runOf(2, 256, 0.0732, ['python', 'train.py', '--batch', '256']) },
    );
    expect(c.basis.samplesPerStep).toEqual({ before: 16, after: 256 });
    expect(c.basis.measure).toBe('samples/s');
    const text = renderComparisonText(c);
    const head = headline(text);
    expect(head).toMatch(/^In short\n {2}batch 16 -> 256 samples per step: compared by throughput\n {2}samples\/s 800 -> 3,497 \(\+337%\)\n {2}step time per batch 20\.0 ms -> 73\.2 ms \(\+266%\), for 16x the samples per step$/);
    expect(text).not.toMatch(/slower/);
    expect(text).toContain('  median step 20.0 ms -> 73.2 ms (+266%, per step of 256 samples vs 16)\n');
  });

  it('different scripts on different GPUs: said before any ratio', () => {
    const c = compareRuns(
      { label: 'A', id: null, report: runOf(1, 32, 0.412, ['python', 'train.py'], 'NVIDIA H100 80GB HBM3') },
      { label: 'B', id: null, report: runOf(2, 32, 0.147, ['python', 'bench/other.py'], 'NVIDIA H200') },
    );
    expect(c.basis.scripts).toEqual({ before: 'train.py', after: 'other.py' });
    expect(c.basis.gpus).toEqual({ before: 'H100 80GB HBM3', after: 'H200' });
    const head = headline(renderComparisonText(c));
    expect(head.split('\n').slice(0, 3)).toEqual([
      'In short',
      '  different scripts: train.py vs other.py; different GPUs: H100 80GB HBM3 vs H200: two setups, not one change',
      '  median step 412 ms -> 147 ms (-64%, 2.8x faster)',
    ]);
    expect(renderComparisonMarkdown(c)).toContain('- different scripts: `train.py` vs `other.py`; different GPUs: H100 80GB HBM3 vs H200: two setups, not one change');
  });

  it('one script, one GPU, one batch: the median step leads', () => {
    const c = compareRuns({ label: 'A', id: null, report: before }, { label: 'B', id: null, report: after });
    expect(c.basis).toMatchObject({ scripts: null, gpus: null, samplesPerStep: null, measure: 'step' });
    expect(headline(renderComparisonText(c))).toBe('In short\n  median step 412 ms -> 171 ms (-58%, 2.4x faster)');
  });
});

describe('figures of multi-rank runs', () => {
  it('the slowest rank sets the step time, throughput adds up over ranks', () => {
    const rank = (pid: number, r: number, s: number) => [hello(pid, '2.3.1', 2, r), ...[1, 2, 3].map((i) => ({ ...step(pid, i, s, 0), rank: r }))];
    const f = runFigures(report([...rank(10, 0, 0.1), ...rank(11, 1, 0.2)], ['torchrun', 'train.py']));
    expect(f.trainingRanks).toBe(2);
    expect(f.medianStepS).toBeCloseTo(0.2, 12);
    expect(f.samplesPerS).toBeCloseTo(32 / 0.1 + 32 / 0.2, 9);
    expect(f.worldSize).toBe(2);
    expect(f.gpuNames).toEqual(['NVIDIA H100']);
  });
});

describe('compare pieces', () => {
  it('command changes keep the flag they belong to', () => {
    expect(commandChanges(['python', 't.py', '--loader-delay-ms', '20', '--steps', '10'], ['python', 't.py', '--loader-delay-ms', '0', '--steps', '10'])).toEqual([
      { before: ['--loader-delay-ms', '20'], after: ['--loader-delay-ms', '0'] },
    ]);
    expect(commandChanges(['python', 't.py'], ['python', 't.py', '--amp'])).toEqual([{ before: [], after: ['--amp'] }]);
    expect(commandChanges(['a'], ['a'])).toEqual([]);
  });

  it('findings: new, changed severity and gain, unchanged', () => {
    const f = (id: FindingId, severity: 'high' | 'medium' | 'low', saved: number) => ({
      id,
      severity,
      title: id,
      ranks: [0],
      evidence: [],
      data: {},
      recommendation: { summary: '', code: '' },
      estimatedGain: { stepTimeNs: 1e8, expectedStepTimeNs: 1e8 * (1 - saved), savedFraction: saved, arithmetic: '' },
      source: 'trace' as const,
    });
    const out = compareFindings([f('host-sync', 'medium', 0.12), f('launch-bound', 'low', 0.03)], [f('host-sync', 'low', 0.04), f('launch-bound', 'low', 0.03), f('no-tensor-cores', 'high', 0.4)]);
    expect(out.map((x) => [x.id, x.status])).toEqual([
      ['no-tensor-cores', 'new'],
      ['host-sync', 'changed'],
      ['launch-bound', 'unchanged'],
    ]);
    const text = renderComparisonText(compareRuns({ label: 'A', id: null, report: { ...before, findings: [f('host-sync', 'medium', 0.12)] } }, { label: 'B', id: null, report: { ...after, findings: [f('host-sync', 'low', 0.04)] } }));
    expect(text).toContain('changed: host-sync: medium -> low, about 12% of the step -> about 4.0% of the step');
  });

  it('the runs table: newest first as given, paths shortened, one line each', () => {
    expect(shortCommand(['/usr/bin/python3', '/home/me/project/train.py', '--lr=3e-4'])).toBe('python3 train.py --lr=3e-4');
    const row = {
      id: '261121-070000-abc',
      startedAtMs: Date.UTC(2026, 10, 21, 7, 0, 0),
      command: ['python', 'train.py'],
      outcome: 'completed',
      medianStepS: 0.171,
      samplesPerS: 187.1,
      tokensPerS: null,
      peakReservedBytes: 22 * 1024 ** 3,
      maxProcessNvmlBytes: null,
      findings: { high: 1, medium: 2, low: 0, info: 0 },
    };
    const lines = renderRunsTable([row], '/s/runs.sqlite').split('\n');
    expect(lines[0]).toMatch(/^id +when +outcome +command +median step +throughput +peak memory +findings$/);
    expect(lines[1]).toMatch(/^261121-070000-abc +2026-11-2\d \d\d:\d\d +completed +python train.py +171 ms +187 samples\/s +22\.0 GiB rsv +1 high, 2 medium$/);
    expect(renderRunsTable([], '/s/runs.sqlite')).toContain('No runs in /s/runs.sqlite yet');
  });
});
