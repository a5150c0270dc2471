/**
 * The model description the planner works from: architecture numbers and exact parameter counts,
 * independent of where they came from. Two sources feed it:
 *  - a Hugging Face `config.json` (hfConfig.ts), and
 *  - later, the Python probe's model summary for any `nn.Module` (the `doctor` issue): it writes the
 *    same interface as JSON (`format: "gpuwise-model/1"`), read by modelSummary.ts.
 * Everything the memory and time models need is here; nothing refers back to the raw config.
 */

/** Block architecture families whose saved activations the planner models op by op (activations.ts). */
export type BlockFamily = 'gpt2' | 'bert' | 'llama';

/** The MLP's activation as implemented in the model code (it decides which tensors autograd saves). */
export type MlpActivation =
  /** GPT-2's `gelu_new`: a Python tanh-GELU composite (pow, tanh, two muls), several saved tensors. */
  | 'gelu-tanh-composite'
  /** `torch.nn.functional.gelu` (exact or tanh): one fused op that saves its input. */
  | 'gelu'
  /** Gated SiLU (`down(silu(gate(x)) * up(x))`), Llama/Mistral/Qwen/Mixtral experts. */
  | 'swiglu';

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
  /** Decoder (causal LM, loss over the vocabulary at every position) or encoder (BERT MLM). */
  causal: boolean;
  /** Trainable parameters of `architecture`, tied weights counted once. */
  paramCount: number;
  /** Parameters used per token in the forward pass (differs from paramCount only for MoE). */
  activeParamCount: number;
  /** Parameters in the token embedding and, when untied, the output projection. */
  embeddingParamCount: number;
  /** Parameters of one transformer block (all experts included). */
  blockParamCount: number;
  /** Parameters outside the blocks (embeddings, final norm, heads): the FSDP root unit. */
  rootParamCount: number;
  paramGroups: ParamGroup[];
  layers: number;
  hidden: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  /** MLP inner width (per expert for MoE). */
  intermediate: number;
  vocab: number;
  maxPositions: number;
  norm: 'layernorm' | 'rmsnorm';
  mlpActivation: MlpActivation;
  tiedEmbeddings: boolean;
  /** Dropout probabilities that are active in training (they save 1-byte masks). */
  hiddenDropout: number;
  attentionDropout: number;
  moe?: MixtureOfExperts;
}
