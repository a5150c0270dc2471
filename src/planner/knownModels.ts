/**
 * The configs of the models people plan most, shipped inside gpuwise (pure data: the bundle and the wheel carry them,
 * no file to read), so `gpuwise plan --model gpt2` answers without a Hugging Face cache or a network. Each is the
 * architecture part of the model's published `config.json` on the Hugging Face Hub (the fields the planner or
 * transformers read for the layout; tokenizer ids, labels and dtypes left out), as published, not derived:
 * test/planner/knownModels.test.ts checks them against the real config.json files in test/fixtures/planner/configs/
 * where those overlap, and the parameter counts against the numbers the model cards give.
 *
 * The shell (io/hfModelId.ts) tries an explicit path first, then the Hugging Face cache (under the name typed and the
 * model's hub ids), then this table.
 */

type Config = Readonly<Record<string, unknown>>;

export interface KnownModel {
  /** The Hugging Face Hub id whose config.json this is, e.g. `openai-community/gpt2`. */
  hubId: string;
  /** Other ids the Hub serves it under (`gpt2`, `bert-base-uncased`): looked up in the Hugging Face cache too. */
  hubAliases: string[];
  /** Spellings people type that name this model alone (`gpt2-small`, `llama2-7b`, `resnet50`). */
  nicknames: string[];
  /**
   * Short names that fit more than one model and usually mean this one (`llama-7b`: the original LLaMA 7B or Llama 2
   * 7B), each with what else it could mean: a plan that rests on one says so.
   */
  usualFor?: { name: string; note: string }[];
  config: Config;
}

const gpt2 = (n_embd: number, n_layer: number, n_head: number): Config => ({
  model_type: 'gpt2',
  architectures: ['GPT2LMHeadModel'],
  activation_function: 'gelu_new',
  attn_pdrop: 0.1,
  embd_pdrop: 0.1,
  resid_pdrop: 0.1,
  layer_norm_epsilon: 1e-5,
  n_ctx: 1024,
  n_embd,
  n_head,
  n_layer,
  n_positions: 1024,
  vocab_size: 50257,
});

const llama = (fields: Record<string, unknown>): Config => ({
  model_type: 'llama',
  architectures: ['LlamaForCausalLM'],
  hidden_act: 'silu',
  rms_norm_eps: 1e-5,
  tie_word_embeddings: false,
  ...fields,
});

const llama3Rope = { factor: 8.0, low_freq_factor: 1.0, high_freq_factor: 4.0, original_max_position_embeddings: 8192, rope_type: 'llama3' };

/** Mistral 7B's layout; its versions differ in the vocabulary, the RoPE base and the sliding window. */
const mistral7b = (fields: Record<string, unknown>): Config => ({
  model_type: 'mistral',
  architectures: ['MistralForCausalLM'],
  hidden_act: 'silu',
  hidden_size: 4096,
  intermediate_size: 14336,
  max_position_embeddings: 32768,
  num_attention_heads: 32,
  num_hidden_layers: 32,
  num_key_value_heads: 8,
  rms_norm_eps: 1e-5,
  tie_word_embeddings: false,
  ...fields,
});

const qwen2 = (fields: Record<string, unknown>): Config => ({
  model_type: 'qwen2',
  architectures: ['Qwen2ForCausalLM'],
  hidden_act: 'silu',
  attention_dropout: 0.0,
  rope_theta: 1000000.0,
  ...fields,
});

const bert = (hidden_size: number, num_hidden_layers: number, num_attention_heads: number, vocab_size: number): Config => ({
  model_type: 'bert',
  architectures: ['BertForMaskedLM'],
  attention_probs_dropout_prob: 0.1,
  hidden_act: 'gelu',
  hidden_dropout_prob: 0.1,
  hidden_size,
  intermediate_size: 4 * hidden_size,
  layer_norm_eps: 1e-12,
  max_position_embeddings: 512,
  num_attention_heads,
  num_hidden_layers,
  type_vocab_size: 2,
  vocab_size,
});

