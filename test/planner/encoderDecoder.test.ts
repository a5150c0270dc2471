/**
 * T5's encoder-decoders (issue 47 item 6): exact parameter counts against the published ones and a count written
 * here from the config's fields alone; the activations of both stacks (seq x seq terms per head, cross-attention over
 * the source); the step's FLOPs; layouts over the blocks of both stacks; the CLI's --target-seq.
 *
 * The configs in test/fixtures/planner/configs: t5-small (the shipped fixture), t5-base (google-t5/t5-base), flan-t5-base
 * and flan-t5-large (google/flan-t5-*: `feed_forward_proj` "gated-gelu", untied), mt5-small (google/mt5-small).
 * Published counts (sum of p.numel() of the *ForConditionalGeneration class, transformers 4.x): t5-small 60,506,624
 * and t5-base 222,903,552 (KerasNLP's presets; DeepSpeed's zero_to_fp32 prints the first), flan-t5-base 247,577,856
 * (printed by many fine-tuning notebooks), flan-t5-large 783,150,080 (T5 v1.1 large's, the same layout), mt5-small
 * 300,176,768 (the vocabulary trimmer's table: 256,114,688 in the two embeddings).
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { microBatchActivations, runDtypes, t5Blocks } from '../../src/planner/activations.js';
import { emit } from '../../src/planner/emit.js';
import { describeHfConfig } from '../../src/planner/hfConfig.js';
import { parallelismFor } from '../../src/planner/layout.js';
import { predictMemory, stageParams } from '../../src/planner/memory.js';
import { evaluatePlan } from '../../src/planner/plan.js';
import type { PlanJson } from '../../src/planner/report.js';
import type { TrainingSetup } from '../../src/planner/setup.js';
import { forwardFlopsPerSample } from '../../src/planner/time.js';
import { configErrorOf, configPath, hardware, model, planCli as cli, request } from './helpers.js';

type Json = Record<string, unknown>;
const cfg = (name: string): Json => JSON.parse(readFileSync(configPath(name), 'utf8'));

/**
 * The parameters of T5ForConditionalGeneration from the config's fields, with T5Config's defaults, written from the
 * module tree (modeling_t5.py): q, k, v, o of heads x d_kv each; wi (or wi_0 and wi_1) and wo; a weight-only norm
 * before each sublayer and after each stack; one relative bias table (buckets x heads) per stack; the shared
 * embedding; lm_head unless tied.
 */
function t5Params(c: Json): number {
  const n = (k: string, d?: number) => (c[k] ?? d) as number;
  const [d, heads, kv, ff, vocab] = [n('d_model'), n('num_heads'), n('d_kv'), n('d_ff'), n('vocab_size')];
  const enc = n('num_layers');
  const dec = n('num_decoder_layers', enc);
  const proj = (c.feed_forward_proj ?? (c.model_type === 't5' ? 'relu' : 'gated-gelu')) as string;
  const wi = proj.startsWith('gated-') ? 2 : 1;
  const attention = 4 * d * heads * kv;
  const mlp = (wi + 1) * d * ff;
  const tied = (c.tie_word_embeddings ?? c.model_type !== 'mt5') as boolean;
  const tables = c.model_type === 'umt5' ? enc + dec : 2;
  return (
    enc * (attention + mlp + 2 * d) +
    dec * (2 * attention + mlp + 3 * d) +
    tables * n('relative_attention_num_buckets', 32) * heads +
    2 * d +
    vocab * d * (tied ? 1 : 2)
  );
}

