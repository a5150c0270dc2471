/**
 * A model split by hand over GPUs in one process (`seq1.to('cuda:0')`, `seq2.to('cuda:1')`, forward
 * `seq2(seq1(x).to('cuda:1'))`): each GPU waits while the other works. Read off the cross-device figures
 * (trace/metrics/crossDevice.ts): kernels on two or more devices of one process, peer-to-peer copies between them,
 * and a large bubble. DataParallel also drives several GPUs from one process (its replicas run side by side, and its
 * own rule covers it); a DDP rank with one device has no cross-device figures. Under doctor, when the whole model fits
 * on one GPU (its context's `dataParallel`), data parallelism over the same GPUs leads the finding.
 */
import type { Finding } from '../../findings/finding.js';
import type { Fix } from '../../pace/fix.js';
import { gainOf } from '../../pace/gain.js';
import type { Pipeline } from '../../pace/pipeline.js';
import type { TraceMetrics } from '../../trace/metrics/types.js';
import { fmtBytes, fmtGiB, fmtMs, fmtPct } from '../../util/format.js';
import { type DataParallelAlternative, finding, paced, pipelineOf, type RankRule, stepNs } from './rule.js';

/** Fires at this share of the bubble a strict turn-taking split has (1 - 1/n): 30% for two GPUs, whose worst is 50%. */
const BUBBLE_MIN_OF_SERIAL = 0.6;
/** Micro-batch counts tried: 1, 2, 4 and 8 per stage (a count per stage keeps every stage's share of the fill equal). */
export const MICRO_BATCHES_PER_STAGE = [1, 2, 4, 8] as const;
/**
 * Host time per kernel launched, outside the profiler: each micro-batch has the host issue the forward and backward
 * kernels of every stage again (Python, autograd, dispatch and launch). Measured on examples/scenarios/model_parallel.py
 * on 2x H200 (torch 2.11, eager, unprofiled): the step with m = 2 and 4 micro-batches (26.2 and 24.8 ms) gives 1.27 ms
 * per micro-batch for its 254 kernels a step, 5 us each; with it m = 8 predicts 28.9 ms, measured 29.1 ms. It also
 * covers what each micro-batch costs on the GPU (smaller GEMMs, gradients accumulated once per micro-batch).
 */
const HOST_NS_PER_KERNEL = 5_000;

/** What the rule and the doctor's data-parallel fix read: the split's figures, per step. */
export interface ModelParallelFigures {
  devices: number[];
  busyNs: number[];
  /** Optimizer kernel time per device (not pipelined: it runs once per step). */
  optimizerNs: number[];
  peerCopyNs: number[];
  kernels: number[];
  anyBusyNs: number;
  concurrentNs: number;
  bubbleShare: number;
  /** Time no device of the process works (host, loading): no change of layout removes it. */
  allIdleNs: number;
  stepNs: number;
}

/** The figures when the trace shows a hand-made model split with a bubble worth a finding; null otherwise. */
export function modelParallelFigures(m: TraceMetrics): ModelParallelFigures | null {
  const cd = m.crossDevice;
  if (!cd || cd.devices.length < 2 || m.structure.dataParallel) return null;
  const n = cd.devices.length;
  if (!(cd.perStep.peerCopies > 0) || cd.bubbleShare < BUBBLE_MIN_OF_SERIAL * (1 - 1 / n)) return null;
  const perDevice = (f: (d: TraceMetrics['steps'][number]['devices'][number]) => number) =>
    cd.devices.map((id) => {
      let sum = 0;
      for (const s of m.steps) {
        const d = s.devices.find((x) => x.device === id);
        if (d) sum += f(d);
      }
      return sum / Math.max(1, m.steps.length);
    });
  const step = stepNs(m);
  return {
    devices: cd.devices,
    busyNs: cd.perStep.busyNsByDevice,
    optimizerNs: perDevice((d) => d.kernelNsByCategory.optimizer),
    peerCopyNs: cd.perStep.peerCopyNsByDevice,
    kernels: perDevice((d) => d.kernels),
    anyBusyNs: cd.perStep.anyBusyNs,
    concurrentNs: cd.perStep.concurrentNs,
    bubbleShare: cd.bubbleShare,
    allIdleNs: Math.max(0, step - cd.perStep.anyBusyNs),
    stepNs: step,
  };
}

