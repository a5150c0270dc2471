/**
 * Planner what-ifs calibrated on the run doctor watched (pure). From the probe's records it infers the run's
 * set-up (micro-batch, accumulation, sequence, precision, optimizer, GPU, ranks), calibrates a memory model on
 * the measured peak (planner/fromRun.ts) and answers: the largest batch that fits, twice the batch, bf16
 * autocast for an fp32 run, activation checkpointing when memory binds, FSDP over the run's (or the visible)
 * GPUs, and gradient accumulation to keep the effective batch when the batch must shrink. Each what-if says
 * where its numbers come from (`basis`); the ones that promise more throughput become findings (source
 * `planner`), merged into the trace's own finding when that already says the same (`gpu-underused`,
 * `no-tensor-cores`).
 */
import { type Finding, finding, gainFrom } from '../findings/finding.js';
import {
  calibratedPeakBytes,
  calibratedStepS,
  calibratePlanner,
  fitsBudget,
  largestFitting,
  type PlannerCalibration,
  perSampleModel,
  perSamplePeakBytes,
  type WhatIfBasis,
} from '../planner/fromRun.js';
import { type GpuSpec, gpuById, lookupGpu } from '../gpus/catalogue.js';
import type { ModelDescription } from '../planner/model.js';
import { budgetBytes, evaluatePlan, type Plan, type PlanRequest } from '../planner/plan.js';
import type { Checkpointing, Hardware, OptimizerKind, Parallelism, Precision, TrainingSetup } from '../planner/setup.js';
import type { TraceMetrics } from '../trace/metrics/types.js';
import { fmtBytes } from '../util/format.js';
import type { HelloRecord, ModelRecord, StepRecord } from '../run/records.js';

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
  /** What was assumed rather than read (one line each). */
  assumptions: string[];
}

export interface WhatIf {
  /** `max-batch`, `double-batch`, `amp-bf16`, `checkpointing`, `fsdp`, `grad-accum`. */
  id: string;
  /** One line with the numbers: "batch 48 fits: predicted 71.0 GiB of 80.0 GiB". */
  title: string;
  /** What it means and how it was computed. */
  text: string;
  basis: WhatIfBasis;
  /** Predicted peak allocated bytes per GPU of the what-if. */
  predictedPeakBytes: number;
  /** Bytes the allocator may use (planner rule: card minus CUDA context [and NCCL]); fits = peak x 1.02 <= budget. */
  budgetBytes: number;
  fits: boolean;
  /** Per-GPU micro-batch of the what-if. */
  batch: number;
  gradAccum: number;
  /** GPUs the what-if uses. */
  gpus: number;
  /** Samples per second relative to the run (2 = twice the throughput); null when no time estimate is possible. */
  throughputFactor: number | null;
  /** Predicted seconds per optimizer step; null without a time model. */
  stepTimeS: number | null;
  recommendation: { summary: string; code: string } | null;
}

export interface WhatIfCalibration {
  basis: WhatIfBasis;
  /** "the planner predicted 31.0 GiB, measured 30.2 GiB: +2.6%" */
  text: string;
  predictedPeakBytes: number | null;
  measuredPeakBytes: number | null;
  /** (predicted - measured) / measured of the planner at the run's set-up; null for the per-sample model. */
  errorFraction: number | null;
  method: string;
  predictedStepS: number | null;
  measuredStepS: number | null;
  stepErrorFraction: number | null;
  /** measured-per-sample: the model's two terms. */
  staticBytes: number | null;
  perSampleBytes: number | null;
}

export interface WhatIfResult {
  setup: RunSetup | null;
  calibration: WhatIfCalibration | null;
  whatIfs: WhatIf[];
  /** Why there are none (or few). */
  problem: string | null;
}

export interface WhatIfInput {
  hello: HelloRecord | null;
  model: ModelRecord | null;
  planModel: ModelDescription | null;
  /** Step records of the rank whose memory binds (rank 0 when all are alike). */
  steps: StepRecord[];
  medianStepS: number | null;
  worldSize: number | null;
  /** The captured window's metrics (precision of the matmuls, busy/idle split), when analysed. */
  metrics: TraceMetrics | null;
  outOfMemory: boolean;
}

