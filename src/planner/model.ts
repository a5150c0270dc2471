/**
 * The model description the planner works from: architecture numbers and exact parameter counts,
 * independent of where they came from. Two sources feed it:
 *  - a Hugging Face `config.json` (hfConfig.ts), and
 *  - later, the Python probe's model summary for any `nn.Module` (the `doctor` issue): it writes the
 *    same interface as JSON (`format: "gpuwise-model/1"`), read by modelSummary.ts.
 * Everything the memory and time models need is here; nothing refers back to the raw config.
 */

/**
 * Block architecture families whose saved activations the planner models op by op (activations.ts). `t5`: T5's
 * encoder-decoder (T5, mT5, umT5): RMS-style norms, no biases, attention scores computed explicitly with a relative
 * position bias (no SDPA), cross-attention in the decoder (the stacks are in `encoderDecoder`).
 */
export type BlockFamily = 'gpt2' | 'bert' | 'llama' | 't5';

/** The MLP's activation as implemented in the model code (it decides which tensors autograd saves). */
export type MlpActivation =
  /** GPT-2's `gelu_new`: a Python tanh-GELU composite (pow, tanh, two muls), several saved tensors. */
  | 'gelu-tanh-composite'
  /** `torch.nn.functional.gelu` (exact or tanh): one fused op that saves its input. */
  | 'gelu'
  /** Gated SiLU (`down(silu(gate(x)) * up(x))`), Llama/Mistral/Qwen/Mixtral experts, T5's `gated-silu`. */
  | 'swiglu'
  /** `nn.ReLU` (T5 v1.0's `relu`): saves its output. */
  | 'relu'
  /** Gated fused GELU (`wo(gelu(wi_0(x)) * wi_1(x))`). */
  | 'gated-gelu'
  /** T5 v1.1's `gated-gelu` (flan-T5, mT5, umT5): the `gelu_new` composite on `wi_0`, times `wi_1`. */
  | 'gated-gelu-tanh-composite';

/** Whether the MLP multiplies a gate by a second projection (three matrices, not two). */
export function isGatedMlp(a: MlpActivation): boolean {
  return a === 'swiglu' || a === 'gated-gelu' || a === 'gated-gelu-tanh-composite';
}

/**
 * The two stacks of an encoder-decoder (T5): the encoder's blocks run over the source tokens, the decoder's over the
 * target tokens with cross-attention to the encoder's output. `layers` is their sum and `blockParamCount` their mean,
 * so FSDP units and pipeline stages are blocks of both stacks.
 */
export interface EncoderDecoder {
  /** T5's `num_layers`. */
  encoderLayers: number;
  /** T5's `num_decoder_layers`. */
  decoderLayers: number;
  /** One encoder block (self-attention, MLP, two norms), its relative position bias table aside. */
  encoderBlockParamCount: number;
  /** One decoder block (self-attention, cross-attention, MLP, three norms), its relative position bias table aside. */
  decoderBlockParamCount: number;
}

export interface MixtureOfExperts {
  /** Experts per MoE layer. */
  experts: number;
  /** Experts each token is routed to. */
  topK: number;
  /** Parameters of one expert. */
  expertParams: number;
}

export interface ParamGroup {
  /** What the parameters are, e.g. `embed_tokens`, `layers (x32)`, `lm_head`. */
  name: string;
  count: number;
}

export interface ModelDescription {
  /** Human name, e.g. `gpt2` or `llama (6.74B)`. */
  name: string;
  /** Hugging Face `model_type` or the probe's class name. */
  modelType: string;
  /** The class whose parameters are counted, e.g. `GPT2LMHeadModel`, `BertForMaskedLM`. */
  architecture: string;
  family: BlockFamily;
  /** Decoder (causal LM, loss over the vocabulary at every position; T5's decoder) or encoder (BERT MLM). */
  causal: boolean;
  /** Trainable parameters of `architecture`, tied weights counted once. */
  paramCount: number;
  /** Parameters used per token in the forward pass (differs from paramCount only for MoE). */
  activeParamCount: number;
  /** Parameters in the token embedding and, when untied, the output projection. */
  embeddingParamCount: number;
  /** Parameters of one transformer block (all experts included); an encoder-decoder's mean block. */
  blockParamCount: number;
  /** Parameters outside the blocks (embeddings, final norm, heads): the FSDP root unit. */
  rootParamCount: number;
  paramGroups: ParamGroup[];
  /** Transformer blocks (an encoder-decoder's of both stacks). */
  layers: number;
  hidden: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  /** MLP inner width (per expert for MoE). */
  intermediate: number;
  vocab: number;
  /** Position table size; T5's `n_positions` (its relative positions set no hard limit). */
  maxPositions: number;
  norm: 'layernorm' | 'rmsnorm';
  mlpActivation: MlpActivation;
  tiedEmbeddings: boolean;
  /** Dropout probabilities that are active in training (they save 1-byte masks). */
  hiddenDropout: number;
  attentionDropout: number;
  moe?: MixtureOfExperts;
  /** Present for an encoder-decoder (family `t5`): its two stacks. */
  encoderDecoder?: EncoderDecoder;
}

/** The largest block: what an FSDP unit all-gathers (a decoder block, for an encoder-decoder). */
export function largestBlockParamCount(m: ModelDescription): number {
  const ed = m.encoderDecoder;
  return ed ? Math.max(ed.encoderBlockParamCount, ed.decoderBlockParamCount) : m.blockParamCount;
}

/** Parameters of a learned position table (GPT-2, BERT): lookups, no matmul; none for rotary or relative positions. */
export function positionTableParams(m: ModelDescription): number {
  return m.family === 'llama' || m.family === 't5' ? 0 : m.maxPositions * m.hidden;
}
