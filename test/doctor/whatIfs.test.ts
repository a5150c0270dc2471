/**
 * Planner what-ifs calibrated on a run, checked against real measurements (H200, torch 2.11): a run is rebuilt
 * from one measured row (probe records with its batch, sequence, peak and step time), calibrated there, and its
 * predictions compared with the other measured batches of the same model and set-up.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import type { Finding } from '../../src/findings/finding.js';
import type { HelloRecord, ModelRecord, StepRecord } from '../../src/run/records.js';
import { renderDoctorText } from '../../src/doctor/render.js';
import { buildDoctorReport } from '../../src/doctor/report.js';
import { hardwareOf, runSetupOf, type SetupEvidence } from '../../src/doctor/runSetup.js';
import { buildWhatIfs, whatIfFindings } from '../../src/doctor/whatIfs.js';
import type { Pipeline } from '../../src/pace/pipeline.js';
import { calibratedPeakBytes, calibratePlanner } from '../../src/planner/fromRun.js';
import { perSampleLineFrom, perSampleMemoryModel } from '../../src/run/memoryModel.js';
import { residentBytes } from '../../src/run/setup.js';
import { gpuById } from '../../src/gpus/catalogue.js';
import { evaluatePlan } from '../../src/planner/plan.js';
import { windowPipeline } from '../../src/pace/window.js';
import type { TraceMetrics } from '../../src/trace/metrics/types.js';
import { meta as traceMeta, metricsOf, tracePath } from '../helpers/fixtures.js';
import { loadMeasurements, type Measurement, modelFor, requestFor } from '../planner/calibrationData.js';
import { doctorInput } from './input.js';

/** What-ifs on a run as doctor's stages make them: the set-up inferred (the run stage's, runSetup.ts), then evaluated. */
type RunWhatIfInput = SetupEvidence & { pace: Pipeline | null; outOfMemory: boolean };
function whatIfsOf(i: RunWhatIfInput) {
  const setup = runSetupOf(i);
  return buildWhatIfs({ setup, hardware: setup && hardwareOf(setup), model: i.model, planModel: i.planModel, pace: i.pace, outOfMemory: i.outOfMemory });
}

const PLANNER_FIXTURES = fileURLToPath(new URL('../fixtures/planner/', import.meta.url));
/** torch.cuda.get_device_properties(0).total_memory of the H200 in examples/doctor/results/h200-summary.json. */
const H200_TOTAL = 150109880320;
const rows = loadMeasurements().filter((r) => r.ok && r.peak_alloc_step > 0 && (r.mode ?? 'train') === 'train' && !r.strategy);

/** Same model and set-up, different batches: [smallest batch row, others]. */
function batchSeries(filter: (r: Measurement) => boolean): [Measurement, Measurement[]][] {
  const groups = new Map<string, Measurement[]>();
  for (const r of rows.filter(filter)) {
    const k = `${r.model}|${r.seq}|${r.prec}|${r.opt}|${r.ckpt}`;
    groups.set(k, [...(groups.get(k) ?? []), r]);
  }
  return [...groups.values()]
    .filter((g) => g.length > 1)
    .map((g) => {
      const s = [...g].sort((a, b) => a.batch - b.batch);
      return [s[0] as Measurement, s.slice(1)];
    });
}

const stats = (errs: number[]) => {
  const a = errs.map(Math.abs).sort((x, y) => x - y);
  return { n: a.length, median: a[Math.floor(a.length / 2)] ?? 0, max: a[a.length - 1] ?? 0 };
};

const hw = {
  gpu: { ...gpuById('h200'), memoryBytes: H200_TOTAL },
  gpusPerNode: 1,
  nodes: 1,
  intraNodeBandwidth: 0,
  interNodeBandwidth: 25e9,
  hostBandwidth: 25e9,
};