const GiB = 1024 ** 3;
const gib = (b: number) => `${(b / GiB).toFixed(1)} GiB`;
const pct = (f: number) => `${f >= 0 ? '+' : ''}${(f * 100).toFixed(1)}%`;
const times = (f: number) => `${f.toFixed(f >= 10 ? 0 : f >= 2 ? 1 : 2)}x`;
/** Below this throughput gain a what-if is not worth a finding. */
export const WHATIF_MIN_GAIN = 1.05;
/** Largest micro-batch a what-if considers. */
const BATCH_LIMIT = 1 << 16;

const DTYPE_BYTES: Record<string, number> = {
  float32: 4,
  float: 4,
  float64: 8,
  double: 8,
  float16: 2,
  half: 2,
  bfloat16: 2,
  int8: 1,
  uint8: 1,
};
const dtypeBytes = (d: string) => DTYPE_BYTES[d] ?? (d.startsWith('float8') ? 1 : 4);

/** Parameter counts per dtype over the model's modules (trainable and total). */
function paramDtypes(model: ModelRecord): { total: Map<string, number>; trainableBytes: number; weightBytes: number } {
  const total = new Map<string, number>();
  let trainableBytes = 0;
  let weightBytes = 0;
  for (const m of model.modules) {
    const share = m.paramCount > 0 ? m.trainableParamCount / m.paramCount : 0;
    for (const [d, n] of Object.entries(m.dtypes)) {
      total.set(d, (total.get(d) ?? 0) + n);
      weightBytes += n * dtypeBytes(d);
      trainableBytes += n * share * dtypeBytes(d);
    }
  }
  return { total, trainableBytes, weightBytes };
}

function optimizerKind(model: ModelRecord | null): OptimizerKind | null {
  const o = model?.optimizer;
  if (!o) return null;
  const c = o.class.toLowerCase();
  if (/8bit/.test(c) && /adam/.test(c)) return 'adamw-8bit';
  if (c === 'adamw' || c === 'fusedadam' || c === 'adamwfp32') return 'adamw';
  if (c === 'adam') return 'adam';
  if (c === 'sgd') return o.stateBytes > 0 ? 'sgd-momentum' : 'sgd';
  if (c === 'adafactor') return 'adafactor';
  return null;
}

/** Precision from the parameters' dtypes and, for fp32 weights, the matmuls' precision in the trace. */
function inferPrecision(model: ModelRecord | null, metrics: TraceMetrics | null, notes: string[]): Precision | null {
  if (!model) return null;
  const { total } = paramDtypes(model);
  const top = [...total].sort((a, b) => b[1] - a[1])[0]?.[0];
  if (top === 'bfloat16') return 'bf16';
  if (top !== 'float32') return null; // fp16 or other weights: not a set-up the planner models
  if (!metrics) {
    notes.push('precision: fp32 weights and no profiler window to tell autocast from fp32: assumed fp32');
    return 'fp32';
  }
  const p = metrics.precision;
  const known = p.tensorCore16Ns + p.tensorCoreTf32Ns + p.tensorCore8Ns + p.fp32Ns;
  if (known > 0 && p.tensorCore16Ns > 0.5 * known) {
    const half = metrics.gemmShapes.some((g) => g.dtype !== null && /Half|float16/.test(g.dtype) && !/BFloat16|bfloat16/.test(g.dtype));
    const bf = metrics.gemmShapes.some((g) => g.dtype !== null && /BFloat16|bfloat16/.test(g.dtype));
    return half && !bf ? 'amp-fp16' : 'amp-bf16';
  }
  return 'fp32';
}

