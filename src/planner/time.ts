/**
 * Step-time model per rank: compute (FLOPs over a fitted fraction of the datasheet rate), memory-bound
 * work (passes over the saved activations and the optimizer's state at HBM bandwidth), a CPU launch floor
 * (eager PyTorch: small kernels wait on Python), communication with the stated overlap, and the 1F1B
 * pipeline bubble. Collectives use ring costs: all-reduce 2(n-1)/n, all-gather and reduce-scatter (n-1)/n.
 */
import { microBatchActivations, runDtypes } from './activations.js';
import { CALIBRATION as K } from './calibration.js';
import type { GpuSpec } from './gpus.js';
import { optimizerStateBytesPerParam, stageParams } from './memory.js';
import { isGatedMlp, type ModelDescription, positionTableParams } from './model.js';
import {
  type Hardware,
  lossTokensPerSample,
  type Parallelism,
  type Precision,
  type TrainingSetup,
  targetLength,
  tokensPerSample,
} from './setup.js';

export interface StepTime {
  /** Predicted wall time of one optimizer step (all micro-batches), ms. */
  stepTimeMs: number;
  computeMs: number;
  memoryBoundMs: number;
  /** CPU launch floor the GPU waits on (when larger than the GPU work). */
  cpuFloorMs: number;
  /** Communication time not hidden behind compute. */
  exposedCommMs: number;
  /** Total communication time before overlap. */
  commMs: number;
  bubbleMs: number;
  /** The term that dominates: compute, memory, cpu, communication or bubble. */
  bindingTerm: 'compute' | 'memory' | 'cpu' | 'communication' | 'bubble';
  /** Sequences per second across all ranks. */
  samplesPerSec: number;
  tokensPerSec: number;
  /** Model FLOPs utilisation (6N + attention, no recompute) against the datasheet rate. */
  mfu: number;
  overlap: string;
}

export function peakTflops(gpu: GpuSpec, precision: Precision): number {
  if (precision === 'fp32') return gpu.fp32Tflops;
  if (precision === 'amp-fp16') return gpu.fp16Tflops;
  return gpu.bf16Tflops > 0 ? gpu.bf16Tflops : gpu.fp32Tflops; // no bf16 tensor cores: emulated, fp32 speed at best
}

/** Forward FLOPs per token: 2 per matmul weight plus attention scores and values (causal halves them). */
export function forwardFlopsPerToken(m: ModelDescription, seq: number): number {
  const lookups = (m.tiedEmbeddings ? 0 : m.vocab * m.hidden) + positionTableParams(m);
  const matmul = 2 * (m.activeParamCount - lookups);
  const attn = 4 * m.layers * seq * m.heads * m.headDim * (m.causal ? 0.5 : 1);
  return matmul + attn;
}

/**
 * An encoder-decoder's forward FLOPs for one sequence: the encoder's matmuls over the source tokens, the decoder's
 * over the target tokens (its cross-attention k and v over the source), the LM head over the target, and attention:
 * bidirectional in the encoder, self and cross in the decoder. T5's eager attention multiplies the whole target x
 * target matrix and masks it by addition, so the decoder's causal half is computed too.
 */
function encoderDecoderFlopsPerSample(m: ModelDescription, src: number, tgt: number): number {
  const ed = m.encoderDecoder!;
  const h = m.hidden;
  const inner = m.heads * m.headDim;
  const attnWeights = 4 * h * inner;
  const mlpWeights = (isGatedMlp(m.mlpActivation) ? 3 : 2) * h * m.intermediate;
  const encoder = 2 * (attnWeights + mlpWeights) * src + 4 * src * src * inner;
  const decoder = 2 * (attnWeights + 2 * h * inner + mlpWeights) * tgt + 2 * 2 * h * inner * src + 4 * (tgt * tgt + tgt * src) * inner;
  return ed.encoderLayers * encoder + ed.decoderLayers * decoder + 2 * m.vocab * h * tgt;
}

/** Forward FLOPs for one sequence (an encoder-decoder's source and target both). */
export function forwardFlopsPerSample(m: ModelDescription, s: TrainingSetup): number {
  return m.encoderDecoder ? encoderDecoderFlopsPerSample(m, s.seq, targetLength(s)) : s.seq * forwardFlopsPerToken(m, s.seq);
}

