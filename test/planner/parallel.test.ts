import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/planner/errors.js';
import { predictMemory } from '../../src/planner/memory.js';
import { describeModel, MODEL_SUMMARY_FORMAT } from '../../src/planner/modelSummary.js';
import { evaluatePlan, searchPlans } from '../../src/planner/plan.js';
import { predictStepTime } from '../../src/planner/time.js';
import { hardware, model, request } from './helpers.js';

const peak = (r: ReturnType<typeof request>) => predictMemory(r.model, r.setup, r.parallelism).peakAllocatedBytes;
const activations = (r: ReturnType<typeof request>) =>
  predictMemory(r.model, r.setup, r.parallelism).components.find((c) => c.name === 'activations')?.bytes ?? 0;

describe('tensor and pipeline parallelism', () => {
  const hw8 = hardware('h100-sxm', 8);
  it('TP shards weights and the attention/MLP activations but not the norms (no sequence parallelism)', () => {
    const one = request('llama-2-7b', { microBatch: 8, seq: 4096, precision: 'bf16' }, {}, hw8);
    const tp8 = request('llama-2-7b', { microBatch: 8, seq: 4096, precision: 'bf16' }, { tp: 8 }, hw8);
    const a1 = activations(one);
    const a8 = activations(tp8);
    expect(a8).toBeLessThan(a1 / 2);
    expect(a8).toBeGreaterThan(a1 / 8);
    expect(peak(tp8)).toBeLessThan(peak(one) / 2);
  });
  it('TP all-reduces are exposed and grow with the degree', () => {
    const t = (tp: number) =>
      predictStepTime(
        model('llama-2-7b'),
        request('llama-2-7b', { microBatch: 4, seq: 2048 }).setup,
        { dp: 'none', dpSize: 1, tp, pp: 1, reshardAfterForward: true, cpuOffload: false },
        hw8,
      );
    expect(t(1).exposedCommMs).toBe(0);
    expect(t(8).exposedCommMs).toBeGreaterThan(t(2).exposedCommMs);
  });
  it('1F1B: the first stage holds min(m, p) micro-batches; the bubble shrinks with more micro-batches', () => {
    const at = (accum: number) => request('llama-2-7b', { microBatch: 8, seq: 4096, gradAccum: accum }, { pp: 4 }, hardware('h100-sxm', 4));
    expect(activations(at(8))).toBeCloseTo(4 * activations(at(1)), -6);
    expect(activations(at(2))).toBeCloseTo(2 * activations(at(1)), -6);
    const bubble = (accum: number) => {
      const r = at(accum);
      const t = predictStepTime(r.model, r.setup, r.parallelism, r.hardware);
      return t.bubbleMs / t.stepTimeMs;
    };
    expect(bubble(4)).toBeGreaterThan(bubble(16));
    expect(bubble(16)).toBeGreaterThan(0);
  });
  it('HSDP shards within a node: more memory than FSDP over all ranks, less inter-node traffic exposed', () => {
    const hw = hardware('h100-sxm', 8, 4);
    const fsdp = request('llama-2-7b', { seq: 2048 }, { dp: 'fsdp', dpSize: 32 }, hw);
    const hsdp = request('llama-2-7b', { seq: 2048 }, { dp: 'hsdp', dpSize: 32, hsdpShardSize: 8 }, hw);
    expect(peak(hsdp)).toBeGreaterThan(peak(fsdp));
    const tf = predictStepTime(fsdp.model, fsdp.setup, fsdp.parallelism, hw);
    const th = predictStepTime(hsdp.model, hsdp.setup, hsdp.parallelism, hw);
    expect(th.commMs).toBeLessThan(tf.commMs);
  });
  it('DDP communication: a gradient all-reduce 2(n-1)/n of the gradient bytes', () => {
    const hw = hardware('h100-sxm', 8);
    const r = request('gpt2', { microBatch: 8 }, { dp: 'ddp', dpSize: 8 }, hw);
    const t = predictStepTime(r.model, r.setup, r.parallelism, hw);
    const expectedMs = ((124_439_808 * 4 * 2 * 7) / 8 / (hw.intraNodeBandwidth * 0.8)) * 1000;
    expect(t.commMs).toBeCloseTo(expectedMs, 3);
  });
});

describe('search', () => {
  it('every plan honours global batch = micro x accumulation x dp and fits', () => {
    const r = request('llama-2-7b', { seq: 2048 }, {}, hardware('a100-80', 8, 2));
    const res = searchPlans(r, { globalBatch: 256 });
    expect(res.plans.length).toBeGreaterThan(10);
    for (const p of res.plans) {
      expect(p.setup.microBatch * p.setup.gradAccum * p.parallelism.dpSize).toBe(256);
      expect(p.parallelism.dpSize * p.parallelism.tp * p.parallelism.pp).toBe(16);
      expect(p.fits).toBe(true);
      expect(r.model.kvHeads % p.parallelism.tp).toBe(0);
    }
    for (let i = 1; i < res.plans.length; i++)
      expect(res.plans[i - 1]!.time.tokensPerSec).toBeGreaterThanOrEqual(res.plans[i]!.time.tokensPerSec);
  });
  it('a model that fits nowhere yields no plans', () => {
    expect(searchPlans(request('mixtral-8x7b', { seq: 4096 }, {}, hardware('rtx4090', 1))).plans).toHaveLength(0);
  });
  it('a single-GPU search varies checkpointing and batch only', () => {
    const res = searchPlans(request('gpt2', {}, {}, hardware('h200')));
    const layouts = new Set(res.plans.map((p) => `${p.parallelism.dp}/${p.parallelism.tp}/${p.parallelism.pp}`));
    expect([...layouts]).toEqual(['none/1/1']);
    expect(evaluatePlan({ ...request('gpt2', {}, {}, hardware('h200')), setup: res.plans[0]!.setup }).fits).toBe(true);
  });
});

describe('model summary (gpuwise-model/1)', () => {
  it('round-trips a description and gives the same prediction', () => {
    const m = model('qwen2-0.5b');
    const back = describeModel(JSON.parse(JSON.stringify({ format: MODEL_SUMMARY_FORMAT, ...m })));
    expect(back).toEqual(m);
  });
  it('names a bad field', () => {
    const m = model('gpt2');
    expect(() => describeModel({ format: MODEL_SUMMARY_FORMAT, ...m, layers: -1 })).toThrow(ConfigError);
    expect(() => describeModel({ format: MODEL_SUMMARY_FORMAT, ...m, layers: -1 })).toThrow(/^layers: must be a non-negative number/);
    expect(() => describeModel({ format: 'other/2' })).toThrow(/^format: unknown model summary format/);
  });
});
