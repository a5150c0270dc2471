/**
 * Launch configs from a plan: torchrun command, accelerate YAML, DeepSpeed JSON, FSDP2 snippet, sbatch
 * script. All state the same batch arithmetic: global batch = micro-batch x accumulation x data-parallel size.
 */
import { PlanError } from './errors.js';
import type { ModelDescription } from './model.js';
import type { Plan } from './plan.js';
import { type Hardware, sequenceText } from './setup.js';
import { toYaml } from './yaml.js';

export type EmitFormat = 'torchrun' | 'accelerate' | 'deepspeed' | 'fsdp2' | 'slurm';
export const EMIT_FORMATS: readonly EmitFormat[] = ['torchrun', 'accelerate', 'deepspeed', 'fsdp2', 'slurm'];

export interface EmitContext {
  model: ModelDescription;
  plan: Plan;
  hardware: Hardware;
  /** The user's training script (default train.py). */
  script: string;
}

const RDZV_PORT = 29500;
/** The name the accelerate config gives the DeepSpeed JSON it points to. */
const DEEPSPEED_CONFIG_FILE = 'ds_config.json';

function deepSpeedStage(dp: Plan['parallelism']['dp']): number {
  return dp === 'zero1' ? 1 : dp === 'zero2' ? 2 : dp === 'fsdp' || dp === 'hsdp' ? 3 : 0;
}

/**
 * Text from outside (a model's name from a config or the probe, a GPU name) inside a `#` comment line of a
 * shell script, YAML or Python: line breaks and other control characters would end the comment and let the
 * rest run as code, so they become spaces; the length is capped.
 */
export function commentText(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: these are the characters being removed
  const flat = text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, ' ');
  return flat.length > 200 ? `${flat.slice(0, 199)}…` : flat;
}

/** One shell word: as is when it holds only safe characters, else single-quoted (a `'` as `'\\''`). */
export function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

function batchLine(plan: Plan): string {
  const s = plan.setup;
  return `global batch ${plan.globalBatch} = micro-batch ${s.microBatch} x accumulation ${s.gradAccum} x data-parallel ${plan.parallelism.dpSize}`;
}

/** The data-parallel strategy in words, for a script that sets it up its own way. */
function strategyText(p: Plan['parallelism'], nodes: number): string {
  const over = `over ${p.dpSize} GPUs`;
  const offload = p.cpuOffload ? ', optimizer state in CPU memory' : '';
  switch (p.dp) {
    case 'none':
      return 'one replica (no data parallelism)';
    case 'ddp':
      return `DDP (DistributedDataParallel ${over})`;
    case 'zero1':
      return `ZeRO-1 (optimizer state sharded ${over}${offload}: DDP with torch.distributed.optim.ZeroRedundancyOptimizer, or DeepSpeed stage 1)`;
    case 'zero2':
      return `ZeRO-2 (optimizer state and gradients sharded ${over}${offload}: DeepSpeed stage 2)`;
    case 'fsdp':
      return `FSDP (parameters, gradients and optimizer state sharded ${over}, ${p.reshardAfterForward ? 'resharded' : 'not resharded'} after forward${offload})`;
    case 'hsdp': {
      const shard = p.hsdpShardSize ?? p.dpSize / nodes;
      return `HSDP (sharded within groups of ${shard} GPUs, replicated over ${p.dpSize / shard} groups, ${p.reshardAfterForward ? 'resharded' : 'not resharded'} after forward${offload})`;
    }
  }
}

/**
 * What the user's script must be told, as a comment: its flags are its own (issue 47: a `train.py` has no
 * `--strategy`), so the launch line passes none and this says the layout in plain words.
 */
function scriptComment(plan: Plan, nodes: number): string[] {
  const s = plan.setup;
  const p = plan.parallelism;
  const parts = [strategyText(p, nodes)];
  if (p.tp > 1) parts.push(`tensor parallel ${p.tp}`);
  if (p.pp > 1) parts.push(`pipeline parallel ${p.pp}`);
  parts.push(`micro-batch ${s.microBatch} per GPU`, `gradient accumulation ${s.gradAccum}`, s.targetSeq === undefined ? `sequence ${s.seq}` : sequenceText(s), precisionText(plan));
  parts.push(s.checkpointing === 'none' ? 'no activation checkpointing' : `${s.checkpointing} activation checkpointing`);
  return [
    `# your script's flags for: ${parts.join(', ')}`,
    "# (the launch line below passes none of them: set them with your script's own flags or config)",
  ];
}

/** FSDP2's `MixedPrecisionPolicy` parameter dtype for a precision: the fsdp2 snippet's and its figures'. */
function fsdpParamDtype(precision: Plan['setup']['precision']): string {
  return precision === 'amp-fp16' ? 'torch.float16' : precision === 'fp32' ? 'torch.float32' : 'torch.bfloat16';
}

