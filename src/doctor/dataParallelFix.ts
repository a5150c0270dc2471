/**
 * A model split by hand over GPUs (analyze's `model-parallel-bubble`) whose whole model fits on one GPU: data
 * parallelism over the same GPUs removes the bubble, so doctor, which knows the model's bytes from the probe, leads the
 * finding with it (pure). Whether it fits comes from the planner: the planner's memory model at 1/n of the batch per
 * GPU when the model has a block layout it reads (DDP, else FSDP2), else a bound from the probe's bytes (every GPU
 * holding the whole model's weights, gradients, DDP's gradient buckets and optimizer state, plus the largest peak the
 * split measured on its own GPU, which holds the activations of its share of the layers for the whole batch: at 1/n of
 * the batch the whole model's activations are about that much when the stages are balanced), against the planner's
 * budget and fit rule. The expected step is analyze's data-parallel compute (advice/rules/modelParallel.ts) plus the
 * gradient all-reduce at the catalogue's link bandwidth, counted whole (DDP overlaps most of it with the backward).
 */
import { dataParallelComputeNs, modelParallelFigures, PIPELINE_CODE } from '../advice/rules/modelParallel.js';
import { type Finding, finding } from '../findings/finding.js';
import { wholeStepFix, wholeStepGain } from '../pace/gain.js';
import { fitsBudget } from '../planner/fromRun.js';
import { budgetBytes, evaluatePlan, ofBudgetText } from '../planner/plan.js';
import type { Hardware, Parallelism, TrainingSetup } from '../planner/setup.js';
import type { ModelDescription } from '../planner/model.js';
import type { ModelRecord } from '../run/records.js';
import { modelBytes } from '../run/setup.js';
import type { TraceMetrics } from '../trace/metrics/types.js';
import { fmtGiB, fmtMs } from '../util/format.js';
import type { RunSetup } from '../run/setup.js';

export interface DataParallelFit {
  layout: 'ddp' | 'fsdp';
  gpus: number;
  /** Predicted peak allocated bytes per GPU, and the budget it fits in. */
  peakBytes: number;
  budgetBytes: number;
  /** `planner` (the planner's memory model of the model's config) or `probe-bound` (the probe's bytes, an upper bound). */
  basis: 'planner' | 'probe-bound';
}

/** DDP if it fits on each GPU, else FSDP2 if sharded it fits, else null. */
export function dataParallelFit(
  gpus: number,
  model: ModelRecord,
  setup: RunSetup,
  hw: Hardware,
  planModel: ModelDescription | null,
): DataParallelFit | null {
  const budget = budgetBytes(hw, gpus);
  if (
    planModel &&
    setup.seq !== null &&
    setup.precision !== null &&
    setup.optimizer !== null &&
    setup.microBatch !== null &&
    setup.microBatch >= gpus
  ) {
    const s: TrainingSetup = {
      microBatch: Math.floor(setup.microBatch / gpus),
      seq: setup.seq,
      precision: setup.precision,
      optimizer: setup.optimizer,
      checkpointing: setup.checkpointing,
      gradAccum: setup.gradAccum,
      mode: 'train',
    };
    for (const dp of ['ddp', 'fsdp'] as const) {
      const par: Parallelism = { dp, dpSize: gpus, tp: 1, pp: 1, reshardAfterForward: true, cpuOffload: false };
      const plan = evaluatePlan({ model: planModel, hardware: hw, setup: s, parallelism: par });
      if (plan.fits) return { layout: dp, gpus, peakBytes: plan.memory.peakAllocatedBytes, budgetBytes: plan.budgetBytes, basis: 'planner' };
    }
    return null;
  }
  const measured = setup.measuredPeakAllocatedBytes;
  if (measured === null) return null;
  const b = modelBytes(model);
  // Weights, gradients, DDP's buckets (a second copy of the gradients) and the optimizer state, whole on every GPU.
  const whole = b.weightBytes + 2 * b.trainableBytes + b.optimizerStateBytes;
  const ddp = whole + b.buffersBytes + measured;
  if (fitsBudget(ddp, budget)) return { layout: 'ddp', gpus, peakBytes: ddp, budgetBytes: budget, basis: 'probe-bound' };
  const fsdp = whole / gpus + b.buffersBytes + measured;
  if (fitsBudget(fsdp, budget)) return { layout: 'fsdp', gpus, peakBytes: fsdp, budgetBytes: budget, basis: 'probe-bound' };
  return null;
}

/** Ring all-reduce of the gradients over n GPUs: 2 (n - 1) / n of their bytes over each GPU's link. */
export function gradientAllReduceNs(gradBytes: number, gpus: number, linkBytesPerS: number): number {
  if (!(linkBytesPerS > 0) || gpus < 2) return 0;
  return ((2 * (gpus - 1)) / gpus) * (gradBytes / linkBytesPerS) * 1e9;
}