/** The run's set-up from the records; the assumptions it had to make are listed in it. */
export function inferRunSetup(input: WhatIfInput): RunSetup {
  const assumptions: string[] = [];
  const steps = [...input.steps].sort((a, b) => a.step - b.step);
  const withSize = steps.filter((s) => s.samples !== null && s.batches > 0);
  const last = withSize[withSize.length - 1];
  let microBatch: number | null = null;
  let gradAccum = 1;
  if (last && last.samples !== null) {
    gradAccum = last.batches;
    microBatch = Math.round(last.samples / last.batches);
    if (last.batches > 1 && last.samples % last.batches !== 0)
      assumptions.push(`micro-batch: ${last.samples} samples over ${last.batches} batches per step, rounded to ${microBatch}`);
  }
  const seqStep = [...steps].reverse().find((s) => typeof s.seqLen === 'number');
  const seq = seqStep?.seqLen ?? null;
  const precision = inferPrecision(input.model, input.metrics, assumptions);
  const optimizer = optimizerKind(input.model);
  const devices = input.hello?.cuda.devices ?? [];
  const cur = input.hello?.cuda.currentDevice ?? 0;
  const device = devices.find((d) => d.index === cur) ?? devices[0] ?? null;
  let gpuCatalogId: string | null = null;
  if (device) {
    gpuCatalogId = lookupGpu({ name: device.name, memoryBytes: device.totalMemoryBytes })?.id ?? null;
    if (gpuCatalogId === null)
      assumptions.push(`GPU ${device.name} is not in the planner's catalogue: memory from the device, no step-time estimate`);
  }
  const peaks = steps.map((s) => s.memory?.peakAllocatedBytes ?? 0).filter((b) => b > 0);
  const worldSize = Math.max(1, input.worldSize ?? 1);
  if (worldSize > 1) assumptions.push(`${worldSize} ranks: assumed DistributedDataParallel (one replica per GPU)`);
  return {
    microBatch,
    gradAccum,
    seq,
    precision,
    optimizer,
    optimizerClass: input.model?.optimizer?.class ?? null,
    checkpointing: 'none',
    gpuName: device?.name ?? null,
    gpuCatalogId,
    gpuMemoryBytes: device?.totalMemoryBytes ?? null,
    worldSize,
    visibleGpus: devices.length,
    measuredPeakAllocatedBytes: peaks.length ? Math.max(...peaks) : null,
    measuredStepS: input.medianStepS,
    assumptions,
  };
}

function hardwareOf(setup: RunSetup): Hardware | null {
  if (setup.gpuMemoryBytes === null) return null;
  let gpu: GpuSpec;
  if (setup.gpuCatalogId !== null) gpu = { ...gpuById(setup.gpuCatalogId), memoryBytes: setup.gpuMemoryBytes };
  else
    gpu = {
      id: 'measured',
      name: setup.gpuName ?? 'GPU',
      memoryBytes: setup.gpuMemoryBytes,
      bf16Tflops: 0,
      fp16Tflops: 0,
      tf32Tflops: 0,
      fp32Tflops: 0,
      memoryBandwidth: 0,
      intraNodeBandwidth: 0,
      source: 'memory as the device reported it',
    };
  const gpus = Math.max(setup.worldSize, setup.visibleGpus, 1);
  return {
    gpu,
    gpusPerNode: gpus,
    nodes: 1,
    intraNodeBandwidth: gpu.intraNodeBandwidth,
    interNodeBandwidth: 25e9,
    hostBandwidth: 25e9,
  };
}

/** A what-if evaluation: the plan, its calibrated peak and step time. */
interface Eval {
  plan: Plan;
  peak: number;
  fits: boolean;
  stepS: number | null;
  samplesPerS: number | null;
}

