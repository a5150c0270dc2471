/**
 * `gpuwise plan`: predict GPU memory and step time for a model and training set-up, find the largest
 * batch, search parallel layouts, and emit launch configs. Thin shell over src/planner.
 */
import { readModelConfig } from '../io/readModelConfig.js';
import { EMIT_FORMATS, type EmitFormat, emit } from '../planner/emit.js';
import { PlanError } from '../planner/errors.js';
import { findGpu, type GpuSpec } from '../planner/gpus.js';
import type { ModelDescription } from '../planner/model.js';
import { evaluatePlan, explainNoFit, maxMicroBatch, memorySavers, type Plan, type PlanRequest, searchPlans } from '../planner/plan.js';
import { type PlanJson, planJson, planSummaryJson } from '../planner/report.js';
import type {
  Checkpointing,
  DataParallel,
  Hardware,
  Mode,
  OptimizerKind,
  Parallelism,
  Precision,
  TrainingSetup,
} from '../planner/setup.js';
import { jsonReport } from './jsonReport.js';
import { parseBytes, parseFlags, UsageError } from './usage.js';

const HELP = `gpuwise plan --model PATH [options]: predict memory and step time before anything runs

Model and set-up:
  --model PATH            Hugging Face config.json (or its folder), or a gpuwise-model/1 summary
  --batch N               per-GPU micro-batch (default 1)
  --seq N                 sequence length (default min(max positions, 2048))
  --precision P           fp32 | amp-bf16 | amp-fp16 | bf16 (default amp-bf16)
  --optimizer O           adamw | adam | sgd | sgd-momentum | adafactor | adamw-8bit (default adamw)
  --checkpointing C       none | full | selective (default none)
  --grad-accum N          gradient accumulation steps (default 1)
  --mode M                train | infer (default train)
Hardware:
  --gpu NAME              h100-sxm, h100-pcie, h200, a100-80, a100-40, l40s, l4, a10g, rtx3090, rtx4090, t4, v100-32, v100-16
  --gpu-memory SIZE       explicit card memory (with --gpu-tflops, instead of --gpu)
  --gpu-tflops N          explicit dense bf16 TFLOP/s;  --gpu-bandwidth GB/s for memory bandwidth
  --gpus N                GPUs per node (default 1);  --nodes N (default 1)
  --intra-bw GB/s         per-GPU bandwidth inside a node;  --inter-bw GB/s across nodes (default 25)
  --memory-cap SIZE       budget smaller than the card (e.g. 20GiB)
Parallelism:
  --strategy S            single | ddp | fsdp | zero1 | zero2 | zero3 | hsdp | tp | pp (default ddp on >1 GPU)
  --tp N, --pp N          tensor / pipeline parallel degrees
  --no-reshard            FSDP2 reshard_after_forward=False
  --offload               optimizer state (FSDP: sharded params too) in CPU memory
Questions:
  --max-batch             the largest micro-batch that fits
  --search                rank feasible layouts by predicted throughput (--global-batch N, --top N)
  --emit FORMAT           torchrun | accelerate | deepspeed | fsdp2 | slurm (launch config for the plan)
  --script FILE           training script named in emitted configs (default train.py)
  --json                  machine-readable output (schemaVersion 1)
`;

function int(v: string | undefined, flag: string, fallback: number, min = 1): number {
  if (v === undefined) return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new UsageError(`${flag}: '${v}' is not an integer >= ${min}`);
  return n;
}

function positive(v: string | undefined, flag: string): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new UsageError(`${flag}: '${v}' is not a positive number`);
  return n;
}

function oneOf<T extends string>(v: string | undefined, flag: string, allowed: readonly T[], fallback: T): T {
  if (v === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(v)) throw new UsageError(`${flag}: '${v}' is not one of ${allowed.join(', ')}`);
  return v as T;
}

