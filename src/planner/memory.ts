/**
 * Phase-aware per-rank GPU memory model. The peak of `torch.cuda.max_memory_allocated()` over a steady
 * training step is the maximum over four points:
 *   forward   end of forward: saved activations and the loss buffers are all alive;
 *   backward  start of backward (cross-entropy backward) and end of backward (all gradients, activations freed),
 *             the larger of the two (memory is linear in the number of blocks done in between);
 *   optimizer optimizer step: gradients, state and the foreach temporaries;
 * each on top of what is resident (weights, master weights, optimizer state, buffers, cuBLAS workspace).
 * Reserved adds the caching allocator's slack; nvidia-smi adds the CUDA context (and NCCL buffers).
 */
import { blockActivation, type DtypeClass, encoderDecoderInference, microBatchActivations, runDtypes } from './activations.js';
import { CALIBRATION as K } from './calibration.js';
import { largestBlockParamCount, type ModelDescription, positionTableParams } from './model.js';
import { isAmp, lossTokensPerSample, type OptimizerKind, type Parallelism, type TrainingSetup } from './setup.js';

export type Phase = 'forward' | 'backward' | 'optimizer';

/** The terms of a peak, by their `--json` name (a stable key). */
export type ComponentName =
  | 'cudaWorkspace'
  | 'weights'
  | 'optimizerState'
  | 'gradientBuckets'
  | 'gradients'
  | 'optimizerTemporaries'
  | 'autocastWeightCopies'
  | 'shardingBuffers'
  | 'activations'
  | 'lossBuffers'
  | 'lastBlockActivations'
  | 'kvCache'
  | 'forwardTransient';

/** Each term in words, for every human report (terminal, Markdown, HTML); the JSON keeps `name`. */
export const COMPONENT_LABELS: Record<ComponentName, string> = {
  cudaWorkspace: 'CUDA workspace',
  weights: 'weights',
  optimizerState: 'optimizer state',
  gradientBuckets: 'gradient buckets',
  gradients: 'gradients',
  optimizerTemporaries: 'optimizer temporaries',
  autocastWeightCopies: 'autocast weight copies',
  shardingBuffers: 'sharding buffers',
  activations: 'activations',
  lossBuffers: 'loss buffers',
  lastBlockActivations: 'last block activations',
  kvCache: 'KV cache',
  forwardTransient: 'forward transient',
};

export interface MemoryComponent {
  name: ComponentName;
  /** `name` in words (COMPONENT_LABELS). */
  label: string;
  bytes: number;
  /** Why it is there, one line. */
  note: string;
}

export interface MemoryPrediction {
  /** Predicted `torch.cuda.max_memory_allocated()` of a steady step (per rank). */
  peakAllocatedBytes: number;
  /** Predicted `torch.cuda.max_memory_reserved()`. */
  peakReservedBytes: number;
  /** Predicted process memory nvidia-smi shows (reserved + CUDA context [+ NCCL buffers]). */
  deviceUsedBytes: number;
  bindingPhase: Phase;
  /** Peak allocated bytes at each phase. */
  phases: Record<Phase, number>;
  /**
   * The part of the peak that does not depend on the micro-batch (cuBLAS workspace, weights, master weights,
   * optimizer state, DDP/DeepSpeed buckets; for inference the weights and autocast copies): what a calibration
   * on a measured run keeps fixed while it scales the rest (fromRun.ts).
   */
  residentBytes: number;
  /**
   * Free memory the allocator cannot use for the largest blocks: under autocast or bf16 the loss upcasts the
   * half-precision logits to fp32, and the half-precision logits gradient is carved out of a freed fp32-sized
   * block, leaving a hole of its own size that the next fp32-sized block cannot use. The fit rule (plan.ts)
   * adds it to the peak; 0 for fp32 training and inference.
   */
  fragmentationBytes: number;
  /**
   * Allocator cache held by the communication streams (FSDP2 all-gather outputs and reduce-scatter buffers
   * are allocated on their own streams, and the caching allocator reuses a block only on the stream that
   * allocated it): added to the predicted reserved bytes.
   */
  streamCacheBytes: number;
  /** The terms that add up to the binding phase's peak. */
  components: MemoryComponent[];
}

/** Optimizer state bytes per parameter whose state dtype has `s` bytes. */
export function optimizerStateBytesPerParam(opt: OptimizerKind, s: number, hidden: number): number {
  switch (opt) {
    case 'adam':
    case 'adamw':
      return 2 * s;
    case 'sgd':
      return 0;
    case 'sgd-momentum':
      return s;
    case 'adafactor':
      // Factored second moment: row + column vectors per matrix, about 2/hidden of the parameters.
      return (2 * s) / hidden;
    case 'adamw-8bit':
      return 2 + 8 / 256; // two uint8 moments + fp32 absmax per 256-element block
  }
}

