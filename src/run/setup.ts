/**
 * The set-up of a measured run, inferred once for doctor and tune (pure): the model's bytes by dtype, the optimizer
 * kind, the precision, whether the model is compiled, whether activations are checkpointed, and the parallel layout.
 * Each inference is a value with its evidence and how it was known: `measured` (read off the records or the trace),
 * `guessed` (from indirect evidence, such as memory: reports label these as guesses), or `unknown`.
 *
 * Disagreements settled here (doctor and tune used to answer differently; docs/reference/doctor.md, "What-ifs", "The run's set-up"):
 * - optimizer kind: matched on the class name case-insensitively with its common variants (apex/DeepSpeed
 *   `FusedAdam` and `AdamWFp32` are AdamW, bitsandbytes `AdamW8bit`/`PagedAdamW8bit` are 8-bit AdamW), not on the
 *   exact torch class name: the memory the planner predicts depends on the algorithm, not on who implemented it;
 * - checkpointing: inferred from memory only when the planner with full checkpointing is within
 *   CHECKPOINT_MATCH of the measured peak and at most half as far from it as without (one rule instead of "error under
 *   half" in doctor and "within 6%" in tune), never for a compiled model (fusion lowers the peak too), and always a guess;
 * - the per-sample line's fixed part (residentBytes): weights, buffers, optimizer state and the cuBLAS workspace,
 *   without the gradients (tune's definition; doctor counted the gradients and no workspace). It must be a lower bound
 *   of what is resident at the peak, or the line promises batches that do not fit. Measured: on the planner's H200
 *   ResNet-50 series (batch 32 predicting 128 and 256) this errs +0.9% to +4.7% (over, the safe side), where counting
 *   the gradients gave 0.0% to +2.7%; but on GPT-2 fp32 counting them predicts batch 15 fits where 12 is the limit
 *   (test/tune/search.test.ts, "never predicts more than fits"): a transformer's peak comes before its gradients.
 */
import { CALIBRATION } from '../planner/calibration.js';
import type { Checkpointing, OptimizerKind, Precision } from '../planner/setup.js';
import type { TraceMetrics } from '../trace/metrics/types.js';
import { isInductorKernel } from '../trace/kernelClass.js';
import { dtypeBytes, halfDtypeOf } from '../util/dtype.js';
import type { ModelRecord } from './records.js';
import { fmtGiB } from '../util/format.js';

export type Known = 'measured' | 'guessed' | 'unknown';

export interface Inferred<T> {
  value: T;
  how: Known;
  /** What it was read or guessed from, in words. */
  evidence: string;
}

export interface ModelBytes {
  /** Parameter bytes (every dtype at its size), buffers apart. */
  weightBytes: number;
  /** Bytes of the trainable parameters (their gradients take as much). */
  trainableBytes: number;
  buffersBytes: number;
  optimizerStateBytes: number;
  /** Parameter counts by dtype. */
  paramsByDtype: Map<string, number>;
  /** The dtype holding most parameters (`float32`, `bfloat16`, ...). */
  mainDtype: string | null;
}

export function modelBytes(model: ModelRecord): ModelBytes {
  const paramsByDtype = new Map<string, number>();
  let weightBytes = 0;
  let trainableBytes = 0;
  for (const m of model.modules) {
    const share = m.paramCount > 0 ? m.trainableParamCount / m.paramCount : 0;
    for (const [d, n] of Object.entries(m.dtypes)) {
      paramsByDtype.set(d, (paramsByDtype.get(d) ?? 0) + n);
      weightBytes += n * dtypeBytes(d);
      trainableBytes += n * share * dtypeBytes(d);
    }
  }
  let mainDtype: string | null = null;
  let most = -1;
  for (const [d, n] of paramsByDtype) if (n > most) [mainDtype, most] = [d, n];
  return {
    weightBytes,
    trainableBytes,
    buffersBytes: model.buffers.bytes,
    optimizerStateBytes: model.optimizer?.stateBytes ?? 0,
    paramsByDtype,
    mainDtype,
  };
}

/**
 * The fixed part of the per-sample memory line: what is surely resident at the peak whatever the batch (weights,
 * buffers, optimizer state, the cuBLAS workspace); gradients are left out (see the module comment for the measurements).
 */
export function residentBytes(b: Pick<ModelBytes, 'weightBytes' | 'buffersBytes' | 'optimizerStateBytes'>): number {
  return b.weightBytes + b.buffersBytes + b.optimizerStateBytes + CALIBRATION.cublasWorkspaceBytes;
}