function plannerWhatIfs(setup: RunSetup, model: ModelDescription, hw: Hardware, input: WhatIfInput): WhatIfResult {
  const b0 = setup.microBatch as number;
  const seq = setup.seq as number;
  const world = setup.worldSize;
  const basePar: Parallelism = {
    dp: world > 1 ? 'ddp' : 'none',
    dpSize: world,
    tp: 1,
    pp: 1,
    reshardAfterForward: true,
    cpuOffload: false,
  };
  const baseSetup: TrainingSetup = {
    microBatch: b0,
    seq,
    precision: setup.precision as Precision,
    optimizer: setup.optimizer as OptimizerKind,
    checkpointing: 'none',
    gradAccum: setup.gradAccum,
    mode: 'train',
  };
  const measured = setup.measuredPeakAllocatedBytes;
  // Checkpointing is not visible in the records: when the planner without it is far above the measured peak and
  // with it much closer, the run most likely checkpoints.
  if (measured !== null) {
    const err = (c: Checkpointing) =>
      Math.abs(
        evaluatePlan({ model, hardware: hw, setup: { ...baseSetup, checkpointing: c }, parallelism: basePar }).memory.peakAllocatedBytes -
          measured,
      );
    if (err('full') < 0.5 * err('none')) {
      baseSetup.checkpointing = 'full';
      setup.checkpointing = 'full';
      setup.assumptions.push('activation checkpointing inferred from the measured memory (the peak matches full checkpointing)');
    }
  }
  const baseReq: PlanRequest = { model, hardware: hw, setup: baseSetup, parallelism: basePar };
  const cal = calibratePlanner(baseReq, input.outOfMemory && measured === null ? null : measured, setup.measuredStepS);
  const basis: WhatIfBasis = cal.basis;
  const at = (s: Partial<TrainingSetup>, p: Partial<Parallelism> = {}): Eval => {
    const plan = evaluatePlan({ ...baseReq, setup: { ...baseSetup, ...s }, parallelism: { ...basePar, ...p } });
    const peak = calibratedPeakBytes(cal, plan);
    const stepS = calibratedStepS(cal, plan);
    const samples = plan.setup.microBatch * plan.setup.gradAccum * plan.parallelism.dpSize;
    return {
      plan,
      peak,
      fits: fitsBudget(peak, plan.budgetBytes, plan.memory.fragmentationBytes),
      stepS,
      samplesPerS: stepS !== null && stepS > 0 ? samples / stepS : null,
    };
  };
  const base = at({});
  const factor = (e: Eval) => {
    const f = e.samplesPerS !== null && base.samplesPerS !== null && base.samplesPerS > 0 ? e.samplesPerS / base.samplesPerS : null;
    if (f === null) return null;
    // A batch-only change: the planner models compute, the trace says how much of this run's step grows with the batch
    // (a starved DataLoader gains nothing from a bigger batch), so the smaller of the two.
    const p = e.plan;
    const q = base.plan;
    const batchOnly =
      p.setup.precision === q.setup.precision &&
      p.setup.checkpointing === q.setup.checkpointing &&
      p.parallelism.dp === q.parallelism.dp &&
      p.parallelism.dpSize === q.parallelism.dpSize;
    const t = batchOnly ? traceFactor(input.metrics, p.setup.microBatch / b0) : null;
    return t === null ? f : Math.min(f, t);
  };
  const maxOf = (s: Partial<TrainingSetup>, p: Partial<Parallelism> = {}) =>
    largestFitting((b) => at({ ...s, microBatch: b }, p).fits, BATCH_LIMIT);
  const out: WhatIf[] = [];
  const estimate = basis === 'planner-calibrated' ? 'calibrated on this run' : 'planner only, not calibrated';
  const item = (id: string, title: string, text: string, e: Eval, recommendation: WhatIf['recommendation']): WhatIf => ({
    id,
    title,
    text,
    basis,
    predictedPeakBytes: Math.round(e.peak),
    budgetBytes: e.plan.budgetBytes,
    fits: e.fits,
    batch: e.plan.setup.microBatch,
    gradAccum: e.plan.setup.gradAccum,
    gpus: e.plan.parallelism.dpSize,
    throughputFactor: factor(e),
    stepTimeS: e.stepS,
    recommendation,
  });
  const thr = (e: Eval) => {
    const f = factor(e);
    return f === null ? '' : `, ${times(f)} the samples/s`;
  };

  const bMax = maxOf({});
  const maxEval = bMax > 0 ? at({ microBatch: bMax }) : null;
  if (maxEval && bMax > b0)
    out.push(
      item(
        'max-batch',
        `batch ${bMax} fits: predicted ${gib(maxEval.peak)} of ${gib(maxEval.plan.budgetBytes)}${thr(maxEval)}`,
        `The largest per-GPU micro-batch whose predicted peak (${estimate}) stays within the budget by the planner's fit rule (2% margin, plus the hole fragmentation leaves for the largest blocks); the run used ${b0}. An estimate: verify it with one run.`,
        maxEval,
        {
          summary: `Raise the per-GPU batch from ${b0} to ${bMax} (scale the learning rate, or keep the global batch with fewer accumulation steps).`,
          code: `DataLoader(dataset, batch_size=${bMax}, ...)   # was ${b0}; lr ~ base_lr * ${(bMax / b0).toFixed(2)} (linear) or sqrt for Adam`,
        },
      ),
    );
  else if (maxEval && bMax === b0)
    out.push(
      item(
        'max-batch',
        `batch ${b0} is the largest that fits: predicted ${gib(maxEval.peak)} of ${gib(maxEval.plan.budgetBytes)}`,
        `Batch ${b0 + 1} would need ${gib(at({ microBatch: b0 + 1 }).peak)} (${estimate}, with the planner's 2% margin).`,
        maxEval,
        null,
      ),
    );

  const dbl = at({ microBatch: 2 * b0 });
  out.push(
    item(
      'double-batch',
      `batch ${2 * b0}: predicted ${gib(dbl.peak)} of ${gib(dbl.plan.budgetBytes)}, ${dbl.fits ? 'fits' : 'does not fit'}${thr(dbl)}`,
      `Twice the run's per-GPU batch (${estimate}).`,
      dbl,
      dbl.fits
        ? { summary: `Double the per-GPU batch to ${2 * b0}.`, code: `DataLoader(dataset, batch_size=${2 * b0}, ...)   # was ${b0}` }
        : null,
    ),
  );

  if (setup.precision === 'fp32' && hw.gpu.bf16Tflops > 0) {
    const amp = at({ precision: 'amp-bf16' });
    const ampMax = maxOf({ precision: 'amp-bf16' });
    out.push(
      item(
        'amp-bf16',
        `bf16 autocast: predicted ${gib(amp.peak)} at batch ${b0} (now ${gib(base.peak)})${thr(amp)}; batch ${ampMax} fits`,
        `fp32 weights with the forward under torch.autocast(bfloat16): matmuls on tensor cores, bf16 activations (${estimate}; the calibration measured in fp32 is carried over).`,
        amp,
        {
          summary: 'Run the forward pass under bf16 autocast (weights and optimizer stay fp32).',
          code: 'with torch.autocast("cuda", dtype=torch.bfloat16):\n    loss = model(**batch).loss\nloss.backward()',
        },
      ),
    );
  }

  const memoryBinds = !dbl.fits || !base.fits;
  if (memoryBinds && setup.checkpointing === 'none') {
    const ckMax = maxOf({ checkpointing: 'full' });
    if (ckMax > Math.max(bMax, 0)) {
      const ck = at({ checkpointing: 'full', microBatch: ckMax });
      out.push(
        item(
          'checkpointing',
          `activation checkpointing: batch ${ckMax} fits (predicted ${gib(ck.peak)} of ${gib(ck.plan.budgetBytes)})${thr(ck)}`,
          `Every block recomputed in backward (one extra forward): activations shrink to the blocks' inputs (${estimate}).`,
          ck,
          {
            summary: `Enable activation checkpointing and raise the batch to ${ckMax}.`,
            code: 'model.gradient_checkpointing_enable()   # Hugging Face; else torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)',
          },
        ),
      );
    }
  }

  const n = world > 1 ? world : setup.visibleGpus;
  if (n > 1) {
    const fsdpPar: Partial<Parallelism> = { dp: 'fsdp', dpSize: n, reshardAfterForward: true };
    const fMax = maxOf({}, fsdpPar);
    if (fMax > 0) {
      const f = at({ microBatch: fMax }, fsdpPar);
      const ref =
        world > 1
          ? `${(fMax / Math.max(1, bMax)).toFixed(1)}x the batch (${fMax} per GPU against ${bMax} under DDP)`
          : `batch ${fMax} per GPU`;
      out.push(
        item(
          'fsdp',
          `FSDP over ${world > 1 ? 'your' : 'the'} ${n}${world > 1 ? '' : ' visible'} GPUs: ${ref}, predicted ${gib(f.peak)} of ${gib(f.plan.budgetBytes)}${thr(f)}`,
          `FSDP2 fully_shard on every block and the root, bf16 parameters, fp32 reductions: weights, gradients and optimizer state sharded ${n} ways (${estimate}; communication from the planner's link model).`,
          f,
          {
            summary: `Shard the model with FSDP2 over ${n} GPUs and use batch ${fMax} per GPU.`,
            code: [
              'from torch.distributed.fsdp import fully_shard, MixedPrecisionPolicy',
              'mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)',
              'for block in model.transformer_blocks:   # e.g. model.model.layers',
              '    fully_shard(block, mp_policy=mp)',
              'fully_shard(model, mp_policy=mp)',
              `# torchrun --nproc_per_node ${n} train.py --batch-size ${fMax}`,
            ].join('\n'),
          },
        ),
      );
    }
  }

  if ((!base.fits || input.outOfMemory) && bMax > 0 && bMax < b0 * setup.gradAccum) {
    const effective = b0 * setup.gradAccum;
    const accum = Math.ceil(effective / bMax);
    const micro = Math.floor(effective / accum);
    const g = at({ microBatch: micro, gradAccum: accum });
    out.push(
      item(
        'grad-accum',
        `batch ${micro} x ${accum} accumulation steps keeps the effective batch (${micro * accum} of ${effective}): predicted ${gib(g.peak)} of ${gib(g.plan.budgetBytes)}`,
        `The run's batch ${b0}${setup.gradAccum > 1 ? ` x ${setup.gradAccum}` : ''} is ${input.outOfMemory ? 'what ran out of memory' : 'over the budget with the 2% margin'}; a smaller micro-batch with accumulation gives the same optimizer step (${estimate}).`,
        g,
        {
          summary: `Use micro-batch ${micro} with ${accum} accumulation steps (under DDP, skip the all-reduce with no_sync() on all but the last).`,
          code: `for i, batch in enumerate(loader):   # batch_size=${micro}\n    loss = model(**batch).loss / ${accum}\n    loss.backward()\n    if (i + 1) % ${accum} == 0:\n        opt.step(); opt.zero_grad(set_to_none=True)`,
        },
      ),
    );
  }

  const calText =
    cal.basis === 'planner'
      ? `no measured peak: the planner's own prediction at the run's set-up is ${gib(cal.predictedPeakBytes)}`
      : `the planner predicted ${gib(cal.predictedPeakBytes)}, measured ${gib(cal.measuredPeakBytes)}: ${pct(cal.errorFraction)}${cal.stepErrorFraction !== null && cal.predictedStepS !== null && cal.measuredStepS !== null ? `; step time predicted ${(cal.predictedStepS * 1e3).toFixed(1)} ms, measured ${(cal.measuredStepS * 1e3).toFixed(1)} ms: ${pct(cal.stepErrorFraction)}` : ''}`;
  return { setup, calibration: calibrationOf(cal, calText), whatIfs: out, problem: null };
}

