/**
 * The search of `gpuwise tune` against GPU memory measured on an H200 (test/tune/simulate.ts): at most 3 trials land
 * within 10% of the true largest batch on every measured curve and card, where doubling-then-bisecting from 1 takes 8 to 24 (median 14).
 */
import { describe, expect, it } from 'vitest';
import { plannerLine } from '../../src/tune/plannerHint.js';
import {
  TUNE,
  conclude,
  curveValues,
  decideNext,
  deviceBudget,
  fitMemoryLine,
  goldilocks,
  largestWithin,
  lineMemoryModel,
  modelRecordLine,
  type SearchSpace,
} from '../../src/tune/predict.js';
import type { TrialSummary } from '../../src/tune/trial.js';
import { CARDS, type Curve, doublingThenBisecting, fits, measuredCurves, runSearch, simulateTrial, trueLargest } from './simulate.js';

const HI = 4096;
const space = (start: number, extra: Partial<SearchSpace> = {}): SearchSpace => ({
  name: 'batch_size',
  lo: 1,
  hi: HI,
  start,
  multipleOf: 1,
  maxTrials: 3,
  ...extra,
});
const curves = measuredCurves();
const curve = (id: string) => curves.find((c) => c.id === id) as Curve;

interface Case {
  c: Curve;
  card: (typeof CARDS)[number];
  start: number;
  truth: { fragmentation: number; nvml: boolean };
  trueMax: number;
}

function cases(fragmentations: number[]): Case[] {
  const out: Case[] = [];
  for (const c of curves)
    for (const card of CARDS)
      for (const fragmentation of fragmentations)
        for (const nvml of [true, false])
          for (const start of [1, c.points[0]?.batch as number]) {
            const truth = { fragmentation, nvml };
            const trueMax = trueLargest(c, card, truth, HI);
            if (trueMax >= 1) out.push({ c, card, start, truth, trueMax });
          }
  return out;
}

describe('tune search on measured memory curves', () => {
  it('uses the 10 measured curves (GPT-2, BERT-base, ResNet-50; fp32, autocast, bf16; AdamW, SGD; checkpointing)', () => {
    expect(curves.map((c) => c.id).sort()).toEqual(
      [
        'bert-base amp_bf16 adamw',
        'bert-base fp32 adamw',
        'gpt2 amp_bf16 adamw',
        'gpt2 amp_bf16 adamw ckpt',
        'gpt2 amp_bf16 sgd',
        'gpt2 bf16 adamw',
        'gpt2 fp32 adamw',
        'resnet50 amp_bf16 adamw',
        'resnet50 amp_bf16 sgd',
        'resnet50 fp32 sgd',
      ].sort(),
    );
  });

  it('lands within 10% of the true largest batch in at most 3 trials when the allocator needs 2-8% over its peak', () => {
    const all = cases([1.02, 1.05, 1.08]);
    expect(all.length).toBeGreaterThan(400);
    const baseline: number[] = [];
    for (const k of all) {
      const r = runSearch(space(k.start), (b) => simulateTrial(k.c, k.card, k.truth, b));
      const got = r.result.largestOk as number;
      const label = `${k.c.id} on ${k.card.name}, fragmentation ${k.truth.fragmentation}, start ${k.start}, nvml ${k.truth.nvml}: true ${k.trueMax}, trials ${r.trials.map((t) => `${t.value}${t.outcome === 'ok' ? '' : 'x'}`)}`;
      expect(r.trials.length, label).toBeLessThanOrEqual(3);
      expect(got, label).toBeLessThanOrEqual(k.trueMax);
      expect(got, label).toBeGreaterThanOrEqual(0.9 * k.trueMax);
      baseline.push(doublingThenBisecting(1, HI, (b) => fits(k.c, k.card, k.truth, b)).trials);
    }
    // The usual search needs 8 to 24 runs (median 14) on the same curves.
    expect(Math.min(...baseline)).toBeGreaterThanOrEqual(8);
    expect(Math.max(...baseline)).toBeGreaterThanOrEqual(20);
  });

  it('when the allocator needs nothing over its peak (the 2% slack is then pessimistic) it still lands within 12%', () => {
    const all = cases([1.0]);
    let within10 = 0;
    for (const k of all) {
      const r = runSearch(space(k.start), (b) => simulateTrial(k.c, k.card, k.truth, b));
      const got = r.result.largestOk as number;
      expect(r.trials.length).toBeLessThanOrEqual(3);
      expect(got).toBeGreaterThanOrEqual(0.88 * k.trueMax);
      if (got >= 0.9 * k.trueMax) within10++;
    }
    // 96% (the misses: 24 where 27 fits, on a 40 GB card, starting at batch 1).
    expect(within10 / all.length).toBeGreaterThan(0.95);
  });

  it('keeps to multiples of --multiple-of and within 10% plus one multiple', () => {
    for (const k of cases([1.02, 1.05])) {
      if (k.trueMax < 16) continue;
      const r = runSearch(space(8, { lo: 8, multipleOf: 8 }), (b) => simulateTrial(k.c, k.card, k.truth, b));
      expect(r.trials.every((t) => t.value % 8 === 0)).toBe(true);
      expect(r.trials.length).toBeLessThanOrEqual(3);
      expect(r.result.largestOk as number).toBeGreaterThanOrEqual(0.9 * k.trueMax - 8);
      expect((r.result.recommended as number) % 8).toBe(0);
    }
  });

  it('a value that ran out of memory is never tried again or exceeded', () => {
    for (const k of cases([1.08]).slice(0, 80)) {
      const r = runSearch(space(k.start, { maxTrials: 6 }), (b) => simulateTrial(k.c, k.card, k.truth, b));
      let minOom = Number.POSITIVE_INFINITY;
      for (const t of r.trials) {
        expect(t.value).toBeLessThan(minOom);
        if (t.outcome === 'oom') minOom = t.value;
      }
    }
  });
});