export interface PipelineEstimate {
  stages: number;
  microBatches: number;
  /** The step expected once pipelined, and its terms. */
  expectedNs: number;
  fillNs: number;
  optimizerNs: number;
  perMicroBatchNs: number;
  arithmetic: string;
}

/**
 * p stages, m micro-batches: the forward and backward work of the busiest stage, stretched by the fill and drain
 * ((m + p - 1) / m), then its optimizer step (once per step, all devices at once); every micro-batch has the host issue
 * the step's kernels again (HOST_NS_PER_KERNEL each); the time no device works stays. Peer copies run on their source
 * device's queue, so they are already in its busy time.
 */
export function pipelinedStepNs(f: ModelParallelFigures, mb: number): Omit<PipelineEstimate, 'arithmetic'> & { busiest: number; workNs: number } {
  const p = f.devices.length;
  const work = f.busyNs.map((b, i) => Math.max(0, b - f.optimizerNs[i]!));
  const k = work.indexOf(Math.max(...work));
  const fill = ((mb + p - 1) / mb) * work[k]!;
  const opt = Math.max(...f.optimizerNs);
  const perMicro = f.kernels.reduce((a, b) => a + b, 0) * HOST_NS_PER_KERNEL;
  return {
    stages: p,
    microBatches: mb,
    expectedNs: fill + opt + mb * perMicro + f.allIdleNs,
    fillNs: fill,
    optimizerNs: opt,
    perMicroBatchNs: perMicro,
    busiest: f.devices[k]!,
    workNs: work[k]!,
  };
}

/** The micro-batch count (1, 2, 4 or 8 per stage) with the shortest expected step, and its arithmetic. */
export function pipelineEstimate(f: ModelParallelFigures): PipelineEstimate {
  const p = f.devices.length;
  const options = MICRO_BATCHES_PER_STAGE.map((k) => pipelinedStepNs(f, k * p));
  const best = options.reduce((a, b) => (b.expectedNs < a.expectedNs ? b : a));
  const mb = best.microBatches;
  const kernels = f.kernels.reduce((a, b) => a + b, 0);
  const arithmetic =
    `${p} stages, ${mb} micro-batches: (${mb} + ${p} - 1) / ${mb} x the busiest stage's forward and backward ${fmtMs(best.workNs)} (GPU ${best.busiest}) = ${fmtMs(best.fillNs)}` +
    ` + optimizer ${fmtMs(best.optimizerNs)} + ${mb} micro-batches x ${kernels.toFixed(0)} kernels a step x ~${fmtMs(HOST_NS_PER_KERNEL)} of host time each = ${fmtMs(mb * best.perMicroBatchNs)}` +
    ` + time no GPU works ${fmtMs(f.allIdleNs)} = ${fmtMs(best.expectedNs)} (now ${fmtMs(f.stepNs)}); ${mb} is the best of ${options.map((o) => `${o.microBatches}: ${fmtMs(o.expectedNs)}`).join(', ')}` +
    ' (more micro-batches shrink the bubble but each costs the host a pass over the kernels)';
  return { stages: p, microBatches: mb, expectedNs: best.expectedNs, fillNs: best.fillNs, optimizerNs: best.optimizerNs, perMicroBatchNs: best.perMicroBatchNs, arithmetic };
}

/**
 * The step under data parallelism over the same GPUs, without the gradient all-reduce (its bytes are not in a trace
 * without memory events: doctor adds it from the model's parameters): each GPU runs the whole model on 1/n of the
 * batch, so the forward and backward work is shared n ways (the peer copies go), while every GPU updates every
 * parameter (the optimizer's time is summed), and the time no GPU works stays.
 */
export function dataParallelComputeNs(f: ModelParallelFigures): number {
  const n = f.devices.length;
  let work = 0;
  for (let i = 0; i < n; i++) work += Math.max(0, f.busyNs[i]! - f.peerCopyNs[i]! - f.optimizerNs[i]!);
  const opt = f.optimizerNs.reduce((a, b) => a + b, 0);
  return work / n + opt + f.allIdleNs;
}