describe('calibration on one measured batch predicts the others', () => {
  it('planner-calibrated: every transformer series, calibrated at its smallest batch', () => {
    const errs: number[] = [];
    const raw: number[] = [];
    const lines: string[] = [];
    for (const [base, others] of batchSeries((r) => modelFor(r.model) !== null)) {
      const m = modelFor(base.model)!;
      const q0 = requestFor(base);
      const cal = calibratePlanner({ model: m, hardware: hw, setup: q0.setup, parallelism: q0.par }, base.peak_alloc_step, base.step_s);
      for (const r of others) {
        const q = requestFor(r);
        const plan = evaluatePlan({ model: m, hardware: hw, setup: q.setup, parallelism: q.par });
        const e = (calibratedPeakBytes(cal, plan) - r.peak_alloc_step) / r.peak_alloc_step;
        errs.push(e);
        raw.push((plan.memory.peakAllocatedBytes - r.peak_alloc_step) / r.peak_alloc_step);
        lines.push(
          `${base.model} ${base.prec} ${base.opt}${base.ckpt ? ' ckpt' : ''}: ${base.batch} -> ${r.batch}: ${(e * 100).toFixed(2)}%`,
        );
      }
    }
    const s = stats(errs);
    const u = stats(raw);
    console.log(
      `calibrated: n=${s.n} median ${(s.median * 100).toFixed(2)}% max ${(s.max * 100).toFixed(2)}%; uncalibrated median ${(u.median * 100).toFixed(2)}% max ${(u.max * 100).toFixed(2)}%\n${lines.join('\n')}`,
    );
    expect(s.n).toBeGreaterThanOrEqual(11);
    // Documented in docs/reference/doctor.md, "What-ifs": median 0.6%, max 1.5% (uncalibrated: 1.5%, 9.8%).
    expect(s.median).toBeLessThan(0.01);
    expect(s.max).toBeLessThan(0.02);
    expect(s.max).toBeLessThan(u.max);
  });

  it('measured-per-sample: ResNet-50 (no block layout), calibrated at batch 32', () => {
    const errs: number[] = [];
    const safe: boolean[] = [];
    for (const [base, others] of batchSeries((r) => r.model === 'resnet50')) {
      // fp32 weights; SGD(momentum=0.9) keeps one fp32 buffer per parameter, AdamW two; the resident part leaves the
      // gradients out (run/setup.ts: a lower bound, so the line errs on the safe side). BatchNorm's statistics are left out.
      const resident = residentBytes({ weightBytes: base.params * 4, buffersBytes: 0, optimizerStateBytes: base.params * (base.opt === 'adamw' ? 8 : 4) });
      const m = perSampleMemoryModel(perSampleLineFrom(resident, base.peak_alloc_step, base.batch)!, 1e15, '');
      for (const r of others) {
        errs.push((m.peak(r.batch) - r.peak_alloc_step) / r.peak_alloc_step);
        safe.push(m.peak(r.batch) >= r.peak_alloc_step);
      }
    }
    const s = stats(errs);
    console.log(`resnet50 per-sample: n=${s.n} median ${(s.median * 100).toFixed(2)}% max ${(s.max * 100).toFixed(2)}%`);
    expect(s.n).toBe(6);
    // +0.9% to +4.7%: never under the measurement (counting the gradients gave 0.0% to +2.7%, but over-promises
    // GPT-2's batch: test/tune/search.test.ts; the settled definition is in run/setup.ts)
    expect(s.max).toBeLessThan(0.05);
    expect(safe.every(Boolean)).toBe(true);
  });
});

// ---- a doctor run rebuilt from a measured row ----

function hello(worldSize: number | null = null, devices = 1): HelloRecord {
  return {
    v: 1,
    type: 'hello',
    pid: 100,
    rank: null,
    t: 0,
    probeVersion: '0.2',
    python: '3.12',
    torch: '2.11.0+cu130',
    cudnn: null,
    cuda: {
      available: true,
      initialized: true,
      version: '13.0',
      devices: Array.from({ length: devices }, (_, i) => ({
        index: i,
        name: 'NVIDIA H200',
        totalMemoryBytes: H200_TOTAL,
        capability: '9.0',
      })),
      currentDevice: 0,
    },
    hostname: 'gpu',
    argv: ['train.py'],
    localRank: null,
    worldSize,
    stepHook: 'optimizer-step-post-hook',
    profileAt: 10,
    profileSteps: 5,
    maxSteps: null,
  };
}

