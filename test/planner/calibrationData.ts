/** Reads the committed measurements (test/fixtures/planner/*.jsonl) and maps each row to a planner request. */
import { readdirSync, readFileSync } from 'node:fs';
import { describeHfConfig } from '../../src/planner/hfConfig.js';
import type { ModelDescription } from '../../src/planner/model.js';
import type { OptimizerKind, Parallelism, Precision, TrainingSetup } from '../../src/planner/setup.js';

export interface Measurement {
  model: string;
  seq?: number;
  batch: number;
  prec: string;
  opt: string;
  ckpt: boolean;
  mode?: string;
  strategy?: string;
  world?: number;
  reshard?: boolean;
  peak_alloc_step: number;
  peak_reserved: number;
  /** null where not measured (rows taken from trace metadata). */
  nvml_proc_used: number | null;
  step_s: number | null;
  ok: boolean;
  id: number | string;
  params: number;
}

const dir = new URL('../fixtures/planner/', import.meta.url);

export function loadMeasurements(): Measurement[] {
  const rows: Measurement[] = [];
  for (const f of readdirSync(dir)
    .filter((n) => n.endsWith('.jsonl'))
    .sort()) {
    for (const line of readFileSync(new URL(f, dir), 'utf8').split('\n')) {
      if (line.trim() !== '') rows.push(JSON.parse(line));
    }
  }
  return rows;
}

const configs = new Map<string, ModelDescription | null>();
/** The model description for a measured model, or null when no config.json is committed (e.g. resnet50). */
export function modelFor(name: string): ModelDescription | null {
  if (!configs.has(name)) {
    let m: ModelDescription | null = null;
    try {
      m = describeHfConfig(JSON.parse(readFileSync(new URL(`configs/${name}/config.json`, dir), 'utf8')));
    } catch {
      m = null;
    }
    configs.set(name, m);
  }
  return configs.get(name) ?? null;
}

const PRECISION: Record<string, Precision> = { fp32: 'fp32', amp_bf16: 'amp-bf16', amp_fp16: 'amp-fp16', bf16: 'bf16' };
// The protocol's `sgd` is torch.optim.SGD(momentum=0.9).
const OPTIMIZER: Record<string, OptimizerKind> = { adamw: 'adamw', sgd: 'sgd-momentum', adam: 'adam' };

export function requestFor(r: Measurement): { setup: TrainingSetup; par: Parallelism } {
  const prec = PRECISION[r.prec];
  const opt = r.mode === 'infer' ? 'adamw' : OPTIMIZER[r.opt]; // inference rows have no optimizer
  if (!prec || !opt || r.seq === undefined) throw new Error(`row ${r.id}: cannot map prec=${r.prec} opt=${r.opt}`);
  const strategy = r.strategy ?? 'single';
  const world = r.world ?? 1;
  return {
    setup: {
      microBatch: r.batch,
      seq: r.seq,
      precision: prec,
      optimizer: opt,
      checkpointing: r.ckpt ? 'full' : 'none',
      gradAccum: 1,
      mode: r.mode === 'infer' ? 'infer' : 'train',
    },
    par: {
      dp: strategy === 'ddp' ? 'ddp' : strategy === 'fsdp' ? 'fsdp' : 'none',
      dpSize: world,
      tp: 1,
      pp: 1,
      reshardAfterForward: r.reshard ?? true,
      cpuOffload: false,
    },
  };
}
