/**
 * doctor's model-parallel-bubble: when the probe's model fits on one GPU, data parallelism over the same GPUs leads the
 * finding, with its expected step; when it does not, FSDP2 or the pipeline stays.
 */
import { describe, expect, it } from 'vitest';
import { diagnose } from '../../src/advice/engine.js';
import { gradientAllReduceNs } from '../../src/advice/rules/modelParallel.js';
import { dataParallelAlternativeOf, dataParallelFit } from '../../src/doctor/dataParallelFix.js';
import type { Hardware } from '../../src/planner/setup.js';
import type { TraceMetrics } from '../../src/trace/metrics/types.js';
import type { RunSetup } from '../../src/run/setup.js';
import { hardwareOf } from '../../src/doctor/runSetup.js';
import { gpuById } from '../../src/gpus/catalogue.js';
import type { ModelRecord } from '../../src/run/records.js';
import { splitTrace } from '../helpers/splitTrace.js';
import { metricsOfText } from '../helpers/synth.js';

const H200 = 150109880320;

function modelOf(params: number): ModelRecord {
  return {
    v: 2,
    type: 'model',
    pid: 1,
    rank: 0,
    t: 0,
    format: 'gpuwise-model/1',
    name: 'ModuleList',
    paramCount: params,
    totalParamCount: params,
    paramGroups: [{ name: '0', count: params / 2 }],
    modules: [{ name: 'model', class: 'ModuleList', paramCount: params, trainableParamCount: params, dtypes: { float32: params } }],
    buffers: { count: 0, bytes: 0, dtypes: {} },
    optimizer: { class: 'AdamW', paramGroups: 1, stateBytes: params * 8, stateDtypes: { float32: params * 2 } },
    hfConfig: null,
    found: true,
  } as ModelRecord;
}

function setupOf(peak: number): RunSetup {
  return {
    microBatch: 8192,
    gradAccum: 1,
    seq: null,
    precision: null,
    optimizer: 'adamw',
    optimizerClass: 'AdamW',
    checkpointing: 'none',
    gpuName: 'NVIDIA H200',
    gpuCatalogId: 'h200',
    gpuMemoryBytes: H200,
    worldSize: 1,
    visibleGpus: 2,
    measuredPeakAllocatedBytes: peak,
    measuredStepS: null,
    assumptions: [],
  };
}

/** The rule's finding with doctor's context: the data-parallel fit of this model, set-up and hardware. */
function ledFinding(metrics: TraceMetrics, model: ModelRecord | null, setup: RunSetup, hw: Hardware) {
  const dataParallel = dataParallelAlternativeOf(metrics, model, setup, hw, null);
  return diagnose([metrics], [], [{ askedHalf: null, dataParallel }]).find((f) => f.id === 'model-parallel-bubble')!;
}