describe('T5 parameter counts', () => {
  it.each([
    ['t5-small', 60_506_624],
    ['t5-base', 222_903_552],
    ['flan-t5-base', 247_577_856],
    ['flan-t5-large', 783_150_080],
    ['mt5-small', 300_176_768],
  ])('%s: %d, the published count and the count from its fields', (name, published) => {
    const m = describeHfConfig(cfg(name));
    expect(m.paramCount).toBe(published);
    expect(t5Params(cfg(name))).toBe(published);
  });

  it('t5 v1.0 ties lm_head to the shared embedding, flan-T5 and mT5 do not', () => {
    expect(describeHfConfig(cfg('t5-base')).tiedEmbeddings).toBe(true);
    expect(describeHfConfig(cfg('flan-t5-base')).paramGroups.map((g) => g.name)).toContain('lm_head');
    expect(describeHfConfig(cfg('mt5-small')).embeddingParamCount).toBe(256_114_688);
  });

  it('the stacks: encoder and decoder blocks, the root (shared embedding, two final norms, lm_head) and the means', () => {
    const m = describeHfConfig(cfg('flan-t5-base'));
    expect(m.encoderDecoder).toEqual({
      encoderLayers: 12,
      decoderLayers: 12,
      encoderBlockParamCount: 7_079_424,
      decoderBlockParamCount: 9_439_488,
    });
    expect(m.layers).toBe(24);
    expect(m.rootParamCount).toBe(2 * 32128 * 768 + 2 * 768);
    expect(m.layers * m.blockParamCount + m.rootParamCount).toBe(m.paramCount);
  });

  it('umT5 keeps a relative bias table in every block', () => {
    const c = { ...cfg('mt5-small'), model_type: 'umt5' };
    expect(describeHfConfig(c).paramCount).toBe(300_176_768 + 14 * 32 * 6);
  });

  it('any generated T5 config: the planner and the count from the fields agree, and the blocks and root add up', () => {
    const config = fc.record({
      model_type: fc.constantFrom('t5', 'mt5', 'umt5'),
      d_model: fc.integer({ min: 8, max: 4096 }),
      num_heads: fc.integer({ min: 1, max: 64 }),
      d_kv: fc.integer({ min: 1, max: 256 }),
      d_ff: fc.integer({ min: 1, max: 16384 }),
      num_layers: fc.integer({ min: 1, max: 48 }),
      num_decoder_layers: fc.option(fc.integer({ min: 1, max: 48 }), { nil: undefined }),
      vocab_size: fc.integer({ min: 1, max: 300_000 }),
      feed_forward_proj: fc.constantFrom('relu', 'gated-gelu', 'gated-silu', 'gelu'),
      tie_word_embeddings: fc.option(fc.boolean(), { nil: undefined }),
    });
    fc.assert(
      fc.property(config, (c) => {
        const json = JSON.parse(JSON.stringify(c)) as Json;
        const m = describeHfConfig(json);
        expect(m.paramCount).toBe(t5Params(json));
        expect(m.layers * m.blockParamCount + m.rootParamCount).toBeCloseTo(m.paramCount, -1);
      }),
      { numRuns: 300 },
    );
  });
});

describe('T5 configs the planner refuses, in one line naming the field', () => {
    it('no decoder blocks', () =>
    expect(configErrorOf({ ...cfg('t5-small'), num_decoder_layers: 0 })).toMatch(
      /^num_decoder_layers: 0 decoder blocks: an encoder alone \(T5EncoderModel\) is not planned/,
    ));
  it('a feed-forward projection T5Config refuses', () =>
    expect(configErrorOf({ ...cfg('t5-small'), feed_forward_proj: 'fancy-gelu' })).toMatch(/^feed_forward_proj: 'fancy-gelu' is not of the form/));
  it('an activation the planner does not model', () =>
    expect(configErrorOf({ ...cfg('t5-small'), feed_forward_proj: 'gated-relu' })).toMatch(/^feed_forward_proj: gated "relu" is not supported/));
  it('BART keeps its refusal, with what differs', () =>
    expect(configErrorOf({ model_type: 'bart', is_encoder_decoder: true })).toMatch(
      /^model_type: 'bart' is an encoder-decoder model \(BART\): the planner models T5's encoder-decoders/,
    ));
});

const setup = (over: Partial<TrainingSetup> = {}): TrainingSetup => ({
  microBatch: 8,
  seq: 512,
  targetSeq: 512,
  precision: 'amp-bf16',
  optimizer: 'adamw',
  checkpointing: 'none',
  gradAccum: 1,
  mode: 'train',
  ...over,
});
const single = { dp: 'none', dpSize: 1, tp: 1, pp: 1, reshardAfterForward: true, cpuOffload: false } as const;
const peak = (name: string, over: Partial<TrainingSetup>) => predictMemory(model(name), setup(over), single).peakAllocatedBytes;

