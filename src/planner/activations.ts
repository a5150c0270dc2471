/**
 * Activation memory per token, counted tensor by tensor from what autograd saves in the Hugging Face
 * implementations (SDPA attention: flash or memory-efficient kernels, so no seq x seq term; dropout keeps
 * 1-byte masks; dropout inside SDPA keeps none). Under autocast, each Linear saves its own bf16 cast of
 * an fp32 input, LayerNorm/RMSNorm/pow/softmax/cross-entropy run in fp32, and the residual stream stays
 * fp32. Terms are tagged with whether tensor parallelism splits them (Megatron column/row layout).
 * T5's encoder-decoders (family `t5`) compute attention explicitly, so their blocks keep seq x seq terms per
 * head; they are counted per sequence (two lengths), below `microBatchActivations`, the one way the memory and
 * step-time models read a micro-batch's activations.
 */
import type { ModelDescription } from './model.js';
import { isGatedMlp } from './model.js';
import { type Checkpointing, type DataParallel, type Parallelism, type Precision, type TrainingSetup, targetLength } from './setup.js';

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

/** What one micro-batch's activations come to on a stage of `stageLayers` blocks. */
export interface MicroBatchActivations {
  /** Saved for backward at the end of forward, checkpointing applied (one micro-batch in flight). */
  savedBytes: number;
  /** One block's full activations: the last block of backward (recomputed under checkpointing). */
  lastBlockBytes: number;
  /** Everything saved without checkpointing: what the memory-bound passes read and write. */
  fullBytes: number;
}

/** A block's bytes as the set-up keeps them: all, its input alone (full checkpointing), or all but the attention core. */
function keptBytes(b: Omit<BlockActivation, 'inferenceTransientBytes'>, ckpt: Checkpointing, tp: number): { full: number; kept: number } {
  const full = b.shardedBytes / tp + b.replicatedBytes;
  const kept = ckpt === 'full' ? b.boundaryBytes : ckpt === 'selective' ? full - b.attentionCoreBytes / tp : full;
  return { full, kept };
}

export function microBatchActivations(m: ModelDescription, d: DtypeClass, s: TrainingSetup, p: Parallelism, stageLayers: number): MicroBatchActivations {
  if (m.encoderDecoder) return encoderDecoderActivations(m, d, s, p, stageLayers);
  const tokens = s.microBatch * s.seq;
  const { full, kept } = keptBytes(blockActivation(m, d), s.checkpointing, p.tp);
  const outer = outerActivationBytes(m, d);
  return {
    savedBytes: tokens * (stageLayers * kept + outer),
    lastBlockBytes: tokens * full,
    fullBytes: tokens * (stageLayers * full + outer),
  };
}

// ---- T5's encoder-decoders (modeling_t5.py: T5LayerNorm, T5Attention, T5DenseActDense / T5DenseGatedActDense) ----

/** One block's bytes for one sequence (source and target lengths both), split as BlockActivation is. */
type SequenceBlock = Omit<BlockActivation, 'inferenceTransientBytes'>;

/**
 * T5LayerNorm keeps 8 bytes per element whatever the precision: its input (kept by `pow` and by the multiply by
 * rsqrt, which takes the input itself, not the fp32 copy) and the normalised tensor the weight multiply keeps; in
 * pure bf16 the fp32 copy `pow` keeps (4), the bf16 input (2) and the bf16 normalised tensor (2).
 */
function t5NormSaved(h: number): number {
  return 8 * h;
}

/** The norm's output dtype: fp32 under autocast (an fp32 weight times fp32), else the compute dtype. */
function t5NormedBytes(d: DtypeClass): number {
  return d.amp ? 4 : d.c;
}

/**
 * Bytes per attention score element: softmax runs on `scores.float()` and keeps its fp32 output; the value matmul
 * keeps the probabilities it reads: the half-precision `type_as` copy (none in fp32, where it is the softmax output)
 * or, with dropout, dropout's 1-byte mask and output.
 */
function t5ScoreBytes(d: DtypeClass, dropout: boolean): number {
  return 4 + (dropout ? 1 + d.c : d.c === 4 ? 0 : d.c);
}

/** What the MLP's activation keeps itself: ReLU its output, GELU and SiLU their input, `gelu_new` its composite. */
function t5ActivationSaved(F: number, d: DtypeClass, act: ModelDescription['mlpActivation']): number {
  // gelu_new under autocast: pow runs in fp32 on an fp32 copy (4), tanh keeps its fp32 output (4), the last multiply
  // keeps 0.5*x (2) and 1 + tanh (4); without autocast four tensors of the compute dtype.
  if (act === 'gelu-tanh-composite' || act === 'gated-gelu-tanh-composite') return d.amp ? 14 * F : 4 * d.c * F;
  return d.c * F;
}