/**
 * The precision the plan's memory and step figures assume (activations.ts runDtypes), in the words of the code that
 * gives it: every strategy but FSDP runs the run's precision as DDP does (issue 47: a ZeRO-1 ranking rested on bf16
 * weights and activations that a torchrun launch of the user's script does not give).
 */
function precisionText(plan: Plan): string {
  const { precision } = plan.setup;
  const dp = plan.parallelism.dp;
  if ((dp === 'fsdp' || dp === 'hsdp') && precision !== 'fp32')
    return `precision ${precision} (FSDP2 MixedPrecisionPolicy(param_dtype=${fsdpParamDtype(precision)}, reduce_dtype=torch.float32) over ${precision === 'bf16' ? 'bf16' : 'fp32'} sharded parameters, no autocast)`;
  switch (precision) {
    case 'fp32':
      return 'precision fp32 (fp32 weights, no autocast)';
    case 'amp-bf16':
      return 'precision amp-bf16 (fp32 weights under torch.autocast(dtype=torch.bfloat16))';
    case 'amp-fp16':
      return 'precision amp-fp16 (fp32 weights under torch.autocast(dtype=torch.float16) with a GradScaler)';
    case 'bf16':
      return 'precision bf16 (model.to(torch.bfloat16): bf16 weights, gradients and optimizer state, no fp32 master copy)';
  }
}

/**
 * DeepSpeed's precision fields for the plan's precision: ZeRO-1/2 (and stage 0, DDP) keep the run's precision, so
 * autocast over fp32 weights is `torch_autocast` (DeepSpeed 0.17 and later), not `bf16.enabled`, which would cast the
 * weights to bf16; pure bf16 keeps bf16 master weights, gradients and optimizer state (ZeRO stages 1-3 only). Stage 3
 * stands for FSDP, whose figures are FSDP2's bf16 parameters over fp32 shards: DeepSpeed's `bf16`.
 */
function deepSpeedPrecision(plan: Plan, stage: number): Record<string, unknown> {
  const precision = plan.setup.precision;
  const off = { bf16: { enabled: false }, fp16: { enabled: false } };
  if (stage === 3) return { bf16: { enabled: precision === 'amp-bf16' || precision === 'bf16' }, fp16: { enabled: precision === 'amp-fp16' } };
  if (precision === 'fp32') return off;
  if (precision === 'bf16')
    return stage === 0
      ? { ...off, bf16: { enabled: true } }
      : { ...off, bf16: { enabled: true, bf16_master_weights_and_grads: true, bf16_optimizer_states: true } };
  return { ...off, torch_autocast: { enabled: true, dtype: precision === 'amp-bf16' ? 'bfloat16' : 'float16' } };
}

function torchrunArgs(ctx: EmitContext, nodesVar?: string): string[] {
  const hw = ctx.hardware;
  const world = ctx.plan.parallelism.dpSize * ctx.plan.parallelism.tp * ctx.plan.parallelism.pp;
  const perNode = Math.min(world, hw.gpusPerNode);
  if (hw.nodes === 1) return ['torchrun', '--standalone', '--nnodes=1', `--nproc_per_node=${perNode}`];
  return [
    'torchrun',
    `--nnodes=${nodesVar ?? hw.nodes}`,
    `--nproc_per_node=${perNode}`,
    '--rdzv_backend=c10d',
    `--rdzv_endpoint=$MASTER_ADDR:${RDZV_PORT}`,
    `--rdzv_id=${nodesVar ? '$SLURM_JOB_ID' : 'gpuwise'}`,
  ];
}

export function emitTorchrun(ctx: EmitContext): string {
  const lines = [
    `# gpuwise plan: ${commentText(`${ctx.model.name} on ${ctx.hardware.nodes}x${ctx.hardware.gpusPerNode} ${ctx.hardware.gpu.name}`)}`,
    `# ${batchLine(ctx.plan)}`,
  ];
  lines.push(...scriptComment(ctx.plan, ctx.hardware.nodes));
  if (ctx.hardware.nodes > 1) lines.push('# run on every node with MASTER_ADDR set to the first node');
  lines.push([...torchrunArgs(ctx), shellWord(ctx.script)].join(' \\\n  '));
  return `${lines.join('\n')}\n`;
}