describe('T5 activations', () => {
  const amp = runDtypes('amp-bf16', 'none').d;

  it('memory grows with the target length, and with the source length', () => {
    for (const name of ['t5-base', 'flan-t5-base', 'mt5-small']) {
      const byTarget = [16, 64, 128, 256, 512, 1024].map((t) => peak(name, { targetSeq: t }));
      const bySource = [64, 128, 512, 1024].map((s) => peak(name, { seq: s, targetSeq: 128 }));
      for (const series of [byTarget, bySource]) for (let i = 1; i < series.length; i++) expect(series[i]!).toBeGreaterThan(series[i - 1]!);
    }
  });

  it("a decoder block is an encoder block plus the cross-attention: per target token its norm, q's input, q, the scores over the source, o's input, the dropout mask; per source token k and v and their bf16 input casts", () => {
    const m = model('t5-base'); // d_model 768, 12 heads of 64, dropout 0.1
    const [S, T] = [512, 512];
    const { encoder, decoder } = t5Blocks(m, amp, S, T);
    const full = (b: typeof encoder) => b.shardedBytes + b.replicatedBytes;
    const perTarget = 8 * 768 + 2 * 768 + 2 * 768 + 12 * S * (4 + 1 + 2) + 2 * 768 + 768;
    const perSource = 2 * 2 * 768 + 2 * 2 * 768;
    expect(full(decoder) - full(encoder)).toBe(T * perTarget + S * perSource);
  });

  it('the encoder keeps seq x seq terms per head: 7 bytes a score under autocast with dropout (fp32 softmax output, mask, bf16 probabilities)', () => {
    const m = model('t5-base');
    const core = (S: number) => t5Blocks(m, amp, S, 64).encoder.attentionCoreBytes;
    // second difference of a*S^2*b over S = 256, 512, 768: 2 * a * 256^2 * b
    expect(core(768) - 2 * core(512) + core(256)).toBe(2 * 12 * 256 * 256 * 7);
    const noDropout = describeHfConfig({ ...cfg('t5-base'), dropout_rate: 0 });
    const coreNoDropout = (S: number) => t5Blocks(noDropout, amp, S, 64).encoder.attentionCoreBytes;
    expect(coreNoDropout(768) - 2 * coreNoDropout(512) + coreNoDropout(256)).toBe(2 * 12 * 256 * 256 * 6);
    const fp32 = runDtypes('fp32', 'none').d;
    const coreFp32 = (S: number) => t5Blocks(noDropout, fp32, S, 64).encoder.attentionCoreBytes;
    expect(coreFp32(768) - 2 * coreFp32(512) + coreFp32(256)).toBe(2 * 12 * 256 * 256 * 4);
  });

  it('full checkpointing keeps each block input and, once a stack, the mask-added position biases the checkpoints hold', () => {
    const m = model('t5-base');
    const s = setup({ microBatch: 2, seq: 512, targetSeq: 128, checkpointing: 'full' });
    const none = microBatchActivations(m, amp, { ...s, checkpointing: 'none' }, single, m.layers);
    const full = microBatchActivations(m, amp, s, single, m.layers);
    expect(full.savedBytes).toBeLessThan(none.savedBytes / 5);
    const h = 768;
    const outer = 512 * (2 * h + 8 * h + 4 * h) + 128 * (2 * h + 8 * h + 2 * h);
    const inputs = 12 * 512 * 4 * h + 12 * 128 * 4 * h;
    const biases = (12 * 512 * 512 + 12 * 128 * 128 + 128 * 128 + 12 * 128 * 512) * 4;
    expect(full.savedBytes).toBe(2 * (inputs + biases + outer));
  });

  it('the loss runs over the target positions only: its bf16 logits hole is batch x target x vocab x 2, whatever the source', () => {
    for (const seq of [128, 1024]) {
      const m = predictMemory(model('flan-t5-base'), setup({ microBatch: 4, seq, targetSeq: 64 }), single);
      expect(m.fragmentationBytes).toBe(4 * 64 * 32128 * 2);
    }
  });
});

describe('T5 step time', () => {
  it("forward FLOPs: the encoder's matmuls over the source, the decoder's over the target (cross k, v over the source), the head, and attention in both", () => {
    const m = model('flan-t5-base');
    const [h, inner, ff, V] = [768, 768, 3 * 768 * 2048, 32128];
    for (const [S, T] of [
      [512, 128],
      [128, 512],
      [1024, 1024],
    ] as const) {
      const encoder = 12 * (2 * S * (4 * h * inner + ff) + 4 * S * S * inner);
      const decoder = 12 * (2 * T * (6 * h * inner + ff) + 2 * S * 2 * h * inner + 4 * (T * T + T * S) * inner);
      expect(forwardFlopsPerSample(m, setup({ seq: S, targetSeq: T }))).toBe(encoder + decoder + 2 * V * h * T);
    }
  });

  it("the step's GPU work grows with the target length (compute and memory-bound passes; the CPU floor does not)", () => {
    const time = (t: number) => evaluatePlan(request('t5-base', { microBatch: 32, seq: 512, targetSeq: t })).time;
    const [short, mid, long] = [16, 128, 512].map(time) as [ReturnType<typeof time>, ReturnType<typeof time>, ReturnType<typeof time>];
    for (const k of ['computeMs', 'memoryBoundMs', 'stepTimeMs'] as const) {
      expect(mid[k]).toBeGreaterThan(short[k]);
      expect(long[k]).toBeGreaterThan(mid[k]);
    }
    expect(long.cpuFloorMs).toBe(short.cpuFloorMs);
  });
});

