/**
 * Activation memory per token, counted tensor by tensor from what autograd saves in the Hugging Face
 * implementations (SDPA attention: flash or memory-efficient kernels, so no seq x seq term; dropout keeps
 * 1-byte masks; dropout inside SDPA keeps none). Under autocast, each Linear saves its own bf16 cast of
 * an fp32 input, LayerNorm/RMSNorm/pow/softmax/cross-entropy run in fp32, and the residual stream stays
 * fp32. Terms are tagged with whether tensor parallelism splits them (Megatron column/row layout).
 */
import type { ModelDescription } from './model.js';
import type { DataParallel, Precision } from './setup.js';

/** How tensors are stored: c = compute dtype bytes, r = residual stream bytes, amp = autocast on. */
export interface DtypeClass {
  c: number;
  r: number;
  amp: boolean;
}

function dtypeClass(precision: Precision): DtypeClass {
  if (precision === 'bf16') return { c: 2, r: 2, amp: false };
  if (precision === 'fp32') return { c: 4, r: 4, amp: false };
  return { c: 2, r: 4, amp: true };
}

/** The dtypes one rank works in: what the memory and the step-time models both read (one home, issue 47). */
export interface RunDtypes {
  /** Activations: compute and residual bytes, autocast on or off. */
  d: DtypeClass;
  /** The precision the matmuls run at (the datasheet rate it gets). */
  compute: Precision;
  /** Bytes per parameter of the weights, of the gradients and of each optimizer state tensor. */
  weightBytes: number;
  gradBytes: number;
  stateBytes: number;
}

/**
 * The run's one precision, as each data-parallel strategy keeps it. DDP and ZeRO-1/2 keep the same weights,
 * gradients and activations (fp32 weights under autocast for amp-*, bf16 throughout for bf16): ZeRO differs from DDP
 * only in what it shards (the optimizer state; ZeRO-2 the gradients too). FSDP/HSDP run as the FSDP2 config gpuwise
 * emits does, `MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)`: fp32 sharded parameters (bf16 in pure bf16),
 * the whole forward in bf16 without autocast.
 */
export function runDtypes(precision: Precision, dp: DataParallel): RunDtypes {
  const bytes = precision === 'bf16' ? 2 : 4;
  if (dp === 'fsdp' || dp === 'hsdp') {
    // As modelled before issue 47's change (and measured): bf16 activations even in an fp32 run, whose all-gathered
    // blocks are counted in bf16 too (memory.ts); an fp32 FSDP run is not modelled apart.
    const compute: Precision = precision === 'fp32' ? 'fp32' : 'bf16';
    return { d: dtypeClass('bf16'), compute, weightBytes: bytes, gradBytes: bytes, stateBytes: bytes };
  }
  return { d: dtypeClass(precision), compute: precision, weightBytes: bytes, gradBytes: bytes, stateBytes: bytes };
}

/** Bytes per token saved by one block, split into what TP shards and what it replicates. */
export interface BlockActivation {
  shardedBytes: number;
  replicatedBytes: number;
  /** Bytes per token of the attention core (SDPA inputs/outputs): what selective recompute drops. */
  attentionCoreBytes: number;
  /** The block's input (kept per block under full checkpointing). */
  boundaryBytes: number;
  /** Largest transient of a block in inference (no saved tensors), bytes per token. */
  inferenceTransientBytes: number;
}

/** RMSNorm as written in transformers (Python: upcast, pow, mean, rsqrt, mul, downcast, weight mul). */
function rmsNormSaved(h: number, d: DtypeClass): number {
  if (d.amp) return 4 * h + 4 * h; // input (fp32 residual) kept by pow, normalised fp32 kept by the weight mul
  if (d.c === 4) return 4 * h + 4 * h;
  return 4 * h + 2 * h; // fp32 upcast copy, bf16 normalised
}