export function emitAccelerate(ctx: EmitContext): string {
  const { plan, hardware: hw } = ctx;
  const p = plan.parallelism;
  const s = plan.setup;
  if (p.tp > 1 || p.pp > 1)
    throw new PlanError(
      'the plan uses tensor or pipeline parallelism, which accelerate configs do not express: a torchrun launch does',
    );
  const world = p.dpSize;
  const type = p.dp === 'none' ? 'NO' : p.dp === 'ddp' ? 'MULTI_GPU' : p.dp === 'fsdp' || p.dp === 'hsdp' ? 'FSDP' : 'DEEPSPEED';
  const mixed =
    s.precision === 'amp-bf16' || ((p.dp === 'fsdp' || p.dp === 'hsdp') && s.precision !== 'fp32')
      ? 'bf16'
      : s.precision === 'amp-fp16'
        ? 'fp16'
        : 'no';
  // ZeRO keeps the run's precision (deepSpeedPrecision), which accelerate's mixed_precision cannot say for DeepSpeed
  // (its bf16 casts the weights): the DeepSpeed JSON of --emit deepspeed carries it, and accelerate then refuses its
  // own mixed_precision and accumulation beside the file.
  const dsFile = type === 'DEEPSPEED' && s.precision !== 'fp32';
  const cfg: Record<string, import('./yaml.js').YamlValue> = {
    compute_environment: 'LOCAL_MACHINE',
    distributed_type: type,
    ...(dsFile ? {} : { mixed_precision: mixed }),
    num_machines: hw.nodes,
    num_processes: world,
    machine_rank: 0,
    ...(dsFile ? {} : { gradient_accumulation_steps: s.gradAccum }),
    gpu_ids: 'all',
    same_network: true,
    use_cpu: false,
  };
  if (hw.nodes > 1) {
    cfg.main_process_ip = 'MASTER_ADDR';
    cfg.main_process_port = RDZV_PORT;
    cfg.rdzv_backend = 'c10d';
  } else cfg.rdzv_backend = 'static';
  if (type === 'FSDP') {
    cfg.fsdp_config = {
      fsdp_version: 2,
      fsdp_auto_wrap_policy: 'TRANSFORMER_BASED_WRAP',
      fsdp_reshard_after_forward: p.reshardAfterForward,
      fsdp_activation_checkpointing: s.checkpointing === 'full',
      fsdp_offload_params: p.cpuOffload,
      fsdp_state_dict_type: 'SHARDED_STATE_DICT',
      fsdp_cpu_ram_efficient_loading: true,
    };
  }
  if (dsFile) cfg.deepspeed_config = { deepspeed_config_file: DEEPSPEED_CONFIG_FILE, zero3_init_flag: false };
  else if (type === 'DEEPSPEED') {
    cfg.deepspeed_config = {
      zero_stage: deepSpeedStage(p.dp),
      gradient_accumulation_steps: s.gradAccum,
      offload_optimizer_device: p.cpuOffload ? 'cpu' : 'none',
      offload_param_device: 'none',
      zero3_init_flag: false,
    };
  }
  const head = [
    `# gpuwise plan: ${commentText(ctx.model.name)}; ${batchLine(plan)}`,
    `# pass --per_device_train_batch_size ${s.microBatch} (micro-batch) to the script`,
  ];
  if (s.precision === 'bf16' && type !== 'FSDP' && type !== 'DEEPSPEED')
    head.push('# precision bf16: the script casts the model with model.to(torch.bfloat16)');
  if (dsFile)
    head.push(
      `# ${DEEPSPEED_CONFIG_FILE}: the JSON of the same gpuwise plan with --emit deepspeed; it holds the ZeRO stage, the batch and the plan's ${precisionText(plan)}`,
    );
  return `${head.join('\n')}\n${toYaml(cfg)}`;
}

export function emitDeepSpeed(ctx: EmitContext): string {
  const { plan, model } = ctx;
  const p = plan.parallelism;
  const s = plan.setup;
  if (p.tp > 1 || p.pp > 1)
    throw new PlanError(
      'the plan uses tensor or pipeline parallelism; DeepSpeed configs here cover data parallelism and ZeRO only',
    );
  const stage = deepSpeedStage(p.dp);
  const h2 = model.hidden * model.hidden;
  const zero: Record<string, unknown> = {
    stage,
    overlap_comm: true,
    contiguous_gradients: true,
    reduce_bucket_size: h2,
    allgather_bucket_size: h2,
  };
  if (stage === 3) {
    zero.stage3_prefetch_bucket_size = Math.floor(0.9 * h2);
    zero.stage3_param_persistence_threshold = 10 * model.hidden;
  }
  if (p.cpuOffload && stage > 0) zero.offload_optimizer = { device: 'cpu', pin_memory: true };
  const cfg = {
    train_batch_size: plan.globalBatch,
    train_micro_batch_size_per_gpu: s.microBatch,
    gradient_accumulation_steps: s.gradAccum,
    ...deepSpeedPrecision(plan, stage),
    zero_optimization: zero,
  };
  // Only what the plan decided (issue 47): no gradient clipping, print interval or activation settings of DeepSpeed's
  // own; the plan's activation checkpointing is the script's (the model's gradient_checkpointing_enable).
  return `${JSON.stringify(cfg, null, 2)}\n`;
}