/** The optimizer's kind from its class name (case-insensitive, common variants), null when the planner has no model of it. */
export function inferOptimizer(className: string | null, stateBytes: number): Inferred<OptimizerKind | null> {
  if (className === null) return { value: null, how: 'unknown', evidence: 'no optimizer seen' };
  const c = className.toLowerCase();
  const seen = `optimizer class ${className}`;
  let value: OptimizerKind | null = null;
  if (/8bit/.test(c) && /adam/.test(c)) value = 'adamw-8bit';
  else if (/^(fused|paged|deepspeedcpu|cpu)?adamw?(fp32)?$/.test(c))
    value = c === 'adam' ? 'adam' : 'adamw'; // FusedAdam (apex, DeepSpeed) applies decoupled weight decay by default
  else if (/^(fused)?sgd$/.test(c)) value = stateBytes > 0 ? 'sgd-momentum' : 'sgd';
  else if (c === 'adafactor') value = 'adafactor';
  return value === null
    ? { value: null, how: 'unknown', evidence: `${seen}: not a kind the planner models` }
    : { value, how: 'measured', evidence: stateBytes > 0 || value !== 'sgd' ? seen : `${seen} without state (no momentum)` };
}

/** The autocast precision a 16-bit dtype's name asks for (util/dtype.ts), null for any other. */
function autocastOf(dtype: string): 'amp-bf16' | 'amp-fp16' | null {
  const h = halfDtypeOf(dtype);
  return h === 'bf16' ? 'amp-bf16' : h === 'fp16' ? 'amp-fp16' : null;
}

/** What the run was launched with, beside its records: the facts its asked-for precision is read from. */
export interface LaunchFacts {
  /** The command doctor ran: a launcher and its flags, the script and its arguments. */
  command: readonly string[];
  /** Each training process's own sys.argv (the script and its arguments, under a launcher too). */
  argv: readonly (readonly string[])[];
  /** The probe's `acceleratePrecision`: the mixed precision accelerate's own state holds in the training process. */
  acceleratePrecision: string | null;
}

/** accelerate's mixed-precision names (its launcher flag, config file, Accelerator argument, state). */
const ACCELERATE_PRECISION: Record<string, Precision> = { no: 'fp32', fp16: 'amp-fp16', bf16: 'amp-bf16', fp8: 'amp-bf16' };

/** Lightning's `precision=` values (2.x names and the 1.x ones they replaced); 16-bit weights without autocast ("16-true") the planner does not model. */
const LIGHTNING_PRECISION: Record<string, Precision> = {
  'bf16-mixed': 'amp-bf16',
  bf16: 'amp-bf16',
  '16-mixed': 'amp-fp16',
  '16': 'amp-fp16',
  'bf16-true': 'bf16',
  '32-true': 'fp32',
  '32': 'fp32',
};

const TRUE_WORDS = new Set(['true', '1', 'yes']);
const FALSE_WORDS = new Set(['false', '0', 'no']);

/**
 * The precision a list of arguments asks for: accelerate's `--mixed_precision X` (also `--mixed-precision`, a
 * script's own flag of that name), Lightning's `--precision X` (`--trainer.precision`), Hugging Face
 * TrainingArguments' `--bf16`/`--fp16` (bare or `True`), nanoGPT's `--dtype bfloat16|float16`; each as `--flag=X` too.
 * The first flag that names a precision wins; null when none does.
 */
export function precisionFlag(args: readonly string[]): { value: Precision; flag: string } | null {
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? '';
    const m = /^--([\w.-]+?)(?:=(.*))?$/.exec(arg);
    if (!m) continue;
    const name = (m[1] ?? '').replace(/-/g, '_');
    const next = args[i + 1];
    const value = (m[2] ?? (next !== undefined && !next.startsWith('-') ? next : '')).toLowerCase();
    const shown = m[2] !== undefined || value === '' ? arg : `${arg} ${next}`;
    let p: Precision | undefined;
    if (name === 'mixed_precision') p = ACCELERATE_PRECISION[value];
    else if (name === 'precision' || name === 'trainer.precision') p = LIGHTNING_PRECISION[value];
    else if (name === 'dtype') p = autocastOf(value) ?? undefined;
    else if (name === 'bf16' || name === 'fp16') {
      // a bare switch, or one given a truth value (HfArgumentParser takes `--bf16 True`)
      const word = m[2] !== undefined ? value : TRUE_WORDS.has(value) || FALSE_WORDS.has(value) ? value : '';
      if (FALSE_WORDS.has(word)) continue;
      return { value: name === 'bf16' ? 'amp-bf16' : 'amp-fp16', flag: m[2] === undefined && word !== '' ? `${arg} ${next}` : arg };
    }
    if (p) return { value: p, flag: shown };
  }
  return null;
}

/**
 * The precision the run asked for, read off how it was launched (not the kernels): accelerate's own state in the
 * training process (measured: accelerate applies it to the model it prepared), else a flag of the command or of a
 * training process's arguments (guessed: what a script does with its own flag is not seen). Unknown without either.
 */