function calibrationOf(cal: PlannerCalibration, text: string): WhatIfCalibration {
  return {
    basis: cal.basis,
    text,
    predictedPeakBytes: cal.predictedPeakBytes,
    measuredPeakBytes: cal.basis === 'planner' ? null : cal.measuredPeakBytes,
    errorFraction: cal.basis === 'planner' ? null : cal.errorFraction,
    method: cal.method,
    predictedStepS: cal.predictedStepS,
    measuredStepS: cal.measuredStepS,
    stepErrorFraction: cal.stepErrorFraction,
    staticBytes: null,
    perSampleBytes: null,
  };
}

/** Throughput claims stop at this batch multiple, as analyze's `gpu-underused` does: the linear model is not measured beyond it. */
const MAX_CLAIMED_BATCH_SCALE = 4;

/**
 * Throughput factor of a k-times batch from the trace: GPU busy time grows with the batch, and so does the idle time
 * spent loading and copying the batch (DataLoader, host-to-device copies: per-sample work); the other idle time
 * (launch gaps, syncs) is per step and does not. k is capped at MAX_CLAIMED_BATCH_SCALE.
 */
function traceFactor(metrics: TraceMetrics | null, kIn: number): number | null {
  if (!metrics || !(metrics.perStep.durNs > 0)) return null;
  const k = Math.min(kIn, MAX_CLAIMED_BATCH_SCALE);
  const busy = metrics.perStep.busyNs;
  const idle = Math.max(0, metrics.perStep.durNs - busy);
  const perSampleIdle = Math.min(idle, metrics.perStep.idleByCauseNs.dataloader + metrics.perStep.idleByCauseNs.h2dCopy);
  const fixedIdle = idle - perSampleIdle;
  return (k * (busy + idle)) / (k * (busy + perSampleIdle) + fixedIdle);
}