export const PIPELINE_CODE = [
  '# One process, stage k on cuda:k: feed stage 2 micro-batch i while stage 1 runs i+1 (launches are asynchronous,',
  '# each GPU works through its own queue). MICRO: the count named above; the loss and backward stay as they are.',
  'def forward(x, micro=MICRO):',
  '    chunks = iter(x.split(x.shape[0] // micro))',
  '    prev = stage1(next(chunks)).to("cuda:1")',
  '    outs = []',
  '    for c in chunks:',
  '        outs.append(stage2(prev))          # queued on cuda:1 ...',
  '        prev = stage1(c).to("cuda:1")      # ... while cuda:0 computes the next micro-batch',
  '    outs.append(stage2(prev))',
  '    return torch.cat(outs)',
  '# Across processes, one stage per rank: torch.distributed.pipelining',
  '# (pipeline(model, mb_args=..., split_spec=...), ScheduleGPipe or Schedule1F1B with n_microbatches=MICRO).',
].join('\n');

export const modelParallelBubble: RankRule = (m, ctx) => {
  const f = modelParallelFigures(m);
  if (!f) return null;
  const est = pipelineEstimate(f);
  // Already micro-batched (or host-bound): when no count of micro-batches shortens the step, there is no fix to offer.
  if (!(est.expectedNs < f.stepNs)) return null;
  const dp = dataParallelComputeNs(f);
  const n = f.devices.length;
  const gpus = f.devices.join(', ');
  const sumBusy = f.busyNs.reduce((a, b) => a + b, 0);
  const copyNs = f.peerCopyNs.reduce((a, b) => a + b, 0);
  const cd = m.crossDevice!;
  const data: Record<string, number | string> = {
    devices: gpus,
    bubbleShare: f.bubbleShare,
    anyBusyNs: f.anyBusyNs,
    concurrentNs: f.concurrentNs,
    soloNs: f.anyBusyNs - f.concurrentNs,
    peerCopiesPerStep: cd.perStep.peerCopies,
    peerCopyBytesPerStep: cd.perStep.peerCopyBytes,
    peerCopyNs: copyNs,
    microBatches: est.microBatches,
    pipelinedStepNs: est.expectedNs,
    dataParallelComputeNs: dp,
  };
  f.devices.forEach((id, i) => {
    data[`busyNsGpu${id}`] = f.busyNs[i]!;
  });
  const bubble = paced(m, ctx?.pace, {
    id: 'model-parallel-bubble',
    title: `A model split over GPUs ${gpus} in one process runs them in turn: ${fmtPct(f.bubbleShare)} of their time each waits for another`,
    ranks: [m.rank],
    evidence: [
      `one process drives GPUs ${gpus}: busy ${f.busyNs.map((b, i) => `${fmtMs(b)} (GPU ${f.devices[i]})`).join(', ')} per step of the profiled window's ${fmtMs(f.stepNs)} step`,
      `at least one GPU busy ${fmtMs(f.anyBusyNs)} per step; two or more at once only ${fmtMs(f.concurrentNs)} (${fmtPct(f.anyBusyNs > 0 ? f.concurrentNs / f.anyBusyNs : 0)}), one alone ${fmtMs(f.anyBusyNs - f.concurrentNs)}`,
      `bubble: 1 - sum of busy ${fmtMs(sumBusy)} / (${n} GPUs x ${fmtMs(f.anyBusyNs)}) = ${fmtPct(f.bubbleShare)} of the GPUs' time idle while another works (strict turns: ${fmtPct(1 - 1 / n)})`,
      `${cd.perStep.peerCopies.toFixed(0)} peer-to-peer copies per step between the GPUs (Memcpy PtoP), ${fmtBytes(cd.perStep.peerCopyBytes)}, ${fmtMs(copyNs)}`,
    ],
    data,
    recommendation: {
      summary:
        `Pipeline the stages: split each batch into ${est.microBatches} micro-batches so that each GPU works on one micro-batch while the next GPU works on the previous one, in this process (CUDA launches are asynchronous) or one stage per rank with torch.distributed.pipelining (GPipe or 1F1B schedules). ` +
        `If the whole model fits on one GPU, data parallelism over the same ${n} GPUs removes the bubble altogether: DistributedDataParallel, one process per GPU, each on 1/${n} of the batch (FSDP2 fully_shard when it fits only sharded): about ${fmtMs(dp)} per step plus the gradient all-reduce, against ${fmtMs(est.expectedNs)} pipelined.`,
      code: PIPELINE_CODE,
    },
  }, {
    label: `${est.microBatches} micro-batches, pipelined`,
    // The pipelined step is modelled whole (fill and drain, the host's pass per micro-batch): a ratio of the step.
    ops: [{ kind: 'step', factor: est.expectedNs / f.stepNs }],
    arithmetic: est.arithmetic,
  });
  return ctx?.dataParallel && bubble ? ledByDataParallel(bubble, f, ctx.dataParallel, pipelineOf(m, ctx.pace)) : bubble;
};

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
 * The bubble's finding led by data parallelism when the whole model fits on one GPU and that is at least as fast as the
 * pipeline: its gain the data-parallel step (analyze's data-parallel compute plus the gradient all-reduce, counted whole
 * although DDP overlaps most of it with the backward, as a ratio of the window's step applied to the run's), the
 * pipelining fix after it in the summary and the code. Slower than the pipeline, it stays a line of evidence.
 */
