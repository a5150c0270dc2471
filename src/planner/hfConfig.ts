/**
 * Reads a Hugging Face `config.json` object into a ModelDescription with exact parameter counts
 * (the counts of the LM/MLM head class that training with `labels` builds: GPT2LMHeadModel,
 * LlamaForCausalLM, MistralForCausalLM, Qwen2/Qwen3ForCausalLM, MixtralForCausalLM, BertForMaskedLM).
 */
import { ConfigError } from './errors.js';
import type { ModelDescription, ParamGroup } from './model.js';

type Json = Record<string, unknown>;

/** No architecture dimension (width, layers, vocabulary, positions, experts) comes near this. */
const MAX_DIMENSION = 100_000_000;

const LLAMA_LIKE = new Set(['llama', 'mistral', 'qwen2', 'qwen3', 'mixtral']);
/** BERT's layout under other names: RoBERTa and its multilingual and French kin (their MLM heads are BERT's). */
const BERT_LIKE: Record<string, string> = {
  bert: 'BertForMaskedLM',
  roberta: 'RobertaForMaskedLM',
  'xlm-roberta': 'XLMRobertaForMaskedLM',
  camembert: 'CamembertForMaskedLM',
};
export const SUPPORTED_MODEL_TYPES = ['gpt2', ...Object.keys(BERT_LIKE), ...LLAMA_LIKE, 'gpt_neox', 'phi'] as const;

/** Model types the planner knows it cannot describe, and why (a clearer answer than "unknown model type"). */
const NOT_MODELLED: Record<string, string> = {
  t5: 'an encoder-decoder model (T5): the planner models one stack of blocks, a decoder or an encoder, not two with cross-attention',
  bart: 'an encoder-decoder model (BART): the planner models one stack of blocks, a decoder or an encoder, not two with cross-attention',
  vit: 'a Vision Transformer: the planner models language models (token embeddings, a loss over the vocabulary at every position), not patch embeddings and a classifier head',
  resnet: 'a convolutional network: the planner describes a model as transformer blocks (width, heads, layers), which a CNN has not',
};

function num(cfg: Json, field: string, fallback?: number): number {
  const v = cfg[field];
  if (v === undefined || v === null) {
    if (fallback !== undefined) return fallback;
    throw new ConfigError(field, 'missing (required for this model type)');
  }
  if (typeof v !== 'number' || !Number.isInteger(v) || v <= 0)
    throw new ConfigError(field, `must be a positive integer, got ${JSON.stringify(v)}`);
  if (v > MAX_DIMENSION) throw new ConfigError(field, `${v} is out of range (at most ${MAX_DIMENSION})`);
  return v;
}

function prob(cfg: Json, field: string, fallback: number): number {
  const v = cfg[field];
  if (v === undefined || v === null) return fallback;
  if (typeof v !== 'number' || v < 0 || v >= 1) throw new ConfigError(field, `must be a probability in [0, 1), got ${JSON.stringify(v)}`);
  return v;
}

function bool(cfg: Json, field: string, fallback: boolean): boolean {
  const v = cfg[field];
  if (v === undefined || v === null) return fallback;
  if (typeof v !== 'boolean') throw new ConfigError(field, `must be true or false, got ${JSON.stringify(v)}`);
  return v;
}

function sum(groups: ParamGroup[]): number {
  return groups.reduce((s, g) => s + g.count, 0);
}

/**
 * One family's numbers, as its reader counts them: everything in a ModelDescription but what follows from the
 * parameter groups (the name, the total, the active and the root counts).
 */
type FamilyNumbers = Omit<ModelDescription, 'name' | 'paramCount' | 'activeParamCount' | 'rootParamCount'> & {
  /** The config, for the name (`_name_or_path`). */
  config: Json;
  /** Parameters a token does not use (a mixture of experts' unrouted experts); 0 when absent. */
  inactiveParams?: number;
};

/** The one builder of a ModelDescription from a config: each family's reader gives its numbers. */
function describeFamily(f: FamilyNumbers): ModelDescription {
  const total = sum(f.paramGroups);
  return {
    name: nameOf(f.config, f.modelType, total),
    modelType: f.modelType,
    architecture: f.architecture,
    family: f.family,
    causal: f.causal,
    paramCount: total,
    activeParamCount: total - (f.inactiveParams ?? 0),
    embeddingParamCount: f.embeddingParamCount,
    blockParamCount: f.blockParamCount,
    rootParamCount: total - f.layers * f.blockParamCount,
    paramGroups: f.paramGroups,
    layers: f.layers,
    hidden: f.hidden,
    heads: f.heads,
    kvHeads: f.kvHeads,
    headDim: f.headDim,
    intermediate: f.intermediate,
    vocab: f.vocab,
    maxPositions: f.maxPositions,
    norm: f.norm,
    mlpActivation: f.mlpActivation,
    tiedEmbeddings: f.tiedEmbeddings,
    hiddenDropout: f.hiddenDropout,
    attentionDropout: f.attentionDropout,
    ...(f.moe ? { moe: f.moe } : {}),
  };
}