function perSampleWhatIfs(setup: RunSetup, model: ModelRecord, hw: Hardware, input: WhatIfInput, why: string): WhatIfResult {
  const b0 = setup.microBatch as number;
  const { trainableBytes, weightBytes } = paramDtypes(model);
  const staticBytes = weightBytes + trainableBytes + (model.optimizer?.stateBytes ?? 0) + model.buffers.bytes;
  const m = perSampleModel(staticBytes, setup.measuredPeakAllocatedBytes as number, b0);
  if (!m)
    return {
      setup,
      calibration: null,
      whatIfs: [],
      problem: `the measured peak is not above the model's static memory (${fmtBytes(staticBytes)}): no per-sample model`,
    };
  const budget = budgetBytes(hw, setup.worldSize);
  const eval_ = (b: number) => {
    const peak = perSamplePeakBytes(m, b);
    return { peak, fits: fitsBudget(peak, budget) };
  };
  const note = `measured per sample: static ${gib(m.staticBytes)} (weights, gradients, optimizer state, buffers) + ${fmtBytes(m.perSampleBytes)} per sample${m.perSampleShare < 0.3 ? `; the batch-dependent part is only ${(m.perSampleShare * 100).toFixed(0)}% of the peak, so the extrapolation is rough` : ''}`;
  const mk = (id: string, title: string, text: string, b: number, accum: number, rec: WhatIf['recommendation']): WhatIf => {
    const e = eval_(b);
    return {
      id,
      title,
      text,
      basis: 'measured-per-sample',
      predictedPeakBytes: Math.round(e.peak),
      budgetBytes: budget,
      fits: e.fits,
      batch: b,
      gradAccum: accum,
      gpus: setup.worldSize,
      throughputFactor: accum === setup.gradAccum ? traceFactor(input.metrics, b / b0) : null,
      stepTimeS: null,
      recommendation: rec,
    };
  };
  const out: WhatIf[] = [];
  const bMax = largestFitting((b) => eval_(b).fits, BATCH_LIMIT);
  const thr = (b: number) => {
    const f = traceFactor(input.metrics, b / b0);
    return f === null ? '' : `, about ${times(f)} the samples/s`;
  };
  if (bMax > b0)
    out.push(
      mk(
        'max-batch',
        `batch ${bMax} fits: predicted ${gib(eval_(bMax).peak)} of ${gib(budget)}${thr(bMax)}`,
        `The largest per-GPU batch under the budget with the planner's 2% margin, from an affine model of this run (${note}). Throughput assumes GPU busy, loading and copy time grow with the batch and other idle time does not (claimed up to ${MAX_CLAIMED_BATCH_SCALE}x the batch). An estimate: verify it with one run.`,
        bMax,
        setup.gradAccum,
        {
          summary: `Raise the per-GPU batch from ${b0} to ${bMax} (scale the learning rate).`,
          code: `DataLoader(dataset, batch_size=${bMax}, ...)   # was ${b0}`,
        },
      ),
    );
  else if (bMax === b0)
    out.push(
      mk(
        'max-batch',
        `batch ${b0} is the largest that fits: predicted ${gib(eval_(b0).peak)} of ${gib(budget)}`,
        `From an affine model of this run (${note}).`,
        b0,
        setup.gradAccum,
        null,
      ),
    );
  const dbl = eval_(2 * b0);
  out.push(
    mk(
      'double-batch',
      `batch ${2 * b0}: predicted ${gib(dbl.peak)} of ${gib(budget)}, ${dbl.fits ? 'fits' : 'does not fit'}${thr(2 * b0)}`,
      `Twice the run's per-GPU batch (${note}).`,
      2 * b0,
      setup.gradAccum,
      dbl.fits
        ? { summary: `Double the per-GPU batch to ${2 * b0}.`, code: `DataLoader(dataset, batch_size=${2 * b0}, ...)   # was ${b0}` }
        : null,
    ),
  );
  if ((!eval_(b0).fits || input.outOfMemory) && bMax > 0 && bMax < b0 * setup.gradAccum) {
    const effective = b0 * setup.gradAccum;
    const accum = Math.ceil(effective / bMax);
    const micro = Math.floor(effective / accum);
    out.push(
      mk(
        'grad-accum',
        `batch ${micro} x ${accum} accumulation steps keeps the effective batch (${micro * accum} of ${effective}): predicted ${gib(eval_(micro).peak)} of ${gib(budget)}`,
        `A smaller micro-batch with accumulation gives the same optimizer step (${note}).`,
        micro,
        accum,
        {
          summary: `Use micro-batch ${micro} with ${accum} accumulation steps.`,
          code: `# batch_size=${micro}; loss = loss / ${accum}; step the optimizer every ${accum} batches`,
        },
      ),
    );
  }
  return {
    setup,
    calibration: {
      basis: 'measured-per-sample',
      text: `${why}; ${note}`,
      predictedPeakBytes: null,
      measuredPeakBytes: m.measuredPeakBytes,
      errorFraction: null,
      method: 'peak = static + per-sample bytes x micro-batch, from the one measured peak',
      predictedStepS: null,
      measuredStepS: setup.measuredStepS,
      stepErrorFraction: null,
      staticBytes: m.staticBytes,
      perSampleBytes: m.perSampleBytes,
    },
    whatIfs: out,
    problem: null,
  };
}

