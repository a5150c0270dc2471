import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/planner/errors.js';
import { predictMemory } from '../../src/planner/memory.js';
import { describeModel, MODEL_SUMMARY_FORMAT } from '../../src/planner/modelSummary.js';
import { evaluatePlan, FASTER_MIN_SHARE, fasterLayouts, layoutSimplicity, memorySavers, type Plan, SEARCH_TIE_TOLERANCE, searchPlans } from '../../src/planner/plan.js';
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

const lexicographic = (a: number[], b: number[]) => {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return (a[i] as number) - (b[i] as number);
  return 0;
};

/** Fastest first, except within a tie: no plan is more than the tolerance faster than one ranked above it. */
function expectRankedWithTies(plans: Plan[]) {
  let slowest = Number.POSITIVE_INFINITY;
  for (const p of plans) {
    expect(p.time.tokensPerSec * (1 - SEARCH_TIE_TOLERANCE)).toBeLessThanOrEqual(slowest * (1 + 1e-12));
    slowest = Math.min(slowest, p.time.tokensPerSec);
  }
}

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
    expectRankedWithTies(res.plans);
  });
  // Issue 24 item 8: GPT-2 (124M) on 8 H100s put `fsdp x8, mb 4, accum 8` first, 0.2% ahead of 31 plans tied with it.
  it('plans within 2% of the fastest tie, and a tie goes to the simplest layout', () => {
    const res = searchPlans(request('gpt2', {}, {}, hardware('h100-sxm', 8)), { globalBatch: 256 });
    const fastest = Math.max(...res.plans.map((p) => p.time.tokensPerSec));
    const tied = res.plans.filter((p) => p.time.tokensPerSec >= fastest * (1 - SEARCH_TIE_TOLERANCE));
    expect(tied.length).toBeGreaterThan(8);
    expect(res.choice?.tied).toBe(tied.length);
    expect(res.choice?.fastest.time.tokensPerSec).toBe(fastest);
    const first = res.plans[0]!;
    for (const p of tied) expect(lexicographic(layoutSimplicity(first), layoutSimplicity(p))).toBeLessThanOrEqual(0);
    // DDP is 15% slower here (its autocast keeps fp32 activations; FSDP2's mixed-precision policy runs the forward in
    // bf16, which the 2-GPU measurements confirm: FSDP2 14% faster than DDP for Llama-2-7B-4L). ZeRO-1 and -2 keep the
    // run's precision as DDP does (issue 47), so they tie with DDP, not with FSDP: the tie is FSDP's.
    expect([first.parallelism.dp, first.setup.microBatch, first.setup.gradAccum, first.setup.checkpointing]).toEqual(['fsdp', 32, 1, 'none']);
    for (const p of tied) expect(p.parallelism.dp).toBe('fsdp');
    const best = (dp: string) => Math.max(...res.plans.filter((p) => p.parallelism.dp === dp).map((p) => p.time.tokensPerSec));
    expect(Math.abs(best('zero1') / best('ddp') - 1)).toBeLessThan(SEARCH_TIE_TOLERANCE);
    expect(res.plans.slice(0, tied.length)).toEqual(expect.arrayContaining(tied));
    expectRankedWithTies(res.plans);
    // In pure bf16 DDP's activations are as small as FSDP's: DDP ties and, replicated, is simplest.
    const bf16 = searchPlans(request('gpt2', { precision: 'bf16' }, {}, hardware('h100-sxm', 8)), { globalBatch: 256 });
    expect([bf16.plans[0]!.parallelism.dp, bf16.plans[0]!.setup.gradAccum]).toEqual(['ddp', 1]);
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

describe('HSDP among the suggestions (issue 47 item 6)', () => {
  // Llama 2 7B on 4 nodes of 8 H100s, ZeRO-1: FSDP saves the most memory but adds 1.2 s of cross-node all-gathers;
  // HSDP (shard within a node, replicate across) saves memory too and the model puts it 1 s faster than ZeRO-1.
  const r = request('llama-2-7b', { microBatch: 1, seq: 4096 }, { dp: 'zero1', dpSize: 32 }, hardware('h100-sxm', 8, 4));

  it('is suggested where the model puts it ahead of FSDP', () => {
    const savers = memorySavers(r);
    expect(savers.length).toBeLessThanOrEqual(3);
    const hsdp = savers.find((s) => s.change === '--strategy hsdp');
    const fsdp = savers.find((s) => s.change === '--strategy fsdp');
    expect(hsdp, savers.map((s) => s.change).join(', ')).toBeDefined();
    expect(hsdp!.savedBytes).toBeGreaterThan(0);
    expect(hsdp!.stepTimeDeltaMs).toBeLessThan(fsdp?.stepTimeDeltaMs ?? Number.POSITIVE_INFINITY);
    expect(hsdp!.stepTimeDeltaMs).toBeLessThan(0);
  });

  it("from an FSDP plan across nodes, communication-bound: HSDP named as a faster layout that fits (it frees no memory, so no saver names it)", () => {
    const fsdp = request('llama-2-7b', { microBatch: 1, seq: 2048 }, { dp: 'fsdp', dpSize: 32, reshardAfterForward: true }, hardware('h100-sxm', 8, 4));
    const base = evaluatePlan(fsdp);
    expect(base.time.bindingTerm).toBe('communication');
    expect(memorySavers(fsdp, base, 6).map((s) => s.change)).not.toContain('--strategy hsdp');
    const faster = fasterLayouts(fsdp, base);
    expect(faster[0]?.change).toBe('--strategy hsdp');
    // every layout named fits and takes a tenth off the step or more, fastest first
    for (const f of faster) {
      expect(f.stepTimeMs).toBeLessThanOrEqual(base.time.stepTimeMs * (1 - FASTER_MIN_SHARE));
      expect(f.peakAllocatedBytes).toBeLessThan(base.budgetBytes);
    }
    expect(faster.map((f) => f.stepTimeMs)).toEqual([...faster.map((f) => f.stepTimeMs)].sort((a, b) => a - b));
  });

  it('not on one node, where HSDP is FSDP', () => {
    const one = request('llama-2-7b', { microBatch: 1, seq: 4096 }, { dp: 'zero1', dpSize: 8 }, hardware('h100-sxm', 8));
    expect(memorySavers(one, undefined, 6).map((s) => s.change)).not.toContain('--strategy hsdp');
  });
});