const DDP_CODE = (n: number) =>
  [
    `# torchrun --nproc_per_node ${n} train.py: the whole model on every GPU, 1/${n} of the batch each`,
    'dist.init_process_group("nccl"); local_rank = int(os.environ["LOCAL_RANK"]); torch.cuda.set_device(local_rank)',
    'model = DistributedDataParallel(model.to(local_rank), device_ids=[local_rank])',
    'loader = DataLoader(dataset, batch_size=B // world_size, sampler=DistributedSampler(dataset), ...)',
  ].join('\n');

const FSDP_CODE = (n: number) =>
  [
    `# torchrun --nproc_per_node ${n} train.py: weights, gradients and optimizer state sharded ${n} ways`,
    'from torch.distributed.fsdp import fully_shard',
    'for block in model.blocks:   # each layer group',
    '    fully_shard(block)',
    'fully_shard(model)',
  ].join('\n');

/**
 * The finding led by data parallelism when it fits, its gain the data-parallel step; the pipelining fix follows in the
 * summary and the code. The window's ratio of expected to current step is applied to the finding's (re-based) step.
 */
export function withDataParallelFix(
  f: Finding,
  metrics: TraceMetrics,
  model: ModelRecord | null,
  setup: RunSetup | null,
  hw: Hardware | null,
  planModel: ModelDescription | null,
): Finding {
  const fig = modelParallelFigures(metrics);
  if (f.id !== 'model-parallel-bubble' || !fig || !model || !setup || !hw || !f.estimatedGain) return f;
  const n = fig.devices.length;
  const fit = dataParallelFit(n, model, setup, hw, planModel);
  if (!fit) return f;
  const b = modelBytes(model);
  const compute = dataParallelComputeNs(fig);
  const allReduce = gradientAllReduceNs(b.trainableBytes, n, hw.gpu.intraNodeBandwidth);
  const windowExpected = compute + allReduce;
  const ratio = windowExpected / fig.stepNs;
  const step = f.estimatedGain.stepTimeNs;
  const expected = ratio * step;
  const name = fit.layout === 'ddp' ? 'DistributedDataParallel' : 'FSDP2 (fully_shard)';
  const pipelined = f.estimatedGain.expectedStepTimeNs;
  const arithmetic =
    `${name} over the ${n} GPUs: forward and backward shared ${n} ways + every GPU's optimizer step + time no GPU works = ${fmtMs(compute)}` +
    ` + all-reduce of ${fmtGiB(b.trainableBytes, 2)} of gradients, 2 x ${n - 1}/${n} of them at ${(hw.gpu.intraNodeBandwidth / 1e9).toFixed(0)} GB/s = ${fmtMs(allReduce)} (counted whole; DDP overlaps most of it with the backward)` +
    ` = ${fmtMs(windowExpected)} in the profiled window (${fmtMs(fig.stepNs)} a step)` +
    `${step !== fig.stepNs ? `, ${(ratio * 100).toFixed(0)}% of the run's ${fmtMs(step)} step = ${fmtMs(expected)}` : ''}` +
    `; pipelined instead: ${fmtMs(pipelined)} (${f.estimatedGain.arithmetic})`;
  const fitText0 = `the whole model fits on one GPU under ${fit.layout === 'ddp' ? 'DDP' : 'FSDP2'}: ${fit.basis === 'planner' ? "the planner's" : 'an upper bound from the probe\'s bytes,'} ${fmtGiB(fit.peakBytes)} per GPU ${ofBudgetText(fit.budgetBytes)}`;
  const fitText = fitText0;
  // Data parallelism leads when it is at least as fast as the pipeline; else it stays a line of evidence.
  if (!(expected <= pipelined))
    return { ...f, evidence: [...f.evidence, `${fitText}; ${name} would take about ${fmtMs(expected)} a step, the pipeline ${fmtMs(pipelined)}`] };
  const { severity: _s, ...parts } = f;
  return finding({
    ...parts,
    evidence: [...f.evidence, fitText],
    data: { ...f.data, dataParallelLayout: fit.layout, dataParallelPeakBytes: fit.peakBytes, dataParallelFitBasis: fit.basis, dataParallelStepNs: expected, allReduceNs: allReduce },
    recommendation: {
      summary: `The whole model fits on one GPU (${fmtGiB(fit.peakBytes)} ${ofBudgetText(fit.budgetBytes)}): train it data-parallel over the same ${n} GPUs with ${name}, one process per GPU on 1/${n} of the batch: no GPU waits for another (about ${fmtMs(expected)} a step). Else pipeline the split with micro-batches (${f.data.microBatches} of them: about ${fmtMs(pipelined)}).`,
      code: `${fit.layout === 'ddp' ? DDP_CODE(n) : FSDP_CODE(n)}\n\n# or keep the split and pipeline it:\n${PIPELINE_CODE}`,
    },
    fix: wholeStepFix(`${name} over the ${n} GPUs`, step, expected, arithmetic),
    estimatedGain: wholeStepGain(step, expected, arithmetic),
  });
}