describe('memory lines', () => {
  const card = CARDS[2] as (typeof CARDS)[number];
  const truth = { fragmentation: 1.02, nvml: true };

  it('through two trials: the measured bytes per sample (GPT-2 amp: 1.47 GB per sequence of 1024)', () => {
    const c = curve('gpt2 amp_bf16 adamw');
    const line = fitMemoryLine([simulateTrial(c, card, truth, 8), simulateTrial(c, card, truth, 16)], null);
    expect(line?.source).toBe('two-trials');
    expect(line?.perValueBytes).toBeCloseTo(1.4722e9, -7);
    expect(line?.fixedBytes).toBeGreaterThan(1.7e9);
    expect(line?.fixedBytes).toBeLessThan(2.0e9);
  });

  it('from one trial and the model record: never predicts more than fits (the fixed part is a lower bound)', () => {
    for (const c of curves)
      for (const k of CARDS) {
        const t = simulateTrial(c, k, truth, c.points[0]?.batch as number);
        if (t.outcome !== 'ok') continue;
        const line = modelRecordLine(t);
        const budget = deviceBudget([t]);
        expect(line?.source).toBe('one-trial+model');
        expect(largestWithin(line as NonNullable<typeof line>, budget?.allocatorLimitBytes as number), c.id).toBeLessThanOrEqual(
          trueLargest(c, k, truth, HI),
        );
      }
  });

  it("from one trial and the planner: tells autocast from fp32 at batch 4 and gets GPT-2's slope within 3%", () => {
    const c = curve('gpt2 amp_bf16 adamw');
    const t = simulateTrial(c, card, truth, 4);
    const line = plannerLine(t, deviceBudget([t]));
    expect(line?.note).toBe('amp-bf16, checkpointing none, seq 1024');
    expect(Math.abs((line?.perValueBytes as number) / 1.4722e9 - 1)).toBeLessThan(0.03);
    // The model record alone would take the autocast weight copies for activations: a steeper, safer slope.
    expect(modelRecordLine(t)?.perValueBytes).toBeGreaterThan(line?.perValueBytes as number);
  });

  it('from one trial at batch 1, where fp32 and autocast peak alike, the planner takes the safer (steeper) reading', () => {
    const c = curve('gpt2 amp_bf16 adamw');
    const t = simulateTrial(c, card, truth, 1);
    const line = plannerLine(t, deviceBudget([t]));
    expect(line?.note).toBe('fp32, checkpointing none, seq 1024');
    expect(line?.perValueBytes).toBeGreaterThan(1.4722e9);
  });

  it('the planner is not used when the value is not the per-rank batch, or without a config', () => {
    const c = curve('gpt2 amp_bf16 adamw');
    const t = simulateTrial(c, card, truth, 4);
    expect(plannerLine({ ...t, samplesPerStep: 16 }, deviceBudget([t]))).toBeNull();
    expect(plannerLine(simulateTrial(curve('resnet50 fp32 sgd'), card, truth, 32), deviceBudget([t]))).toBeNull();
  });

  it("is the run model's per-sample MemoryModel: its fit rule agrees with the line's limit on every curve", () => {
    for (const c of curves) {
      const t = simulateTrial(c, card, truth, c.points[0]?.batch as number);
      const budget = deviceBudget([t]);
      const line = fitMemoryLine([t], budget);
      if (!line || !budget || t.outcome !== 'ok') continue;
      const model = lineMemoryModel(line, budget);
      const n = largestWithin(line, budget.allocatorLimitBytes);
      expect([c.id, model.fits(n), model.fits(n + 1)]).toEqual([c.id, true, false]);
      expect(model.peak(n)).toBeCloseTo(line.fixedBytes + line.perValueBytes * n, 0);
    }
  });

  it('without a model record: the steepest line through the measured peak (fixed part 0), never past the limit', () => {
    for (const c of curves) {
      const t = { ...simulateTrial(c, card, truth, c.points[0]?.batch as number), model: null };
      const line = fitMemoryLine([t], deviceBudget([t]));
      expect(line).toMatchObject({ source: 'one-trial', fixedBytes: 0 });
      expect(largestWithin(line as NonNullable<typeof line>, deviceBudget([t])?.allocatorLimitBytes as number)).toBeLessThanOrEqual(
        trueLargest(c, card, truth, HI),
      );
    }
  });

  it("a trial whose peak came from the optimizer's first step is left out of the two-trial line", () => {
    const c = curve('gpt2 fp32 adamw');
    const flat = { ...simulateTrial(c, card, truth, 1), peakFromFirstStep: true };
    const line = fitMemoryLine([flat, simulateTrial(c, card, truth, 8)], deviceBudget([flat]));
    expect(line?.source).not.toBe('two-trials');
    expect(line?.values).toEqual([8]);
  });
});