const BLOCKS: Record<ModelDescription['family'], string> = {
  gpt2: 'model.transformer.h',
  llama: 'model.model.layers',
  bert: 'model.bert.encoder.layer',
  // An encoder-decoder's units are the blocks of both stacks.
  t5: '(*model.encoder.block, *model.decoder.block)',
};

export function emitFsdp2(ctx: EmitContext): string {
  const { plan, hardware: hw, model } = ctx;
  const p = plan.parallelism;
  const s = plan.setup;
  if (p.dp !== 'fsdp' && p.dp !== 'hsdp') throw new PlanError(`the plan uses '${p.dp}', not FSDP: plan with the FSDP strategy first`);
  const hsdp = p.dp === 'hsdp';
  const mesh = hsdp
    ? `init_device_mesh("cuda", (${p.dpSize / (p.hsdpShardSize ?? p.dpSize / hw.nodes)}, ${p.hsdpShardSize ?? p.dpSize / hw.nodes}), mesh_dim_names=("dp_replicate", "dp_shard"))`
    : `init_device_mesh("cuda", (${p.dpSize},), mesh_dim_names=("dp_shard",))`;
  const param = fsdpParamDtype(s.precision);
  const offload = p.cpuOffload ? ', offload_policy=CPUOffloadPolicy()' : '';
  const lines = [
    `# gpuwise plan: FSDP2 for ${commentText(`${model.name} on ${hw.nodes}x${hw.gpusPerNode} ${hw.gpu.name}`)}`,
    `# ${batchLine(plan)}`,
    'import os',
    '',
    'import torch',
    'import torch.distributed as dist',
    'from torch.distributed.device_mesh import init_device_mesh',
    'from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, fully_shard',
    '',
    `MICRO_BATCH = ${s.microBatch}`,
    `GRAD_ACCUM = ${s.gradAccum}`,
    `GLOBAL_BATCH = ${plan.globalBatch}  # MICRO_BATCH * GRAD_ACCUM * world size`,
    `SEQ_LEN = ${s.seq}`,
    ...(s.targetSeq !== undefined ? [`TARGET_LEN = ${s.targetSeq}`] : []),
    `RESHARD_AFTER_FORWARD = ${p.reshardAfterForward ? 'True' : 'False'}`,
    '',
    '',
    'def shard(model):',
    '    dist.init_process_group("nccl")',
    '    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))',
    `    mesh = ${mesh}`,
    `    mp = MixedPrecisionPolicy(param_dtype=${param}, reduce_dtype=torch.float32)`,
  ];
  if (s.checkpointing === 'full')
    lines.push('    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})');
  lines.push(
    `    for block in ${BLOCKS[model.family]}:`,
    `        fully_shard(block, mesh=mesh, mp_policy=mp, reshard_after_forward=RESHARD_AFTER_FORWARD${offload})`,
    `    fully_shard(model, mesh=mesh, mp_policy=mp, reshard_after_forward=RESHARD_AFTER_FORWARD${offload})`,
    '    return model',
  );
  return `${lines.join('\n')}\n`;
}

export function emitSlurm(ctx: EmitContext): string {
  const { hardware: hw, plan } = ctx;
  const perNode = Math.min(plan.parallelism.dpSize * plan.parallelism.tp * plan.parallelism.pp, hw.gpusPerNode);
  const multi: EmitContext = { ...ctx, hardware: { ...hw, nodes: Math.max(hw.nodes, 2) } };
  const launcher = hw.nodes > 1 ? torchrunArgs(multi, '$SLURM_NNODES') : torchrunArgs(ctx);
  const lines = [
    '#!/bin/bash',
    '#SBATCH --job-name=gpuwise-plan',
    `#SBATCH --nodes=${hw.nodes}`,
    '#SBATCH --ntasks-per-node=1',
    `#SBATCH --gpus-per-node=${perNode}`,
    `#SBATCH --cpus-per-task=${8 * perNode}`,
    '#SBATCH --exclusive',
    `# gpuwise plan: ${commentText(ctx.model.name)}; ${batchLine(plan)}`,
    ...scriptComment(plan, hw.nodes),
    'set -euo pipefail',
    'MASTER_ADDR=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)',
    'export MASTER_ADDR',
    `srun ${[...launcher, shellWord(ctx.script)].join(' \\\n  ')}`,
  ];
  return `${lines.join('\n')}\n`;
}

export function emit(format: EmitFormat, ctx: EmitContext): string {
  switch (format) {
    case 'torchrun':
      return emitTorchrun(ctx);
    case 'accelerate':
      return emitAccelerate(ctx);
    case 'deepspeed':
      return emitDeepSpeed(ctx);
    case 'fsdp2':
      return emitFsdp2(ctx);
    case 'slurm':
      return emitSlurm(ctx);
  }
}