/**
 * T5's MLP per token, its input Linears aside. Gated: the gate (fp32 from gelu_new under autocast) and `wi_1`'s
 * output kept by their product. `wo` keeps its input: under autocast always a fresh bf16 cast (the module casts a
 * half-precision input to `wo`'s fp32 weight, autocast casts it back); otherwise the dropout output, or what dropout
 * passed through (ReLU's output is already kept).
 */
function t5MlpSaved(F: number, d: DtypeClass, act: ModelDescription['mlpActivation'], dropout: boolean): number {
  const mask = dropout ? F : 0;
  const own = t5ActivationSaved(F, d, act) + mask;
  if (isGatedMlp(act)) {
    const gate = (act === 'gated-gelu-tanh-composite' && d.amp ? 4 : d.c) * F;
    return own + gate + d.c * F + (d.amp ? 2 : d.c) * F;
  }
  return own + (d.amp ? 2 * F : dropout || act !== 'relu' ? d.c * F : 0);
}

/** A self-attention sublayer per query token over `keyLen` keys: norm, q/k/v inputs, q, k, v, scores, o's input. */
function t5SelfAttention(m: ModelDescription, d: DtypeClass, keyLen: number): SequenceBlock {
  const h = m.hidden;
  const inner = m.heads * m.headDim;
  const dropout = m.attentionDropout > 0;
  const core = 3 * d.c * inner + m.heads * keyLen * t5ScoreBytes(d, dropout) + d.c * inner;
  const replicated = t5NormSaved(h) + linearInputs(h, 3, d, t5NormedBytes(d)) + (m.hiddenDropout > 0 ? h : 0);
  return { shardedBytes: core, replicatedBytes: replicated, attentionCoreBytes: core, boundaryBytes: d.r * h };
}

/** The MLP sublayer per token: norm, the input Linears, the MLP, the residual dropout's mask. */
function t5FeedForward(m: ModelDescription, d: DtypeClass): SequenceBlock {
  const h = m.hidden;
  const dropout = m.hiddenDropout > 0;
  const inputs = linearInputs(h, isGatedMlp(m.mlpActivation) ? 2 : 1, d, t5NormedBytes(d));
  return {
    shardedBytes: t5MlpSaved(m.intermediate, d, m.mlpActivation, dropout),
    replicatedBytes: t5NormSaved(h) + inputs + (dropout ? h : 0),
    attentionCoreBytes: 0,
    boundaryBytes: 0,
  };
}

/**
 * Cross-attention per target token over `srcLen` source tokens, and per source token: k and v of the encoder's
 * output, which each decoder block's two Linears cast to bf16 apart under autocast (one fp32 tensor otherwise, kept
 * once for all blocks: the outer terms).
 */
function t5CrossAttention(m: ModelDescription, d: DtypeClass, srcLen: number): { perTarget: SequenceBlock; perSource: SequenceBlock } {
  const h = m.hidden;
  const inner = m.heads * m.headDim;
  const targetCore = d.c * inner + m.heads * srcLen * t5ScoreBytes(d, m.attentionDropout > 0) + d.c * inner;
  const perTarget = {
    shardedBytes: targetCore,
    replicatedBytes: t5NormSaved(h) + linearInputs(h, 1, d, t5NormedBytes(d)) + (m.hiddenDropout > 0 ? h : 0),
    attentionCoreBytes: targetCore,
    boundaryBytes: 0,
  };
  const kv = 2 * d.c * inner;
  return { perTarget, perSource: { shardedBytes: kv, replicatedBytes: d.amp ? 2 * 2 * h : 0, attentionCoreBytes: kv, boundaryBytes: 0 } };
}

/** `n` tokens of each part, summed field by field. */
function sumBlocks(parts: [number, SequenceBlock][]): SequenceBlock {
  const sum = (k: keyof SequenceBlock) => parts.reduce((a, [n, b]) => a + n * b[k], 0);
  return { shardedBytes: sum('shardedBytes'), replicatedBytes: sum('replicatedBytes'), attentionCoreBytes: sum('attentionCoreBytes'), boundaryBytes: sum('boundaryBytes') };
}

/** An encoder block and a decoder block, each for one sequence of `srcLen` source and `tgtLen` target tokens. */
export function t5Blocks(m: ModelDescription, d: DtypeClass, srcLen: number, tgtLen: number): { encoder: SequenceBlock; decoder: SequenceBlock } {
  const ff = t5FeedForward(m, d);
  const cross = t5CrossAttention(m, d, srcLen);
  return {
    encoder: sumBlocks([[srcLen, t5SelfAttention(m, d, srcLen)], [srcLen, ff]]),
    decoder: sumBlocks([[tgtLen, t5SelfAttention(m, d, tgtLen)], [tgtLen, cross.perTarget], [tgtLen, ff], [srcLen, cross.perSource]]),
  };
}