/** Saved bytes per token for the inputs of `k` Linears fed by the same tensor. */
function linearInputs(h: number, k: number, d: DtypeClass, inputBytes: number): number {
  // Under autocast each Linear casts its fp32 input separately (autocast caches casts of leaf weights only).
  if (d.amp && inputBytes === 4) return k * 2 * h;
  return inputBytes * h;
}

export function blockActivation(m: ModelDescription, d: DtypeClass): BlockActivation {
  const { hidden: h, intermediate: I, heads: a, kvHeads: kv, headDim: hd } = m;
  const { c, r } = d;
  const mask = m.hiddenDropout > 0 ? 1 : 0;
  const lse = 4 * a; // SDPA's logsumexp, fp32 per head
  let sharded = 0;
  let replicated = 0;
  let core = 0;
  let transient = 0;
  if (m.family === 'gpt2' || m.family === 'bert') {
    // LayerNorm saves its input; the normalised output is saved by the next Linear (as a bf16 cast under amp).
    const lnOut = d.amp ? 4 : c;
    const qkvIn = m.family === 'gpt2' ? linearInputs(h, 1, d, lnOut) : linearInputs(h, 3, d, m.family === 'bert' ? r : lnOut);
    core = 3 * c * h + c * h + lse;
    const attn = core + c * h; // q, k, v, SDPA output + logsumexp, merged-heads copy (output projection input)
    let mlp: number;
    if (m.mlpActivation === 'gelu-tanh-composite') {
      // 0.5*x*(1+tanh(k*(x+0.044715*x^3))): pow saves x (fp32 under autocast), tanh its output, the final mul both factors.
      mlp = d.amp ? 4 * I + 4 * I + 4 * I + 2 * I + 2 * I : 5 * c * I;
    } else {
      mlp = 2 * c * I; // gelu saves its input; the output is the next Linear's input
    }
    const norms = m.family === 'gpt2' ? r * h + r * h : r * h + r * h; // two LayerNorm inputs
    sharded = attn + mlp;
    replicated = qkvIn + linearInputs(h, 1, d, lnOut) + norms + 2 * mask * h;
    transient = (3 + 1) * c * h + 2 * c * I;
  } else {
    // Llama-style: RMSNorm, q/k/v (GQA), RoPE (saves only cos/sin), SDPA, o_proj, SwiGLU MLP.
    const normedBytes = d.amp ? 4 : c;
    core = c * (a + 2 * kv) * hd + c * a * hd + lse;
    const attn = core + c * a * hd; // + merged-heads copy saved by o_proj
    let mlp = 4 * c * I; // gate out (silu input), up out, silu out, product (down input)
    let mlpIn = linearInputs(h, 2, d, normedBytes);
    if (m.moe) {
      // Each routed (token, expert) pair keeps a gathered input, the SwiGLU tensors and the weighted output.
      const k = m.moe.topK;
      mlp = k * (4 * c * I + 2 * c * h) + 4 * m.moe.experts * 2;
      mlpIn = linearInputs(h, 1, d, normedBytes); // router and the gather share the normed input
    }
    sharded = attn + mlp;
    replicated = 2 * rmsNormSaved(h, d) + linearInputs(h, 3, d, normedBytes) + mlpIn;
    transient = c * (a + 2 * kv) * hd + 3 * c * I * (m.moe ? m.moe.topK : 1);
  }
  return {
    shardedBytes: sharded,
    replicatedBytes: replicated,
    attentionCoreBytes: core,
    boundaryBytes: r * h,
    inferenceTransientBytes: transient + 2 * r * h,
  };
}

/** Saved bytes per token outside the blocks: embedding dropout, final norm, head transform, LM-head input. */
export function outerActivationBytes(m: ModelDescription, d: DtypeClass): number {
  const h = m.hidden;
  const mask = m.hiddenDropout > 0 ? 1 : 0;
  const lmIn = d.amp ? 2 * h : d.c * h;
  if (m.family === 'gpt2') return mask * h + d.r * h + lmIn;
  if (m.family === 'bert') return d.r * h + mask * h + (lmIn + d.c * h + d.c * h + d.r * h);
  return rmsNormSaved(h, d) + lmIn;
}