function modelRecord(row: Measurement, hfConfig: Record<string, unknown> | null, name: string): ModelRecord {
  const dtype = row.prec === 'bf16' ? 'bfloat16' : 'float32';
  const size = dtype === 'bfloat16' ? 2 : 4;
  const stateBytes = row.opt === 'adamw' ? 2 * size * row.params : row.opt === 'sgd' ? size * row.params : 0;
  return {
    v: 1,
    type: 'model',
    pid: 100,
    rank: null,
    t: 0,
    format: 'gpuwise-model/1',
    name,
    paramCount: row.params,
    totalParamCount: row.params,
    paramGroups: [],
    modules: [{ name: 'model', class: name, paramCount: row.params, trainableParamCount: row.params, dtypes: { [dtype]: row.params } }],
    buffers: { count: 0, bytes: 0, dtypes: {} },
    optimizer: { class: row.opt === 'adamw' ? 'AdamW' : 'SGD', paramGroups: 1, stateBytes, stateDtypes: { [dtype]: stateBytes } },
    hfConfig,
    found: true,
  };
}

function steps(row: Measurement, n = 6): StepRecord[] {
  return Array.from({ length: n }, (_, i) => ({
    v: 1,
    type: 'step' as const,
    pid: 100,
    rank: null,
    t: i,
    step: i + 1,
    stepTimeS: row.step_s,
    dataWaitS: 0,
    batches: 1,
    samples: row.batch,
    tokens: row.seq ? row.batch * row.seq : null,
    seqLen: row.seq ?? null,
    stepSource: 'optimizer' as const,
    memory: {
      device: 0,
      allocatedBytes: 0,
      reservedBytes: row.peak_reserved,
      peakAllocatedBytes: row.peak_alloc_step,
      peakReservedBytes: row.peak_reserved,
      allocRetries: 0,
      ooms: 0,
    },
    profiled: false,
  }));
}

const gpt2Config = JSON.parse(readFileSync(`${PLANNER_FIXTURES}configs/gpt2/config.json`, 'utf8'));
const find = (pred: (r: Measurement) => boolean) => rows.find(pred) as Measurement;