/**
 * Outside the blocks, per sequence: each stack's embedding dropout, final norm and final dropout; the encoder's output
 * where one tensor of it is kept (the decoder's cross-attention Linears without autocast, every decoder block's
 * checkpoint under full checkpointing); the LM head's input.
 */
function t5OuterBytes(m: ModelDescription, d: DtypeClass, srcLen: number, tgtLen: number, ckpt: Checkpointing): number {
  const h = m.hidden;
  const masks = m.hiddenDropout > 0 ? 2 * h : 0;
  const encoderOutput = !d.amp || ckpt === 'full' ? d.r * h : 0;
  const lmIn = d.amp ? 2 * h : d.c * h;
  return srcLen * (masks + t5NormSaved(h) + encoderOutput) + tgtLen * (masks + t5NormSaved(h) + lmIn);
}

/**
 * Under full checkpointing each block's checkpoint keeps the tensors passed to it, one copy a stack: the position
 * bias with the mask added ((batch, heads, q, k), fp32 under autocast like the mask), and in the decoder the causal
 * mask and the cross-attention bias too. Without checkpointing nothing keeps them past their stack's forward.
 */
function t5CheckpointShared(m: ModelDescription, d: DtypeClass, srcLen: number, tgtLen: number, enc: boolean, dec: boolean): number {
  const bytes = d.amp ? 4 : d.c;
  const a = m.heads;
  return ((enc ? a * srcLen * srcLen : 0) + (dec ? a * tgtLen * tgtLen + tgtLen * tgtLen + a * tgtLen * srcLen : 0)) * bytes;
}

/**
 * A stage's blocks: all of both stacks, or with pipeline stages the heavier decoder blocks first (a bound: which
 * blocks a stage holds depends on the split).
 */
function stageBlocks(m: ModelDescription, stageLayers: number): { enc: number; dec: number } {
  const ed = m.encoderDecoder!;
  const dec = Math.min(stageLayers, ed.decoderLayers);
  return { enc: Math.min(stageLayers - dec, ed.encoderLayers), dec };
}

function encoderDecoderActivations(m: ModelDescription, d: DtypeClass, s: TrainingSetup, p: Parallelism, stageLayers: number): MicroBatchActivations {
  const src = s.seq;
  const tgt = targetLength(s);
  const { encoder, decoder } = t5Blocks(m, d, src, tgt);
  const e = keptBytes(encoder, s.checkpointing, p.tp);
  const dd = keptBytes(decoder, s.checkpointing, p.tp);
  const { enc, dec } = stageBlocks(m, stageLayers);
  const outer = t5OuterBytes(m, d, src, tgt, s.checkpointing);
  const shared = s.checkpointing === 'full' ? t5CheckpointShared(m, d, src, tgt, enc > 0, dec > 0) : 0;
  const b = s.microBatch;
  return {
    savedBytes: b * (enc * e.kept + dec * dd.kept + shared + outer),
    // Backward ends at the stage's first block: the encoder's first block where the stage holds encoder blocks.
    lastBlockBytes: b * (enc > 0 ? e.full : dd.full),
    fullBytes: b * (enc * e.full + dec * dd.full + outer),
  };
}

/**
 * Inference of an encoder-decoder, per micro-batch: the decoder's key/value cache (`use_cache`: self-attention over
 * the target, cross-attention over the source, every decoder block) and the largest transient: the logits, or one
 * block's scores in flight (the raw scores, their fp32 copy, softmax output, half-precision copy) with its q/k/v and MLP.
 */
export function encoderDecoderInference(m: ModelDescription, d: DtypeClass, s: TrainingSetup, tp: number): { kvCacheBytes: number; transientBytes: number } {
  const src = s.seq;
  const tgt = targetLength(s);
  const inner = m.heads * m.headDim;
  const kv = (m.encoderDecoder!.decoderLayers * (src + tgt) * 2 * d.c * inner) / tp;
  const logits = tgt * (m.vocab * d.c + d.r * m.hidden);
  const longest = Math.max(src, tgt);
  const scores = m.heads * Math.max(src * src, tgt * Math.max(tgt, src)) * (2 * d.c + 8);
  const block = (longest * (4 * d.c * inner + (isGatedMlp(m.mlpActivation) ? 3 : 2) * d.c * m.intermediate) + scores) / tp + 2 * d.r * m.hidden * longest;
  return { kvCacheBytes: s.microBatch * kv, transientBytes: s.microBatch * Math.max(logits, block) };
}