/** Parses a config.json object. Throws ConfigError naming the field on anything it cannot use. */
export function describeHfConfig(cfg: unknown): ModelDescription {
  if (typeof cfg !== 'object' || cfg === null || Array.isArray(cfg)) throw new ConfigError('(root)', 'not a JSON object');
  const c = cfg as Json;
  const type = c.model_type;
  if (type === undefined) throw new ConfigError('model_type', 'missing: cannot tell the architecture');
  if (typeof type !== 'string') throw new ConfigError('model_type', `must be a string, got ${JSON.stringify(type)}`);
  // Fields that change the memory picture in ways the planner does not model: refuse rather than guess.
  if (c.quantization_config !== undefined && c.quantization_config !== null)
    throw new ConfigError('quantization_config', 'quantized checkpoints are not supported (plan the unquantized model)');
  if (c.is_encoder_decoder === true && NOT_MODELLED[type] === undefined)
    throw new ConfigError('is_encoder_decoder', 'encoder-decoder models are not supported');
  const m =
    type === 'gpt2'
      ? describeGpt2(c)
      : BERT_LIKE[type] !== undefined
        ? describeBert(c, type)
        : LLAMA_LIKE.has(type)
          ? describeLlamaLike(c, type)
          : type === 'gpt_neox' || type === 'phi'
            ? describeParallelGelu(c, type)
            : null;
  if (m !== null) {
    if (!Number.isSafeInteger(m.paramCount))
      throw new ConfigError('(root)', `the dimensions give ${m.paramCount.toExponential(2)} parameters: out of range`);
    return m;
  }
  const why = NOT_MODELLED[type];
  if (why !== undefined)
    throw new ConfigError(
      'model_type',
      `'${type}' is ${why}; gpuwise doctor sizes any model from one measured run instead (its what-ifs: static memory plus a per-sample part)`,
    );
  throw new ConfigError('model_type', `unknown model type '${type}' (supported: ${SUPPORTED_MODEL_TYPES.join(', ')})`);
}

function describeGpt2(c: Json): ModelDescription {
  const h = num(c, 'n_embd');
  const L = num(c, 'n_layer');
  const a = num(c, 'n_head');
  const V = num(c, 'vocab_size');
  const pos = num(c, 'n_positions');
  const inner = c.n_inner === null || c.n_inner === undefined ? 4 * h : num(c, 'n_inner');
  if (h % a !== 0) throw new ConfigError('n_head', `${a} does not divide n_embd ${h}`);
  const act = c.activation_function ?? 'gelu_new';
  if (typeof act !== 'string') throw new ConfigError('activation_function', 'must be a string');
  const tied = bool(c, 'tie_word_embeddings', true);
  // Conv1D layers carry biases; two LayerNorms per block.
  const block = 2 * h + (h * 3 * h + 3 * h) + (h * h + h) + 2 * h + (h * inner + inner) + (inner * h + h);
  const groups: ParamGroup[] = [
    { name: 'wte', count: V * h },
    { name: 'wpe', count: pos * h },
    { name: `h (x${L})`, count: L * block },
    { name: 'ln_f', count: 2 * h },
  ];
  if (!tied) groups.push({ name: 'lm_head', count: V * h });
  return describeFamily({
    config: c,
    modelType: 'gpt2',
    architecture: 'GPT2LMHeadModel',
    family: 'gpt2',
    causal: true,
    embeddingParamCount: V * h * (tied ? 1 : 2),
    blockParamCount: block,
    paramGroups: groups,
    layers: L,
    hidden: h,
    heads: a,
    kvHeads: a,
    headDim: h / a,
    intermediate: inner,
    vocab: V,
    maxPositions: pos,
    norm: 'layernorm',
    mlpActivation: act === 'gelu_new' ? 'gelu-tanh-composite' : 'gelu',
    tiedEmbeddings: tied,
    hiddenDropout: prob(c, 'resid_pdrop', 0.1),
    attentionDropout: prob(c, 'attn_pdrop', 0.1),
  });
}