const vit = (hidden_size: number, num_hidden_layers: number, num_attention_heads: number): Config => ({
  model_type: 'vit',
  architectures: ['ViTForImageClassification'],
  attention_probs_dropout_prob: 0.0,
  hidden_act: 'gelu',
  hidden_dropout_prob: 0.0,
  hidden_size,
  image_size: 224,
  intermediate_size: 4 * hidden_size,
  layer_norm_eps: 1e-12,
  num_attention_heads,
  num_channels: 3,
  num_hidden_layers,
  patch_size: 16,
  qkv_bias: true,
});

export const KNOWN_MODELS: readonly KnownModel[] = [
  { hubId: 'openai-community/gpt2', hubAliases: ['gpt2'], nicknames: ['gpt2-small', 'gpt-2', 'gpt2-124m'], config: gpt2(768, 12, 12) },
  { hubId: 'openai-community/gpt2-medium', hubAliases: ['gpt2-medium'], nicknames: ['gpt2-355m'], config: gpt2(1024, 24, 16) },
  { hubId: 'openai-community/gpt2-large', hubAliases: ['gpt2-large'], nicknames: ['gpt2-774m'], config: gpt2(1280, 36, 20) },
  { hubId: 'openai-community/gpt2-xl', hubAliases: ['gpt2-xl'], nicknames: ['gpt2-1.5b'], config: gpt2(1600, 48, 25) },
  {
    hubId: 'meta-llama/Llama-2-7b-hf',
    hubAliases: [],
    nicknames: ['llama2-7b'],
    usualFor: [{ name: 'llama-7b', note: 'the original LLaMA 7B has the same layers with 2,048 positions' }],
    config: llama({ hidden_size: 4096, intermediate_size: 11008, num_attention_heads: 32, num_hidden_layers: 32, num_key_value_heads: 32, max_position_embeddings: 4096, vocab_size: 32000 }),
  },
  {
    hubId: 'meta-llama/Llama-2-13b-hf',
    hubAliases: [],
    nicknames: ['llama2-13b'],
    usualFor: [{ name: 'llama-13b', note: 'the original LLaMA 13B has the same layers with 2,048 positions' }],
    config: llama({ hidden_size: 5120, intermediate_size: 13824, num_attention_heads: 40, num_hidden_layers: 40, num_key_value_heads: 40, max_position_embeddings: 4096, vocab_size: 32000 }),
  },
  {
    hubId: 'meta-llama/Llama-2-70b-hf',
    hubAliases: [],
    nicknames: ['llama2-70b'],
    usualFor: [{ name: 'llama-70b', note: 'Llama 3 70B (meta-llama/Meta-Llama-3-70B) has a 128,256-token vocabulary' }],
    config: llama({ hidden_size: 8192, intermediate_size: 28672, num_attention_heads: 64, num_hidden_layers: 80, num_key_value_heads: 8, max_position_embeddings: 4096, vocab_size: 32000 }),
  },
  {
    hubId: 'meta-llama/Meta-Llama-3-8B',
    hubAliases: [],
    nicknames: ['llama-3-8b', 'llama3-8b'],
    config: llama({ hidden_size: 4096, intermediate_size: 14336, num_attention_heads: 32, num_hidden_layers: 32, num_key_value_heads: 8, max_position_embeddings: 8192, vocab_size: 128256, rope_theta: 500000.0, attention_bias: false, attention_dropout: 0.0 }),
  },
  {
    hubId: 'meta-llama/Meta-Llama-3-70B',
    hubAliases: [],
    nicknames: ['llama-3-70b', 'llama3-70b'],
    config: llama({ hidden_size: 8192, intermediate_size: 28672, num_attention_heads: 64, num_hidden_layers: 80, num_key_value_heads: 8, max_position_embeddings: 8192, vocab_size: 128256, rope_theta: 500000.0, attention_bias: false, attention_dropout: 0.0 }),
  },
  {
    hubId: 'meta-llama/Llama-3.1-8B',
    hubAliases: ['meta-llama/Meta-Llama-3.1-8B'],
    nicknames: ['llama3.1-8b'],
    config: llama({ hidden_size: 4096, intermediate_size: 14336, num_attention_heads: 32, num_hidden_layers: 32, num_key_value_heads: 8, max_position_embeddings: 131072, vocab_size: 128256, rope_theta: 500000.0, rope_scaling: llama3Rope, attention_bias: false, attention_dropout: 0.0, mlp_bias: false }),
  },
  {
    hubId: 'meta-llama/Llama-3.1-70B',
    hubAliases: ['meta-llama/Meta-Llama-3.1-70B'],
    nicknames: ['llama3.1-70b'],
    config: llama({ hidden_size: 8192, intermediate_size: 28672, num_attention_heads: 64, num_hidden_layers: 80, num_key_value_heads: 8, max_position_embeddings: 131072, vocab_size: 128256, rope_theta: 500000.0, rope_scaling: llama3Rope, attention_bias: false, attention_dropout: 0.0, mlp_bias: false }),
  },
  {
    hubId: 'mistralai/Mistral-7B-v0.1',
    hubAliases: [],
    nicknames: [],
    usualFor: [{ name: 'mistral-7b', note: 'v0.3 (mistralai/Mistral-7B-v0.3) has a 32,768-token vocabulary' }],
    config: mistral7b({ rope_theta: 10000.0, sliding_window: 4096, vocab_size: 32000 }),
  },
  {
    hubId: 'mistralai/Mistral-7B-v0.3',
    hubAliases: [],
    nicknames: [],
    config: mistral7b({ rope_theta: 1000000.0, sliding_window: null, vocab_size: 32768 }),
  },
  {
    hubId: 'mistralai/Mixtral-8x7B-v0.1',
    hubAliases: [],
    nicknames: ['mixtral-8x7b'],
    config: {
      model_type: 'mixtral',
      architectures: ['MixtralForCausalLM'],
      attention_dropout: 0.0,
      hidden_act: 'silu',
      hidden_size: 4096,
      intermediate_size: 14336,
      max_position_embeddings: 32768,
      num_attention_heads: 32,
      num_experts_per_tok: 2,
      num_hidden_layers: 32,
      num_key_value_heads: 8,
      num_local_experts: 8,
      rms_norm_eps: 1e-5,
      rope_theta: 1000000.0,
      router_aux_loss_coef: 0.02,
      sliding_window: null,
      tie_word_embeddings: false,
      vocab_size: 32000,
    },
  },
  {
    hubId: 'Qwen/Qwen2-0.5B',
    hubAliases: [],
    nicknames: [],
    config: qwen2({ hidden_size: 896, intermediate_size: 4864, num_attention_heads: 14, num_hidden_layers: 24, num_key_value_heads: 2, max_position_embeddings: 131072, max_window_layers: 24, rms_norm_eps: 1e-6, sliding_window: 131072, tie_word_embeddings: true, use_sliding_window: false, vocab_size: 151936 }),
  },
  {
    hubId: 'Qwen/Qwen2-7B',
    hubAliases: [],
    nicknames: [],
    config: qwen2({ hidden_size: 3584, intermediate_size: 18944, num_attention_heads: 28, num_hidden_layers: 28, num_key_value_heads: 4, max_position_embeddings: 131072, rms_norm_eps: 1e-6, tie_word_embeddings: false, vocab_size: 152064 }),
  },
  {
    hubId: 'Qwen/Qwen2.5-0.5B',
    hubAliases: [],
    nicknames: [],
    config: qwen2({ hidden_size: 896, intermediate_size: 4864, num_attention_heads: 14, num_hidden_layers: 24, num_key_value_heads: 2, max_position_embeddings: 32768, rms_norm_eps: 1e-6, tie_word_embeddings: true, vocab_size: 151936 }),
  },
  {
    hubId: 'Qwen/Qwen2.5-7B',
    hubAliases: [],
    nicknames: [],
    config: qwen2({ hidden_size: 3584, intermediate_size: 18944, num_attention_heads: 28, num_hidden_layers: 28, num_key_value_heads: 4, max_position_embeddings: 131072, rms_norm_eps: 1e-6, tie_word_embeddings: false, vocab_size: 152064 }),
  },
  {
    hubId: 'google-bert/bert-base-uncased',
    hubAliases: ['bert-base-uncased'],
    nicknames: [],
    usualFor: [{ name: 'bert-base', note: 'bert-base-cased has a 28,996-token vocabulary' }],
    config: bert(768, 12, 12, 30522),
  },
  {
    hubId: 'google-bert/bert-large-uncased',
    hubAliases: ['bert-large-uncased'],
    nicknames: [],
    usualFor: [{ name: 'bert-large', note: 'bert-large-cased has a 28,996-token vocabulary' }],
    config: bert(1024, 24, 16, 30522),
  },
  { hubId: 'google-bert/bert-base-cased', hubAliases: ['bert-base-cased'], nicknames: [], config: bert(768, 12, 12, 28996) },
  { hubId: 'google-bert/bert-large-cased', hubAliases: ['bert-large-cased'], nicknames: [], config: bert(1024, 24, 16, 28996) },
  { hubId: 'google/vit-base-patch16-224', hubAliases: [], nicknames: ['vit-base', 'vit-b-16'], config: vit(768, 12, 12) },
  { hubId: 'google/vit-large-patch16-224', hubAliases: [], nicknames: ['vit-large', 'vit-l-16'], config: vit(1024, 24, 16) },
  {
    hubId: 'microsoft/resnet-50',
    hubAliases: [],
    nicknames: [],
    config: {
      model_type: 'resnet',
      architectures: ['ResNetForImageClassification'],
      depths: [3, 4, 6, 3],
      downsample_in_first_stage: false,
      embedding_size: 64,
      hidden_act: 'relu',
      hidden_sizes: [256, 512, 1024, 2048],
      layer_type: 'bottleneck',
      num_channels: 3,
    },
  },
];

