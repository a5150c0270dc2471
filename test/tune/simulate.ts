/**
 * A simulated trial runner for the search's tests: GPU memory as measured on an H200 (test/fixtures/planner/
 * memory-calibration.jsonl: peak allocated, reserved and NVML figures against the batch for GPT-2, BERT-base and
 * ResNet-50), continued linearly beyond the measured batches, on a card of a given size. What ran out of memory is
 * decided by a "truth" the search does not see: the allocator needs `fragmentation` x the peak allocated.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { conclude, decideNext, type SearchSpace, type TuneResult } from '../../src/tune/predict.js';
import { type TuneReport, type TuneTrial, buildTuneReport } from '../../src/tune/report.js';
import type { TrialSummary } from '../../src/tune/trial.js';
import { REPO } from '../doctor/helpers.js';

interface Row {
  model: string;
  seq: number | null;
  batch: number;
  prec: string;
  opt: string;
  ckpt: boolean;
  params: number;
  mem_model: number;
  peak_alloc_step: number;
  peak_reserved: number;
  nvml_proc_used: number;
  step_s: number;
}

export interface Curve {
  id: string;
  model: string;
  seq: number | null;
  prec: string;
  opt: string;
  ckpt: boolean;
  params: number;
  weightBytes: number;
  points: { batch: number; alloc: number; reserved: number; nonAlloc: number; stepS: number }[];
}

/** Every model/precision/optimizer/checkpointing combination measured at two batches or more. */
export function measuredCurves(): Curve[] {
  const rows = readFileSync(join(REPO, 'test', 'fixtures', 'planner', 'memory-calibration.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as Row);
  const by = new Map<string, Row[]>();
  for (const r of rows) {
    const id = `${r.model} ${r.prec} ${r.opt}${r.ckpt ? ' ckpt' : ''}`;
    by.set(id, [...(by.get(id) ?? []), r]);
  }
  return [...by.entries()]
    .filter(([, rs]) => rs.length >= 2)
    .map(([id, rs]) => {
      rs.sort((a, b) => a.batch - b.batch);
      const r0 = rs[0] as Row;
      return {
        id,
        model: r0.model,
        seq: r0.seq,
        prec: r0.prec,
        opt: r0.opt,
        ckpt: r0.ckpt,
        params: r0.params,
        weightBytes: r0.mem_model,
        points: rs.map((r) => ({
          batch: r.batch,
          alloc: r.peak_alloc_step,
          reserved: r.peak_reserved,
          nonAlloc: r.nvml_proc_used - r.peak_reserved,
          stepS: r.step_s,
        })),
      };
    });
}

/** Piecewise-linear through the measured points, continued with the nearest segment's slope. */
function interp(pts: { batch: number }[], get: (i: number) => number, b: number): number {
  let i = 0;
  while (i < pts.length - 2 && b > (pts[i + 1] as { batch: number }).batch) i++;
  const [a, c] = [pts[i] as { batch: number }, pts[i + 1] as { batch: number }];
  const slope = (get(i + 1) - get(i)) / (c.batch - a.batch);
  return get(i) + slope * (b - a.batch);
}

export function allocAt(c: Curve, b: number): number {
  return interp(c.points, (i) => (c.points[i] as Curve['points'][0]).alloc, b);
}

export interface Card {
  name: string;
  totalBytes: number;
}
const MiB = 1024 ** 2;
export const CARDS: Card[] = [
  { name: 'NVIDIA L4', totalBytes: 23_034 * MiB },
  { name: 'NVIDIA A100-SXM4-40GB', totalBytes: 40_536 * MiB },
  { name: 'NVIDIA H100 80GB HBM3', totalBytes: 81_559 * MiB },
  { name: 'NVIDIA H200', totalBytes: 143_771 * MiB },
];

export interface Truth {
  /** The allocator needs this many bytes per byte allocated at the peak. */
  fragmentation: number;
  /** NVML per-process memory is readable (else the search uses the calibration constant). */
  nvml: boolean;
}

const GPT2_CONFIG = JSON.parse(readFileSync(join(REPO, 'test', 'fixtures', 'planner', 'configs', 'gpt2', 'config.json'), 'utf8'));
const BERT_CONFIG = JSON.parse(readFileSync(join(REPO, 'test', 'fixtures', 'planner', 'configs', 'bert-base', 'config.json'), 'utf8'));

export function fits(c: Curve, card: Card, truth: Truth, b: number): boolean {
  const nonAlloc = c.points[c.points.length - 1]?.nonAlloc ?? 0;
  return allocAt(c, b) * truth.fragmentation + nonAlloc <= card.totalBytes;
}

/** The true largest batch: memory grows with the batch, so the last that fits going up. */
export function trueLargest(c: Curve, card: Card, truth: Truth, hi: number): number {
  let lo = 0;
  let top = hi + 1;
  while (top - lo > 1) {
    const mid = Math.floor((lo + top) / 2);
    if (fits(c, card, truth, mid)) lo = mid;
    else top = mid;
  }
  return lo;
}

/** What a trial of the probe would report at batch `b`. */
export function simulateTrial(c: Curve, card: Card, truth: Truth, b: number): TrialSummary {
  const ok = fits(c, card, truth, b);
  const bf16 = c.prec === 'bf16';
  const stateBytesPerParam = c.opt === 'adamw' ? 2 * (bf16 ? 2 : 4) : c.opt === 'sgd' ? (bf16 ? 2 : 4) : 0;
  const alloc = allocAt(c, b);
  const ratio = interp(c.points, (i) => (c.points[i] as Curve['points'][0]).reserved / (c.points[i] as Curve['points'][0]).alloc, b);
  const stepS = Math.max(
    1e-3,
    interp(c.points, (i) => (c.points[i] as Curve['points'][0]).stepS, b),
  );
  return {
    value: b,
    outcome: ok ? 'ok' : 'oom',
    detail: ok ? '8 steps' : 'out of memory on rank 0 in step 1',
    ranks: 1,
    steps: ok ? 8 : 0,
    peakAllocatedBytes: ok ? alloc : null,
    peakReservedBytes: ok ? alloc * Math.max(1, ratio) : null,
    peakFromFirstStep: false,
    allocRetries: 0,
    nonAllocatorBytes: ok && truth.nvml ? (c.points[0]?.nonAlloc ?? null) : null,
    deviceTotalBytes: card.totalBytes,
    deviceName: card.name,
    worldSize: 1,
    stepTimeS: ok ? stepS : null,
    stepTimeFrom: ok ? 'gpu' : null,
    samplesPerS: ok ? b / stepS : null,
    tokensPerS: ok && c.seq ? (b * c.seq) / stepS : null,
    samplesPerStep: ok ? b : null,
    seqLen: ok ? c.seq : null,
    recoveredOom: false,
    model: ok
      ? {
          name: c.model,
          weightBytes: c.weightBytes,
          // every parameter trains: gradients as large as the weights (buffers are a rounding error here)
          trainableBytes: c.weightBytes,
          optimizerClass: c.opt === 'adamw' ? 'AdamW' : 'SGD',
          optimizerStateBytes: stateBytesPerParam * c.params,
          mainDtype: bf16 ? 'bfloat16' : 'float32',
          // a probe of protocol 1: no autocast or compile record, so fp32 and autocast stay open
          autocastDtype: null,
          compiled: null,
          hfConfig: c.model === 'gpt2' ? GPT2_CONFIG : c.model === 'bert-base' ? BERT_CONFIG : null,
        }
      : null,
  };
}

export interface SearchRun {
  trials: TrialSummary[];
  result: TuneResult;
}

export function runSearch(space: SearchSpace, trial: (b: number) => TrialSummary, margin = 0.1): SearchRun {
  const trials: TrialSummary[] = [];
  for (;;) {
    const d = decideNext(space, trials);
    if (d.next === null) break;
    trials.push(trial(d.next));
  }
  return { trials, result: conclude(space, trials, margin) };
}

/** The usual search without a memory model: double from `start` until out of memory, then bisect to the exact limit. */
export function doublingThenBisecting(start: number, hi: number, fitsAt: (b: number) => boolean): { largest: number; trials: number } {
  let trials = 0;
  let ok = 0;
  let b = start;
  let bad = hi + 1;
  while (b <= hi) {
    trials++;
    if (!fitsAt(b)) {
      bad = b;
      break;
    }
    ok = b;
    b *= 2;
  }
  while (bad - ok > 1) {
    const mid = Math.floor((ok + bad) / 2);
    trials++;
    if (fitsAt(mid)) ok = mid;
    else bad = mid;
  }
  return { largest: ok, trials };
}

/** A tune run: the search (3 trials, one out of memory) and two --curve points, as tune's CLI builds its report. */
export function tuneFixture(edit: (t: TuneTrial[]) => TuneTrial[] = (t) => t, paramName = 'batch_size'): TuneReport {
  const space = { name: paramName, lo: 1, hi: 1024, start: 4, multipleOf: 1, maxTrials: 3 };
  const gpt2 = measuredCurves().find((c) => c.id === 'gpt2 amp_bf16 adamw');
  if (!gpt2) throw new Error('no GPT-2 curve');
  const trial = (b: number) => simulateTrial(gpt2, CARDS[2]!, { fragmentation: 1.03, nvml: true }, b);
  const r = runSearch(space, trial);
  const search = r.trials.map((t, i) => ({ ...t, index: i + 1, kind: 'search' as const, reason: 'the line predicts it fits', command: ['python', 't.py'], runDir: `/runs/${i}` }));
  const curve = [16, 32].map((b, i) => ({ ...trial(b), index: search.length + i + 1, kind: 'curve' as const, reason: 'a point of the throughput curve', command: ['python', 't.py'], runDir: `/runs/c${i}` }));
  const trials = edit([...search, ...curve]);
  return buildTuneReport({ version: '0', space, stepsPerTrial: 8, margin: 0.1, maxTrials: 3, outDir: '/runs', trials, stopReason: 'the next value could only add 3%', result: conclude(space, trials, 0.1), interrupted: false });
}
