/**
 * The model configs shipped with gpuwise (issue 24 item 6: `plan --model gpt2` failed without a Hugging Face cache):
 * each equals the real config.json where test/fixtures/planner/configs/ has one, gives the parameter count its model
 * card states, and the names people type find it.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/planner/errors.js';
import { describeHfConfig } from '../../src/planner/hfConfig.js';
import { findKnownModel, KNOWN_MODELS, type KnownModel } from '../../src/planner/knownModels.js';
import { configPath } from './helpers.js';

const shipped = (hubId: string): KnownModel => {
  const m = KNOWN_MODELS.find((k) => k.hubId === hubId);
  if (!m) throw new Error(`${hubId} is not shipped`);
  return m;
};

/** The fixture folders that hold a model's real config.json, by the hub id they were saved from. */
const FIXTURES: [string, string][] = [
  ['gpt2', 'openai-community/gpt2'],
  ['gpt2-medium', 'openai-community/gpt2-medium'],
  ['bert-base', 'google-bert/bert-base-uncased'],
  ['bert-large', 'google-bert/bert-large-uncased'],
  ['llama-2-7b', 'meta-llama/Llama-2-7b-hf'],
  ['llama-3-8b', 'meta-llama/Meta-Llama-3-8B'],
  ['mistral-7b', 'mistralai/Mistral-7B-v0.1'],
  ['mixtral-8x7b', 'mistralai/Mixtral-8x7B-v0.1'],
  ['qwen2-0.5b', 'Qwen/Qwen2-0.5B'],
];

describe('the shipped configs', () => {
  it.each(FIXTURES)('%s: every field it ships equals the real config.json, and it describes the same model', (dir, hubId) => {
    const real = JSON.parse(readFileSync(configPath(dir), 'utf8')) as Record<string, unknown>;
    const ours = shipped(hubId).config;
    const common = Object.keys(ours).filter((k) => k in real && k !== 'architectures');
    expect(common.length).toBeGreaterThan(8);
    for (const k of common) expect([k, ours[k]]).toEqual([k, real[k]]);
    const { name: _a, ...a } = describeHfConfig(ours);
    const { name: _b, ...b } = describeHfConfig(real);
    expect(a).toEqual(b);
  });

  it('give the parameter counts the model cards and checkpoints state', () => {
    const params: [string, number][] = [
      ['openai-community/gpt2', 124_439_808],
      ['openai-community/gpt2-medium', 354_823_168],
      ['openai-community/gpt2-large', 774_030_080],
      ['openai-community/gpt2-xl', 1_557_611_200],
      ['meta-llama/Llama-2-7b-hf', 6_738_415_616],
      ['meta-llama/Llama-2-13b-hf', 13_015_864_320],
      ['meta-llama/Llama-2-70b-hf', 68_976_648_192],
      ['meta-llama/Meta-Llama-3-8B', 8_030_261_248],
      ['meta-llama/Meta-Llama-3-70B', 70_553_706_496],
      ['meta-llama/Llama-3.1-8B', 8_030_261_248],
      ['meta-llama/Llama-3.1-70B', 70_553_706_496],
      ['mistralai/Mistral-7B-v0.1', 7_241_732_096],
      ['mistralai/Mistral-7B-v0.3', 7_248_023_552],
      ['mistralai/Mixtral-8x7B-v0.1', 46_702_792_704],
      ['Qwen/Qwen2-0.5B', 494_032_768],
      ['Qwen/Qwen2.5-0.5B', 494_032_768],
      ['Qwen/Qwen2-7B', 7_615_616_512],
      ['Qwen/Qwen2.5-7B', 7_615_616_512],
    ];
    for (const [id, n] of params) expect([id, describeHfConfig(shipped(id).config).paramCount]).toEqual([id, n]);
  });

  it('vision models are shipped so their names resolve, and the planner says why it cannot plan them', () => {
    for (const [id, why] of [
      ['google/vit-base-patch16-224', /'vit' is a Vision Transformer: the planner models language models/],
      ['google/vit-large-patch16-224', /'vit' is a Vision Transformer/],
      ['microsoft/resnet-50', /'resnet' is a convolutional network: the planner describes a model as transformer blocks/],
    ] as const) {
      expect(() => describeHfConfig(shipped(id).config)).toThrow(ConfigError);
      expect(() => describeHfConfig(shipped(id).config)).toThrow(why);
      expect(() => describeHfConfig(shipped(id).config)).toThrow(/gpuwise doctor sizes any model from one measured run/);
    }
  });
});

