/**
 * A model split by hand over GPUs in one process (`seq1.to('cuda:0')`, `seq2.to('cuda:1')`, forward
 * `seq2(seq1(x).to('cuda:1'))`): each GPU waits while the other works. Read off the cross-device figures
 * (trace/metrics/crossDevice.ts): kernels on two or more devices of one process, peer-to-peer copies between them,
 * and a large bubble. DataParallel also drives several GPUs from one process (its replicas run side by side, and its
 * own rule covers it); a DDP rank with one device has no cross-device figures.
 */
import { gainFrom } from '../../findings/finding.js';
import type { TraceMetrics } from '../../trace/metrics/types.js';
import { fmtBytes, fmtMs, fmtPct } from '../../util/format.js';
import { finding, type RankRule, stepNs } from './rule.js';

/** Fires at this share of the bubble a strict turn-taking split has (1 - 1/n): 30% for two GPUs, whose worst is 50%. */
const BUBBLE_MIN_OF_SERIAL = 0.6;
/** Micro-batches per pipeline stage (GPipe's rule of thumb: the fill and drain bubble is (p-1)/(m+p-1), 11% at 4 per stage for 2 stages). */
export const MICRO_BATCHES_PER_STAGE = 4;
/**
 * GPU time a kernel costs beyond its share of the work, paid again by every extra micro-batch (the gap between
 * back-to-back kernels and the tail of small grids, 1-3 us on Hopper). Smaller GEMMs also run somewhat less
 * efficiently; that is not modelled.
 */
const KERNEL_FIXED_NS = 2_000;

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
  cpuLaunchNs: number;
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
    cpuLaunchNs: m.launch.cpuLaunchNs / Math.max(1, m.steps.length),
  };
}

export interface PipelineEstimate {
  stages: number;
  microBatches: number;
  /** The step expected once pipelined, and its terms. */
  expectedNs: number;
  fillNs: number;
  optimizerNs: number;
  lossNs: number;
  hostFloorNs: number;
  arithmetic: string;
}

/**
 * p stages, m micro-batches: the forward and backward work of the busiest stage, stretched by the fill and drain
 * ((m + p - 1) / m), then its optimizer step (once per step, all devices at once); each extra micro-batch pays the
 * busiest stage's kernels' fixed cost again; the host must issue m times the launches (a floor); the time no device
 * works stays. Peer copies run on their source device's queue, so they are already in its busy time.
 */
export function pipelineEstimate(f: ModelParallelFigures): PipelineEstimate {
  const p = f.devices.length;
  const mb = MICRO_BATCHES_PER_STAGE * p;
  const work = f.busyNs.map((b, i) => Math.max(0, b - f.optimizerNs[i]!));
  const k = work.indexOf(Math.max(...work));
  const fill = ((mb + p - 1) / mb) * work[k]!;
  const opt = Math.max(...f.optimizerNs);
  const loss = (mb - 1) * f.kernels[k]! * KERNEL_FIXED_NS;
  const hostFloor = mb * f.cpuLaunchNs;
  const gpu = fill + opt + loss;
  const expected = Math.max(gpu, hostFloor) + f.allIdleNs;
  const arithmetic =
    `${p} stages, ${mb} micro-batches (${MICRO_BATCHES_PER_STAGE} per stage): (${mb} + ${p} - 1) / ${mb} x busiest stage's forward and backward ${fmtMs(work[k]!)} (GPU ${f.devices[k]}) = ${fmtMs(fill)}` +
    ` + optimizer ${fmtMs(opt)} + ${mb - 1} extra micro-batches x ${f.kernels[k]!.toFixed(0)} kernels x ~${fmtMs(KERNEL_FIXED_NS)} = ${fmtMs(loss)}` +
    `${hostFloor > gpu ? `; the host must issue ${mb}x the launches (${fmtMs(hostFloor)}), which binds` : ''}` +
    ` + time no GPU works ${fmtMs(f.allIdleNs)} = ${fmtMs(expected)} (now ${fmtMs(f.stepNs)}); smaller GEMMs per micro-batch may run somewhat less efficiently, not counted`;
  return { stages: p, microBatches: mb, expectedNs: expected, fillNs: fill, optimizerNs: opt, lossNs: loss, hostFloorNs: hostFloor, arithmetic };
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
  '# each GPU works through its own queue). MICRO = 4 per stage; the loss and backward stay as they are.',
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

export const modelParallelBubble: RankRule = (m) => {
  const f = modelParallelFigures(m);
  if (!f) return null;
  const est = pipelineEstimate(f);
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
  return finding({
    id: 'model-parallel-bubble',
    title: `A model split over GPUs ${gpus} in one process runs them in turn: ${fmtPct(f.bubbleShare)} of their time each waits for another`,
    ranks: [m.rank],
    evidence: [
      `one process drives GPUs ${gpus}: busy ${f.busyNs.map((b, i) => `${fmtMs(b)} (GPU ${f.devices[i]})`).join(', ')} per step of ${fmtMs(f.stepNs)}`,
      `at least one GPU busy ${fmtMs(f.anyBusyNs)} per step; two or more at once only ${fmtMs(f.concurrentNs)} (${fmtPct(f.anyBusyNs > 0 ? f.concurrentNs / f.anyBusyNs : 0)}), one alone ${fmtMs(f.anyBusyNs - f.concurrentNs)}`,
      `bubble: 1 - sum of busy ${fmtMs(sumBusy)} / (${n} GPUs x ${fmtMs(f.anyBusyNs)}) = ${fmtPct(f.bubbleShare)} of the GPUs' time idle while another works (strict turns: ${fmtPct(1 - 1 / n)})`,
      `${cd.perStep.peerCopies.toFixed(0)} peer-to-peer copies per step between the GPUs (Memcpy PtoP), ${fmtBytes(cd.perStep.peerCopyBytes)}, ${fmtMs(copyNs)}`,
    ],
    data,
    recommendation: {
      summary:
        `Pipeline the stages: split each batch into ${est.microBatches} micro-batches (${MICRO_BATCHES_PER_STAGE} per stage) so that each GPU works on one micro-batch while the next GPU works on the previous one, in this process (CUDA launches are asynchronous) or one stage per rank with torch.distributed.pipelining (GPipe or 1F1B schedules). ` +
        `If the whole model fits on one GPU, data parallelism over the same ${n} GPUs removes the bubble altogether: DistributedDataParallel, one process per GPU, each on 1/${n} of the batch (FSDP2 fully_shard when it fits only sharded): about ${fmtMs(dp)} per step plus the gradient all-reduce, against ${fmtMs(est.expectedNs)} pipelined.`,
      code: PIPELINE_CODE,
    },
    estimatedGain: gainFrom(f.stepNs, f.stepNs - est.expectedNs, est.arithmetic),
  });
};