/** Infers the run's set-up, calibrates on it, and lists the what-ifs the data supports. */
export function buildWhatIfs(input: WhatIfInput): WhatIfResult {
  if (!input.model) return { setup: null, calibration: null, whatIfs: [], problem: 'no model summary from the probe' };
  const setup = inferRunSetup(input);
  const hw = hardwareOf(setup);
  if (!hw) return { setup, calibration: null, whatIfs: [], problem: 'no CUDA device: memory what-ifs need a GPU run' };
  if (setup.microBatch === null || setup.microBatch < 1)
    return { setup, calibration: null, whatIfs: [], problem: 'the batch size could not be told from the DataLoader batches' };
  const plannerReady = input.planModel !== null && setup.seq !== null && setup.precision !== null && setup.optimizer !== null;
  if (plannerReady) return plannerWhatIfs(setup, input.planModel as ModelDescription, hw, input);
  const why = !input.planModel
    ? 'the planner has no block layout for this model'
    : setup.seq === null
      ? 'no sequence length in the batches'
      : setup.precision === null
        ? 'parameter dtypes the planner does not model'
        : `optimizer ${setup.optimizerClass ?? 'none'} unknown to the planner`;
  if (setup.measuredPeakAllocatedBytes === null)
    return { setup, calibration: null, whatIfs: [], problem: `${why}, and no step measured its memory` };
  return perSampleWhatIfs(setup, input.model, hw, input, why);
}