describe('doctor report what-ifs', () => {
  const gpt2fp32 = (b: number) =>
    find((r) => r.model === 'gpt2' && r.prec === 'fp32' && r.opt === 'adamw' && !r.ckpt && r.batch === b && r.seq === 1024);

  it('a GPT-2 fp32 run at batch 4: calibrated, batch 8 predicted within 2% of its measurement, amp and max batch offered', () => {
    const run = gpt2fp32(4);
    const rep = buildDoctorReport(doctorInput([hello(), modelRecord(run, gpt2Config, 'GPT2LMHeadModel'), ...steps(run)]));
    const setup = rep.whatIfBasis?.setup;
    expect(setup).toMatchObject({
      microBatch: 4,
      gradAccum: 1,
      seq: 1024,
      precision: 'fp32',
      optimizer: 'adamw',
      gpuCatalogId: 'h200',
      checkpointing: 'none',
    });
    const cal = rep.whatIfBasis?.calibration;
    expect(cal?.basis).toBe('planner-calibrated');
    expect(cal?.text).toMatch(/^the planner predicted [\d.]+ GiB, measured 8\.1 GiB: [-+][\d.]+%/);
    const dbl = rep.whatIfs.find((w) => w.id === 'double-batch');
    const b8 = gpt2fp32(8);
    expect(dbl?.batch).toBe(8);
    expect(Math.abs((dbl?.predictedPeakBytes ?? 0) - b8.peak_alloc_step) / b8.peak_alloc_step).toBeLessThan(0.02);
    const max = rep.whatIfs.find((w) => w.id === 'max-batch');
    expect(max?.fits).toBe(true);
    // 139.8 GiB card, ~1.8 GiB per sample: far more than 16 (measured 28 GiB at 16).
    expect(max?.batch).toBeGreaterThan(60);
    expect((max?.predictedPeakBytes ?? 0) * 1.02).toBeLessThanOrEqual(max?.budgetBytes ?? 0);
    // The largest batch is a fact in the table (no advice): claims stop at 4x the batch.
    expect(max?.title).toMatch(new RegExp(`^batch ${max?.batch} is the largest that fits: predicted [\\d.]+ GiB of a 13\\d\\.\\d GiB budget`));
    expect(max?.recommendation).toBeNull();
    // The planner sees this fp32 step bound by compute: 2x and 4x the batch gain under 5%, so no bigger-batch advice
    // (it used to offer batch 81, 20x the run's, for its 5.1%).
    expect(max?.throughputFactor).toBeLessThan(1.06);
    expect(rep.whatIfs.map((w) => w.id)).not.toContain('bigger-batch');
    const amp = rep.whatIfs.find((w) => w.id === 'amp-bf16');
    expect(amp?.predictedPeakBytes).toBeLessThan(run.peak_alloc_step);
    expect(amp?.throughputFactor).toBeGreaterThan(1.5);
    // Single GPU, one visible: no FSDP; the batch fits: no accumulation.
    expect(rep.whatIfs.map((w) => w.id)).not.toContain('fsdp');
    expect(rep.whatIfs.map((w) => w.id)).not.toContain('grad-accum');
    // Without a window or an autocast record fp32 is only a guess: the amp what-if stays in the table, labelled, but
    // no advice (finding) rests on it; with the probe's autocast record saying fp32 weights run in fp32 it would.
    expect(amp?.title).toMatch(/^if the run is fp32 \(a guess\), bf16 autocast/);
    expect(amp?.recommendation).toBeNull();
    const planner = rep.findings.filter((f) => f.source === 'planner').map((f) => f.id);
    expect(planner).toEqual([]);
    expect(renderDoctorText(rep)).toMatch(/guessed: fp32 parameters and no profiler window or autocast record/);
    const text = renderDoctorText(rep);
    expect(text).toContain('What if (estimates)');
    expect(text).toMatch(/calibration: the planner predicted/);
    expect(text).toMatch(/- batch \d+ is the largest that fits: predicted/);
  });

  it('FSDP over the visible GPUs gives a larger per-GPU batch than one GPU, and says so', () => {
    const run = gpt2fp32(4);
    const rep = buildDoctorReport(doctorInput([hello(null, 4), modelRecord(run, gpt2Config, 'GPT2LMHeadModel'), ...steps(run)]));
    const f = rep.whatIfs.find((w) => w.id === 'fsdp');
    const max = rep.whatIfs.find((w) => w.id === 'max-batch');
    expect(f?.gpus).toBe(4);
    expect(f?.batch).toBeGreaterThan(max?.batch ?? Infinity);
    expect(f?.title).toMatch(/^FSDP over the 4 visible GPUs: batch \d+ per GPU/);
  });

  it('a run over its budget gets accumulation that keeps the effective batch, and checkpointing', () => {
    // The same measured run on a 40 GB card (A100 40GB memory): batch 16 (28 GiB) fits, 32 does not; batch 24 is over.
    const run = gpt2fp32(16);
    const h = hello();
    const d = h.cuda.devices[0]!;
    h.cuda.devices = [{ ...d, name: 'NVIDIA A100-SXM4-40GB', totalMemoryBytes: 40 * 1024 ** 3 }];
    const big = { ...run, batch: 24, peak_alloc_step: Math.round(run.peak_alloc_step * 1.5) };
    const rep = buildDoctorReport(doctorInput([h, modelRecord(big, gpt2Config, 'GPT2LMHeadModel'), ...steps(big)]));
    const acc = rep.whatIfs.find((w) => w.id === 'grad-accum');
    expect(acc?.fits).toBe(true);
    expect((acc?.batch ?? 0) * (acc?.gradAccum ?? 0)).toBeLessThanOrEqual(24);
    expect(acc?.gradAccum).toBeGreaterThan(1);
    expect(rep.whatIfs.find((w) => w.id === 'checkpointing')?.batch).toBeGreaterThan(24);
    expect(rep.whatIfs.find((w) => w.id === 'double-batch')?.fits).toBe(false);
  });

  it('infers checkpointing from the measured peak', () => {
    const run = find((r) => r.model === 'gpt2' && r.ckpt && r.batch === 8);
    const setupOnly = whatIfsOf({
      hello: hello(),
      model: modelRecord(run, gpt2Config, 'GPT2LMHeadModel'),
      planModel: modelFor('gpt2'),
      steps: steps(run),
      medianStepS: run.step_s,
      worldSize: null,
      metrics: ampMetrics,
      pace: windowPipeline(ampMetrics),
      outOfMemory: false,
    });
    expect(setupOnly.setup).toMatchObject({ precision: 'amp-bf16', checkpointing: 'full' });
    expect(Math.abs(setupOnly.calibration?.errorFraction ?? 1)).toBeLessThan(0.05);
    // a guess, labelled so, with its evidence
    const ck = setupOnly.setup?.inferences?.find((i) => i.name === 'checkpointing');
    expect(ck).toMatchObject({ value: 'full', how: 'guessed' });
    expect(ck?.evidence).toMatch(/the planner predicts [\d.]+ GiB without checkpointing, [\d.]+ GiB with full checkpointing: the peak matches/);
    expect(setupOnly.setup?.assumptions).toContain(ck?.evidence);
  });

  it('a compiled model is known as such, and its low peak is not read as checkpointing', () => {
    const run = find((r) => r.model === 'gpt2' && r.ckpt && r.batch === 8);
    const compiledModel = { ...modelRecord(run, gpt2Config, 'GPT2LMHeadModel'), v: 2, compiled: true, compiledEvidence: 'OptimizedModule' };
    const res = whatIfsOf({
      hello: hello(),
      model: compiledModel,
      planModel: modelFor('gpt2'),
      steps: steps(run),
      medianStepS: run.step_s,
      worldSize: null,
      metrics: ampMetrics,
      pace: windowPipeline(ampMetrics),
      outOfMemory: false,
    });
    expect(res.setup).toMatchObject({ compiled: true, checkpointing: 'none' });
    expect(res.setup?.inferences?.find((i) => i.name === 'compiled')).toMatchObject({ value: true, how: 'measured' });
    expect(res.setup?.inferences?.find((i) => i.name === 'checkpointing')?.evidence).toMatch(/compiled \(fusion lowers the peak\), so checkpointing is not inferred/);
    // Inductor's kernels in the window tell it too, without the probe's field
    const triton = { ...ampMetrics, topKernels: [{ name: 'triton_poi_fused_add_mul_0', category: 'elementwise', count: 1, totalNs: 1, meanNs: 1 }] } as unknown as TraceMetrics;
    const fromTrace = whatIfsOf({ ...{ hello: hello(), planModel: modelFor('gpt2'), steps: steps(run), medianStepS: run.step_s, worldSize: null, outOfMemory: false }, model: modelRecord(run, gpt2Config, 'GPT2LMHeadModel'), metrics: triton, pace: null });
    expect(fromTrace.setup).toMatchObject({ compiled: true, checkpointing: 'none' });
  });

  it('a model without a block layout (ResNet-50) gets the measured-per-sample model', () => {
    const run = find((r) => r.model === 'resnet50' && r.prec === 'fp32' && r.batch === 32);
    const b128 = find((r) => r.model === 'resnet50' && r.prec === 'fp32' && r.batch === 128);
    const rep = buildDoctorReport(doctorInput([hello(), modelRecord(run, null, 'ResNet'), ...steps(run)]));
    expect(rep.whatIfBasis?.calibration?.basis).toBe('measured-per-sample');
    expect(rep.whatIfBasis?.calibration?.text).toMatch(/^the planner has no block layout for this model; measured per sample/);
    expect(rep.whatIfs.every((w) => w.basis === 'measured-per-sample')).toBe(true);
    const max = rep.whatIfs.find((w) => w.id === 'max-batch');
    // 139.8 GiB at ~87 MB per sample.
    expect(max?.batch).toBeGreaterThan(1400);
    expect(max?.batch).toBeLessThan(1800);
    const dbl = rep.whatIfs.find((w) => w.id === 'double-batch');
    expect(dbl?.batch).toBe(64);
    // Extrapolated 4x: batch 128 from batch 32.
    const m = rep.whatIfBasis?.calibration;
    const at128 = (m?.staticBytes ?? 0) + (m?.perSampleBytes ?? 0) * 128;
    expect(Math.abs(at128 - b128.peak_alloc_step) / b128.peak_alloc_step).toBeLessThan(0.02);
    // No trace: no throughput estimate.
    expect(max?.throughputFactor).toBeNull();
  });

  it('says why there are none without a batch size or a GPU', () => {
    const run = gpt2fp32(4);
    const noSize = steps(run).map((s) => ({ ...s, samples: null }));
    expect(buildDoctorReport(doctorInput([hello(), modelRecord(run, gpt2Config, 'GPT2LMHeadModel'), ...noSize])).whatIfProblem).toMatch(
      /batch size/,
    );
    const cpu = hello();
    cpu.cuda.devices = [];
    const r = buildDoctorReport(doctorInput([cpu, modelRecord(run, gpt2Config, 'GPT2LMHeadModel'), ...steps(run)]));
    expect(r.whatIfs).toEqual([]);
    expect(r.whatIfProblem).toMatch(/no CUDA device/);
  });
});