export async function run(argv: string[]): Promise<number> {
  const { values } = parseFlags({
    args: argv,
    allowPositionals: false,
    options: {
      model: { type: 'string' },
      batch: { type: 'string' },
      seq: { type: 'string' },
      precision: { type: 'string' },
      optimizer: { type: 'string' },
      checkpointing: { type: 'string' },
      'grad-accum': { type: 'string' },
      mode: { type: 'string' },
      gpu: { type: 'string' },
      'gpu-memory': { type: 'string' },
      'gpu-tflops': { type: 'string' },
      'gpu-bandwidth': { type: 'string' },
      gpus: { type: 'string' },
      nodes: { type: 'string' },
      'intra-bw': { type: 'string' },
      'inter-bw': { type: 'string' },
      'memory-cap': { type: 'string' },
      strategy: { type: 'string' },
      tp: { type: 'string' },
      pp: { type: 'string' },
      'no-reshard': { type: 'boolean' },
      offload: { type: 'boolean' },
      'max-batch': { type: 'boolean' },
      search: { type: 'boolean' },
      'global-batch': { type: 'string' },
      top: { type: 'string' },
      emit: { type: 'string' },
      script: { type: 'string' },
      json: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  if (values.model === undefined)
    throw new UsageError('--model PATH is required (a Hugging Face config.json or its folder); see gpuwise plan --help');
  const { model } = readModelConfig(values.model);

  try {
    return runPlan(model, values);
  } catch (e) {
    if (e instanceof PlanError) throw new UsageError(e.message);
    throw e;
  }
}

type Values = Record<string, string | boolean | undefined>;
const s = (v: Values, k: string) => v[k] as string | undefined;

function buildHardware(v: Values): Hardware {
  let gpu: GpuSpec;
  const mem = s(v, 'gpu-memory');
  if (mem !== undefined) {
    const tflops = positive(s(v, 'gpu-tflops'), '--gpu-tflops');
    if (tflops === undefined) throw new UsageError('--gpu-memory needs --gpu-tflops (dense bf16 TFLOP/s) too');
    const bwGb = positive(s(v, 'gpu-bandwidth'), '--gpu-bandwidth') ?? 2000;
    gpu = {
      id: 'custom',
      name: `custom GPU (${mem}, ${tflops} TFLOP/s)`,
      memoryBytes: parseBytes(mem, '--gpu-memory'),
      bf16Tflops: tflops,
      fp16Tflops: tflops,
      tf32Tflops: tflops / 2,
      fp32Tflops: tflops / 15,
      memoryBandwidth: bwGb * 1e9,
      intraNodeBandwidth: 64e9,
      source: 'given on the command line',
    };
  } else gpu = findGpu(s(v, 'gpu') ?? 'h100-sxm');
  const cap = s(v, 'memory-cap');
  return {
    gpu,
    gpusPerNode: int(s(v, 'gpus'), '--gpus', 1),
    nodes: int(s(v, 'nodes'), '--nodes', 1),
    intraNodeBandwidth: (positive(s(v, 'intra-bw'), '--intra-bw') ?? gpu.intraNodeBandwidth / 1e9) * 1e9,
    interNodeBandwidth: (positive(s(v, 'inter-bw'), '--inter-bw') ?? 25) * 1e9,
    hostBandwidth: 25e9,
    ...(cap !== undefined ? { memoryCapBytes: parseBytes(cap, '--memory-cap') } : {}),
  };
}

function buildParallelism(v: Values, hw: Hardware, model: ModelDescription): Parallelism {
  const world = hw.gpusPerNode * hw.nodes;
  const strategies = ['single', 'ddp', 'fsdp', 'zero1', 'zero2', 'zero3', 'hsdp', 'tp', 'pp'] as const;
  const strategy = oneOf(s(v, 'strategy'), '--strategy', strategies, world > 1 ? 'ddp' : 'single');
  let tp = int(s(v, 'tp'), '--tp', strategy === 'tp' ? Math.min(world, hw.gpusPerNode) : 1);
  let pp = int(s(v, 'pp'), '--pp', strategy === 'pp' ? world : 1);
  if (strategy === 'tp' && s(v, 'tp') === undefined && world > hw.gpusPerNode) pp = world / tp;
  if (world % (tp * pp) !== 0) throw new UsageError(`--tp ${tp} x --pp ${pp} does not divide ${world} GPUs`);
  if (model.heads % tp !== 0 || model.kvHeads % tp !== 0)
    throw new UsageError(`--tp ${tp} does not divide the model's ${model.kvHeads} key/value heads`);
  if (pp > model.layers) throw new UsageError(`--pp ${pp} exceeds the model's ${model.layers} layers`);
  if (tp === 0) tp = 1;
  const dpSize = world / (tp * pp);
  const map: Record<string, DataParallel> = {
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
  let dp = map[strategy] ?? 'none';
  if (dpSize === 1) dp = 'none';
  if (strategy === 'single' && world > 1)
    throw new UsageError(`--strategy single with ${world} GPUs: pick ddp, fsdp, zero1, zero2, hsdp, tp or pp`);
  if (dp === 'hsdp' && hw.nodes < 2)
    throw new UsageError('--strategy hsdp shards within a node and replicates across nodes: give --nodes 2 or more');
  if (dp === 'hsdp' && dpSize % hw.nodes !== 0)
    throw new UsageError(`--strategy hsdp: ${dpSize} data-parallel ranks do not split evenly over ${hw.nodes} nodes`);
  return {
    dp,
    dpSize,
    tp,
    pp,
    reshardAfterForward: !v['no-reshard'],
    cpuOffload: Boolean(v.offload),
    ...(dp === 'hsdp' ? { hsdpShardSize: dpSize / hw.nodes } : {}),
  };
}

function runPlan(model: ModelDescription, v: Values): number {
  const hw = buildHardware(v);
  const mode = oneOf<Mode>(s(v, 'mode'), '--mode', ['train', 'infer'], 'train');
  const setup: TrainingSetup = {
    microBatch: int(s(v, 'batch'), '--batch', 1),
    seq: int(s(v, 'seq'), '--seq', Math.min(model.maxPositions, 2048)),
    precision: oneOf<Precision>(s(v, 'precision'), '--precision', ['fp32', 'amp-bf16', 'amp-fp16', 'bf16'], 'amp-bf16'),
    optimizer: oneOf<OptimizerKind>(
      s(v, 'optimizer'),
      '--optimizer',
      ['adamw', 'adam', 'sgd', 'sgd-momentum', 'adafactor', 'adamw-8bit'],
      'adamw',
    ),
    checkpointing: oneOf<Checkpointing>(s(v, 'checkpointing'), '--checkpointing', ['none', 'full', 'selective'], 'none'),
    gradAccum: int(s(v, 'grad-accum'), '--grad-accum', 1),
    mode,
  };
  if (setup.seq > model.maxPositions && model.family !== 'llama')
    throw new UsageError(`--seq ${setup.seq} exceeds the model's ${model.maxPositions} positions`);
  if (setup.precision !== 'fp32' && setup.precision !== 'amp-fp16' && hw.gpu.bf16Tflops === 0)
    throw new UsageError(`--precision ${setup.precision}: ${hw.gpu.name} has no bf16 support; use amp-fp16 or fp32`);
  const parallelism = buildParallelism(v, hw, model);
  const req: PlanRequest = { model, setup, parallelism, hardware: hw };
  const emitFormat = s(v, 'emit') === undefined ? undefined : oneOf<EmitFormat>(s(v, 'emit'), '--emit', EMIT_FORMATS, 'torchrun');

  if (v.search) {
    const globalBatch = s(v, 'global-batch') === undefined ? undefined : int(s(v, 'global-batch'), '--global-batch', 1);
    const top = int(s(v, 'top'), '--top', 10);
    const res = searchPlans(req, { ...(globalBatch !== undefined ? { globalBatch } : {}) });
    const best = res.plans[0];
    if (!best)
      throw new PlanError(
        `no layout of ${hw.gpusPerNode * hw.nodes} x ${hw.gpu.name} fits ${model.name} at seq ${setup.seq}${globalBatch ? ` with global batch ${globalBatch}` : ''} (${res.candidates} candidates tried); add GPUs, shorten --seq or use a larger card`,
      );
    const shown = res.plans
      .slice(0, top)
      .map((p) => ({ p, savers: memorySavers({ ...req, setup: p.setup, parallelism: p.parallelism }, p) }));
    if (emitFormat) return writeEmit(emitFormat, model, best, hw, v);
    const bestSavers = shown[0]?.savers ?? [];
    const json: PlanJson = {
      ...planJson(model, hw, best, bestSavers),
      search: { candidates: res.candidates, feasible: res.feasible, plans: shown.map((x, i) => planSummaryJson(i + 1, x.p, x.savers)) },
    };
    if (v.json) process.stdout.write(jsonReport(json));
    else process.stdout.write(renderSearch(json));
    return 0;
  }

  let plan = evaluatePlan(req);
  let maxBatch: PlanJson['maxBatch'];
  if (v['max-batch']) {
    const mb = maxMicroBatch(req);
    if (mb.microBatch === 0 || !mb.plan)
      throw new PlanError(
        `nothing fits: ${explainNoFit({ ...req, setup: { ...setup, microBatch: 1 } }, evaluatePlan({ ...req, setup: { ...setup, microBatch: 1 } }))}`,
      );
    maxBatch = { microBatch: mb.microBatch, peakAllocatedBytes: mb.plan.memory.peakAllocatedBytes, budgetBytes: mb.plan.budgetBytes };
    if (s(v, 'batch') === undefined) plan = mb.plan;
  }
  if (!plan.fits) throw new PlanError(`does not fit: ${explainNoFit(req, plan)}`);
  if (emitFormat) return writeEmit(emitFormat, model, plan, hw, v);
  const savers = memorySavers({ ...req, setup: plan.setup }, plan);
  const json = planJson(model, hw, plan, savers);
  if (maxBatch) json.maxBatch = maxBatch;
  if (v.json) process.stdout.write(jsonReport(json));
  else process.stdout.write(renderPlan(json));
  return 0;
}

function writeEmit(format: EmitFormat, model: ModelDescription, plan: Plan, hw: Hardware, v: Values): number {
  process.stdout.write(emit(format, { model, plan, hardware: hw, script: s(v, 'script') ?? 'train.py' }));
  return 0;
}

const gib = (b: number) => `${(b / 1024 ** 3).toFixed(2)} GiB`;

function layout(j: Pick<PlanJson, 'parallelism' | 'setup'>): string {
  const p = j.parallelism;
  const parts = [p.dp === 'none' ? 'single replica' : `${p.dp} x${p.dpSize}`];
  if (p.tp > 1) parts.push(`tp ${p.tp}`);
  if (p.pp > 1) parts.push(`pp ${p.pp}`);
  if ((p.dp === 'fsdp' || p.dp === 'hsdp') && !p.reshardAfterForward) parts.push('no reshard');
  if (p.cpuOffload) parts.push('offload');
  parts.push(`mb ${j.setup.microBatch}`, `accum ${j.setup.gradAccum}`, `ckpt ${j.setup.checkpointing}`);
  return parts.join(', ');
}

export function renderPlan(j: PlanJson): string {
  const m = j.memory;
  const lines = [
    `${j.model.name}: ${j.model.architecture}, ${j.model.params.toLocaleString('en-US')} parameters`,
    `${j.hardware.nodes} x ${j.hardware.gpusPerNode} ${j.hardware.gpu.name}; ${j.setup.mode} ${j.setup.precision}, ${j.setup.optimizer}, seq ${j.setup.seq}; ${layout(j)}; global batch ${j.globalBatch}`,
    '',
    `Memory per GPU (binding phase: ${m.bindingPhase})`,
    ...m.components.map((c) => `  ${c.name.padEnd(22)} ${gib(c.bytes).padStart(12)}  ${c.note}`),
    `  ${'max_memory_allocated'.padEnd(22)} ${gib(m.peakAllocatedBytes).padStart(12)}  forward ${gib(m.phases.forwardBytes)}, backward ${gib(m.phases.backwardBytes)}, optimizer ${gib(m.phases.optimizerBytes)}`,
    `  ${'max_memory_reserved'.padEnd(22)} ${gib(m.peakReservedBytes).padStart(12)}`,
    `  ${'nvidia-smi'.padEnd(22)} ${gib(m.deviceUsedBytes).padStart(12)}`,
    `  ${'budget'.padEnd(22)} ${gib(m.budgetBytes).padStart(12)}  headroom ${gib(m.headroomBytes)}`,
  ];
  if (j.maxBatch)
    lines.push(
      '',
      `Largest micro-batch that fits: ${j.maxBatch.microBatch} (peak ${gib(j.maxBatch.peakAllocatedBytes ?? 0)} of ${gib(j.maxBatch.budgetBytes)})`,
    );
  const t = j.time;
  lines.push(
    '',
    `Step time ${j.stepTimeMs.toFixed(1)} ms (${t.bindingTerm}-bound): compute ${t.computeMs.toFixed(1)}, memory-bound ${t.memoryBoundMs.toFixed(1)}, cpu floor ${t.cpuFloorMs.toFixed(1)}, exposed comm ${t.exposedCommMs.toFixed(1)} of ${t.commMs.toFixed(1)}, bubble ${t.bubbleMs.toFixed(1)} ms`,
    `  ${Math.round(t.tokensPerSec).toLocaleString('en-US')} tokens/s, MFU ${(t.mfu * 100).toFixed(0)}%; overlap: ${t.overlap}`,
  );
  if (j.savers.length > 0) {
    lines.push('', 'Top memory savers');
    for (const sv of j.savers)
      lines.push(
        `  ${sv.change.padEnd(34)} -${gib(sv.savedBytes)}  step ${sv.stepTimeDeltaMs >= 0 ? '+' : ''}${sv.stepTimeDeltaMs.toFixed(1)} ms`,
      );
  }
  return `${lines.join('\n')}\n`;
}

function renderSearch(j: PlanJson): string {
  const srch = j.search;
  if (!srch) return renderPlan(j);
  const lines = [
    `${j.model.name} on ${j.hardware.nodes} x ${j.hardware.gpusPerNode} ${j.hardware.gpu.name}: ${srch.feasible} of ${srch.candidates} candidate plans fit`,
    '',
    `${'#'.padStart(3)}  ${'tokens/s'.padStart(10)}  ${'step ms'.padStart(9)}  ${'peak'.padStart(10)}  ${'binds'.padEnd(13)}  layout`,
  ];
  for (const p of srch.plans) {
    lines.push(
      `${String(p.rank).padStart(3)}  ${p.tokensPerSec.toLocaleString('en-US').padStart(10)}  ${p.stepTimeMs.toFixed(1).padStart(9)}  ${gib(p.peakAllocatedBytes).padStart(10)}  ${p.bindingTerm.padEnd(13)}  ${layout(p)}, global ${p.globalBatch}`,
    );
    if (p.savers.length > 0)
      lines.push(
        `${' '.repeat(5)}savers: ${p.savers.map((sv) => `${sv.change} -${(sv.savedBytes / 1024 ** 3).toFixed(1)} GiB`).join('; ')}`,
      );
  }
  return `${lines.join('\n')}\n`;
}