/** What-ifs whose throughput gain clears WHATIF_MIN_GAIN, as findings; merged into trace findings that say the same. */
export function whatIfFindings(
  result: WhatIfResult,
  traceFindings: Finding[],
  stepS: number | null,
  /** The rank whose steps and memory the what-ifs were calibrated on. */
  rank: number,
): { findings: Finding[]; merged: Finding[] } {
  const findings: Finding[] = [];
  const merged: Finding[] = [];
  const mergeInto: Record<string, string> = {
    'max-batch': 'gpu-underused',
    'double-batch': 'gpu-underused',
    'amp-bf16': 'no-tensor-cores',
  };
  const best = new Map<string, WhatIf>();
  for (const w of result.whatIfs) {
    if (!w.fits || w.throughputFactor === null || w.throughputFactor < WHATIF_MIN_GAIN || !w.recommendation) continue;
    // one finding for the batch: the larger of max-batch and double-batch
    const key = w.id === 'double-batch' ? 'max-batch' : w.id;
    const prev = best.get(key);
    if (!prev || (w.throughputFactor ?? 0) > (prev.throughputFactor ?? 0)) best.set(key, w);
  }
  for (const [key, w] of best) {
    const factor = w.throughputFactor as number;
    const target = mergeInto[key] ? traceFindings.find((f) => f.id === mergeInto[key]) : undefined;
    const evidence = `planner what-if (${w.basis}): ${w.title}`;
    if (target) {
      merged.push({
        ...target,
        evidence: [...target.evidence, evidence],
        data: { ...target.data, whatIf: w.id, whatIfBatch: w.batch, whatIfThroughputFactor: factor },
      });
      continue;
    }
    const stepNs = (stepS ?? 0) * 1e9;
    const gain =
      stepNs > 0
        ? gainFrom(
            stepNs,
            stepNs * (1 - 1 / factor),
            `samples/s x${factor.toFixed(2)} predicted: the same samples in ${(100 / factor).toFixed(0)}% of the time (${w.basis})`,
          )
        : null;
    const rec = w.recommendation as { summary: string; code: string };
    findings.push(
      finding({
        id: `whatif-${key}`,
        title: w.title,
        ranks: [rank],
        evidence: [w.text, ...(result.calibration ? [`${w.basis}: ${result.calibration.text}`] : [])],
        data: {
          basis: w.basis,
          batch: w.batch,
          gradAccum: w.gradAccum,
          gpus: w.gpus,
          predictedPeakBytes: w.predictedPeakBytes,
          budgetBytes: w.budgetBytes,
          throughputFactor: factor,
        },
        recommendation: rec,
        estimatedGain: gain,
      }),
    );
  }
  return { findings, merged };
}
