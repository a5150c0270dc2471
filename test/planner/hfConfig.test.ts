import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/planner/errors.js';
import { bertBaseModelParams, describeHfConfig } from '../../src/planner/hfConfig.js';
import { configErrorOf as bad } from './helpers.js';

const cfg = (name: string): Record<string, unknown> =>
  JSON.parse(readFileSync(new URL(`../fixtures/planner/configs/${name}/config.json`, import.meta.url), 'utf8'));

describe('exact parameter counts from config.json', () => {
  // Known sum(p.numel()) of the Hugging Face classes (tied weights counted once).
  it.each([
    ['gpt2', 124_439_808],
    ['bert-base', 109_514_298], // BertForMaskedLM, as measured in memory-calibration.jsonl
    ['llama-2-7b', 6_738_415_616],
    ['llama-3-8b', 8_030_261_248],
    ['mistral-7b', 7_241_732_096],
    ['qwen2-0.5b', 494_032_768],
    ['mixtral-8x7b', 46_702_792_704],
    // Read beside them since issue 47 (each was "unknown model type"): RobertaForMaskedLM, GPTNeoXForCausalLM, PhiForCausalLM.
    ['roberta-base', 124_697_433],
    ['pythia-1.4b', 1_414_647_808],
    ['phi-2', 2_779_683_840],
  ])('%s has %d parameters', (name, expected) => {
    expect(describeHfConfig(cfg(name)).paramCount).toBe(expected);
  });

  it("RoBERTa's 514 position embeddings hold 512 tokens (its ids start after the padding index); BERT's 512 hold 512", () => {
    expect(describeHfConfig(cfg('roberta-base')).maxPositions).toBe(512);
    expect(describeHfConfig(cfg('bert-base')).maxPositions).toBe(512);
  });

  it('BERT-base with pooler (BertModel) is 109,482,240', () => {
    expect(bertBaseModelParams(describeHfConfig(cfg('bert-base')))).toBe(109_482_240);
  });

  it('Mixtral routes 2 of 8 experts: about 12.9B active parameters', () => {
    const m = describeHfConfig(cfg('mixtral-8x7b'));
    expect(m.moe).toEqual({ experts: 8, topK: 2, expertParams: 3 * 4096 * 14336 });
    expect(m.activeParamCount).toBe(12_879_925_248);
  });

  it('grouped-query attention and tied embeddings are read', () => {
    const q = describeHfConfig(cfg('qwen2-0.5b'));
    expect([q.heads, q.kvHeads, q.headDim, q.tiedEmbeddings]).toEqual([14, 2, 64, true]);
    const l = describeHfConfig(cfg('llama-2-7b'));
    expect(l.tiedEmbeddings).toBe(false);
    expect(l.embeddingParamCount).toBe(2 * 32000 * 4096);
    expect(l.rootParamCount + l.layers * l.blockParamCount).toBe(l.paramCount);
  });
});

describe('bad configs name the field', () => {
  it('missing model_type', () => expect(bad({ hidden_size: 4 })).toMatch(/^model_type: missing/));
  it('unknown model_type', () =>
    expect(bad({ model_type: 'mamba' })).toMatch(/^model_type: unknown model type 'mamba' \(supported: .*roberta.*gpt_neox, phi, t5, mt5, umt5\)/));
  it('an encoder-decoder the planner does not model (BART) is named as such, not as an unknown type', () =>
    expect(bad({ model_type: 'bart', is_encoder_decoder: true })).toMatch(/^model_type: 'bart' is an encoder-decoder model \(BART\)/));
  it('missing field', () => {
    const c = cfg('llama-2-7b');
    delete c.hidden_size;
    expect(bad(c)).toMatch(/^hidden_size: missing/);
  });
  it('wrong type', () => expect(bad({ ...cfg('gpt2'), n_layer: '12' })).toMatch(/^n_layer: must be a positive integer/));
  it('not an object', () => expect(bad([1])).toMatch(/not a JSON object/));
  it('a model_type that is a property of every object names no family', () => {
    for (const type of ['constructor', 'toString', '__proto__']) expect(bad({ ...cfg('bert-base'), model_type: type })).toMatch(/^model_type: unknown model type/);
  });
  it('quantized checkpoint', () =>
    expect(bad({ ...cfg('llama-2-7b'), quantization_config: { bits: 4 } })).toMatch(/^quantization_config: quantized/));
  it('GQA that does not divide', () =>
    expect(bad({ ...cfg('llama-2-7b'), num_key_value_heads: 5 })).toMatch(/^num_key_value_heads: 5 does not divide/));
  it('unsupported activation', () =>
    expect(bad({ ...cfg('mistral-7b'), hidden_act: 'relu' })).toMatch(/^hidden_act: 'relu' is not supported/));
  it('an activation that no string stands for (an object with a toString key: the property test found it)', () =>
    expect(bad({ ...cfg('llama-2-7b'), hidden_act: { toString: [] } })).toMatch(/^hidden_act: \{"toString":\[\]\} is not supported/));
});

describe('any corruption of a config either parses to sane numbers or names a field (property-based)', () => {
  const names = ['gpt2', 'bert-base', 'llama-2-7b', 'qwen2-0.5b', 'mixtral-8x7b', 't5-base', 'flan-t5-base'];
  it('never throws anything but ConfigError', () => {
    fc.assert(
      fc.property(fc.constantFrom(...names), fc.nat(), fc.jsonValue(), (name, pick, value) => {
        const c = cfg(name);
        const keys = Object.keys(c);
        const key = keys[pick % keys.length]!;
        c[key] = value;
        try {
          const m = describeHfConfig(c);
          for (const n of [m.paramCount, m.layers, m.hidden, m.heads, m.kvHeads, m.headDim, m.vocab]) {
            expect(Number.isFinite(n) && n > 0).toBe(true);
          }
        } catch (e) {
          expect(e).toBeInstanceOf(ConfigError);
          expect((e as ConfigError).field.length).toBeGreaterThan(0);
        }
      }),
      { numRuns: 400 },
    );
  });
});