describe('findKnownModel: the names people type', () => {
  it('hub ids, their aliases and common spellings name one model', () => {
    const typed: [string, string][] = [
      ['gpt2', 'openai-community/gpt2'],
      ['GPT2', 'openai-community/gpt2'],
      ['openai-community/gpt2', 'openai-community/gpt2'],
      ['gpt2-medium', 'openai-community/gpt2-medium'],
      ['gpt2-xl', 'openai-community/gpt2-xl'],
      ['meta-llama/Llama-2-7b-hf', 'meta-llama/Llama-2-7b-hf'],
      ['meta-llama/llama-2-7b-hf', 'meta-llama/Llama-2-7b-hf'],
      ['Llama-2-7b', 'meta-llama/Llama-2-7b-hf'],
      ['llama2-7b', 'meta-llama/Llama-2-7b-hf'],
      ['llama-2-70b', 'meta-llama/Llama-2-70b-hf'],
      ['llama3-8b', 'meta-llama/Meta-Llama-3-8B'],
      ['llama-3.1-8b', 'meta-llama/Llama-3.1-8B'],
      ['meta-llama/Meta-Llama-3.1-70B', 'meta-llama/Llama-3.1-70B'],
      ['mixtral-8x7b', 'mistralai/Mixtral-8x7B-v0.1'],
      ['mistral-7b-v0.3', 'mistralai/Mistral-7B-v0.3'],
      ['qwen2.5-7b', 'Qwen/Qwen2.5-7B'],
      ['qwen2-7b', 'Qwen/Qwen2-7B'],
      ['Qwen2.5-0.5B', 'Qwen/Qwen2.5-0.5B'],
      ['bert-base-uncased', 'google-bert/bert-base-uncased'],
      ['bert-large-cased', 'google-bert/bert-large-cased'],
      ['vit-base', 'google/vit-base-patch16-224'],
      ['resnet50', 'microsoft/resnet-50'],
      ['resnet-50', 'microsoft/resnet-50'],
    ];
    for (const [name, id] of typed) expect([name, findKnownModel(name)?.model.hubId, findKnownModel(name)?.reading]).toEqual([name, id, null]);
  });
  it('a name that fits several models is read as the usual one, with what else it could mean', () => {
    expect(findKnownModel('llama-7b')).toMatchObject({ model: { hubId: 'meta-llama/Llama-2-7b-hf' }, reading: expect.stringMatching(/original LLaMA 7B .* 2,048 positions/) });
    expect(findKnownModel('mistral-7b')).toMatchObject({ model: { hubId: 'mistralai/Mistral-7B-v0.1' }, reading: expect.stringMatching(/v0\.3/) });
    expect(findKnownModel('bert-base')).toMatchObject({ model: { hubId: 'google-bert/bert-base-uncased' }, reading: expect.stringMatching(/cased/) });
  });
  it("an id with another organisation is somebody's own model, not the shipped one", () => {
    expect(findKnownModel('myorg/gpt2')).toBeNull();
    expect(findKnownModel('llama-8b')).toBeNull();
    expect(findKnownModel('')).toBeNull();
  });
  it('no two models answer to one name', () => {
    const seen = new Map<string, string>();
    for (const m of KNOWN_MODELS)
      for (const n of [m.hubId, ...m.hubAliases, ...m.nicknames, ...(m.usualFor ?? []).map((u) => u.name)]) {
        const found = findKnownModel(n)?.model.hubId;
        expect([n, found]).toEqual([n, m.hubId]);
        seen.set(n.toLowerCase(), m.hubId);
      }
    expect(seen.size).toBeGreaterThan(50);
  });
});