function describeBert(c: Json, type = 'bert'): ModelDescription {
  const h = num(c, 'hidden_size');
  const L = num(c, 'num_hidden_layers');
  const a = num(c, 'num_attention_heads');
  const I = num(c, 'intermediate_size');
  const V = num(c, 'vocab_size');
  const pos = num(c, 'max_position_embeddings');
  // RoBERTa's configs give 1 (one token type); BERT's 2.
  const types = num(c, 'type_vocab_size', type === 'bert' ? 2 : 1);
  if (h % a !== 0) throw new ConfigError('num_attention_heads', `${a} does not divide hidden_size ${h}`);
  const block = 4 * (h * h + h) + 2 * h + (h * I + I) + (I * h + h) + 2 * h;
  // BertForMaskedLM: no pooler; the MLM head has a dense+LayerNorm transform and a decoder tied to the
  // word embeddings with its own bias.
  const groups: ParamGroup[] = [
    { name: 'embeddings', count: V * h + pos * h + types * h + 2 * h },
    { name: `encoder.layer (x${L})`, count: L * block },
    { name: 'cls.predictions', count: h * h + h + 2 * h + V },
  ];
  return describeFamily({
    config: c,
    modelType: type,
    architecture: BERT_LIKE[type] ?? 'BertForMaskedLM',
    family: 'bert',
    causal: false,
    embeddingParamCount: V * h,
    blockParamCount: block,
    paramGroups: groups,
    layers: L,
    hidden: h,
    heads: a,
    kvHeads: a,
    headDim: h / a,
    intermediate: I,
    vocab: V,
    // RoBERTa's position ids start after its padding index (pad_token_id + 1): 514 embeddings hold 512 tokens.
    maxPositions: type === 'bert' ? pos : pos - num(c, 'pad_token_id', 1) - 1,
    norm: 'layernorm',
    mlpActivation: 'gelu',
    tiedEmbeddings: true,
    hiddenDropout: prob(c, 'hidden_dropout_prob', 0.1),
    attentionDropout: prob(c, 'attention_probs_dropout_prob', 0.1),
  });
}

/** BertModel with its pooler, the number usually quoted for "BERT-base" (109,482,240). */
export function bertBaseModelParams(m: ModelDescription): number {
  const h = m.hidden;
  return m.paramCount - (h * h + h + 2 * h + m.vocab) + (h * h + h);
}

function describeLlamaLike(c: Json, type: string): ModelDescription {
  const h = num(c, 'hidden_size');
  const L = num(c, 'num_hidden_layers');
  const a = num(c, 'num_attention_heads');
  const kv = num(c, 'num_key_value_heads', a);
  const I = num(c, 'intermediate_size');
  const V = num(c, 'vocab_size');
  const pos = num(c, 'max_position_embeddings', 4096);
  const hd = c.head_dim === undefined || c.head_dim === null ? h / a : num(c, 'head_dim');
  if (!Number.isInteger(hd)) throw new ConfigError('num_attention_heads', `${a} does not divide hidden_size ${h}`);
  if (a % kv !== 0) throw new ConfigError('num_key_value_heads', `${kv} does not divide num_attention_heads ${a}`);
  const act = c.hidden_act ?? 'silu';
  if (act !== 'silu' && act !== 'swish')
    // JSON.stringify, not String(): a JSON object with a `toString` key has no string of its own (String() throws).
    throw new ConfigError(
      'hidden_act',
      `${typeof act === 'string' ? `'${act}'` : JSON.stringify(act)} is not supported (the planner models SwiGLU with silu)`,
    );
  // Qwen2 always has q/k/v biases; Llama/Mistral/Qwen3 only when attention_bias is set.
  const qkvBias = type === 'qwen2' ? true : bool(c, 'attention_bias', false);
  const oBias = type === 'qwen2' ? false : bool(c, 'attention_bias', false);
  const mlpBias = bool(c, 'mlp_bias', false);
  const tied = bool(c, 'tie_word_embeddings', false);
  const attn =
    h * a * hd + 2 * h * kv * hd + a * hd * h + (qkvBias ? a * hd + 2 * kv * hd : 0) + (oBias ? h : 0) + (type === 'qwen3' ? 2 * hd : 0);
  const expert = 3 * h * I + (mlpBias ? 2 * I + h : 0);
  let moe: ModelDescription['moe'];
  let mlp = expert;
  let activeMlp = expert;
  if (type === 'mixtral') {
    const experts = num(c, 'num_local_experts');
    const topK = num(c, 'num_experts_per_tok');
    if (topK > experts) throw new ConfigError('num_experts_per_tok', `${topK} exceeds num_local_experts ${experts}`);
    moe = { experts, topK, expertParams: expert };
    mlp = experts * expert + h * experts; // experts plus the router
    activeMlp = topK * expert + h * experts;
  }
  const block = attn + mlp + 2 * h;
  const groups: ParamGroup[] = [
    { name: 'embed_tokens', count: V * h },
    { name: `layers (x${L})`, count: L * block },
    { name: 'norm', count: h },
  ];
  if (!tied) groups.push({ name: 'lm_head', count: V * h });
  const archNames: Record<string, string> = {
    llama: 'LlamaForCausalLM',
    mistral: 'MistralForCausalLM',
    qwen2: 'Qwen2ForCausalLM',
    qwen3: 'Qwen3ForCausalLM',
    mixtral: 'MixtralForCausalLM',
  };
  return describeFamily({
    config: c,
    modelType: type,
    architecture: archNames[type] ?? type,
    family: 'llama',
    causal: true,
    inactiveParams: L * (mlp - activeMlp),
    embeddingParamCount: V * h * (tied ? 1 : 2),
    blockParamCount: block,
    paramGroups: groups,
    layers: L,
    hidden: h,
    heads: a,
    kvHeads: kv,
    headDim: hd,
    intermediate: I,
    vocab: V,
    maxPositions: pos,
    norm: 'rmsnorm',
    mlpActivation: 'swiglu',
    tiedEmbeddings: tied,
    hiddenDropout: 0,
    attentionDropout: prob(c, 'attention_dropout', 0),
    moe,
  });
}

