/**
 * tune --plan's pure decisions (src/tune/planTrials.ts, history/leverAccuracy.ts): which plan steps the probe can make
 * and with which settings, the worker counts around the plan's, the spread of a trial's mean, the keep rule, the
 * divergence test, the permanent change in the user's terms, and the accuracy by lever.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { leverAccuracy, pairError } from '../../src/history/leverAccuracy.js';
import { parseProbeLines, type StepRecord } from '../../src/run/records.js';
import { planTuneChartData, renderPlanTuneHtml } from '../../src/serve/pages/tunePlan.js';
import { renderPlanTuneMarkdown, renderPlanTuneText } from '../../src/tune/planReport.js';
import {
  type Measure,
  type PlanStepIn,
  type PlanTrial,
  type PlanTuneReport,
  type RunFacts,
  batchValues,
  betterBeyondSpread,
  chooseCandidate,
  divergence,
  meanAndSpread,
  measureTrial,
  namedWorkers,
  parseTry,
  leastSteadySteps,
  trialEpochSteps,
  withoutOneTimeStalls,
  runFactsOf,
  PLAN_TUNE,
  perStartBatch,
  permanentChanges,
  probeSettings,
  stepsPerTrial,
  trialPlan,
  withChange,
  workerCounts,
} from '../../src/tune/planTrials.js';

const CPU: RunFacts = {
  cuda: false,
  autocast: '',
  compiled: false,
  framework: null,
  loader: { workers: 2, batchSize: 8, pinMemory: false, persistentWorkers: false, prefetchFactor: 2 },
  cpuCores: 2,
  stepsPerEpoch: null,
};
const GPU: RunFacts = { ...CPU, cuda: true };
const step = (id: string, label: string, data: Record<string, unknown> | null = null): PlanStepIn => ({
  id,
  label,
  fromStepNs: 100e6,
  expectedStepNs: 50e6,
  workersNeeded: null,
  data,
});
const measure = (meanMs: number, spreadMs: number): Measure => ({
  steps: 50,
  meanNs: meanMs * 1e6,
  spreadNs: spreadMs * 1e6,
  warmupSteps: 1,
  warmupCostNs: 0,
  settled: true,
  timing: 'host',
});

describe('which plan steps are tried, with what', () => {
  it('the loader: the plan’s worker count and a neighbour below and above, only for the training loader', () => {
    expect(workerCounts(14, 2)).toEqual([10, 14, 20]);
    expect(workerCounts(3, 2)).toEqual([3, 4]); // below would be 2: the run's own count is not tried again
    expect(workerCounts(1, 0)).toEqual([1, 2]);
    expect(namedWorkers(step('dataloader-bound', 'num_workers 2 -> 14', { workersRecommended: 12 }))).toBe(12);
    expect(namedWorkers(step('dataloader-bound', 'num_workers 2 -> 14'))).toBe(14);
    const [p] = trialPlan(
      [step('dataloader-bound', 'num_workers 2 -> 14, persistent DataLoader workers', { workersRecommended: 14 })],
      CPU,
    );
    // the step is one configuration: its persistent workers go with each count
    expect(p?.candidates.map((c) => c.name)).toEqual([
      'num_workers=10 + persistent_workers=True',
      'num_workers=14 + persistent_workers=True',
      'num_workers=20 + persistent_workers=True',
    ]);
    expect(p?.candidates[0]?.change.loader).toEqual({ numWorkers: 10, persistentWorkers: true, match: { batchSize: 8, numWorkers: 2 } });
    // persistent workers alone where the step asks for no more workers
    const [q] = trialPlan([step('dataloader-bound', 'persistent DataLoader workers')], { ...CPU, loader: { ...CPU.loader!, workers: 14 } });
    expect(q?.candidates.map((c) => c.name)).toEqual(['persistent_workers=True']);
  });

  it('GPU levers: tried only where the run has CUDA; autocast not where the run has it; compile not on a compiled model', () => {
    const steps = [
      step('no-tensor-cores', 'bf16 autocast (tensor cores)'),
      step('mixed-precision', 'bf16 autocast + channels_last'),
      step('fusion', 'torch.compile'),
      step('launch-bound', 'CUDA graphs (mode="reduce-overhead")'),
      step('pageable-h2d', 'pinned memory, non-blocking copies'),
    ];
    for (const p of trialPlan(steps, CPU)) {
      expect(p.candidates).toEqual([]);
      expect(p.why).toBe('not tried: no CUDA in this run');
    }
    const onGpu = trialPlan(steps, GPU);
    expect(onGpu.map((p) => p.candidates.map((c) => c.change))).toEqual([
      [{ tf32: true, cudnnBenchmark: true }, { autocast: 'bf16' }],
      [{ autocast: 'bf16', channelsLast: true, cudnnBenchmark: true }],
      [{ compile: 'default' }],
      [{ compile: 'reduce-overhead' }],
      [{ loader: { pinMemory: true, match: { batchSize: 8, numWorkers: 2 } } }],
    ]);
    const withAmp = trialPlan(steps, { ...GPU, autocast: 'bfloat16', compiled: true });
    expect(withAmp[0]?.candidates.map((c) => c.name)).toEqual(['TF32 + cudnn.benchmark']);
    expect(withAmp[1]?.why).toMatch(/has bfloat16 autocast already/);
    expect(withAmp[2]?.why).toMatch(/compiled already/);
  });

  it('fixes that need a code change stay predicted, marked so', () => {
    const [a, s, n] = trialPlan(
      [
        step('attention', 'F.scaled_dot_product_attention'),
        step('host-sync', 'syncs out of the loop'),
        step('ddp-accum-without-no-sync', 'no_sync()'),
      ],
      GPU,
    );
    for (const p of [a, s, n]) {
      expect(p?.codeChange).toBe(true);
      expect(p?.candidates).toEqual([]);
      expect(p?.why).toMatch(/^needs a code change/);
    }
  });

  it('--try: levers the plan did not name; values checked', () => {
    expect(parseTry('workers=8')).toEqual({ lever: 'workers', value: 8 });
    expect(parseTry('persistent-workers')).toEqual({ lever: 'persistent-workers', value: null });
    expect(parseTry('workers')).toHaveProperty('problem');
    expect(parseTry('bf16=2')).toHaveProperty('problem');
    expect(parseTry('fp8')).toHaveProperty('problem');
    const [t] = trialPlan([], CPU, [{ lever: 'persistent-workers', value: null }]);
    expect(t?.source).toBe('try');
    expect(t?.candidates[0]?.change).toEqual({ loader: { persistentWorkers: true, match: { batchSize: 8, numWorkers: 2 } } });
    const [noWorkers] = trialPlan([], { ...CPU, loader: { ...(CPU.loader as NonNullable<RunFacts['loader']>), workers: 0 } }, [
      { lever: 'prefetch-factor', value: 4 },
    ]);
    expect(noWorkers?.why).toMatch(/no workers/);
  });

  it('settings accumulate: each trial on top of the ones kept, the loader key by key', () => {
    const kept = withChange({}, { loader: { numWorkers: 14, match: { batchSize: 8, numWorkers: 2 } } });
    expect(withChange(kept, { loader: { persistentWorkers: true }, tf32: true })).toEqual({
      loader: { numWorkers: 14, persistentWorkers: true, match: { batchSize: 8, numWorkers: 2 } },
      tf32: true,
    });
  });
});

describe('measuring and keeping', () => {
  it('the spread of the mean comes from block means (a loader’s rhythm does not shrink it to nothing)', () => {
    const alternating = Array.from({ length: 100 }, (_, i) => (i % 2 ? 20e6 : 40e6));
    const ms = meanAndSpread(alternating);
    expect(ms?.meanNs).toBeCloseTo(30e6, -3);
    expect(ms?.spreadNs).toBeLessThan(1e6); // blocks of 20 alternating steps have the same mean
    const drifting = Array.from({ length: 100 }, (_, i) => 30e6 + i * 0.2e6);
    expect(meanAndSpread(drifting)?.spreadNs).toBeGreaterThan(2.5e6); // the i.i.d. standard error would say 0.58 ms
    expect(meanAndSpread([5e6])?.spreadNs).toBe(5e6); // one step: nothing known of the spread
  });

  it('a trial’s steady steps: the first step and the warm-up left out, its cost counted', () => {
    const rec = (step: number, t: number): StepRecord =>
      ({
        type: 'step',
        v: 3,
        pid: 7,
        rank: null,
        t: step,
        step,
        stepTimeS: t,
        dataWaitS: 0,
        batches: 1,
        samples: 8,
        memory: null,
        profiled: false,
      }) as unknown as StepRecord;
    const times = [2.0, 0.5, 0.3, ...Array.from({ length: 40 }, () => 0.01)];
    const m = measureTrial(times.map((t, i) => rec(i + 1, t)));
    expect(m?.meanNs).toBeCloseTo(0.01e9, -3);
    expect(m?.warmupSteps).toBe(3);
    expect(m?.warmupCostNs).toBeGreaterThan(2.7e9);
  });

  it("where the epoch is short, the mean is the second epoch's, its start included; without it, the steady steps'", () => {
    const rec = (step: number, t: number, wait = 0): StepRecord =>
      ({ type: 'step', v: 3, pid: 7, rank: null, t: step, step, stepTimeS: t, dataWaitS: wait, batches: 1, samples: 8, memory: null, profiled: false }) as unknown as StepRecord;
    // epochs of 40 steps: the first on the queue the workers filled (60 ms), then the loader's pace (80 ms) and a
    // 300 ms epoch start spent waiting; the trial ran 85 steps
    const time = (step: number) => (step === 1 ? 5 : step === 41 || step === 81 ? 0.3 : step <= 40 ? 0.06 : 0.08);
    const records = Array.from({ length: 85 }, (_, i) => rec(i + 1, time(i + 1), time(i + 1) === 0.3 ? 0.25 : 0));
    const epoch = measureTrial(records, 40)!;
    expect(epoch.meanNs / 1e6).toBeCloseTo((0.3 + 39 * 0.08) / 40 * 1e3, 3);
    expect(epoch.steps).toBe(40);
    // the epoch unknown, or its second epoch not timed: every steady step
    const all = measureTrial(records, null)!;
    expect(all.meanNs).toBeLessThan(epoch.meanNs);
    expect(measureTrial(records.slice(0, 70), 40)).toEqual(measureTrial(records.slice(0, 70), null));
  });

  it('kept only beyond the spread and beyond the minimum gain', () => {
    expect(betterBeyondSpread(measure(33, 0.7), measure(7.9, 0.15)).better).toBe(true);
    expect(betterBeyondSpread(measure(10, 0.5), measure(9.2, 0.5)).better).toBe(false); // 0.8 < 2 x 0.71
    expect(betterBeyondSpread(measure(10, 0.01), measure(9.8, 0.01)).better).toBe(false); // 2% < 3%
    expect(betterBeyondSpread(measure(10, 0.01), measure(9.5, 0.01)).better).toBe(true);
  });

  it('of several worker counts: the smallest no worse than the fastest beyond the spread', () => {
    const c = [
      { index: 2, measure: measure(7.9, 0.14) },
      { index: 3, measure: measure(7.88, 0.8) },
      { index: 4, measure: measure(9.0, 0.46) },
    ];
    expect(chooseCandidate(c)).toBe(2);
    expect(chooseCandidate([{ index: 2, measure: measure(20, 0.1) }, ...c.slice(1)])).toBe(3);
    expect(chooseCandidate([])).toBeNull();
  });

  it('steps per trial: about the seconds asked at the diagnosis’s pace, bounded', () => {
    expect(stepsPerTrial(33e6, 4)).toBe(122);
    expect(stepsPerTrial(1e9, 4)).toBe(30);
    expect(stepsPerTrial(1e6, 4)).toBe(600);
    expect(stepsPerTrial(null)).toBe(60);
  });

  it('divergence: a loss not finite, or far above the baseline’s first losses', () => {
    const base = { first: [2.4, 2.2, 2.3], last: [] };
    expect(divergence(base, { first: [2.4, 'nan'], last: [] })).toMatch(/became nan/);
    expect(divergence(base, { first: [2.4, 2.3], last: [9, 12] })).toMatch(/far from the baseline/);
    expect(divergence(base, { first: [2.4, 2.3], last: [1.9, 2.8] })).toBeNull();
    expect(divergence(null, { first: [2.4], last: [] })).toBeNull();
    expect(divergence(base, null)).toBeNull();
  });
});

describe('the change to make it permanent', () => {
  it('plain PyTorch lines, TrainingArguments, Lightning and accelerate; the run’s own framework first', () => {
    const s = withChange({ loader: { numWorkers: 12 } }, { autocast: 'bf16', tf32: true });
    const all = permanentChanges(s, null);
    expect(all.map((p) => p.framework)).toEqual(['pytorch', 'transformers', 'lightning', 'accelerate']);
    expect(all[0]?.lines).toContain('loader = DataLoader(dataset, batch_size=B, num_workers=12)');
    expect(all[1]?.lines).toEqual(['TrainingArguments(..., bf16=True, tf32=True, dataloader_num_workers=12)']);
    expect(all[2]?.lines).toContain('Trainer(..., precision="bf16-mixed")');
    expect(all[3]?.lines[0]).toMatch(/mixed_precision="bf16"/);
    expect(permanentChanges(s, 'transformers')[0]?.framework).toBe('transformers');
    expect(permanentChanges({}, null)).toEqual([]);
  });
});

describe('accuracy by lever (runs --accuracy)', () => {
  it('ratios compared, by plan step, on this host only', () => {
    const pair = (host: string, predicted: number, measured: number) => ({
      hostname: host,
      stepId: 'dataloader-bound',
      lever: 'num_workers=12',
      predictedFromS: 0.0345,
      predictedS: 0.0345 * predicted,
      measuredFromS: 0.0332,
      measuredS: 0.0332 * measured,
      kept: true,
      atMs: 0,
    });
    expect(pairError(pair('vm', 0.16, 0.24))).toBeCloseTo(0.16 / 0.24 - 1, 6);
    const rows = leverAccuracy([pair('vm', 0.16, 0.24), pair('vm', 0.2, 0.2), pair('other', 0.5, 0.1)], 'vm');
    expect(rows).toHaveLength(1);
    expect(rows[0]?.pairs).toBe(2);
    expect(rows[0]?.maxAbsError).toBeCloseTo(1 / 3, 6);
  });
});

describe('the report as text and Markdown', () => {
  const trial = (index: number, name: string, meanMs: number, settings: PlanTrial['settings']): PlanTrial => ({
    index,
    name,
    stepId: index === 1 ? null : 'dataloader-bound',
    settings,
    outcome: 'ok',
    detail: '60 steps',
    measure: measure(meanMs, 0.3),
    applied: index === 1 ? [] : ['loader'],
    notApplied: [],
    stopped: null,
    batch: null,
    batchStepNs: null,
    wallS: 3,
    runDir: `/runs/trial-${index}`,
  });
  const base = {
    stepId: 'dataloader-bound',
    label: 'num_workers 2 -> 14',
    source: 'plan' as const,
    injectable: true,
    codeChange: false,
    why: null,
    fromStepNs: 33e6,
    predictedStepNs: 6.6e6,
    predictedRatio: 0.2,
    measuredFromStepNs: 33e6,
    measuredStepNs: 7.6e6,
    measuredSpreadNs: 0.3e6,
    measuredRatio: 0.23,
    recheck: null,
    chosen: 'num_workers=10',
    applied: { loader: { numWorkers: 10 } },
    kept: true,
    trials: [2],
  };
  const report: PlanTuneReport = {
    schemaVersion: 2,
    tool: 'gpuwise',
    command: 'tune --plan',
    version: '0.2.0',
    cmd: ['python', 'train.py'],
    outDir: '/runs',
    stepsPerTrial: 119,
    trialStop: null,
    param: null,
    diagnosis: { runDir: '/runs/diagnosis', runId: 'r1', stepNs: 33.8e6, planExpectedStepNs: 6.6e6, bound: 'input', wallS: 7 },
    baseline: trial(1, 'baseline', 33.8, {}),
    steps: [
      base,
      {
        ...base,
        stepId: 'try:persistent-workers',
        label: 'persistent_workers=True',
        source: 'try',
        fromStepNs: null,
        predictedStepNs: null,
        predictedRatio: null,
        kept: false,
        why: 'persistent_workers=True measured 7.80 ms against 7.60 ms: 0.20 ms slower, not beyond the margin of 0.85 ms',
      },
      {
        ...base,
        stepId: 'attention',
        label: 'F.scaled_dot_product_attention',
        injectable: false,
        codeChange: true,
        why: 'needs a code change: SDPA',
        measuredStepNs: null,
      },
      { ...base, stepId: 'fusion', label: 'torch.compile', injectable: false, why: 'not tried: no CUDA in this run', measuredStepNs: null },
    ],
    trials: [trial(1, 'baseline', 33.8, {}), trial(2, 'num_workers=10', 7.6, { loader: { numWorkers: 10 } })],
    best: {
      settings: { loader: { numWorkers: 10 } },
      names: ['num_workers=10'],
      stepNs: 7.6e6,
      spreadNs: 0.3e6,
      baselineStepNs: 33.8e6,
      speedup: 4.45,
    },
    permanent: permanentChanges({ loader: { numWorkers: 10 } }, null),
    trialsS: 22,
    totalS: 29,
    warmupCostS: 0,
    notes: [],
    exitCode: 0,
  };

  it('each plan step predicted and measured with its verdict; the best; the permanent change; the time', () => {
    const text = renderPlanTuneText(report);
    expect(text).toMatch(
      /num_workers 2 -> 14 \[dataloader-bound\]\s+33\.0 ms -> 6\.60 ms\s+x0\.20\s+33\.0 ms -> 7\.60 ms\s+x0\.23\s+kept \(num_workers=10\)/,
    );
    expect(text).toMatch(/\[try:persistent-workers\].*not kept: persistent_workers=True measured 7\.80 ms/);
    expect(text).toMatch(/\[attention\].*predicted only: needs a code change: SDPA/);
    expect(text).toMatch(/\[fusion\].*not tried: no CUDA in this run/);
    expect(text).toMatch(/Verified best: num_workers=10: 7\.60 ms ± 300 us a step against 33\.8 ms as the script is \(4\.45x\)/);
    expect(text).toMatch(/plain PyTorch:\n\s+\| loader = DataLoader\(dataset, batch_size=B, num_workers=10\)/);
    expect(text).toMatch(/Time: 29 s in all \(diagnosis 7 s, trials 22 s\)/);
    expect(text.match(/#1 baseline/g)).toHaveLength(1);
    const md = renderPlanTuneMarkdown(report);
    expect(md).toMatch(
      /\| 1 \| num_workers 2 -> 14 `dataloader-bound` \| 33\.0 ms → 6\.60 ms \| x0\.20 \| 33\.0 ms → 7\.60 ms \| x0\.23 \| kept/,
    );
    expect(md).toMatch(/\*\*Verified best: num_workers=10\*\*/);
    expect(md).toMatch(/```python\nloader = DataLoader/);
  });

  it('the HTML page: the verified best first, each plan step predicted and measured, the chart data, every trial', () => {
    const html = renderPlanTuneHtml(report, { uplotJs: '', uplotCss: '' });
    const text = html.replace(/<[^>]+>/g, ' ').replace(/&gt;/g, '>').replace(/&amp;/g, '&').replace(/\s+/g, ' ');
    expect(html.indexOf('id="verdict"')).toBeLessThan(html.indexOf('id="plan-steps"'));
    expect(text).toMatch(/Verified best: num_workers=10: 7\.60 ms ± 300 us a step against 33\.8 ms as the script is \(4\.45x\)/);
    expect(text).toMatch(/Plain PyTorch loader = DataLoader\(dataset, batch_size=B, num_workers=10\)/);
    expect(text).toMatch(/1 num_workers 2 -> 14 \[dataloader-bound\] 33\.0 ms → 6\.60 ms x0\.20 33\.0 ms → 7\.60 ms x0\.23 kept \(num_workers=10\)/);
    expect(text).toMatch(/\[attention\] .* predicted only: needs a code change: SDPA/);
    expect(text).toMatch(/29 s in all \(diagnosis 7 s, trials 22 s\)/);
    expect((text.match(/#1 baseline/g) ?? []).length).toBe(1);
    // The chart: as run, then each plan step; a step with no trial has no measured point.
    const data = planTuneChartData(report);
    expect(data.labels).toEqual(['as run', '1. num_workers 2 -> 14', '2. persistent_workers=True', '3. F.scaled_dot_product_attention', '4. torch.compile']);
    expect(data.predictedMs.slice(0, 2)).toEqual([33.8, 6.6]);
    expect(data.measuredMs).toEqual([33.8, 7.6, 7.6, null, null]);
  });
});

describe('--param beside --plan: the batch as a lever', () => {
  const param = { name: 'bs', lo: 8, hi: 256, start: 8 };
  it('tries the plan’s batch step (batch xK) around start x K, else a ladder above start, within HI', () => {
    expect(batchValues(param, 4)).toEqual([16, 32, 64]);
    expect(batchValues(param, null)).toEqual([16, 32, 64]);
    expect(batchValues({ ...param, hi: 40 }, null)).toEqual([16, 32, 40]);
    expect(batchValues({ ...param, hi: 20 }, null)).toEqual([16, 20]);
    expect(batchValues({ ...param, hi: 8 }, null)).toEqual([]);
    // The plan's gpu-underused step becomes injectable with --param, at its place; without --param it stays predicted.
    const plan = [step('dataloader-bound', 'num_workers 2 -> 4'), step('gpu-underused', 'batch x4', { batchScale: 4 })];
    const withParam = trialPlan(plan, GPU, [], param);
    expect(withParam.map((s) => s.stepId)).toEqual(['dataloader-bound', 'gpu-underused']);
    expect(withParam[1]?.candidates.map((c) => c.change)).toEqual([16, 32, 64].map((v) => ({ batch: { name: 'bs', value: v } })));
    expect(trialPlan(plan, GPU)[1]?.codeChange).toBe(true);
    // A plan without a batch step: the batch is sized last, after the --try levers.
    const last = trialPlan([plan[0] as PlanStepIn], CPU, [{ lever: 'tf32', value: null }], param);
    expect(last.map((s) => [s.stepId, s.source])).toEqual([
      ['dataloader-bound', 'plan'],
      ['try:tf32', 'try'],
      ['param:bs', 'param'],
    ]);
    expect(last[2]?.candidates.map((c) => c.name)).toEqual(['bs=16', 'bs=32', 'bs=64']);
    expect(trialPlan([], CPU, [], { ...param, hi: 8 })[0]?.why).toMatch(/no bs above 8/);
  });

  it('compares a larger batch per sample; the probe never sees the batch, its loader matched at the trial’s', () => {
    const m = perStartBatch(measure(40, 2), 32, 8);
    expect([m.meanNs, m.spreadNs]).toEqual([10e6, 0.5e6]);
    expect(perStartBatch(measure(40, 2), 8, 8).meanNs).toBe(40e6);
    const kept = { loader: { numWorkers: 6, match: { batchSize: 8, numWorkers: 2 } }, batch: { name: 'bs', value: 32 } };
    expect(probeSettings(kept, 8)).toEqual({ loader: { numWorkers: 6, match: { batchSize: 32, numWorkers: 2 } } });
    // A loader whose batch is not the parameter (another batch than start): matched as the diagnosis saw it.
    expect(probeSettings({ ...kept, loader: { ...kept.loader, match: { batchSize: 4, numWorkers: 2 } } }, 8).loader?.match).toEqual({
      batchSize: 4,
      numWorkers: 2,
    });
    expect(probeSettings({ tf32: true }, null)).toEqual({ tf32: true });
    // The permanent change names the value.
    const perm = permanentChanges({ batch: { name: 'bs', value: 32 }, loader: { numWorkers: 6 } }, 'transformers');
    expect(perm[0]?.lines).toEqual(['TrainingArguments(..., per_device_train_batch_size=32, dataloader_num_workers=6)']);
    expect(perm.find((p) => p.framework === 'pytorch')?.lines[0]).toBe('loader = DataLoader(dataset, batch_size=32, num_workers=6)');
  });
});

describe("a step's trial makes the DataLoader workers the step says it needs", () => {
  it('on the H100 Lightning run: bf16 + channels_last with 3 workers, then pinned memory with 4 (examples/pace/runs/h100-tune-b)', () => {
    const dir = new URL('../../examples/pace/runs/h100-tune-b/lightning_datamodule/', import.meta.url).pathname;
    const report = JSON.parse(readFileSync(`${dir}diagnosis-report.json`, 'utf8'));
    const facts = runFactsOf(report);
    expect(facts.loader?.workers).toBe(2);
    const plans = trialPlan(report.pace.plan.steps, facts);
    expect(plans.map((p) => p.candidates.map((c) => c.name))).toEqual([
      ['bf16 autocast + channels_last + num_workers=3'],
      ['pin_memory=True + num_workers=4'],
    ]);
    expect(plans[0]?.candidates[0]?.change.loader).toEqual({ numWorkers: 3, match: { batchSize: 128, numWorkers: 2 } });
    // the count kept never goes down: a later step's need below an earlier step's count keeps the earlier
    expect(withChange({ loader: { numWorkers: 9 } }, { loader: { numWorkers: 4, pinMemory: true } }).loader).toEqual({ numWorkers: 9, pinMemory: true });
  });
});

describe('leastSteadySteps: a trial outlasts what its start-up hides', () => {
  const jpeg: RunFacts = { ...CPU, cuda: true, loader: { ...CPU.loader!, workers: 4, prefetchFactor: 2 }, stepsPerEpoch: 63 };
  it('runs through two short epochs (the second is measured whole), and past the queue the workers filled (three times over)', () => {
    expect(leastSteadySteps(jpeg, {}, 600)).toBe(126);
    expect(leastSteadySteps(jpeg, { loader: { numWorkers: 13, prefetchFactor: 4 } }, 600)).toBe(156);
    // where two epochs do not fit under the cap, through one
    expect(leastSteadySteps(jpeg, {}, 120)).toBe(63);
    // at 4x the diagnosis's batch (--param), an epoch is a quarter as long
    expect(trialEpochSteps(jpeg, { batch: { name: 'bs', value: 256 } }, 64)).toBe(16);
    expect(leastSteadySteps(jpeg, { batch: { name: 'bs', value: 256 } }, 600, 64)).toBe(32); // two epochs of 16
  });
  it('keeps the floor without a loader or with a long epoch, and stays under the cap', () => {
    expect(leastSteadySteps({ ...jpeg, loader: null, stepsPerEpoch: null }, {}, 600)).toBe(PLAN_TUNE.minSteadySteps);
    expect(leastSteadySteps({ ...jpeg, stepsPerEpoch: 5000 }, {}, 600)).toBe(24);
    expect(leastSteadySteps(jpeg, { loader: { numWorkers: 13, prefetchFactor: 4 } }, 100)).toBe(100 - PLAN_TUNE.minSteadySteps);
  });
});

describe('tune --plan on an H200 (examples/pace/runs/h200-tune, docs/validation/tune.md)', () => {
  const dir = new URL('../../examples/pace/runs/h200-tune/', import.meta.url).pathname;
  const read = (f: string) => JSON.parse(readFileSync(dir + f, 'utf8'));
  const plain = readFileSync(`${dir}measured.jsonl`, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { run: string; mean_step_ms: number });
  it("the memmap GPT's verified best (compile) is within 10% of the same change made by hand and run plainly", () => {
    const r = read('memmap_gpt.plan.json') as PlanTuneReport;
    expect(r.best.names).toEqual(['torch.compile']);
    const runs = plain.filter((p) => p.run === 'memmap_gpt').map((p) => p.mean_step_ms);
    const mean = runs.reduce((a, b) => a + b, 0) / runs.length;
    expect(Math.abs(r.best.stepNs! / 1e6 / mean - 1)).toBeLessThan(0.1);
  });
  it("the JPEG ResNet's 46-step trials were shorter than what its loader hides; its trials now run through an epoch", () => {
    const r = read('jpeg_resnet.plan.json') as PlanTuneReport;
    expect(r.stepsPerTrial).toBeLessThan(63);
    const facts = runFactsOf(read('jpeg_resnet/diagnosis-report.json'));
    expect(facts.stepsPerEpoch).toBe(63);
    expect(leastSteadySteps(facts, {}, 600)).toBeGreaterThanOrEqual(63);
  });
});

describe('an epoch measured whole (H100 Lightning ResNet-50 and JPEG ResNet, examples/pace/runs/h100-tune-c)', () => {
  const dir = new URL('../../examples/pace/runs/h100-tune-c/', import.meta.url).pathname;
  const records = (f: string) => parseProbeLines(readFileSync(dir + f, 'utf8')).records;
  const plain = JSON.parse(readFileSync(`${dir}measured.jsonl`, 'utf8').trim().split('\n')[0] as string) as { mean_step_ms: number };
  const bf16 = measureTrial(records('lightning_datamodule/trial-2-bf16-channels-last-workers-3.probe.jsonl'), 64)!;
  const pinned = measureTrial(records('lightning_datamodule/trial-3-pinned-workers-5.probe.jsonl'), 64)!;
  it('the mean is the second epoch (steps 65-128), its start included, and stands for the plain run of 150 steps', () => {
    expect(bf16.steps).toBe(64);
    expect(Math.abs(bf16.meanNs / 1e6 / plain.mean_step_ms - 1)).toBeLessThan(0.1);
  });
  it("the epoch start is not noise: the spread is the other steps', so pinned memory (72.9 -> 57.8 ms) is kept", () => {
    expect(pinned.spreadNs / pinned.meanNs).toBeLessThan(0.05);
    // (read with the epoch start in one of the blocks, the spread was 10 ms, and the gain of 15 ms not beyond it)
    expect(betterBeyondSpread(bf16, pinned).better).toBe(true);
  });
  it('on the JPEG ResNet, 6 workers beat the baseline beyond the spread of each epoch', () => {
    const base = measureTrial(records('jpeg_resnet/trial-1-baseline.probe.jsonl'), 63)!;
    const six = measureTrial(records('jpeg_resnet/trial-2-workers-6.probe.jsonl'), 63)!;
    expect([base.steps, six.steps]).toEqual([63, 63]);
    expect(betterBeyondSpread(base, six).better).toBe(true);
  });
});

describe('a one-time stall at a new shape is warm-up, not the trial steady pace (H100 JPEG ResNet, examples/pace/runs/h100-tune)', () => {
  const dir = new URL('../../examples/pace/runs/h100-tune/jpeg_resnet/', import.meta.url).pathname;
  const records = (f: string) => parseProbeLines(readFileSync(dir + f, 'utf8')).records;
  it("bf16 + channels_last's 5.9 s of cudnn.benchmark at the epoch's partial batch goes to the warm-up, its loader stalls stay", () => {
    const m = measureTrial(records('trial-5-bf16-channels-last.probe.jsonl'))!;
    // 151 ms a step with the stall in the mean (tune 0.2.0 on the H100); its other steps run 34-131 ms
    expect(m.meanNs / 1e6).toBeLessThan(70);
    expect(m.meanNs / 1e6).toBeGreaterThan(45);
    expect(m.warmupCostNs / 1e9).toBeGreaterThan(5);
  });
  it("the baseline's DataLoader stalls (about 200 ms every 4 steps, spent waiting) all stay in its mean", () => {
    const m = measureTrial(records('trial-1-baseline.probe.jsonl'))!;
    expect(m.meanNs / 1e6).toBeGreaterThan(85);
  });
  it('unit: the rule', () => {
    const t = [40, 41, 39, 40, 5900, 42, 40, 41, 40, 39, 40, 41].map((x) => x * 1e6);
    expect(withoutOneTimeStalls(t, t.map(() => 0)).once).toEqual([5900e6]);
    // the same stall spent waiting for the batch stays; so do three stalls (the run's own rhythm)
    expect(withoutOneTimeStalls(t, t.map((x) => (x > 1e9 ? x : 0))).once).toEqual([]);
    const three = t.map((x, i) => (i % 4 === 0 ? 5900e6 : x));
    expect(withoutOneTimeStalls(three, three.map(() => 0)).once).toEqual([]);
  });
});

describe("issue 46 on an H100: each verified best against its plain runs (examples/pace/runs/h100-tune-d)", () => {
  const dir = new URL('../../examples/pace/runs/h100-tune-d/', import.meta.url).pathname;
  const plain = readFileSync(`${dir}measured.jsonl`, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { run: string; mean_step_ms: number; step_ms: number[] });
  /** A plain run's mean by tune's own rule: one-time stalls are warm-up, paid once a run (none of its waits recorded). */
  const steadyMs = (r: (typeof plain)[number]) => {
    const { kept } = withoutOneTimeStalls(r.step_ms.map((x) => x * 1e6), []);
    return kept.reduce((a, x) => a + x, 0) / kept.length / 1e6;
  };
  for (const name of ['jpeg_resnet', 'hf_trainer']) {
    it(`${name}: every injectable step measured; the best within 10% of the plain runs, one-time stalls left out as tune does`, () => {
      const r = JSON.parse(readFileSync(`${dir}${name}.plan.json`, 'utf8')) as {
        steps: { injectable: boolean; measuredStepNs: number | null }[];
        best: { stepNs: number };
        totalS: number;
      };
      expect(r.steps.filter((s) => s.injectable).every((s) => (s.measuredStepNs ?? 0) > 0)).toBe(true);
      const runs = plain.filter((p) => p.run === name);
      expect(runs).toHaveLength(2);
      const ms = runs.map(steadyMs).reduce((a, x) => a + x, 0) / runs.length;
      expect(Math.abs(r.best.stepNs / 1e6 / ms - 1)).toBeLessThan(0.1);
      expect(r.totalS).toBeLessThan(600);
    });
  }
  it("the JPEG ResNet's plain runs hold cudnn.benchmark's tuning of the partial last batch: 63.5 ms a step with it, 33.4 without", () => {
    const runs = plain.filter((p) => p.run === 'jpeg_resnet');
    expect(runs.map((r) => withoutOneTimeStalls(r.step_ms.map((x) => x * 1e6), []).once.length)).toEqual([2, 2]);
    const withStalls = runs.reduce((a, r) => a + r.mean_step_ms, 0) / 2;
    expect(withStalls / (runs.map(steadyMs).reduce((a, x) => a + x, 0) / 2)).toBeGreaterThan(1.5);
  });
});
