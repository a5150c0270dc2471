/**
 * The parallel layout a user asks for, checked against the hardware and the model: the rules that turn
 * `--strategy`, `--tp`, `--pp` into a Parallelism (defaults: DDP on more than one GPU; tensor parallel inside a
 * node, pipeline across nodes). Pure: problems are PlanErrors naming the flag.
 */
import { PlanError } from './errors.js';
import type { ModelDescription } from './model.js';
import type { DataParallel, Hardware, Parallelism } from './setup.js';

export const STRATEGIES = ['single', 'ddp', 'fsdp', 'zero1', 'zero2', 'zero3', 'hsdp', 'tp', 'pp'] as const;
export type Strategy = (typeof STRATEGIES)[number];

export interface LayoutChoice {
  /** undefined: ddp on more than one GPU, else single. */
  strategy?: Strategy;
  tp?: number;
  pp?: number;
  /** FSDP2 reshard_after_forward=False. */
  noReshard?: boolean;
  offload?: boolean;
}

const DATA_PARALLEL: Record<Strategy, DataParallel> = {
  single: 'none',
  ddp: 'ddp',
  fsdp: 'fsdp',
  zero3: 'fsdp',
  zero1: 'zero1',
  zero2: 'zero2',
  hsdp: 'hsdp',
  tp: 'ddp',
  pp: 'ddp',
};

/** The strategy used when none is given. */
export function defaultStrategy(hw: Hardware): Strategy {
  return hw.gpusPerNode * hw.nodes > 1 ? 'ddp' : 'single';
}

export function parallelismFor(choice: LayoutChoice, hw: Hardware, model: ModelDescription): Parallelism {
  const world = hw.gpusPerNode * hw.nodes;
  const strategy = choice.strategy ?? defaultStrategy(hw);
  const tp = choice.tp ?? (strategy === 'tp' ? Math.min(world, hw.gpusPerNode) : 1);
  let pp = choice.pp ?? (strategy === 'pp' ? world : 1);
  // Tensor parallel stays inside a node; the nodes become pipeline stages.
  if (strategy === 'tp' && choice.tp === undefined && world > hw.gpusPerNode) pp = world / tp;
  if (world % (tp * pp) !== 0) throw new PlanError(`--tp ${tp} x --pp ${pp} does not divide ${world} GPUs`);
  if (model.heads % tp !== 0 || model.kvHeads % tp !== 0) throw new PlanError(`--tp ${tp} does not divide the model's ${model.kvHeads} key/value heads`);
  if (pp > model.layers) throw new PlanError(`--pp ${pp} exceeds the model's ${model.layers} layers`);
  const dpSize = world / (tp * pp);
  const dp = dpSize === 1 ? 'none' : DATA_PARALLEL[strategy];
  if (strategy === 'single' && world > 1) throw new PlanError(`--strategy single with ${world} GPUs: pick ddp, fsdp, zero1, zero2, hsdp, tp or pp`);
  if (dp === 'hsdp' && hw.nodes < 2) throw new PlanError('--strategy hsdp shards within a node and replicates across nodes: give --nodes 2 or more');
  if (dp === 'hsdp' && dpSize % hw.nodes !== 0) throw new PlanError(`--strategy hsdp: ${dpSize} data-parallel ranks do not split evenly over ${hw.nodes} nodes`);
  return {
    dp,
    dpSize,
    tp,
    pp,
    reshardAfterForward: !choice.noReshard,
    cpuOffload: Boolean(choice.offload),
    ...(dp === 'hsdp' ? { hsdpShardSize: dpSize / hw.nodes } : {}),
  };
}
