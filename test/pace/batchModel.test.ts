/**
 * The one batch model (src/pace/batch.ts) against the batch pairs measured on the H200: the same script run under
 * doctor at two batches (examples/levers/runs/h200, each with its profiled window), and the plain runs of
 * examples/levers/measured and examples/pace/measured. The GPU's work a step at the larger batch is predicted from the
 * smaller run's pipeline; growing all of it k-fold (the batch op before) read 2.5x and 5x too long. The bounds hold
 * what the model reaches, so a change that loses accuracy fails. Also: the what-ifs of a run whose pipeline times the
 * GPU take a batch change's step from pace alone, the planner's only for what pace cannot model.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadTrace } from '../../src/io/loadTrace.js';
import { batchedGpuNs, gpuPerStepOf } from '../../src/pace/batch.js';
import { batchedStepOf, batchThroughputFactor } from '../../src/pace/gain.js';
import type { Pipeline } from '../../src/pace/pipeline.js';
import { windowPipeline } from '../../src/pace/window.js';
import { analyzeTrace } from '../../src/trace/metrics/index.js';
import type { TraceMetrics } from '../../src/trace/metrics/types.js';
import { REPO } from '../doctor/helpers.js';
import { metricsOf } from '../helpers/fixtures.js';
import { type Measured, readMeasured, runReport } from './corpus.js';

const LEVERS = join(REPO, 'examples', 'levers', 'runs', 'h200');
const measured: Measured[] = readMeasured(
  join(REPO, 'examples', 'levers', 'measured', 'h200-2026-11-28.jsonl'),
  join(REPO, 'examples', 'levers', 'measured', 'h200-2026-11-29.jsonl'),
  join(REPO, 'examples', 'pace', 'measured', 'h200-2026-11-26.jsonl'),
);
const err = (predicted: number, actual: number) => (predicted - actual) / actual;

async function windowOf(run: string): Promise<TraceMetrics> {
  const dir = join(LEVERS, run);
  const trace = readdirSync(dir).find((f) => f.startsWith('trace-')) as string;
  return analyzeTrace(await loadTrace(join(dir, trace)));
}

describe('the batch model on the measured decode pairs (H200)', () => {
  const runs = new Map<string, Awaited<ReturnType<typeof runReport>>>();
  beforeAll(async () => {
    for (const name of ['decode_loop', 'decode_loop_b4', 'decode_loop_b4_d', 'hf_generate_static_b1']) runs.set(name, await runReport(join(LEVERS, name), name));
  }, 240_000);

  it("a decode step's GPU work at 4x the sequences (GPT-2 bf16, decode_loop -> _b4, _b4_d): within 15% of each, not 4-fold", () => {
    const p = runs.get('decode_loop')!.pace;
    const predicted = batchedGpuNs(p, 4)!;
    for (const b4 of ['decode_loop_b4', 'decode_loop_b4_d']) {
      const actual = runs.get(b4)!.pace.stages.gpu.ns!;
      // 553 us predicted against 619 and 625 measured: -11%, -12% (4-fold: +255%)
      expect(Math.abs(err(predicted, actual))).toBeLessThan(0.15);
    }
  });

  it('at 8x in fp32 under CUDA graphs (hf_generate_fp32_static_b1 -> _b8): within 40%, a lower bound', async () => {
    // The batch-1 run's probe predates the decode steps of graph replays (its steps are not known as decode steps),
    // so its window is given the batch doctor reads from a newer probe's run of the same script: 1.
    const m1 = await windowOf('hf_generate_fp32_static_b1');
    const m8 = await windowOf('hf_generate_fp32_static_b8');
    const w = windowPipeline(m1);
    const p: Pipeline = { ...w, gpuPerStep: gpuPerStepOf(m1, w.stages.gpu.ns!, 1) };
    const predicted = batchedGpuNs(p, 8)!;
    const actual = windowPipeline(m8).stages.gpu.ns!;
    // 782 us kept against 1,197 measured (-35%: cuBLAS picks split-K GEMMs over its matrix-vector kernel at 8 rows;
    // 8-fold: +423%). 8 sequences stay under the fp32 ridge (about 27 on the H200): nothing grows.
    expect(err(predicted, actual)).toBeLessThan(0);
    expect(err(predicted, actual)).toBeGreaterThan(-0.4);
  });

  it('batching requests on a static-cache generate() at batch 1: 8x the sequences, the step within 30% of the plain runs at batch 8', () => {
    const r = runs.get('hf_generate_static_b1')!.report;
    const batching = r.findings.find((f) => f.id === 'decode-batching')!;
    expect(batching.data.batchScale).toBe(8);
    // The expected step is per prompt: a step of 8 prompts is 8 of it.
    const predictedMs = (batching.estimatedGain!.expectedStepTimeNs * 8) / 1e6;
    const bf16b8 = measured.filter(
      (m) => m.under === 'plain' && /--batch 8/.test(m.flags) && /--static-cache/.test(m.flags) && !/fp32/.test(m.flags),
    );
    expect(bf16b8.length).toBeGreaterThanOrEqual(4);
    const actualMs = bf16b8.reduce((a, m) => a + m.mean_step_ms, 0) / bf16b8.length;
    // 2.53 ms predicted (the step stays: the drain's refill and the host bind) against 1.74-2.19 measured, mean 2.01:
    // +26%. The GPU's work grown 8-fold beside the refill read 6.2 ms (+210%).
    expect(Math.abs(err(predictedMs, actualMs))).toBeLessThan(0.3);
  });
});

describe("the batch model's work once a step in training", () => {
  it("leaves the optimizer's kernels: a two-rank DDP step whose AdamW takes 1.2 of the GPU's 3.0 ms", async () => {
    const m = await metricsOf('scenarios/ddp_comm_bound.rank0');
    const p = windowPipeline(m);
    const gpu = p.stages.gpu.ns!;
    const optimizer = m.perStep.kernelNsByCategory.optimizer;
    expect(optimizer / gpu).toBeGreaterThan(0.3);
    expect(p.gpuPerStep.ns).toBe(optimizer);
    expect(batchedGpuNs(p, 4)).toBeCloseTo(optimizer + 4 * (gpu - optimizer), 0);
  });
});

describe("what-ifs on a run whose pipeline times the GPU: a batch change's step is pace's alone", () => {
  it('hf_trainer_gpt2 (planner-calibrated, with a window): the batch what-ifs are pace batch op, bf16 autocast the planner', async () => {
    const { report, pace } = await runReport(join(REPO, 'examples', 'realworld', 'runs', 'hf_trainer_gpt2'), 'hf_trainer_gpt2');
    expect(pace.deviceTimed).toBe(true);
    expect(report.whatIfBasis?.calibration?.basis).toBe('planner-calibrated');
    const b0 = report.whatIfBasis!.setup!.microBatch!;
    const batchOnly = report.whatIfs.filter((x) => ['max-batch', 'double-batch', 'bigger-batch'].includes(x.id));
    expect(batchOnly.length).toBeGreaterThanOrEqual(2);
    for (const x of batchOnly) {
      const k = x.batch / b0;
      expect(x.throughputFactor).toBe(batchThroughputFactor(pace, Math.min(k, 4)));
      expect(x.stepTimeS).toBe(batchedStepOf(pace, k).stepNs / 1e9);
    }
    // A precision change is the planner's: pace has no model of the kernels autocast changes.
    const amp = report.whatIfs.find((x) => x.id === 'amp-bf16')!;
    expect(amp.throughputFactor).toBeGreaterThan(2);
  }, 120_000);
});
