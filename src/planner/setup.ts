/**
 * What the user asks the planner about: the training set-up, the parallel layout and the hardware.
 */
import type { GpuSpec } from './gpus.js';
import type { ModelDescription } from './model.js';

/** fp32: fp32 weights, no autocast. amp-*: fp32 weights under autocast. bf16: weights and optimizer state in bf16. */
export type Precision = 'fp32' | 'amp-bf16' | 'amp-fp16' | 'bf16';
export type OptimizerKind = 'adamw' | 'adam' | 'sgd' | 'sgd-momentum' | 'adafactor' | 'adamw-8bit';
/** full: every block recomputed (Hugging Face `gradient_checkpointing_enable`); selective: attention core only. */
export type Checkpointing = 'none' | 'full' | 'selective';
export type Mode = 'train' | 'infer';

/**
 * Data-parallel flavour. `none`: one replica (possibly with TP/PP). `fsdp`: FSDP2 `fully_shard` on every
 * block and the root, bf16 params, fp32 reductions. `zero1`/`zero2`: DeepSpeed stages 1/2 (bf16 weights,
 * fp32 master and optimizer state sharded). `hsdp`: FSDP2 sharded within a node, replicated across nodes.
 */
export type DataParallel = 'none' | 'ddp' | 'zero1' | 'zero2' | 'fsdp' | 'hsdp';

export interface TrainingSetup {
  /** Per-GPU micro-batch (sequences). */
  microBatch: number;
  /** Sequence length; an encoder-decoder's source (encoder) length. */
  seq: number;
  /** An encoder-decoder's target (decoder) length; absent: the source length. Unused by other models. */
  targetSeq?: number;
  precision: Precision;
  optimizer: OptimizerKind;
  checkpointing: Checkpointing;
  gradAccum: number;
  mode: Mode;
}

export interface Parallelism {
  dp: DataParallel;
  /** Data-parallel ranks (product of shard and replicate groups for hsdp). */
  dpSize: number;
  tp: number;
  pp: number;
  /** hsdp only: ranks in one shard group (the GPUs of a node); the rest replicate. Default: all dp ranks. */
  hsdpShardSize?: number;
  /** FSDP2 `reshard_after_forward` (ignored for other strategies). */
  reshardAfterForward: boolean;
  /** Optimizer state (and for FSDP the sharded parameters and gradients) kept in CPU memory. */
  cpuOffload: boolean;
}

export interface Hardware {
  gpu: GpuSpec;
  gpusPerNode: number;
  nodes: number;
  /** Per-GPU bandwidth to peers in the node, bytes/s (defaults to the catalogue's). */
  intraNodeBandwidth: number;
  /** Per-GPU bandwidth across nodes, bytes/s (default 25 GB/s: one 200 Gb/s NIC per GPU). */
  interNodeBandwidth: number;
  /** Host-device (PCIe) bandwidth for offload, bytes/s. */
  hostBandwidth: number;
  /** Budget for the caching allocator if smaller than the card (set_per_process_memory_fraction). */
  memoryCapBytes?: number;
}

export function worldSize(p: Parallelism): number {
  return p.dpSize * p.tp * p.pp;
}

export function isAmp(p: Precision): boolean {
  return p === 'amp-bf16' || p === 'amp-fp16';
}

/** The decoder's length of an encoder-decoder: `targetSeq`, else the source length. */
export function targetLength(s: TrainingSetup): number {
  return s.targetSeq ?? s.seq;
}

/** Tokens one sequence feeds the model: an encoder-decoder's source and target both. */
export function tokensPerSample(m: ModelDescription, s: TrainingSetup): number {
  return m.encoderDecoder ? s.seq + targetLength(s) : s.seq;
}

/** Positions the loss runs over (the logits over the vocabulary): an encoder-decoder's target positions. */
export function lossTokensPerSample(m: ModelDescription, s: TrainingSetup): number {
  return m.encoderDecoder ? targetLength(s) : s.seq;
}

/** The lengths in words: `seq 1024`, or an encoder-decoder's `source 512, target 128`. */
export function sequenceText(s: Pick<TrainingSetup, 'seq' | 'targetSeq'>): string {
  return s.targetSeq === undefined ? `seq ${s.seq}` : `source ${s.seq}, target ${s.targetSeq}`;
}