function optimizerTemporaryBytesPerParam(opt: OptimizerKind, s: number): number {
  // Foreach Adam/AdamW materialise sqrt(v) for every parameter (`_foreach_sqrt`); foreach SGD updates in place;
  // 8-bit and Adafactor work block- or row-wise.
  if (opt === 'adam' || opt === 'adamw') return K.optimizerTemporaryFactor * s;
  return 0;
}

/** Parameter counts one rank holds before data-parallel sharding. */
export interface StageParams {
  total: number;
  layers: number;
  block: number;
  /** Root (embeddings/head) parameters on this stage. */
  root: number;
  /** Parameters used as matmul weights (autocast casts them): all but lookup-only embeddings. */
  matmul: number;
}

export function stageParams(m: ModelDescription, p: Parallelism): StageParams {
  const layers = Math.ceil(m.layers / p.pp);
  const lookupOnly = m.tiedEmbeddings ? 0 : m.hidden * m.vocab;
  const positional = positionTableParams(m);
  // With PP the first stage holds the embedding, the last the head: the larger end is the binding one.
  const root = p.pp === 1 ? m.rootParamCount : Math.max(m.rootParamCount - (m.tiedEmbeddings ? 0 : m.vocab * m.hidden), m.vocab * m.hidden);
  const total = (layers * m.blockParamCount + root) / p.tp;
  const matmul = Math.max(0, total - (p.pp === 1 ? (lookupOnly + positional) / p.tp : 0));
  // An FSDP unit all-gathers one block: the largest (an encoder-decoder's blocks differ).
  return { total, layers, block: largestBlockParamCount(m) / p.tp, root: root / p.tp, matmul };
}

/** Inference's batch-dependent terms: the KV cache a Hugging Face decoder returns, and the largest forward transient. */
function inferenceTerms(m: ModelDescription, s: TrainingSetup, p: Parallelism, sp: StageParams, d: DtypeClass): { kvCacheBytes: number; transientBytes: number; transientNote: string } {
  if (m.encoderDecoder) {
    const e = encoderDecoderInference(m, d, s, p.tp);
    return { ...e, transientNote: 'logits or one block in flight, whichever is larger' };
  }
  const tokens = s.microBatch * s.seq;
  // Hugging Face decoders return a KV cache by default (use_cache); under autocast RoPE promotes keys to fp32.
  const keyBytes = d.amp && m.family === 'llama' ? 4 : d.c;
  const kvCacheBytes = m.causal ? (sp.layers * tokens * m.kvHeads * m.headDim * (keyBytes + d.c)) / p.tp : 0;
  const blk = blockActivation(m, d);
  const logits = tokens * (m.vocab * d.c + d.r * m.hidden);
  const layer = tokens * (blk.inferenceTransientBytes / p.tp + d.r * m.hidden);
  return { kvCacheBytes, transientBytes: Math.max(logits, layer), transientNote: logits >= layer ? 'logits over the vocabulary' : 'one block in flight' };
}