/**
 * GPT-NeoX (Pythia) and Phi (phi-1, 1.5, 2): decoders of LayerNorm blocks with biases everywhere, a GELU MLP that is
 * not gated, rotary positions (no position table) and an untied output head (Phi's with a bias). Counted as
 * GPTNeoXForCausalLM and PhiForCausalLM build them: Pythia-1.4B 1,414,647,808 parameters, phi-2 2,779,683,840. Their
 * activations are planned as GPT-2's blocks (LayerNorm, GELU, the same tensors saved), without GPT-2's position table.
 */
function describeParallelGelu(c: Json, type: 'gpt_neox' | 'phi'): ModelDescription {
  const h = num(c, 'hidden_size');
  const L = num(c, 'num_hidden_layers');
  const a = num(c, 'num_attention_heads');
  const I = num(c, 'intermediate_size', 4 * h);
  const V = num(c, 'vocab_size');
  const pos = num(c, 'max_position_embeddings', 2048);
  if (h % a !== 0) throw new ConfigError('num_attention_heads', `${a} does not divide hidden_size ${h}`);
  const kv = type === 'phi' ? num(c, 'num_key_value_heads', a) : a;
  const hd = h / a;
  const tied = bool(c, 'tie_word_embeddings', false);
  // Two LayerNorms a block for GPT-NeoX, one for Phi (attention and MLP read the same normalised input).
  const norms = (type === 'gpt_neox' ? 2 : 1) * 2 * h;
  const attn = h * (a + 2 * kv) * hd + (a + 2 * kv) * hd + (h * h + h);
  const mlp = h * I + I + (I * h + h);
  const block = norms + attn + mlp;
  const headBias = type === 'phi' ? V : 0;
  const groups: ParamGroup[] = [
    { name: type === 'phi' ? 'embed_tokens' : 'embed_in', count: V * h },
    { name: `layers (x${L})`, count: L * block },
    { name: type === 'phi' ? 'final_layernorm' : 'final_layer_norm', count: 2 * h },
  ];
  if (!tied || headBias > 0) groups.push({ name: type === 'phi' ? 'lm_head' : 'embed_out', count: (tied ? 0 : V * h) + headBias });
  const act = c.hidden_act ?? 'gelu';
  if (typeof act !== 'string') throw new ConfigError('hidden_act', 'must be a string');
  return describeFamily({
    config: c,
    modelType: type,
    architecture: type === 'phi' ? 'PhiForCausalLM' : 'GPTNeoXForCausalLM',
    family: 'gpt2',
    causal: true,
    embeddingParamCount: V * h * (tied ? 1 : 2),
    blockParamCount: block,
    paramGroups: groups,
    layers: L,
    hidden: h,
    heads: a,
    kvHeads: kv,
    headDim: hd,
    intermediate: I,
    vocab: V,
    maxPositions: pos,
    norm: 'layernorm',
    mlpActivation: act === 'gelu_new' ? 'gelu-tanh-composite' : 'gelu',
    tiedEmbeddings: tied,
    hiddenDropout: prob(c, type === 'phi' ? 'resid_pdrop' : 'hidden_dropout', 0),
    attentionDropout: prob(c, 'attention_dropout', 0),
  });
}

function nameOf(c: Json, type: string, params: number): string {
  const n = typeof c._name_or_path === 'string' && c._name_or_path !== '' ? c._name_or_path : type;
  return `${n} (${formatParams(params)})`;
}

export function formatParams(n: number): string {
  if (n >= 1e9) return `${(n / 1e9).toFixed(2)}B`;
  return `${(n / 1e6).toFixed(1)}M`;
}
