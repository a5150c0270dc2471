/**
 * Reads a Hugging Face `config.json` object into a ModelDescription with exact parameter counts
 * (the counts of the LM/MLM head class that training with `labels` builds: GPT2LMHeadModel,
 * LlamaForCausalLM, MistralForCausalLM, Qwen2/Qwen3ForCausalLM, MixtralForCausalLM, BertForMaskedLM,
 * T5/MT5/UMT5ForConditionalGeneration).
 */
import { ConfigError } from './errors.js';
import { type EncoderDecoder, isGatedMlp, type MlpActivation, type ModelDescription, type ParamGroup } from './model.js';

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
/** T5's encoder-decoder layout: T5 (and flan-T5), mT5, umT5 (a relative position bias in every block). */
const T5_LIKE: Record<string, string> = {
  t5: 'T5ForConditionalGeneration',
  mt5: 'MT5ForConditionalGeneration',
  umt5: 'UMT5ForConditionalGeneration',
};
export const SUPPORTED_MODEL_TYPES = ['gpt2', ...Object.keys(BERT_LIKE), ...LLAMA_LIKE, 'gpt_neox', 'phi', ...Object.keys(T5_LIKE)] as const;

/** Model types the planner knows it cannot describe, and why (a clearer answer than "unknown model type"). */
const NOT_MODELLED: Record<string, string> = {
  bart: "an encoder-decoder model (BART): the planner models T5's encoder-decoders (relative position bias, RMS norms, no biases), not BART's learned positions, biased LayerNorm blocks and GELU MLP",
  mbart: "an encoder-decoder model (mBART): the planner models T5's encoder-decoders (relative position bias, RMS norms, no biases), not mBART's learned positions, biased LayerNorm blocks and GELU MLP",
  vit: 'a Vision Transformer: the planner models language models (token embeddings, a loss over the vocabulary at every position), not patch embeddings and a classifier head',
  resnet: 'a convolutional network: the planner describes a model as transformer blocks (width, heads, layers), which a CNN has not',
};