describe('decisions', () => {
  const c = curve('gpt2 fp32 adamw');
  const card = CARDS[2] as (typeof CARDS)[number];
  const truth = { fragmentation: 1.02, nvml: true };
  const at = (b: number) => simulateTrial(c, card, truth, b);
  const failed = (v: number): TrialSummary => ({ ...at(v), outcome: 'failed', detail: 'exit code 1: KeyError' });

  it('stops on a failure that is not out of memory', () => {
    expect(decideNext(space(1), [at(1), failed(30)])).toEqual({
      next: null,
      reason: 'trial at batch_size=30 failed, not for lack of memory: the search stops',
    });
  });

  it('after the first value runs out of memory, tries LO; when LO does too, stops', () => {
    expect(decideNext(space(200, { lo: 2 }), [at(200)])).toMatchObject({ next: 2 });
    expect(decideNext(space(2, { lo: 2, hi: 8 }), [{ ...at(2), outcome: 'oom' }])).toEqual({
      next: null,
      reason: 'even batch_size=2 runs out of memory',
    });
  });

  it('stops when a two-trial prediction could raise the verified value by less than 3%', () => {
    const d = decideNext(space(1), [at(40), at(44)]);
    expect(d.next).toBeNull();
    expect(d.reason).toMatch(/^the prediction \(4[56]\) is within 3% of batch_size=44, which fits$/);
  });

  it('stops at once when HI fits', () => {
    expect(decideNext(space(8, { hi: 8 }), [at(8)])).toEqual({ next: null, reason: 'the upper end batch_size=8 fits' });
  });

  it('without memory figures, bisects in log scale between what fits and HI', () => {
    const blind = (v: number, ok: boolean): TrialSummary => ({
      ...at(v),
      outcome: ok ? 'ok' : 'oom',
      peakAllocatedBytes: null,
      deviceTotalBytes: null,
    });
    const s = space(1, { hi: 1024, maxTrials: 10 });
    expect(decideNext(s, [blind(1, true)])).toMatchObject({ next: 32 });
    expect(decideNext(s, [blind(1, true), blind(32, false)])).toMatchObject({ next: 5 });
    expect(decideNext(s, [blind(1, true), blind(32, true)])).toMatchObject({ next: 181 });
    expect(decideNext(s, [blind(5, true), blind(6, false)])).toMatchObject({ next: null });
  });
});

describe('result', () => {
  const c = curve('gpt2 amp_bf16 adamw');
  const card = CARDS[2] as (typeof CARDS)[number];
  const truth = { fragmentation: 1.02, nvml: true };

  it('recommends the largest value that leaves the margin free, as nvidia-smi would count it', () => {
    const r = runSearch(space(4), (b) => simulateTrial(c, card, truth, b), 0.1);
    const res = r.result;
    expect(res.recommended as number).toBeLessThan(res.largestOk as number);
    expect(res.recommendedPeakBytes as number).toBeLessThanOrEqual(0.9 * card.totalBytes);
    // One more would not leave the margin.
    const next =
      ((res.line?.fixedBytes as number) + (res.line?.perValueBytes as number) * ((res.recommended as number) + 1)) *
        (res.reservedRatio as number) +
      (res.budget?.nonAllocatorBytes as number);
    expect(next).toBeGreaterThan(0.9 * card.totalBytes);
    expect(conclude(space(4), r.trials, 0).recommended).toBe(res.largestOk);
  });

  it('Goldilocks: the smallest value within 5% of the best measured throughput', () => {
    const base = simulateTrial(c, card, truth, 1);
    const pt = (value: number, samplesPerS: number): TrialSummary => ({ ...base, value, samplesPerS });
    expect(goldilocks([pt(8, 100), pt(16, 180), pt(32, 190), pt(64, 195)])).toEqual({
      value: 32,
      reason: '97% of the best measured throughput (195 samples/s at 64) with a smaller batch',
    });
    expect(goldilocks([pt(8, 100), pt(16, 200)]).value).toBe(16);
    expect(TUNE.goldilocksShare).toBe(0.95);
    expect(goldilocks([{ ...pt(8, 1), samplesPerS: null, tokensPerS: null }]).value).toBeNull();
  });

  it('curve points: spread in log scale below the largest value that fits, none tried twice', () => {
    const trials = [simulateTrial(c, card, truth, 1), simulateTrial(c, card, truth, 40)];
    expect(curveValues(space(1), trials, 3)).toEqual([3, 6, 16]);
    expect(
      curveValues(space(8, { lo: 8, multipleOf: 8 }), [simulateTrial(c, card, truth, 8), simulateTrial(c, card, truth, 48)], 2),
    ).toEqual([16, 24]);
  });
});
