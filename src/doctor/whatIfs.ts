/**
 * What-ifs calibrated on the run doctor watched (pure). On the run's set-up, inferred once by the run stage
 * (runSetup.ts: micro-batch, accumulation, sequence, precision, optimizer, compiled, checkpointing, parallel layout,
 * GPU), it builds a MemoryModel of the run (run/memoryModel.ts: the planner calibrated on the measured peak, or the
 * per-sample line of any module), and evaluates the what-if specs against it: the largest batch that fits and twice
 * the batch (facts), a bigger batch worth weighing (advice: the batch that reaches the claimed gain, with what else
 * changes), bf16 autocast for an fp32 run, activation checkpointing when memory binds, FSDP over the run's (or the
 * visible) GPUs, and gradient accumulation to keep the effective batch when the batch must shrink. Each what-if says
 * where its numbers come from (`basis`); the ones that promise more throughput become findings (source `planner`),
 * merged into the trace's own finding when that already says the same (`gpu-underused`, `no-tensor-cores`).
 */
import { autocastLines } from '../advice/snippets.js';
import { adviceFinding, type Finding } from '../findings/finding.js';
import type { Fix } from '../pace/fix.js';
import { batchedStepOf, batchThroughputFactor, gainOf } from '../pace/gain.js';
import { measuredStep, type Pipeline } from '../pace/pipeline.js';
import {
  calibratedPeakBytes,
  calibratedStepS,
  calibratePlanner,
  fitsBudget,
  type PlannerCalibration,
  type WhatIfBasis,
} from '../planner/fromRun.js';
import type { ModelDescription } from '../planner/model.js';
import { budgetBytes, evaluatePlan, ofBudgetText, type Plan, type PlanRequest } from '../planner/plan.js';
import type { Hardware, Parallelism, TrainingSetup } from '../planner/setup.js';
import { largestBatch, type MemoryModel, perSampleLineFrom, perSampleMemoryModel, plannerMemoryModel } from '../run/memoryModel.js';
import type { ModelRecord } from '../run/records.js';
import { modelBytes, residentBytes, type RunSetup } from '../run/setup.js';
import { fmtBytes, fmtGiB } from '../util/format.js';
import { plannerRequestOf } from './runSetup.js';