function ledByDataParallel(f: Finding, fig: ModelParallelFigures, alt: DataParallelAlternative, pace: Pipeline): Finding {
  const g = f.estimatedGain;
  if (!g) return f;
  const n = fig.devices.length;
  const compute = dataParallelComputeNs(fig);
  const allReduce = gradientAllReduceNs(alt.gradBytes, n, alt.linkBytesPerS);
  const windowExpected = compute + allReduce;
  const ratio = windowExpected / fig.stepNs;
  const step = g.stepTimeNs;
  const expected = ratio * step;
  const name = alt.layout === 'ddp' ? 'DistributedDataParallel' : 'FSDP2 (fully_shard)';
  const pipelined = g.expectedStepTimeNs;
  const arithmetic =
    `${name} over the ${n} GPUs: forward and backward shared ${n} ways + every GPU's optimizer step + time no GPU works = ${fmtMs(compute)}` +
    ` + all-reduce of ${fmtGiB(alt.gradBytes, 2)} of gradients, 2 x ${n - 1}/${n} of them at ${(alt.linkBytesPerS / 1e9).toFixed(0)} GB/s = ${fmtMs(allReduce)} (counted whole; DDP overlaps most of it with the backward)` +
    ` = ${fmtMs(windowExpected)} in the profiled window (${fmtMs(fig.stepNs)} a step)` +
    `${step !== fig.stepNs ? `, ${(ratio * 100).toFixed(0)}% of the run's ${fmtMs(step)} step = ${fmtMs(expected)}` : ''}` +
    `; pipelined instead: ${fmtMs(pipelined)} (${g.arithmetic})`;
  const fitText = `the whole model fits on one GPU under ${alt.layout === 'ddp' ? 'DDP' : 'FSDP2'}: ${alt.basis === 'planner' ? "the planner's" : "an upper bound from the probe's bytes,"} ${fmtGiB(alt.peakBytes)} per GPU ${alt.budgetText}`;
  if (!(expected <= pipelined))
    return { ...f, evidence: [...f.evidence, `${fitText}; ${name} would take about ${fmtMs(expected)} a step, the pipeline ${fmtMs(pipelined)}`] };
  const { severity: _s, ...parts } = f;
  // Another layout, modelled whole (the window's data-parallel step over its step): a ratio of the run's step.
  const fix: Fix = { label: `${name} over the ${n} GPUs`, ops: [{ kind: 'step', factor: ratio }], arithmetic };
  return finding({
    ...parts,
    evidence: [...f.evidence, fitText],
    data: { ...f.data, dataParallelLayout: alt.layout, dataParallelPeakBytes: alt.peakBytes, dataParallelFitBasis: alt.basis, dataParallelStepNs: expected, allReduceNs: allReduce },
    recommendation: {
      summary: `The whole model fits on one GPU (${fmtGiB(alt.peakBytes)} ${alt.budgetText}): train it data-parallel over the same ${n} GPUs with ${name}, one process per GPU on 1/${n} of the batch: no GPU waits for another (about ${fmtMs(expected)} a step). Else pipeline the split with micro-batches (${f.data.microBatches} of them: about ${fmtMs(pipelined)}).`,
      code: `${alt.layout === 'ddp' ? DDP_CODE(n) : FSDP_CODE(n)}\n\n# or keep the split and pipeline it:\n${PIPELINE_CODE}`,
    },
    fix,
    estimatedGain: gainOf(pace, fix),
  });
}