describe('T5 layouts: FSDP units and pipeline stages are the blocks of both stacks', () => {
  it('an FSDP unit gathers the largest block, a decoder block; the stage holds every parameter once', () => {
    const m = model('flan-t5-base');
    const sp = stageParams(m, { ...single, dp: 'fsdp', dpSize: 8 });
    expect(sp.block).toBe(9_439_488);
    expect(sp.total).toBeCloseTo(m.paramCount, -1);
    expect(sp.layers).toBe(24);
  });
  it('up to 24 pipeline stages for t5-base (12 + 12 blocks), not 25', () => {
    const hw = hardware('h100-sxm', 8, 4);
    expect(parallelismFor({ strategy: 'pp', pp: 24, tp: 1 }, { ...hw, gpusPerNode: 8, nodes: 3 }, model('t5-base')).pp).toBe(24);
    expect(() => parallelismFor({ strategy: 'pp', pp: 25 }, { ...hw, gpusPerNode: 25, nodes: 1 }, model('t5-base'))).toThrow(
      /exceeds the model's 24 layers/,
    );
  });
  it('the fsdp2 config wraps the blocks of both stacks', () => {
    const r = request('t5-base', { targetSeq: 128 }, { dp: 'fsdp', dpSize: 8 }, hardware('h100-sxm', 8));
    const text = emit('fsdp2', { model: r.model, plan: evaluatePlan(r), hardware: r.hardware, script: 'train.py' });
    expect(text).toContain('for block in (*model.encoder.block, *model.decoder.block):');
    expect(text).toContain('TARGET_LEN = 128');
  });
});


describe('gpuwise plan on a T5 config', () => {
  const flan = configPath('flan-t5-base');
  it('--target-seq is in the text, the JSON setup and the stacks; its default is the source length, said', async () => {
    const r = await cli('--model', flan, '--gpu', 'h100-sxm', '--batch', '8', '--seq', '512', '--target-seq', '128');
    expect(r.code).toBe(0);
    expect(r.out).toContain('247,577,856 parameters');
    expect(r.out).toContain('source 512, target 128');
    const j = JSON.parse((await cli('--model', flan, '--gpu', 'h100-sxm', '--batch', '8', '--seq', '512', '--json')).out) as PlanJson;
    expect(j.schemaVersion).toBe(1);
    expect(j.setup.targetSeq).toBe(512);
    expect(j.model.encoderDecoder).toEqual({ encoderLayers: 12, decoderLayers: 12 });
    expect(j.assumed).toContain('--target-seq 512 (the source length)');
    expect(j.assumed?.some((a) => a.startsWith("T5's attention computed eagerly"))).toBe(true);
  });
  it('--target-seq on a one-stack model is one line, exit 2', async () => {
    const r = await cli('--model', configPath('gpt2'), '--target-seq', '128');
    expect(r.code).toBe(2);
    expect(r.err.trim().split('\n')).toHaveLength(1);
    expect(r.err).toMatch(/--target-seq applies to encoder-decoder models \(T5\)/);
  });
  it('a T5 without decoder blocks is one line, exit 2', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'gw-t5-')), 'config.json');
    writeFileSync(file, JSON.stringify({ ...cfg('t5-small'), num_decoder_layers: 0 }));
    const r = await cli('--model', file);
    expect(r.code).toBe(2);
    expect(r.err.trim().split('\n')).toHaveLength(1);
    expect(r.err).toMatch(/num_decoder_layers: 0 decoder blocks/);
  });
  it('a source longer than n_positions is planned: T5 positions are relative', async () => {
    const r = await cli('--model', flan, '--seq', '2048', '--target-seq', '256', '--json');
    expect(JSON.parse(r.out).setup.seq).toBe(2048);
  });
});