describe('data parallelism for a split model that fits on one GPU', () => {
  const metrics = metricsOfText(splitTrace({ pipelined: false }).toJSON());
  const bubble = diagnose([metrics]).find((f) => f.id === 'model-parallel-bubble')!;

  it('leads with DDP when the whole model fits and DDP beats the pipeline: shared compute + the gradient all-reduce', () => {
    const setup = setupOf(20e9);
    const hw = hardwareOf(setup)!;
    const model = modelOf(40e6);
    const f = ledFinding(metrics, model, setup, hw);
    expect(f.data.dataParallelLayout).toBe('ddp');
    expect(f.data.dataParallelFitBasis).toBe('probe-bound');
    // 0.16 GB weights + 2 x 0.16 GB gradients and buckets + 0.32 GB AdamW state + the 20 GB the split measured.
    expect(f.data.dataParallelPeakBytes).toBeCloseTo(0.16e9 + 0.32e9 + 0.32e9 + 20e9, -3);
    const allReduce = gradientAllReduceNs(0.16e9, 2, gpuById('h200').intraNodeBandwidth);
    // 2 x 1/2 x 0.16 GB at 450 GB/s.
    expect(allReduce / 1e6).toBeCloseTo((0.16e9 / 450e9) * 1e3, 3);
    const expected = (bubble.data.dataParallelComputeNs as number) + allReduce;
    expect(f.estimatedGain!.expectedStepTimeNs).toBeCloseTo(expected, -2);
    expect(f.estimatedGain!.expectedStepTimeNs).toBeLessThanOrEqual(bubble.estimatedGain!.expectedStepTimeNs);
    expect(f.recommendation.code.split('\n')[0]).toMatch(/torchrun --nproc_per_node 2/);
    expect(f.recommendation.code).toMatch(/DistributedDataParallel[\s\S]*pipeline it/);
    expect(f.evidence.join('\n')).toMatch(/fits on one GPU under DDP/);
    expect(f.severity).toBe('high');
  });

  it('keeps the pipeline first when DDP would be slower (a larger all-reduce), with DDP as evidence', () => {
    const setup = setupOf(20e9);
    const f = ledFinding(metrics, modelOf(400e6), setup, hardwareOf(setup)!);
    // Shared compute 30 ms + both optimizers 4 ms + idle, + 1.6 GB all-reduced in 3.6 ms: more than the pipeline.
    expect(f.estimatedGain).toEqual(bubble.estimatedGain);
    expect(f.recommendation).toEqual(bubble.recommendation);
    expect(f.evidence[f.evidence.length - 1]).toMatch(/fits on one GPU under DDP.*DistributedDataParallel would take about 38\.\d ms a step, the pipeline 37\.\d ms/);
  });

  it('FSDP2 when only sharded state fits, and the pipeline alone when nothing does', () => {
    const setup = setupOf(60e9);
    const hw = hardwareOf(setup)!;
    // 8 B parameters: 32 GB weights, 64 GB gradients and buckets, 64 GB AdamW state: whole on one GPU it cannot fit.
    const big = modelOf(8e9);
    const fit = dataParallelFit(2, big, setup, hw, null)!;
    expect(fit.layout).toBe('fsdp');
    expect(fit.peakBytes).toBeCloseTo((32e9 + 64e9 + 64e9) / 2 + 60e9, -3);
    const huge = modelOf(30e9);
    expect(dataParallelFit(2, huge, setup, hw, null)).toBeNull();
    expect(dataParallelAlternativeOf(metrics, huge, setup, hw, null)).toBeNull();
    expect(ledFinding(metrics, huge, setup, hw)).toEqual(bubble);
  });

  it('leaves a finding alone without a measured peak or the probe model', () => {
    const hw = hardwareOf(setupOf(1e9))!;
    expect(ledFinding(metrics, modelOf(400e6), { ...setupOf(1e9), measuredPeakAllocatedBytes: null }, hw)).toEqual(bubble);
    expect(ledFinding(metrics, null, setupOf(1e9), hw)).toEqual(bubble);
  });
});

describe('the H200 scenario: the naive split and its DDP twin', () => {
  it('leads with DDP, whose expected step is within 25% of the DDP twin measured', async () => {
    const { readFileSync } = await import('node:fs');
    const { TRACES, metricsOf } = await import('../helpers/fixtures.js');
    const meta = (n: string) => JSON.parse(readFileSync(`${TRACES}scenarios/${n}.meta.json`, 'utf8'));
    const m = await metricsOf('scenarios/model_parallel');

    // The scenario's model as the probe would count it: 12 blocks of Linear(2048, 8192) + Linear(8192, 2048), then
    // Linear(2048, 1000), fp32, AdamW (two fp32 states a parameter); its measured peak on GPU 0.
    const params = 12 * (2048 * 8192 + 8192 + 8192 * 2048 + 2048) + 2048 * 1000 + 1000;
    const setup = setupOf(meta('model_parallel').peak_alloc);
    const f = ledFinding(m, modelOf(params), setup, hardwareOf(setup)!);
    expect(f.data.dataParallelLayout).toBe('ddp');
    expect(f.recommendation.code).toMatch(/^# torchrun --nproc_per_node 2/);
    const g = f.estimatedGain!;
    const predicted = (g.expectedStepTimeNs / g.stepTimeNs) * meta('model_parallel').median_step_ms;
    const measured = meta('model_parallel_ddp.rank0').median_step_ms;
    expect(Math.abs(predicted - measured) / measured, `predicted ${predicted.toFixed(1)} ms, DDP measured ${measured.toFixed(1)} ms`).toBeLessThan(0.25);
  });
});