describe('on real H200 profiler windows (examples/traces)', () => {
  it('GPT-2 under bf16 autocast, batch 16: precision read from the trace, smaller batches predicted within 2%', async () => {
    const m = await metricsOf('gpt2_amp');
    const md = traceMeta('gpt2_amp');
    // The probe's records of that run: batch 16 x 1024, the meta's peak and the trace's median step.
    const run = { ...find((r) => r.model === 'gpt2' && r.prec === 'amp_bf16' && r.opt === 'adamw' && !r.ckpt && r.batch === 16 && r.seq === 1024) };
    run.peak_alloc_step = md.peak_alloc;
    run.step_s = m.stepTime.medianNs / 1e9;
    const rep = buildDoctorReport({
      ...doctorInput([hello(), modelRecord(run, gpt2Config, 'GPT2LMHeadModel'), ...steps(run)]),
      traces: [{ rank: 0, path: tracePath('gpt2_amp'), metrics: m, collectives: null, error: null }],
    });
    expect(rep.whatIfBasis?.setup?.precision).toBe('amp-bf16');
    expect(rep.whatIfs.map((w) => w.id)).not.toContain('amp-bf16');
    // Predict the other measured batches of the same set-up from this one run.
    const m0 = modelFor('gpt2')!;
    const q0 = requestFor(run);
    const cal = calibratePlanner({ model: m0, hardware: hw, setup: q0.setup, parallelism: q0.par }, md.peak_alloc, run.step_s);
    for (const b of [1, 4, 8]) {
      const row = find((r) => r.model === 'gpt2' && r.prec === 'amp_bf16' && r.opt === 'adamw' && !r.ckpt && r.batch === b && r.seq === 1024);
      const q = requestFor(row);
      const pred = calibratedPeakBytes(cal, evaluatePlan({ model: m0, hardware: hw, setup: q.setup, parallelism: q.par }));
      expect(Math.abs(pred - row.peak_alloc_step) / row.peak_alloc_step).toBeLessThan(0.02);
    }
    const max = rep.whatIfs.find((w) => w.id === 'max-batch');
    expect(max?.fits).toBe(true);
    // 25.4 GiB at 16 on a 139.8 GiB card: about 5x the batch.
    expect(max?.batch).toBeGreaterThan(70);
    expect(max?.batch).toBeLessThan(110);
  });

  it('two-rank DDP GPT-2: calibrated on the DDP peak, FSDP over the 2 GPUs allows a larger per-GPU batch', async () => {
    const m = await metricsOf('ddp_gpt2.rank0');
    const md = traceMeta('ddp_gpt2.rank0');
    const run = { ...find((r) => r.model === 'gpt2' && r.prec === 'amp_bf16' && r.opt === 'adamw' && !r.ckpt && r.batch === 16 && r.seq === 1024) };
    run.peak_alloc_step = md.peak_alloc;
    run.step_s = m.stepTime.medianNs / 1e9;
    const rank = (r: number) => [
      { ...hello(2, 2), rank: r, pid: 100 + r },
      { ...modelRecord(run, gpt2Config, 'GPT2LMHeadModel'), rank: r, pid: 100 + r },
      ...steps(run).map((s) => ({ ...s, rank: r, pid: 100 + r })),
    ];
    const rep = buildDoctorReport({
      ...doctorInput([...rank(0), ...rank(1)]),
      traces: [{ rank: 0, path: tracePath('ddp_gpt2.rank0'), metrics: m, collectives: null, error: null }],
    });
    expect(rep.whatIfBasis?.setup).toMatchObject({ worldSize: 2, precision: 'amp-bf16', microBatch: 16 });
    // The planner's own DDP prediction is within its documented accuracy of this run.
    expect(Math.abs(rep.whatIfBasis?.calibration?.errorFraction ?? 1)).toBeLessThan(0.05);
    const f = rep.whatIfs.find((w) => w.id === 'fsdp');
    const max = rep.whatIfs.find((w) => w.id === 'max-batch');
    expect(f?.gpus).toBe(2);
    expect(f?.batch).toBeGreaterThan(max?.batch ?? Infinity);
    expect(f?.title).toMatch(/^FSDP over your 2 GPUs: [\d.]+x the batch \(\d+ per GPU against \d+ under DDP\)/);
  });
});