/** `record[key]` where the record itself holds it: a `model_type` of "constructor" or "toString" names no family. */
function own<T>(record: Record<string, T>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

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
  /** Parameters outside the blocks, where blocks differ in size (an encoder-decoder); else the total less the blocks. */
  rootParams?: number;
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
    rootParamCount: f.rootParams ?? total - f.layers * f.blockParamCount,
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
    ...(f.encoderDecoder ? { encoderDecoder: f.encoderDecoder } : {}),
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
  if (c.is_encoder_decoder === true && own(NOT_MODELLED, type) === undefined && own(T5_LIKE, type) === undefined)
    throw new ConfigError('is_encoder_decoder', "encoder-decoder models other than T5's family (t5, mt5, umt5) are not supported");
  const m =
    type === 'gpt2'
      ? describeGpt2(c)
      : own(BERT_LIKE, type) !== undefined
        ? describeBert(c, type)
        : LLAMA_LIKE.has(type)
          ? describeLlamaLike(c, type)
          : type === 'gpt_neox' || type === 'phi'
            ? describeParallelGelu(c, type)
            : own(T5_LIKE, type) !== undefined
              ? describeT5(c, type)
              : null;
  if (m !== null) {
    if (!Number.isSafeInteger(m.paramCount))
      throw new ConfigError('(root)', `the dimensions give ${m.paramCount.toExponential(2)} parameters: out of range`);
    return m;
  }
  const why = own(NOT_MODELLED, type);
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

/**
 * The MLP T5Config builds from `feed_forward_proj` ("relu", "gated-gelu", "gated-silu"...): gated when it starts with
 * "gated-"; "gated-gelu" means `gelu_new`, the tanh composite (T5Config's backward-compatibility rule). A config's own
 * `is_gated_act` and `dense_act_fn` win, as PretrainedConfig sets them after T5Config derives its own.
 */
function t5Mlp(c: Json, type: string): MlpActivation {
  const proj = c.feed_forward_proj ?? (type === 't5' ? 'relu' : 'gated-gelu');
  if (typeof proj !== 'string') throw new ConfigError('feed_forward_proj', `must be a string, got ${JSON.stringify(proj)}`);
  const parts = proj.split('-');
  if (parts.length > 2 || (parts.length === 2 && parts[0] !== 'gated'))
    throw new ConfigError('feed_forward_proj', `'${proj}' is not of the form 'ACT' or 'gated-ACT'`);
  const gated = bool(c, 'is_gated_act', parts[0] === 'gated');
  const act = c.dense_act_fn ?? (proj === 'gated-gelu' ? 'gelu_new' : parts[parts.length - 1]);
  const mlp = typeof act === 'string' ? own(gated ? GATED_T5_MLP : PLAIN_T5_MLP, act) : undefined;
  if (mlp === undefined)
    throw new ConfigError(
      'feed_forward_proj',
      `${gated ? 'gated ' : ''}${JSON.stringify(act)} is not supported (the planner models relu, gelu, gelu_new, and gated gelu, gelu_new and silu)`,
    );
  return mlp;
}

const PLAIN_T5_MLP: Record<string, MlpActivation> = { relu: 'relu', gelu: 'gelu', gelu_new: 'gelu-tanh-composite' };
const GATED_T5_MLP: Record<string, MlpActivation> = {
  gelu: 'gated-gelu',
  gelu_new: 'gated-gelu-tanh-composite',
  silu: 'swiglu',
  swish: 'swiglu',
};

/**
 * The encoder and decoder stacks of T5ForConditionalGeneration: `num_decoder_layers` defaults to `num_layers`, as
 * T5Config does; a T5 without decoder blocks is an encoder alone (T5EncoderModel), which this reader does not plan.
 */
function t5Stacks(c: Json): Pick<EncoderDecoder, 'encoderLayers' | 'decoderLayers'> {
  if (c.num_decoder_layers === 0)
    throw new ConfigError(
      'num_decoder_layers',
      '0 decoder blocks: an encoder alone (T5EncoderModel) is not planned; the planner plans T5ForConditionalGeneration, whose loss needs the decoder',
    );
  const encoderLayers = num(c, 'num_layers');
  return { encoderLayers, decoderLayers: num(c, 'num_decoder_layers', encoderLayers) };
}

/**
 * T5, mT5 and umT5 (T5/MT5/UMT5ForConditionalGeneration), counted as transformers builds them: no biases in any
 * Linear, RMS-style norms with a weight only (two in an encoder block, three in a decoder block, one after each stack), a
 * relative position bias table of `relative_attention_num_buckets` x heads in the first self-attention of each stack
 * (umT5: in every block), one embedding shared by both stacks, and `lm_head` tied to it unless the config unties it
 * (T5 v1.0 ties; v1.1, flan-T5, mT5 do not). t5-small 60,506,624; t5-base 222,903,552; flan-t5-base 247,577,856;
 * mt5-small 300,176,768 parameters.
 */
function describeT5(c: Json, type: string): ModelDescription {
  const h = num(c, 'd_model');
  const a = num(c, 'num_heads');
  const hd = num(c, 'd_kv');
  const F = num(c, 'd_ff');
  const V = num(c, 'vocab_size');
  const { encoderLayers, decoderLayers } = t5Stacks(c);
  const mlpActivation = t5Mlp(c, type);
  const tied = bool(c, 'tie_word_embeddings', type !== 'mt5');
  const buckets = num(c, 'relative_attention_num_buckets', 32);
  const attn = 4 * h * a * hd;
  const mlp = (isGatedMlp(mlpActivation) ? 3 : 2) * h * F;
  const encoderBlock = attn + mlp + 2 * h;
  const decoderBlock = 2 * attn + mlp + 3 * h;
  const biasTables = type === 'umt5' ? encoderLayers + decoderLayers : 2;
  const root = V * h + 2 * h + (tied ? 0 : V * h);
  const groups: ParamGroup[] = [
    { name: 'shared', count: V * h },
    { name: `encoder.block (x${encoderLayers})`, count: encoderLayers * encoderBlock },
    { name: `decoder.block (x${decoderLayers})`, count: decoderLayers * decoderBlock },
    { name: `relative_attention_bias (x${biasTables})`, count: biasTables * buckets * a },
    { name: 'final_layer_norm (x2)', count: 2 * h },
  ];
  if (!tied) groups.push({ name: 'lm_head', count: V * h });
  const layers = encoderLayers + decoderLayers;
  const dropout = prob(c, 'dropout_rate', 0.1);
  return describeFamily({
    config: c,
    modelType: type,
    architecture: T5_LIKE[type] ?? 'T5ForConditionalGeneration',
    family: 't5',
    causal: true,
    embeddingParamCount: V * h * (tied ? 1 : 2),
    // The mean block, so that `layers` blocks hold every block parameter (relative bias tables included).
    blockParamCount: (sum(groups) - root) / layers,
    rootParams: root,
    paramGroups: groups,
    layers,
    hidden: h,
    heads: a,
    kvHeads: a,
    headDim: hd,
    intermediate: F,
    vocab: V,
    maxPositions: num(c, 'n_positions', 512),
    norm: 'rmsnorm',
    mlpActivation,
    tiedEmbeddings: tied,
    hiddenDropout: dropout,
    attentionDropout: dropout,
    encoderDecoder: { encoderLayers, decoderLayers, encoderBlockParamCount: encoderBlock, decoderBlockParamCount: decoderBlock },
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