export function predictMemory(m: ModelDescription, s: TrainingSetup, p: Parallelism): MemoryPrediction {
  const sp = stageParams(m, p);
  const n = Math.max(1, p.dp === 'hsdp' ? (p.hsdpShardSize ?? p.dpSize) : p.dpSize);
  const fsdp = p.dp === 'fsdp' || p.dp === 'hsdp';
  const zero = p.dp === 'zero1' || p.dp === 'zero2';
  const dt = runDtypes(s.precision, p.dp);
  const d = dt.d;
  const pureBf16 = s.precision === 'bf16';
  const stateDtype = dt.stateBytes;
  const comps: Partial<Record<ComponentName, MemoryComponent>> = {};
  const add = (name: ComponentName, bytes: number, note: string) => {
    comps[name] = { name, label: COMPONENT_LABELS[name], bytes: Math.round(bytes), note };
  };

  add('cudaWorkspace', K.cublasWorkspaceBytes + K.miscResidentBytes, 'cuBLAS workspaces and small resident tensors');

  if (s.mode === 'infer') {
    const wb = dt.weightBytes;
    add('weights', sp.total * wb, `${wb} B/param`);
    if (isAmp(s.precision)) add('autocastWeightCopies', sp.matmul * 2, 'bf16 copies of matmul weights cached by autocast');
    const t = inferenceTerms(m, s, p, sp, d);
    if (t.kvCacheBytes > 0) add('kvCache', t.kvCacheBytes, 'keys and values of every layer (use_cache)');
    add('forwardTransient', t.transientBytes, t.transientNote);
    const residentInfer = Object.values(comps)
      .filter((c) => c.name !== 'kvCache' && c.name !== 'forwardTransient')
      .reduce((a, c) => a + c.bytes, 0);
    const total = Object.values(comps).reduce((a, c) => a + c.bytes, 0);
    return finish(total, { forward: total, backward: 0, optimizer: 0 }, Object.values(comps), p, residentInfer, 0, 0);
  }

  // ---- resident state ----
  const opt = optimizerStateBytesPerParam(s.optimizer, stateDtype, m.hidden);
  const offload = p.cpuOffload;
  let weights: number;
  let optState: number;
  let grads: number; // gradient bytes alive at the end of backward / in the optimizer step
  let persistentGradBuffers = 0;
  let fwdBuffers = 0;
  let bwdBuffers = 0;
  let gradsDuringFwd = 0; // with accumulation the gradients of earlier micro-batches stay
  if (fsdp) {
    weights = offload ? 0 : (sp.total * dt.weightBytes) / n;
    optState = offload ? 0 : (sp.total * opt) / n;
    grads = offload ? 0 : (sp.total * dt.gradBytes) / n;
    // bf16 all-gathered blocks (current + prefetched; every block without resharding) and the root, which
    // FSDP2 never reshards after forward. Backward reshards each block after its gradients are reduced, so
    // at its end two blocks remain, plus one block's bf16 gradients and their fp32 reduce-scatter input.
    const unshardedBlocks = p.reshardAfterForward ? 2 : sp.layers;
    fwdBuffers = unshardedBlocks * sp.block * 2 + sp.root * 2;
    bwdBuffers = 2 * sp.block * 2 + sp.root * 2 + sp.block * (2 + 4);
    gradsDuringFwd = s.gradAccum > 1 ? grads : 0;
  } else {
    // DDP, and ZeRO-1/2 at the same precision (runDtypes): the same weights, gradients and activations, ZeRO-1
    // sharding the optimizer state over the ranks, ZeRO-2 the gradients too (issue 47: ZeRO-1 was planned with bf16
    // weights and activations against DDP's autocast, so the ranking compared precisions, not strategies).
    weights = sp.total * dt.weightBytes;
    optState = offload ? 0 : (sp.total * opt) / (zero ? n : 1);
    grads = (sp.total * dt.gradBytes) / (p.dp === 'zero2' ? n : 1);
    // DDP's flat gradient buckets (gradient_as_bucket_view=False): measured at two gradient-sized copies; ZeRO-1 keeps
    // them (DDP with a sharded optimizer, torch's ZeroRedundancyOptimizer); ZeRO-2 reduces through two h x h buckets.
    if (p.dp === 'ddp' || p.dp === 'zero1') persistentGradBuffers = K.ddpGradientBufferCopies * sp.total * dt.gradBytes;
    else if (p.dp === 'zero2') persistentGradBuffers = 2 * Math.min(sp.total, m.hidden * m.hidden) * dt.gradBytes;
    gradsDuringFwd = s.gradAccum > 1 ? grads : 0;
  }
  const optTemp = offload ? 0 : (fsdp || zero ? sp.total / n : sp.total) * optimizerTemporaryBytesPerParam(s.optimizer, stateDtype);

  add('weights', weights, fsdp ? `sharded ${pureBf16 ? 'bf16' : 'fp32'} parameters (1/${n})` : `${dt.weightBytes} B/param`);
  add('optimizerState', optState, `${s.optimizer}${fsdp || zero ? ` (1/${n})` : ''}${offload ? ' (offloaded to CPU)' : ''}`);
  if (persistentGradBuffers > 0)
    add('gradientBuckets', persistentGradBuffers, p.dp === 'zero2' ? 'ZeRO-2 reduce buckets' : 'DDP flat gradient buckets');

  // ---- activations ----
  const act = microBatchActivations(m, d, s, p, sp.layers);
  const inFlight = p.pp > 1 ? Math.min(s.gradAccum, p.pp) : 1; // 1F1B: the first stage holds min(m, p) micro-batches
  const saved = inFlight * act.savedBytes;
  // At the last block of backward all gradients coexist with that block's full activations (saved, or
  // recomputed under checkpointing).
  const lastBlock = act.lastBlockBytes;
  const lossTokens = s.microBatch * lossTokensPerSample(m, s);
  const lossFwdPerVocab = d.c === 4 && !d.amp ? K.lossForwardBytesPerVocabFp32 : K.lossForwardBytesPerVocabHalf;
  const lossFwd = (lossTokens * m.vocab * lossFwdPerVocab) / p.tp;
  const lossBwd = (lossTokens * m.vocab * K.lossBackwardBytesPerVocab) / p.tp;
  const ampCopies = d.amp ? sp.matmul * 2 : 0;

  const resident = Object.values(comps).reduce((a, c) => a + c.bytes, 0);
  const forward = resident + gradsDuringFwd + ampCopies + fwdBuffers + saved + lossFwd;
  const bwdStart = resident + gradsDuringFwd + ampCopies + fwdBuffers + saved + lossBwd;
  const bwdEnd = resident + Math.max(grads, gradsDuringFwd) + bwdBuffers + lastBlock;
  const backward = Math.max(bwdStart, bwdEnd);
  const optimizer = resident + grads + optTemp;
  const phases = { forward, backward, optimizer };
  const binding: Phase = optimizer >= backward && optimizer >= forward ? 'optimizer' : backward >= forward ? 'backward' : 'forward';

  if (binding === 'optimizer') {
    add('gradients', grads, 'all gradients, alive in the step');
    add('optimizerTemporaries', optTemp, 'foreach step temporaries');
  } else if (binding === 'backward' && bwdEnd > bwdStart) {
    add('gradients', Math.max(grads, gradsDuringFwd), 'all gradients at the end of backward');
    if (bwdBuffers > 0) add('shardingBuffers', bwdBuffers, 'FSDP unsharded blocks, root, reduce-scatter inputs');
    add(
      'lastBlockActivations',
      lastBlock,
      s.checkpointing === 'none' ? 'activations of the block in backward' : 'the block recomputed in backward',
    );
  } else {
    if (gradsDuringFwd > 0) add('gradients', gradsDuringFwd, 'accumulated gradients of earlier micro-batches');
    if (ampCopies > 0) add('autocastWeightCopies', ampCopies, 'bf16 weight casts saved for backward');
    if (fwdBuffers > 0) add('shardingBuffers', fwdBuffers, 'FSDP all-gathered blocks and root');
    add(
      'activations',
      saved,
      `${s.checkpointing === 'full' ? 'block inputs (checkpointed)' : 'saved for backward'}${inFlight > 1 ? `, ${inFlight} micro-batches in flight` : ''}`,
    );
    add('lossBuffers', binding === 'forward' ? lossFwd : lossBwd, 'logits, fp32 log-softmax and its gradients');
  }
  const components = Object.values(comps).filter((c) => c.bytes > 0);
  // The half-precision logits gradient left as a hole in a freed fp32 loss block (see fragmentationBytes).
  const fragmentation = d.c === 2 ? (lossTokens * m.vocab * 2) / p.tp : 0;
  // FSDP2's all-gather outputs (unsharded blocks and root) and reduce-scatter inputs (a block's bf16 gradients and
  // their fp32 copy) live in the communication streams' own caches.
  const streamCache = fsdp ? fwdBuffers + sp.block * (2 + 4) : 0;
  return finish(phases[binding], phases, components, p, resident, fragmentation, streamCache);
}

function finish(
  peak: number,
  phases: Record<Phase, number>,
  components: MemoryComponent[],
  p: Parallelism,
  residentBytes: number,
  fragmentationBytes: number,
  streamCacheBytes: number,
): MemoryPrediction {
  const bindingPhase = (Object.entries(phases) as [Phase, number][]).reduce((a, b) => (b[1] > a[1] ? b : a))[0];
  const reserved = roundUp(peak * K.reservedOverAllocated + streamCacheBytes, 2 * 1024 ** 2);
  const world = p.dpSize * p.tp * p.pp;
  return {
    peakAllocatedBytes: Math.round(peak),
    peakReservedBytes: reserved,
    deviceUsedBytes: reserved + K.cudaContextBytes + (world > 1 ? K.ncclBufferBytes : 0),
    bindingPhase,
    phases: { forward: Math.round(phases.forward), backward: Math.round(phases.backward), optimizer: Math.round(phases.optimizer) },
    components,
    residentBytes: Math.round(residentBytes),
    fragmentationBytes: Math.round(fragmentationBytes),
    streamCacheBytes: Math.round(streamCacheBytes),
  };
}

function roundUp(x: number, to: number): number {
  return Math.ceil(x / to) * to;
}