/**
 * The figures of a profiled window the what-ifs read, by hand: matmul precision (bf16 tensor cores), the busy/idle
 * split (the GPU waits for launches half the step: the host sets the pace), no sync, no collective.
 */
const ampMetrics = {
  precision: {
    tensorCore16Ns: 9e6,
    tensorCoreTf32Ns: 0,
    tensorCore8Ns: 0,
    fp32Ns: 1e6,
    unknownNs: 0,
    tensorCoreShare: 0.9,
    topFp32Kernels: [],
  },
  gemmShapes: [{ dtype: 'c10::BFloat16' }],
  perStep: {
    durNs: 100e6,
    busyNs: 50e6,
    idleByCauseNs: { dataloader: 0, hostSync: 0, h2dCopy: 0, communication: 0, launch: 50e6, other: 0 },
    kernelNsByCategory: { gemm: 40e6, attention: 0, conv: 0, elementwise: 10e6, reduction: 0, optimizer: 0, communication: 0, memcpy: 0, memset: 0, other: 0 },
    syncDrains: 0,
  },
  steps: [{}],
  examples: { syncCalls: [], dataLoaderWaitNsPerStep: 0 },
  comm: { collectives: 0, commNsPerStep: 0, exposedNsPerStep: 0 },
  crossDevice: null,
} as unknown as TraceMetrics;