export function askedPrecision(launch: LaunchFacts): Inferred<Precision | null> {
  const acc = launch.acceleratePrecision;
  const fromAcc = acc !== null ? ACCELERATE_PRECISION[acc.toLowerCase()] : undefined;
  if (acc !== null && fromAcc)
    return { value: fromAcc, how: 'measured', evidence: `accelerate was set up with mixed_precision ${acc} (its state in the training process)` };
  for (const args of [launch.command, ...launch.argv]) {
    const f = precisionFlag(args);
    if (f) return { value: f.value, how: 'guessed', evidence: `the command asks for it: ${f.flag}` };
  }
  return { value: null, how: 'unknown', evidence: 'no precision flag in the command and no accelerate state' };
}

const isHalf = (p: Precision | null): boolean => p === 'amp-bf16' || p === 'amp-fp16' || p === 'bf16';

/**
 * Precision, from the strongest evidence down: the parameters' dtypes; for fp32 weights the autocast dtype the probe
 * saw at the model's forward (protocol 2); the matmuls' precision in the profiled window; what the launch asked for
 * (`asked`: askedPrecision); else a guess. A run that asks for a half precision whose window still runs its matmuls
 * in fp32 is fp32, measured, and its evidence says that autocast does not reach them. `candidates`: the precisions
 * the evidence leaves open, the value being the first.
 */
export function inferPrecision(
  bytes: Pick<ModelBytes, 'mainDtype'>,
  autocastDtype: string | null | undefined,
  metrics: TraceMetrics | null,
  asked: Inferred<Precision | null> | null = null,
): Inferred<Precision | null> & { candidates: Precision[] } {
  const top = bytes.mainDtype;
  if (top === 'bfloat16') return { value: 'bf16', how: 'measured', evidence: 'parameters in bfloat16', candidates: ['bf16'] };
  if (top !== 'float32')
    return { value: null, how: 'unknown', evidence: `parameters in ${top ?? 'no dtype'}: not a set-up the planner models`, candidates: [] };
  if (autocastDtype) {
    const p: Precision | null = autocastOf(autocastDtype);
    if (p) return { value: p, how: 'measured', evidence: `fp32 parameters, forward under autocast(${autocastDtype})`, candidates: [p] };
  }
  const askedValue = asked?.value ?? null;
  if (!metrics) {
    if (asked && askedValue !== null)
      return {
        value: askedValue,
        how: asked.how,
        evidence: `fp32 parameters, no profiler window; ${asked.evidence}`,
        candidates: askedValue === 'fp32' ? ['fp32'] : [askedValue, 'fp32'],
      };
    return {
      value: 'fp32',
      how: 'guessed',
      evidence: `fp32 parameters and no profiler window${autocastDtype === '' ? '; autocast off at the model\'s forward, and no launcher or framework flag for mixed precision' : ' or autocast record'} to tell autocast from fp32: assumed fp32`,
      candidates: ['fp32', 'amp-bf16'],
    };
  }
  const pr = metrics.precision;
  const known = pr.tensorCore16Ns + pr.tensorCoreTf32Ns + pr.tensorCore8Ns + pr.fp32Ns;
  if (known > 0 && pr.tensorCore16Ns > 0.5 * known) {
    const half = metrics.gemmShapes.some((g) => halfDtypeOf(g.dtype) === 'fp16');
    const bf = metrics.gemmShapes.some((g) => halfDtypeOf(g.dtype) === 'bf16');
    const p: Precision = half && !bf ? 'amp-fp16' : 'amp-bf16';
    return {
      value: p,
      how: 'measured',
      evidence: `fp32 parameters, ${Math.round((pr.tensorCore16Ns / known) * 100)}% of matmul time on 16-bit tensor cores in the window: autocast`,
      candidates: [p],
    };
  }
  if (asked && isHalf(askedValue))
    return {
      value: 'fp32',
      how: 'measured',
      evidence: `${asked.evidence}, yet the window's matmuls ran in fp32/TF32: autocast does not reach them`,
      candidates: ['fp32'],
    };
  return { value: 'fp32', how: 'measured', evidence: 'fp32 parameters and fp32 matmuls in the window', candidates: ['fp32'] };
}


/** A compiled model: the probe's `compiled` field (protocol 2), else Inductor's Triton kernels in the window. */
export function inferCompiled(model: Pick<ModelRecord, 'compiled' | 'compiledEvidence'> | null, metrics: TraceMetrics | null): Inferred<boolean | null> {
  if (model?.compiled === true)
    return { value: true, how: 'measured', evidence: `the probe saw a compiled model (${model.compiledEvidence ?? 'torch.compile'})` };
  const triton = (metrics?.topKernels ?? []).find((k) => isInductorKernel(k.name));
  if (triton) return { value: true, how: 'measured', evidence: `Inductor-generated Triton kernels in the window (${triton.name})` };
  if (model?.compiled === false) return { value: false, how: 'measured', evidence: 'the probe saw no torch.compile' };
  return { value: null, how: 'unknown', evidence: metrics ? 'no compiled kernels in the window' : 'not told: the run\'s records do not say, and no profiled window shows its kernels' };
}