/** A bare name compared loosely: lower case, without the organisation, a trailing `-hf`, dashes, underscores, spaces. */
function looseKey(name: string): string {
  return name
    .toLowerCase()
    .replace(/^[^/]*\//, '')
    .replace(/-hf$/, '')
    .replace(/[-_\s]+/g, '');
}

/**
 * The shipped model a name means, and, when the name fits others too, what it was read as. An id with an
 * organisation (`meta-llama/Llama-2-7b-hf`) must be one of the hub ids or aliases (any case): `myorg/gpt2` is
 * somebody's own model, not GPT-2. A bare name (`gpt2`, `Llama-2-7b`, `qwen2.5-7b`) is compared loosely
 * with the names of every entry.
 */
export function findKnownModel(name: string): { model: KnownModel; reading: string | null } | null {
  const typed = name.trim();
  const lower = typed.toLowerCase();
  const byId = KNOWN_MODELS.find((m) => [m.hubId, ...m.hubAliases].some((id) => id.toLowerCase() === lower));
  if (byId) return { model: byId, reading: null };
  if (typed.includes('/')) return null;
  const key = looseKey(typed);
  if (key === '') return null;
  const own = KNOWN_MODELS.find((m) => [m.hubId, ...m.hubAliases, ...m.nicknames].some((n) => looseKey(n) === key));
  if (own) return { model: own, reading: null };
  for (const m of KNOWN_MODELS) {
    const usual = m.usualFor?.find((u) => looseKey(u.name) === key);
    if (usual) return { model: m, reading: usual.note };
  }
  return null;
}

/** Every name a shipped model answers to, each with its hub id: for "did you mean" (which names hub ids only). */
export function knownModelNames(): { name: string; hubId: string }[] {
  return KNOWN_MODELS.flatMap((m) =>
    [m.hubId, ...m.hubAliases, ...m.nicknames, ...(m.usualFor ?? []).map((u) => u.name)].map((name) => ({ name, hubId: m.hubId })),
  );
}