describe('whatIfFindings', () => {
  const run = find((r) => r.model === 'resnet50' && r.prec === 'amp_bf16' && r.opt === 'sgd' && r.batch === 32);
  const input: RunWhatIfInput = {
    hello: hello(),
    model: modelRecord(run, null, 'ResNet'),
    planModel: null,
    steps: steps(run),
    medianStepS: 0.1,
    worldSize: null,
    metrics: ampMetrics,
    pace: windowPipeline(ampMetrics),
    outOfMemory: false,
  };

  it('turns a bigger batch into advice with the pipeline arithmetic (the GPU work grows, the host\'s does not)', () => {
    const res = whatIfsOf(input);
    const max = res.whatIfs.find((w) => w.id === 'max-batch');
    const k = Math.min(4, (max?.batch ?? 0) / 32); // claims stop at 4x the batch
    // The host sets the pace (100 ms a step, the GPU 50 ms): with a k-times batch the GPU works 50k ms against the
    // host's 100 ms, so a batch takes max(100 / k, 50) ms. Measured on an H100 (examples/realworld manual_sgd_lstm, a
    // host-bound LSTM): batch 20 -> 80 gave 4.4x the samples/s, where "busy grows, idle does not" added up said 2.7x.
    expect(max?.throughputFactor).toBeCloseTo(100 / Math.max(100 / k, 50), 9);
    // 2x and 4x both give 2x: 2x is the smallest that reaches 90% of the best gain; the largest that fits is more
    const bigger = res.whatIfs.find((w) => w.id === 'bigger-batch');
    expect(bigger?.batch).toBe(64);
    expect(max?.batch).toBeGreaterThan(128);
    expect(bigger?.title).toMatch(/^batch 64 \(2x the run's 32\): .* about 2\.0x the samples\/s$/);
    const { findings, merged } = whatIfFindings(res, [], 0.1, 0);
    expect(merged).toEqual([]);
    expect(findings.map((f) => f.id)).toEqual(['whatif-bigger-batch']);
    // 50% of the step by its gain, but a batch change is advice to weigh: at most medium.
    expect(findings[0]?.estimatedGain?.savedFraction).toBeCloseTo(0.5, 3);
    expect(findings[0]?.severity).toBe('medium');
    expect(findings[0]?.kind).toBe('advice');
    expect(findings[0]?.recommendation.summary).toMatch(/^Weigh raising the per-GPU batch from 32 to 64 \(2x\): scale the learning rate/);
  });

  it('claims nothing for a bigger batch when the idle time is the DataLoader (it grows with the batch too)', () => {
    const starved = {
      ...ampMetrics,
      perStep: { ...ampMetrics.perStep, durNs: 100e6, busyNs: 10e6, idleByCauseNs: { dataloader: 88e6, hostSync: 0, h2dCopy: 0, communication: 0, launch: 2e6, other: 0 } },
    } as unknown as TraceMetrics;
    const res = whatIfsOf({ ...input, metrics: starved, pace: windowPipeline(starved) });
    const max = res.whatIfs.find((w) => w.id === 'max-batch');
    expect(max?.throughputFactor).toBeLessThan(1.02);
    expect(res.whatIfs.map((w) => w.id)).not.toContain('bigger-batch');
    expect(whatIfFindings(res, [], 0.1, 0).findings).toEqual([]);
  });

  it("merges into the trace's gpu-underused instead of saying it twice", () => {
    const res = whatIfsOf(input);
    // the trace's finding of the same change: its fix is a bigger batch
    const underused = { id: 'gpu-underused', evidence: ['GPU busy 50%'], data: {}, fix: { label: 'batch x4', ops: [{ kind: 'batch', k: 4 }], arithmetic: '' } } as unknown as Finding;
    const { findings, merged } = whatIfFindings(res, [underused], 0.1, 0);
    expect(findings).toEqual([]);
    expect(merged[0]?.id).toBe('gpu-underused');
    expect(merged[0]?.evidence[1]).toMatch(/^planner what-if \(measured-per-sample\): batch 64 \(2x the run's 32\)/);
  });
});