/** The planner with full checkpointing must come this close to the measured peak for checkpointing to be guessed. */
export const CHECKPOINT_MATCH = 0.1;

/**
 * Checkpointing from memory (the records do not show it): guessed `full` when the planner with full checkpointing is
 * within CHECKPOINT_MATCH of the measured peak and at most half as far from it as the planner without; never for a
 * compiled model, whose fused kernels lower the peak as well. `predict(c)`: the planner's peak with checkpointing c.
 */
export function inferCheckpointing(
  measuredPeakBytes: number | null,
  predict: (c: Checkpointing) => number,
  compiled: Inferred<boolean | null>,
): Inferred<Checkpointing> {
  if (measuredPeakBytes === null || !(measuredPeakBytes > 0))
    return { value: 'none', how: 'unknown', evidence: 'no measured peak: assumed no checkpointing' };
  const gib = (b: number) => fmtGiB(b);
  const none = predict('none');
  const full = predict('full');
  const errNone = Math.abs(none - measuredPeakBytes);
  const errFull = Math.abs(full - measuredPeakBytes);
  const figures = `measured peak ${gib(measuredPeakBytes)}; the planner predicts ${gib(none)} without checkpointing, ${gib(full)} with full checkpointing`;
  if (compiled.value === true)
    return { value: 'none', how: 'guessed', evidence: `${figures}; the model is compiled (fusion lowers the peak), so checkpointing is not inferred from memory` };
  if (errFull <= CHECKPOINT_MATCH * measuredPeakBytes && errFull <= 0.5 * errNone)
    return { value: 'full', how: 'guessed', evidence: `${figures}: the peak matches full checkpointing` };
  return { value: 'none', how: 'guessed', evidence: `${figures}: no sign of checkpointing in memory` };
}

export type ParallelLayout = 'single' | 'dataparallel' | 'ddp' | 'fsdp';

/** The parallel layout: DataParallel and DDP seen in the window are measured; several ranks without a window are a guess. */
export function inferParallelism(worldSize: number, metrics: TraceMetrics | null): Inferred<ParallelLayout> {
  const d = metrics?.structure;
  if (d?.dataParallel) return { value: 'dataparallel', how: 'measured', evidence: `DataParallel over ${d.dataParallelDevices} GPUs in the window` };
  if (worldSize > 1 && d?.ddp) return { value: 'ddp', how: 'measured', evidence: `${worldSize} ranks, DistributedDataParallel forwards in the window` };
  if (worldSize > 1)
    return { value: 'ddp', how: 'guessed', evidence: `${worldSize} ranks: assumed DistributedDataParallel (one replica per GPU)` };
  return { value: 'single', how: 'measured', evidence: 'one process' };
}

/** One inference about the run's set-up, for the report: the value, how it is known, and the evidence. */
export interface SetupInference {
  name: 'precision' | 'optimizer' | 'compiled' | 'checkpointing' | 'parallelism';
  value: string | boolean | null;
  how: Known;
  evidence: string;
}

/** The run's set-up as doctor inferred it; null where the records do not tell. */
export interface RunSetup {
  /** Samples per optimizer step / DataLoader batches per step. */
  microBatch: number | null;
  /** DataLoader batches per optimizer step. */
  gradAccum: number;
  seq: number | null;
  precision: Precision | null;
  optimizer: OptimizerKind | null;
  optimizerClass: string | null;
  checkpointing: Checkpointing;
  gpuName: string | null;
  /** Catalogue id of the GPU (gpus.ts), null when not in the catalogue (memory from the device, no time model). */
  gpuCatalogId: string | null;
  gpuMemoryBytes: number | null;
  worldSize: number;
  /** CUDA devices the rank could see. */
  visibleGpus: number;
  /** Largest peak allocated bytes a step reported (peaks are since the process started). */
  measuredPeakAllocatedBytes: number | null;
  /** Median step time (the report's statistics). */
  measuredStepS: number | null;
  /** What was assumed rather than read (one line each): the guessed inferences and the rest. */
  assumptions: string[];
  /** Every set-up inference with how it is known (measured, guessed, unknown) and its evidence. Added in 0.2. */
  inferences?: SetupInference[];
  /** The model is compiled (torch.compile): known from the probe or Inductor kernels; null when not told. Added in 0.2. */
  compiled?: boolean | null;
}