export function predictStepTime(m: ModelDescription, s: TrainingSetup, p: Parallelism, hw: Hardware): StepTime {
  const sp = stageParams(m, p);
  const fsdp = p.dp === 'fsdp' || p.dp === 'hsdp';
  const zero = p.dp === 'zero1' || p.dp === 'zero2';
  const dt = runDtypes(s.precision, p.dp);
  const precision = dt.compute;
  const d = dt.d;
  // Hidden states tensor parallelism reduces and pipeline stages pass: an encoder-decoder's of both stacks.
  const tokens = s.microBatch * tokensPerSample(m, s);
  const train = s.mode === 'train';
  const micro = train ? s.gradAccum : 1;
  const stageShare = sp.layers / m.layers;
  const fwd = (forwardFlopsPerSample(m, s) * stageShare) / p.tp;
  const recomputeFactor = !train ? 0 : s.checkpointing === 'full' ? 1 : s.checkpointing === 'selective' ? 0.1 : 0;
  const flopsPerMicro = s.microBatch * fwd * (train ? 3 + recomputeFactor : 1);
  const eff = precision === 'fp32' ? K.fp32Efficiency : K.tensorEfficiency;
  const rate = peakTflops(hw.gpu, precision) * 1e12 * eff;
  const computeMs = (micro * flopsPerMicro * 1000) / rate;

  const lossTokens = s.microBatch * lossTokensPerSample(m, s);
  const actBytes = microBatchActivations(m, d, { ...s, checkpointing: 'none' }, p, sp.layers).fullBytes + (lossTokens * (train ? 12 : d.c) * m.vocab) / p.tp;
  const passes = train ? K.activationPasses : K.activationPasses / 3;
  let memoryBoundMs = (micro * passes * actBytes * 1000) / hw.gpu.memoryBandwidth;
  if (train && !p.cpuOffload) {
    const shard = fsdp || zero ? p.dpSize : 1;
    // read param, grad, state; write param and state
    const perParam = 2 * dt.weightBytes + dt.gradBytes + 2 * optimizerStateBytesPerParam(s.optimizer, dt.stateBytes, m.hidden);
    memoryBoundMs += ((sp.total / shard) * perParam * 1000) / hw.gpu.memoryBandwidth;
  }
  const perLayerMs = K.cpuMsPerLayer + (m.moe ? m.moe.experts * K.cpuMsPerExpert : 0);
  const cpuFloorMs = micro * sp.layers * perLayerMs * (train ? 1 : 1 / 3);
  const gpuMs = computeMs + memoryBoundMs;

  // ---- communication ----
  const world = p.dpSize * p.tp * p.pp;
  const crossesNodes = world > hw.gpusPerNode;
  const bw = (inter: boolean) => (inter ? hw.interNodeBandwidth : hw.intraNodeBandwidth) * K.linkEfficiency;
  const n = p.dpSize;
  let commMs = 0;
  let exposedCommMs = 0;
  let overlap = 'none (single GPU)';
  const bwdMs = (gpuMs * 2) / 3;
  if (train && n > 1) {
    const ring = (n - 1) / n;
    const dpBw = bw(crossesNodes && p.dp !== 'hsdp');
    if (p.dp === 'ddp' || p.dp === 'zero1') {
      // ZeRO-1 reduces the gradients as DDP does, then all-gathers the parameters each rank updated.
      const allReduceMs = ((sp.total * dt.gradBytes * 2 * ring) / dpBw) * 1000;
      const lastBucketMs = ((25e6 * 2 * ring) / dpBw) * 1000;
      const agMs = p.dp === 'zero1' ? ((sp.total * dt.weightBytes * ring) / dpBw) * 1000 : 0;
      commMs = allReduceMs + agMs;
      exposedCommMs = Math.max(allReduceMs - K.commOverlap * bwdMs, 0) + Math.min(lastBucketMs, allReduceMs) + agMs;
      overlap = `gradient all-reduce overlapped with backward (${K.commOverlap * 100}% of backward time), last bucket exposed${p.dp === 'zero1' ? '; parameter all-gather after the step exposed' : ''}`;
    } else if (zero) {
      const rs = ((sp.total * dt.gradBytes * ring) / dpBw) * 1000;
      const ag = ((sp.total * dt.weightBytes * ring) / dpBw) * 1000;
      commMs = rs + ag;
      exposedCommMs = Math.max(rs - K.commOverlap * bwdMs, 0) + ag;
      overlap = 'reduce-scatter overlapped with backward; parameter all-gather after the step exposed';
    } else {
      const shardN = p.dp === 'hsdp' ? (p.hsdpShardSize ?? Math.min(n, hw.gpusPerNode)) : n;
      const sRing = (shardN - 1) / shardN;
      const sBw = bw(p.dp === 'hsdp' ? false : crossesNodes);
      const ag = ((sp.total * 2 * sRing) / sBw) * 1000;
      const rs = ((sp.total * 4 * sRing) / sBw) * 1000;
      commMs = micro * (ag * (p.reshardAfterForward ? 2 : 1)) + rs;
      if (p.dp === 'hsdp' && n > shardN) {
        const r = n / shardN;
        commMs += (((sp.total / shardN) * 4 * 2 * (r - 1)) / r / bw(true)) * 1000;
      }
      const firstUnit = ((sp.block * 2 * sRing) / sBw) * 1000;
      exposedCommMs = Math.max(commMs - K.commOverlap * gpuMs, 0) + firstUnit;
      overlap = `FSDP all-gathers prefetched and reduce-scatters overlapped with compute (${K.commOverlap * 100}%), first unit exposed`;
    }
  }
  if (p.tp > 1) {
    const t = p.tp;
    const perLayer = (tokens * m.hidden * d.c * 2 * (t - 1)) / t / bw(false);
    const count = (train ? 4 + (s.checkpointing === 'full' ? 2 : 0) : 2) * sp.layers * micro;
    const tpMs = perLayer * count * 1000;
    commMs += tpMs;
    exposedCommMs += tpMs;
    overlap += '; tensor-parallel all-reduces not overlapped';
  }
  let bubbleMs = 0;
  if (p.pp > 1) {
    const p2p = ((tokens * m.hidden * d.c) / bw(crossesNodes)) * 1000 * micro * (train ? 2 : 1);
    commMs += p2p;
    exposedCommMs += p2p;
    bubbleMs = (Math.max(gpuMs, cpuFloorMs) * (p.pp - 1)) / micro;
  }
  let cpuOptimizerMs = 0;
  if (train && p.cpuOffload) {
    const shard = fsdp || zero ? (p.dp === 'hsdp' ? (p.hsdpShardSize ?? n) : n) : 1;
    const transferMs = (((sp.total / shard) * (4 + 4)) / hw.hostBandwidth) * 1000; // grads down, params up
    exposedCommMs += transferMs;
    commMs += transferMs;
    // The optimizer then runs on the CPU, bound by host memory bandwidth: read param, grad, state; write param, state.
    const stateBytes = optimizerStateBytesPerParam(s.optimizer, 4, m.hidden);
    cpuOptimizerMs = (((sp.total / shard) * (4 + 4 + 2 * stateBytes + 4)) / K.cpuOptimizerBytesPerSec) * 1000;
    overlap += '; CPU offload transfers and the CPU optimizer step not overlapped';
  }
  const stepTimeMs = Math.max(gpuMs, cpuFloorMs) + exposedCommMs + bubbleMs + cpuOptimizerMs;
  const terms: [StepTime['bindingTerm'], number][] = [
    ['compute', computeMs],
    ['memory', memoryBoundMs],
    ['cpu', Math.max(cpuFloorMs > gpuMs ? cpuFloorMs : 0, cpuOptimizerMs)],
    ['communication', exposedCommMs],
    ['bubble', bubbleMs],
  ];
  const bindingTerm = terms.reduce((a, b) => (b[1] > a[1] ? b : a))[0];
  const samples = s.microBatch * micro * p.dpSize;
  const modelFlops = samples * forwardFlopsPerSample(m, s) * (train ? 3 : 1);
  return {
    stepTimeMs,
    computeMs,
    memoryBoundMs,
    cpuFloorMs,
    exposedCommMs,
    commMs,
    bubbleMs,
    bindingTerm,
    samplesPerSec: (samples * 1000) / stepTimeMs,
    tokensPerSec: (samples * tokensPerSample(m, s) * 1000) / stepTimeMs,
    mfu: modelFlops / (stepTimeMs / 1000) / (peakTflops(hw.gpu, precision) * 1e12 * world),
    overlap,
  };
}