export interface WhatIf {
  /** `max-batch` and `double-batch` (facts), `bigger-batch` (advice), `amp-bf16`, `checkpointing`, `fsdp`, `grad-accum`. */
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

/** What the what-ifs are evaluated on: the run's set-up and hardware (the run stage's, runSetup.ts), its model, its pipeline. */
interface WhatIfInput {
  /** The run's set-up; null without the probe's model record. */
  setup: RunSetup | null;
  hardware: Hardware | null;
  model: ModelRecord | null;
  planModel: ModelDescription | null;
  /** The rank's pipeline (pace/): how a bigger batch changes its step; null without step times. */
  pace: Pipeline | null;
  outOfMemory: boolean;
}

const gib = (b: number) => fmtGiB(b);
const pct = (f: number) => `${f >= 0 ? '+' : ''}${(f * 100).toFixed(1)}%`;
const times = (f: number) => `${f.toFixed(f >= 10 ? 0 : f >= 2 ? 1 : 2)}x`;
/** Below this throughput gain a what-if is not worth a finding. */
const WHATIF_MIN_GAIN = 1.05;
/** The bigger batch named is the smallest of 2x and 4x the run's batch that reaches this share of the best claimed gain. */
const BIGGER_BATCH_SHARE_OF_GAIN = 0.9;

/** What the batch what-ifs need from a memory model and a throughput estimate, whatever their basis. */
interface BatchContext {
  setup: RunSetup;
  /** The run's per-GPU micro-batch. */
  b0: number;
  memory: MemoryModel;
  /** Samples/s relative to the run at micro-batch b (the run's accumulation); null without an estimate. */
  factor(batch: number): number | null;
  /** Predicted seconds per optimizer step at micro-batch b; null without a time model. */
  stepS(batch: number): number | null;
  /** Where the numbers come from, for the texts ("calibrated on this run", "measured per sample: ..."). */
  estimate: string;
  outOfMemory: boolean;
}

function whatIfAt(
  ctx: BatchContext,
  id: string,
  title: string,
  text: string,
  batch: number,
  gradAccum: number,
  recommendation: WhatIf['recommendation'],
): WhatIf {
  const peak = ctx.memory.peak(batch, gradAccum);
  return {
    id,
    title,
    text,
    basis: ctx.memory.basis,
    predictedPeakBytes: Math.round(peak),
    budgetBytes: ctx.memory.budgetBytes,
    fits: ctx.memory.fits(batch, gradAccum),
    batch,
    gradAccum,
    gpus: ctx.setup.worldSize,
    throughputFactor: gradAccum === ctx.setup.gradAccum ? ctx.factor(batch) : null,
    stepTimeS: gradAccum === ctx.setup.gradAccum ? ctx.stepS(batch) : null,
    recommendation,
  };
}

/**
 * The batch what-ifs, the same specs for every memory model: the largest batch that fits and twice the batch (facts,
 * no advice), a bigger batch worth weighing (advice), and gradient accumulation when the run's batch does not fit.
 * The bigger batch is the smallest of 2x and 4x the run's that reaches BIGGER_BATCH_SHARE_OF_GAIN of the best claimed
 * gain (the estimate does not grow past MAX_CLAIMED_BATCH_SCALE x the batch, so a larger one claims nothing more),
 * and says what else changes: the learning rate, the steps per epoch, the optimisation.
 */
function batchWhatIfs(ctx: BatchContext): WhatIf[] {
  const { b0, setup, memory } = ctx;
  const out: WhatIf[] = [];
  const bMax = largestBatch(memory);
  const thr = (b: number) => {
    const f = ctx.factor(b);
    return f === null ? '' : `, about ${times(f)} the samples/s`;
  };
  if (bMax > b0)
    out.push(
      whatIfAt(
        ctx,
        'max-batch',
        `batch ${bMax} is the largest that fits: predicted ${gib(memory.peak(bMax))} ${ofBudgetText(memory.budgetBytes)}`,
        `The largest per-GPU micro-batch whose predicted peak stays within the budget by the planner's fit rule (2% margin${memory.basis === 'measured-per-sample' ? '' : ', plus the hole fragmentation leaves for the largest blocks'}); the run used ${b0} (${ctx.estimate}). A fact about memory, not advice: throughput estimates stop at ${MAX_CLAIMED_BATCH_SCALE}x the batch.`,
        bMax,
        setup.gradAccum,
        null,
      ),
    );
  else if (bMax === b0)
    out.push(
      whatIfAt(
        ctx,
        'max-batch',
        `batch ${b0} is the largest that fits: predicted ${gib(memory.peak(b0))} ${ofBudgetText(memory.budgetBytes)}`,
        `Batch ${b0 + 1} would need ${gib(memory.peak(b0 + 1))} (${ctx.estimate}, with the planner's 2% margin).`,
        b0,
        setup.gradAccum,
        null,
      ),
    );
  out.push(
    whatIfAt(
      ctx,
      'double-batch',
      `batch ${2 * b0}: predicted ${gib(memory.peak(2 * b0))} ${ofBudgetText(memory.budgetBytes)}, ${memory.fits(2 * b0) ? 'fits' : 'does not fit'}${thr(2 * b0)}`,
      `Twice the run's per-GPU batch (${ctx.estimate}).`,
      2 * b0,
      setup.gradAccum,
      null,
    ),
  );

  const candidates = [2 * b0, MAX_CLAIMED_BATCH_SCALE * b0].filter((b) => b <= bMax);
  if (candidates.length === 0 && bMax > b0) candidates.push(bMax);
  const scored = candidates.map((b) => ({ b, f: ctx.factor(b) })).filter((c): c is { b: number; f: number } => c.f !== null);
  const best = Math.max(0, ...scored.map((c) => c.f));
  const pick = scored.find((c) => c.f - 1 >= BIGGER_BATCH_SHARE_OF_GAIN * (best - 1));
  if (pick && pick.f >= WHATIF_MIN_GAIN) {
    const b = pick.b;
    const k = b / b0;
    const kText = Number.isInteger(k) ? `${k}x` : `${k.toFixed(1)}x`;
    // With accumulation, the same optimizer step is kept by accumulating fewer micro-batches: training is unchanged.
    const sameGlobal = setup.gradAccum > 1 && Number.isInteger(k) && setup.gradAccum % k === 0;
    const changes = sameGlobal
      ? `With ${setup.gradAccum / k} accumulation steps instead of ${setup.gradAccum} the optimizer step stays the same (${b0 * setup.gradAccum} samples): nothing else changes.`
      : `What else changes: the effective batch grows ${kText}, so scale the learning rate (${kText} for SGD by the linear rule, about ${Math.sqrt(k).toFixed(1)}x for Adam-type optimizers) and revisit its warm-up; an epoch takes ${kText} fewer steps; and a larger batch can change what the model converges to: check the loss curve against the current run.`;
    out.push(
      whatIfAt(
        ctx,
        'bigger-batch',
        `batch ${b} (${kText} the run's ${b0}): predicted ${gib(memory.peak(b))} ${ofBudgetText(memory.budgetBytes)}${thr(b)}`,
        `A bigger per-GPU batch fills the GPU better: the GPU's per-sample work and per-sample loading and copies grow with the batch, the other idle time and the optimizer's update do not (${ctx.estimate}). ${b} is the smallest of 2x and ${MAX_CLAIMED_BATCH_SCALE}x the batch that reaches ${times(pick.f)}; the largest that fits is ${bMax}, but the estimate claims nothing more past ${MAX_CLAIMED_BATCH_SCALE}x. ${changes} Advice to weigh, an estimate: verify it with one run.`,
        b,
        setup.gradAccum,
        sameGlobal
          ? {
              summary: `Use micro-batch ${b} with ${setup.gradAccum / k} accumulation steps (was ${b0} x ${setup.gradAccum}): the same optimizer step, fewer, fuller micro-steps.`,
              code: `DataLoader(dataset, batch_size=${b}, ...)   # was ${b0}; accumulate ${setup.gradAccum / k} micro-batches instead of ${setup.gradAccum}`,
            }
          : {
              summary: `Weigh raising the per-GPU batch from ${b0} to ${b} (${kText}): scale the learning rate with it and expect ${kText} fewer steps per epoch; keep it only if the loss curve holds.`,
              code: `DataLoader(dataset, batch_size=${b}, ...)   # was ${b0}\nlr = base_lr * ${k}   # linear rule (SGD); about base_lr * ${Math.sqrt(k).toFixed(2)} for Adam-type`,
            },
      ),
    );
  }

  if ((!memory.fits(b0) || ctx.outOfMemory) && bMax > 0 && bMax < b0 * setup.gradAccum) {
    const effective = b0 * setup.gradAccum;
    const accum = Math.ceil(effective / bMax);
    const micro = Math.floor(effective / accum);
    out.push(
      whatIfAt(
        ctx,
        'grad-accum',
        `batch ${micro} x ${accum} accumulation steps keeps the effective batch (${micro * accum} of ${effective}): predicted ${gib(memory.peak(micro, accum))} ${ofBudgetText(memory.budgetBytes)}`,
        `The run's batch ${b0}${setup.gradAccum > 1 ? ` x ${setup.gradAccum}` : ''} is ${ctx.outOfMemory ? 'what ran out of memory' : 'over the budget with the 2% margin'}; a smaller micro-batch with accumulation gives the same optimizer step (${ctx.estimate}).`,
        micro,
        accum,
        {
          summary: `Use micro-batch ${micro} with ${accum} accumulation steps (under DDP, skip the all-reduce with no_sync() on all but the last).`,
          code: `for i, batch in enumerate(loader):   # batch_size=${micro}\n    loss = model(**batch).loss / ${accum}\n    loss.backward()\n    if (i + 1) % ${accum} == 0:\n        opt.step(); opt.zero_grad(set_to_none=True)`,
        },
      ),
    );
  }
  return out;
}

/** A planner evaluation of a what-if set-up: the plan, its calibrated peak and step time. */
interface Eval {
  plan: Plan;
  peak: number;
  fits: boolean;
  stepS: number | null;
  samplesPerS: number | null;
}

function plannerWhatIfs(setup: RunSetup, baseReq: PlanRequest, input: WhatIfInput): WhatIfResult {
  const b0 = setup.microBatch as number;
  const world = setup.worldSize;
  const hw = baseReq.hardware;
  const baseSetup = baseReq.setup;
  const basePar = baseReq.parallelism;
  const measured = setup.measuredPeakAllocatedBytes;
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
  // One step model a what-if. A change of the batch alone is pace's (the run's pipeline knows what of this step grows
  // with the batch: a starved DataLoader gains nothing from it) where the pipeline times the GPU apart; the calibrated
  // planner's where it does not, and for the changes pace cannot make: the precision (the planner costs the kernels it
  // changes, pace only shortens ones a trace names), activation checkpointing (a recomputed forward) and FSDP (another
  // parallel layout and its communication). Memory is the planner's throughout.
  const timed = input.pace?.deviceTimed ? input.pace : null;
  const paceBatch = (e: Eval): number | null => {
    const p = e.plan;
    const q = base.plan;
    const batchOnly =
      p.setup.precision === q.setup.precision &&
      p.setup.checkpointing === q.setup.checkpointing &&
      p.parallelism.dp === q.parallelism.dp &&
      p.parallelism.dpSize === q.parallelism.dpSize;
    return timed && batchOnly ? p.setup.microBatch / b0 : null;
  };
  const factor = (e: Eval) => {
    const k = paceBatch(e);
    if (timed && k !== null) return paceFactor(timed, k);
    return e.samplesPerS !== null && base.samplesPerS !== null && base.samplesPerS > 0 ? e.samplesPerS / base.samplesPerS : null;
  };
  const stepS = (e: Eval) => {
    const k = paceBatch(e);
    return timed && k !== null ? batchedStepOf(timed, k).stepNs / 1e9 : e.stepS;
  };
  const estimate = basis === 'planner-calibrated' ? 'calibrated on this run' : 'planner only, not calibrated';
  const memory = plannerMemoryModel(
    cal,
    (b, accum) => evaluatePlan({ ...baseReq, setup: { ...baseSetup, microBatch: b, gradAccum: accum ?? baseSetup.gradAccum } }),
    cal.method,
  );
  const out: WhatIf[] = batchWhatIfs({
    setup,
    b0,
    memory,
    factor: (b) => factor(at({ microBatch: b })),
    stepS: (b) => stepS(at({ microBatch: b })),
    estimate,
    outOfMemory: input.outOfMemory,
  });
  const maxOf = (s: Partial<TrainingSetup>, p: Partial<Parallelism> = {}) => largestBatch({ fits: (b) => at({ ...s, microBatch: b }, p).fits });
  const bMax = largestBatch(memory);
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
    stepTimeS: stepS(e),
    recommendation,
  });
  const thr = (e: Eval) => {
    const f = factor(e);
    return f === null ? '' : `, ${times(f)} the samples/s`;
  };

  if (setup.precision === 'fp32' && hw.gpu.bf16Tflops > 0) {
    const amp = at({ precision: 'amp-bf16' });
    const ampMax = maxOf({ precision: 'amp-bf16' });
    // fp32 only guessed (no window, no autocast record): the what-if stays in the table, but no advice rests on a guess.
    const guessed = setup.inferences?.find((i) => i.name === 'precision')?.how === 'guessed';
    out.push(
      item(
        'amp-bf16',
        `${guessed ? 'if the run is fp32 (a guess), ' : ''}bf16 autocast: predicted ${gib(amp.peak)} at batch ${b0} (now ${gib(base.peak)})${thr(amp)}; batch ${ampMax} fits`,
        `fp32 weights with the forward under torch.autocast(bfloat16): matmuls on tensor cores, bf16 activations (${estimate}; the calibration measured in fp32 is carried over).${guessed ? ' The run may already use autocast: without a profiler window or the probe seeing autocast, fp32 is a guess, so this is no advice.' : ''}`,
        amp,
        guessed
          ? null
          : {
              summary: 'Run the forward pass under bf16 autocast (weights and optimizer stay fp32).',
              code: [...autocastLines('bfloat16'), 'loss.backward()'].join('\n'),
            },
      ),
    );
  }

  const memoryBinds = !memory.fits(2 * b0) || !base.fits;
  if (memoryBinds && setup.checkpointing === 'none') {
    const ckMax = maxOf({ checkpointing: 'full' });
    if (ckMax > Math.max(bMax, 0)) {
      const ck = at({ checkpointing: 'full', microBatch: ckMax });
      out.push(
        item(
          'checkpointing',
          `activation checkpointing: batch ${ckMax} fits (predicted ${gib(ck.peak)} ${ofBudgetText(ck.plan.budgetBytes)})${thr(ck)}`,
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
          `FSDP over ${world > 1 ? 'your' : 'the'} ${n}${world > 1 ? '' : ' visible'} GPUs: ${ref}, predicted ${gib(f.peak)} ${ofBudgetText(f.plan.budgetBytes)}${thr(f)}`,
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

/** Throughput claims stop at this batch multiple, as analyze's `gpu-underused` does: the model is not measured beyond it. */
const MAX_CLAIMED_BATCH_SCALE = 4;

/**
 * Throughput factor of a k-times batch from the run's pipeline (pace/: the one batch model): per-sample work (the
 * GPU's, the loader's batches, copies) grows with the batch, per-step costs (the host's launches, syncs) do not. k is
 * capped at MAX_CLAIMED_BATCH_SCALE; null without a pipeline whose GPU work is timed apart (a profiled window): without
 * one, per-sample and per-step costs cannot be told apart.
 */
function paceFactor(pace: Pipeline | null, kIn: number): number | null {
  return pace?.deviceTimed ? batchThroughputFactor(pace, Math.min(kIn, MAX_CLAIMED_BATCH_SCALE)) : null;
}

function perSampleWhatIfs(setup: RunSetup, model: ModelRecord, hw: Hardware, input: WhatIfInput, why: string): WhatIfResult {
  const b0 = setup.microBatch as number;
  const resident = residentBytes(modelBytes(model));
  const line = perSampleLineFrom(resident, setup.measuredPeakAllocatedBytes as number, b0);
  if (!line)
    return {
      setup,
      calibration: null,
      whatIfs: [],
      problem: `the measured peak is not above the model's resident memory (${fmtBytes(resident)}): no per-sample model`,
    };
  const measured = setup.measuredPeakAllocatedBytes as number;
  const share = (measured - line.fixedBytes) / measured;
  const note = `measured per sample: resident ${gib(line.fixedBytes)} (weights, buffers, optimizer state, cuBLAS workspace) + ${fmtBytes(line.perSampleBytes)} per sample${share < 0.3 ? `; the batch-dependent part is only ${(share * 100).toFixed(0)}% of the peak, so the extrapolation is rough` : ''}`;
  const memory = perSampleMemoryModel(line, budgetBytes(hw, setup.worldSize), note);
  const whatIfs = batchWhatIfs({
    setup,
    b0,
    memory,
    factor: (b) => paceFactor(input.pace, b / b0),
    stepS: () => null,
    estimate: note,
    outOfMemory: input.outOfMemory,
  });
  return {
    setup,
    calibration: {
      basis: 'measured-per-sample',
      text: `${why}; ${note}`,
      predictedPeakBytes: null,
      measuredPeakBytes: measured,
      errorFraction: null,
      method: 'peak = resident + per-sample bytes x micro-batch, from the one measured peak',
      predictedStepS: null,
      measuredStepS: setup.measuredStepS,
      stepErrorFraction: null,
      staticBytes: line.fixedBytes,
      perSampleBytes: line.perSampleBytes,
    },
    whatIfs,
    problem: null,
  };
}

/** Calibrates on the run's set-up and lists the what-ifs the data supports. */
export function buildWhatIfs(input: WhatIfInput): WhatIfResult {
  const { setup, hardware: hw } = input;
  if (!input.model || !setup) return { setup: null, calibration: null, whatIfs: [], problem: 'no model summary from the probe' };
  if (!hw) return { setup, calibration: null, whatIfs: [], problem: 'no CUDA device: memory what-ifs need a GPU run' };
  if (setup.microBatch === null || setup.microBatch < 1)
    return { setup, calibration: null, whatIfs: [], problem: 'the batch size could not be told from the DataLoader batches' };
  const req = plannerRequestOf(setup, input.planModel, hw);
  if (req) return plannerWhatIfs(setup, req, input);
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

/** The trace finding a what-if says the same as: the same kind of change to the pipeline (a batch change, bf16 matmuls). */
function sameChange(w: WhatIf, f: Finding): boolean {
  const ops = f.fix?.ops ?? [];
  if (w.id === 'bigger-batch') return ops.some((o) => o.kind === 'batch');
  // bf16 autocast's fix (advice/autocast.ts) is the one that moves fp32/TF32 matmuls.
  if (w.id === 'amp-bf16') return ops.some((o) => o.kind === 'gpu' && (o.work === 'fp32-matmul' || o.work === 'tf32-matmul'));
  return false;
}

/** The what-if's samples per optimizer step over the run's (1 where the run's set-up is unknown). */
function samplesScale(setup: RunSetup | null, w: WhatIf): number {
  const b0 = setup?.microBatch ?? null;
  if (!setup || b0 === null || b0 < 1) return 1;
  return (w.batch * w.gradAccum * w.gpus) / (b0 * setup.gradAccum * setup.worldSize);
}

/**
 * What-ifs whose throughput gain clears WHATIF_MIN_GAIN, as findings; merged into trace findings that say the same.
 * `pace`: the rank's pipeline the gain is judged on (else the measured step `stepS` alone).
 */
export function whatIfFindings(
  result: WhatIfResult,
  traceFindings: readonly Finding[],
  stepS: number | null,
  /** The rank whose steps and memory the what-ifs were calibrated on. */
  rank: number,
  pace: Pipeline | null = null,
): { findings: Finding[]; merged: Finding[] } {
  const findings: Finding[] = [];
  const merged: Finding[] = [];
  for (const w of result.whatIfs) {
    if (!w.fits || w.throughputFactor === null || w.throughputFactor < WHATIF_MIN_GAIN || !w.recommendation) continue;
    const factor = w.throughputFactor;
    const target = traceFindings.find((f) => sameChange(w, f));
    const evidence = `planner what-if (${w.basis}): ${w.title}`;
    if (target) {
      merged.push({
        ...target,
        evidence: [...target.evidence, evidence],
        data: { ...target.data, whatIf: w.id, whatIfBatch: w.batch, whatIfThroughputFactor: factor },
      });
      continue;
    }
    const basis = pace ?? (stepS !== null && stepS > 0 ? measuredStep(stepS * 1e9, 'the median step') : null);
    // The what-if's own throughput factor as a change of the whole step; a what-if of more samples a step (a bigger
    // batch) says so, so its gain reads per batch of today's size, not per step (its own step is longer).
    const k = samplesScale(result.setup, w);
    const fix: Fix = {
      label: w.id === 'bigger-batch' ? `batch ${w.batch}` : w.title.split(':')[0] ?? w.id,
      ops: [{ kind: 'step', factor: 1 / factor }],
      ...(k !== 1 ? { batchScale: k } : {}),
      arithmetic: `samples/s x${factor.toFixed(2)} predicted: the same samples in ${(100 / factor).toFixed(0)}% of the time (${w.basis})`,
    };
    findings.push(
      adviceFinding({
        id: `whatif-${w.id}`,
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
        recommendation: w.recommendation,
        fix,
        estimatedGain: basis ? gainOf(basis, fix) : null,
      }),
    );
  }
  return { findings, merged };
}
