/** Multi-GPU rules: DataParallel, DDP communication, rank imbalance. */

import { type Finding, withGain } from '../../findings/finding.js';
import type { Fix } from '../../pace/fix.js';
import { jobGainOf } from '../../pace/gain.js';
import { balanceLimits, windowJob } from '../../pace/job.js';
import { windowPipeline } from '../../pace/window.js';
import { type CollectiveTimings, collectiveWaits } from '../../trace/metrics/collectives.js';
import type { TraceMetrics } from '../../trace/metrics/types.js';
import { fmtBytes, fmtMs, fmtPct } from '../../util/format.js';
import { type CrossRankRule, finding, type GpuPeak, ofWindowStep, paced, pipelineOf, type ProbeBalance, type RankRule, type RunContext, stepNs } from './rule.js';

const COMM_MIN_EXPOSED_SHARE = 0.1;
const SMALL_BUCKET_BYTES = 4 * 1024 * 1024;
const SMALL_BUCKET_MIN_PER_STEP = 10;
/** Launch and protocol latency of one NCCL collective within a node (LL/LL128 small messages). */
const COLLECTIVE_LATENCY_NS = 30_000;
/** Collective waits below this share of the step are ordinary jitter between ranks (doctor's probe-timed imbalance uses it too). */
export const IMBALANCE_MIN_SHARE = 0.1;

/** What to do about a straggler: one recommendation for the trace's rank-imbalance and doctor's probe-timed one. */
export function rankImbalanceRecommendation(straggler: number): { summary: string; code: string } {
  return {
    summary: `Find what makes rank ${straggler} slower: uneven batches (variable sequence lengths: bucket or pack them), a slower or throttled GPU (gpuwise smi: clocks, temperature), a busier host, or extra work on one rank (logging, evaluation, checkpointing on rank 0 only).`,
    code: [
      '# equalise work per rank, e.g. pack variable-length sequences to a fixed token budget',
      'if dist.get_rank() == 0: ...   # keep rank-0-only work (logging, eval) out of the timed loop or make it async',
    ].join('\n'),
  };
}

export const dataParallel: RankRule = (m, ctx) => {
  // On one GPU DataParallel only calls the module (torchvision-style scripts wrap it whatever the GPU count): the
  // idle it is blamed for belongs to the other rules. Seen on an H100 (examples/realworld/dataparallel_resnet).
  if (!m.structure.dataParallel || m.structure.dataParallelDevices < 2) return null;
  const step = stepNs(m);
  // Under DDP each GPU runs only its own compute; predict the step as the busiest GPU's kernel time.
  let busiest = 0;
  for (const s of m.steps) {
    for (const d of s.devices) {
      const k = d.kernelNsByCategory;
      const compute = d.busyNs - k.memcpy - k.memset;
      busiest = Math.max(busiest, compute);
    }
  }
  const expected = Math.max(busiest, 0);
  const gpuNow = windowPipeline(m).stages.gpu.ns ?? 0;
  const perDevice = deviceBusy(m);
  const memory = memoryImbalance(ctx?.gpuPeakBytes ?? null);
  return paced(m, ctx?.pace, {
    id: 'dataparallel',
    title: `torch.nn.DataParallel on ${m.structure.dataParallelDevices} GPUs: one process drives them all`,
    ranks: [m.rank],
    evidence: [
      'DataParallel.forward found: every step replicates the model, scatters inputs and gathers outputs from GPU 0, from one Python thread per GPU under the GIL',
      `kernels ran on ${m.structure.dataParallelDevices} devices from one process; GPU busy ${fmtPct(m.gpuBusyShare)} on average`,
      ...imbalanceEvidence(perDevice),
      ...(memory ? [memory.evidence] : []),
    ],
    data: {
      devices: m.structure.dataParallelDevices,
      gpuBusyShare: m.gpuBusyShare,
      ...Object.fromEntries(perDevice.map((d) => [`busyShareDevice${d.device}`, d.busyShare])),
      ...(memory?.data ?? {}),
    },
    recommendation: {
      summary:
        'Use DistributedDataParallel with one process per GPU, launched by torchrun. PyTorch itself recommends DDP over DataParallel even on one machine.',
      code: [
        '# torchrun --nproc_per_node=NUM_GPUS train.py',
        'dist.init_process_group("nccl"); local_rank = int(os.environ["LOCAL_RANK"])',
        'torch.cuda.set_device(local_rank)',
        'model = DistributedDataParallel(model.to(local_rank), device_ids=[local_rank])',
        'sampler = DistributedSampler(dataset); loader = DataLoader(dataset, sampler=sampler, ...)',
      ].join('\n'),
    },
  }, {
    label: 'DistributedDataParallel, one process per GPU',
    // Another layout: each GPU runs its own replica's compute, driven by its own process: the replication, scatter and
    // gather the one host did for all of them go, and so do the GPUs' waits on it.
    ops: [
      { kind: 'gpu', work: 'dataparallel', ns: gpuNow, factor: gpuNow > 0 ? expected / gpuNow : 1 },
      { kind: 'comm', ns: m.comm.exposedNsPerStep },
      { kind: 'host', work: 'dataparallel', factor: 0 },
      { kind: 'serial', cost: 'all', factor: 0 },
    ],
    arithmetic: `under DDP a step takes about the busiest GPU's compute time ${fmtMs(expected)} (the GPUs' work now ${fmtMs(gpuNow)} a step, the step ${fmtMs(step)} in the window), each process issuing one replica's work`,
  });
};

/**
 * DataParallel's GPU 0 imbalance in memory, from the process's NVML peaks (doctor samples them; analyze has none): the
 * output device holds the gathered outputs, the loss, the optimizer state and the master weights, the others a replica
 * and their activations. Null with fewer than two GPUs' peaks.
 */
function memoryImbalance(peaks: readonly GpuPeak[] | null): { evidence: string; data: Record<string, number | null> } | null {
  if (peaks === null || peaks.length < 2) return null;
  const [first, ...rest] = peaks as [GpuPeak, ...GpuPeak[]];
  const othersMean = rest.reduce((a, p) => a + p.peakBytes, 0) / rest.length;
  const ratio = othersMean > 0 ? first.peakBytes / othersMean : null;
  return {
    evidence: `NVML peak memory of the process per GPU: ${peaks.map((p) => `${p.name} ${fmtBytes(p.peakBytes)}`).join(', ')}${ratio !== null ? `; ${first.name} holds ${ratio.toFixed(2)}x the others' mean (the gathered outputs, the loss, the optimizer state and the master weights live there), so it runs out of memory first` : ''}`,
    data: { ...Object.fromEntries(peaks.map((p) => [`peakUsedBytesGpu${p.index}`, p.peakBytes])), memoryImbalance: ratio },
  };
}

/** One device's work in the window: busy share of the steps and kernel time per step by category. */
interface DeviceBusy {
  device: number;
  busyShare: number;
  busyNsPerStep: number;
  nsPerStepByCategory: Record<string, number>;
}

/** Each device's busy share over the window's steps (the timeline's union of its kernels and copies). */
export function deviceBusy(m: TraceMetrics): DeviceBusy[] {
  const by = new Map<number, DeviceBusy>();
  let dur = 0;
  for (const s of m.steps) {
    dur += s.durNs;
    for (const d of s.devices) {
      const e = by.get(d.device) ?? { device: d.device, busyShare: 0, busyNsPerStep: 0, nsPerStepByCategory: {} };
      e.busyNsPerStep += d.busyNs;
      for (const [k, ns] of Object.entries(d.kernelNsByCategory)) e.nsPerStepByCategory[k] = (e.nsPerStepByCategory[k] ?? 0) + ns;
      by.set(d.device, e);
    }
  }
  const n = Math.max(1, m.steps.length);
  return [...by.values()]
    .sort((a, b) => a.device - b.device)
    .map((e) => ({
      ...e,
      busyShare: dur > 0 ? e.busyNsPerStep / dur : 0,
      busyNsPerStep: e.busyNsPerStep / n,
      nsPerStepByCategory: Object.fromEntries(Object.entries(e.nsPerStepByCategory).map(([k, ns]) => [k, ns / n])),
    }));
}

/**
 * GPU 0 (DataParallel's output device) against the others: its busy share, and the kernel categories where it works
 * longest beyond the others' mean (the gather, the loss, the optimizer step on the master weights).
 */
function imbalanceEvidence(devices: readonly DeviceBusy[]): string[] {
  const [first, ...rest] = devices;
  if (!first || rest.length === 0) return [];
  const mean = (f: (d: DeviceBusy) => number) => rest.reduce((a, d) => a + f(d), 0) / rest.length;
  const extra = Object.keys(first.nsPerStepByCategory)
    .map((k) => ({ k, ns: (first.nsPerStepByCategory[k] ?? 0) - mean((d) => d.nsPerStepByCategory[k] ?? 0) }))
    .filter((x) => x.ns > 0.02 * first.busyNsPerStep)
    .sort((a, b) => b.ns - a.ns)
    .slice(0, 3);
  const othersBusy = mean((d) => d.busyNsPerStep);
  return [
    `busy per GPU in the window: ${devices.map((d) => `GPU ${d.device} ${fmtPct(d.busyShare)} (${fmtMs(d.busyNsPerStep)} a step)`).join(', ')}${othersBusy > 0 ? `; GPU ${first.device} works ${(first.busyNsPerStep / othersBusy).toFixed(2)}x the others' mean` : ''}`,
    ...(extra.length
      ? [`GPU ${first.device}'s extra kernel time a step, by kind: ${extra.map((x) => `${x.k} +${fmtMs(x.ns)}`).join(', ')} (the gather, the loss and the optimizer run there while the other GPUs wait)`]
      : []),
  ];
}

export const ddpAccumWithoutNoSync: RankRule = (m, ctx) => {
  const s = m.structure;
  if (!s.ddp || s.accumulationMicroSteps === 0 || s.accumulationMicroStepsWithAllReduce === 0) return null;
  const share = s.accumulationMicroStepsWithAllReduce / Math.max(1, s.ddpForwardsPerStep * Math.max(1, m.steps.length));
  // Collectives of every micro-step but the last are wasted; they cost their exposed time, at least.
  const saved = (m.comm.exposedNsPerStep + m.comm.commNsPerStep * 0.25) * share;
  return paced(m, ctx?.pace, {
    id: 'ddp-accum-without-no-sync',
    title: `Gradient accumulation all-reduces on every micro-step (${s.accumulationMicroStepsWithAllReduce} of ${s.accumulationMicroSteps} non-final micro-steps)`,
    ranks: [m.rank],
    evidence: [
      `${s.ddpForwardsPerStep.toFixed(1)} DDP forwards per optimizer step (${s.optimizerStepsPerStep.toFixed(1)} optimizer steps): gradient accumulation`,
      `an all-reduce ran between consecutive micro-batches ${s.accumulationMicroStepsWithAllReduce} times; only the last micro-batch needs one`,
      `communication per step ${fmtMs(m.comm.commNsPerStep)}, exposed ${fmtMs(m.comm.exposedNsPerStep)}`,
    ],
    data: {
      microSteps: s.accumulationMicroSteps,
      microStepsWithAllReduce: s.accumulationMicroStepsWithAllReduce,
      commNsPerStep: m.comm.commNsPerStep,
    },
    recommendation: {
      summary: 'Skip gradient synchronisation on all but the last micro-batch.',
      code: [
        'for i, batch in enumerate(micro_batches):',
        '    ctx = model.no_sync() if i < len(micro_batches) - 1 else contextlib.nullcontext()',
        '    with ctx:',
        '        (model(batch) / len(micro_batches)).backward()',
        'opt.step(); opt.zero_grad(set_to_none=True)',
      ].join('\n'),
    },
  }, {
    label: 'no_sync() on all but the last micro-batch',
    ops: [
      { kind: 'comm', ns: m.comm.exposedNsPerStep * share },
      // The hidden all-reduces still slow the compute they overlap: a quarter of their time, counted as GPU work.
      { kind: 'gpu', work: 'hidden-collectives', ns: m.comm.commNsPerStep * 0.25 * share, factor: 0 },
    ],
    arithmetic: `(exposed ${fmtMs(m.comm.exposedNsPerStep)} + 25% of comm ${fmtMs(m.comm.commNsPerStep)}) x ${fmtPct(share)} redundant micro-steps = ${fmtMs(saved)}`,
  });
};

export const smallCommBuckets: RankRule = (m, ctx) => {
  const c = m.comm;
  if (
    c.collectives === 0 ||
    c.medianMessageBytes <= 0 ||
    c.medianMessageBytes >= SMALL_BUCKET_BYTES ||
    c.allReducesPerStep < SMALL_BUCKET_MIN_PER_STEP
  )
    return null;
  const perStepBytes = c.bytes / Math.max(1, m.steps.length);
  const target = 100 * 1024 * 1024;
  const fewer = Math.max(1, Math.ceil(perStepBytes / target));
  const ownExposedNs = Math.max(0, c.exposedNsPerStep - Math.max(0, ctx?.peerWaitNs ?? 0));
  const saved = Math.min(ownExposedNs, Math.max(0, c.allReducesPerStep - fewer) * COLLECTIVE_LATENCY_NS);
  return paced(m, ctx?.pace, {
    id: 'small-comm-buckets',
    title: `${c.allReducesPerStep.toFixed(0)} small all-reduces per step (median ${fmtBytes(c.medianMessageBytes)})`,
    ranks: [m.rank],
    evidence: [
      `${c.collectives} collectives, median message ${fmtBytes(c.medianMessageBytes)}, ${fmtBytes(perStepBytes)} per step`,
      `communication ${fmtMs(c.commNsPerStep)} per step, ${fmtMs(c.exposedNsPerStep)} of it not hidden under compute`,
    ],
    data: { allReducesPerStep: c.allReducesPerStep, medianMessageBytes: c.medianMessageBytes, exposedNsPerStep: c.exposedNsPerStep },
    recommendation: {
      summary:
        'Larger gradient buckets mean fewer collectives, each closer to full bandwidth. Also make sure no parameters are excluded from bucketing (find_unused_parameters=False when possible).',
      code: 'model = DistributedDataParallel(model, device_ids=[local_rank], bucket_cap_mb=100, gradient_as_bucket_view=True)',
    },
  }, {
    label: 'larger gradient buckets',
    ops: [{ kind: 'comm', ns: saved }],
    arithmetic: `(${c.allReducesPerStep.toFixed(0)} - ${fewer}) collectives x ~${fmtMs(COLLECTIVE_LATENCY_NS)} latency, at most the exposed ${fmtMs(ownExposedNs)}${ownExposedNs < c.exposedNsPerStep ? ' (its wait for the other ranks left out)' : ''}: ${fmtMs(saved)}`,
  });
};

export const commBound: RankRule = (m, ctx) => {
  const c = m.comm;
  const step = stepNs(m);
  // Windows begun at different steps: the exposed time is ranks waiting for the one the profiler slows.
  if (ctx?.windowsApart === true || step <= 0) return null;
  // A collective kernel spins until every rank arrives: the wait for a slower rank shows as exposed communication,
  // but it is that rank's work (rank-imbalance), which no overlap of this rank's communication removes.
  const waitNs = Math.min(c.exposedNsPerStep, Math.max(0, ctx?.peerWaitNs ?? 0));
  const ownExposedNs = c.exposedNsPerStep - waitNs;
  if (ownExposedNs / step < COMM_MIN_EXPOSED_SHARE) return null;
  return paced(m, ctx?.pace, {
    id: 'comm-bound',
    title: 'Communication is not hidden by compute',
    ranks: [m.rank],
    evidence: [
      `collective kernels ${fmtMs(c.commNsPerStep)} per step; ${fmtMs(c.exposedNsPerStep)} ${ofWindowStep(c.exposedNsPerStep, step)} run while no compute kernel runs (overlap ${c.overlapShare === null ? 'n/a' : fmtPct(c.overlapShare)})`,
      ...(waitNs > 0 ? [`${fmtMs(waitNs)} of it a step is this rank waiting in collectives for the other ranks (their work, not communication): ${fmtMs(ownExposedNs)} left`] : []),
      `${c.collectives} collectives moving ${fmtBytes(c.bytes)}, median ${fmtBytes(c.medianMessageBytes)}`,
    ],
    data: { commNsPerStep: c.commNsPerStep, exposedNsPerStep: c.exposedNsPerStep, peerWaitNsPerStep: waitNs, overlapShare: c.overlapShare },
    recommendation: {
      summary:
        'Overlap or shrink communication: more work per all-reduce (larger batch or gradient accumulation with no_sync), bf16 gradient compression, and for FSDP prefetching the next all-gather; check that GPUs talk over NVLink rather than PCIe/Ethernet (nvidia-smi topo -m).',
      code: [
        'from torch.distributed.algorithms.ddp_comm_hooks import default_hooks',
        'model.register_comm_hook(dist.group.WORLD, default_hooks.bf16_compress_hook)',
        '# FSDP2: fully_shard(block, reshard_after_forward=True); model.set_modules_to_forward_prefetch([...])',
      ].join('\n'),
    },
  }, {
    label: 'communication overlapped',
    ops: [{ kind: 'comm', ns: ownExposedNs }],
    arithmetic: `if fully overlapped, the exposed ${fmtMs(ownExposedNs)} a step goes (an upper bound${waitNs > 0 ? `; the ${fmtMs(waitNs)} spent waiting for the other ranks stays` : ''})`,
  });
};

/**
 * Ranks wait for the slowest one at every collective: the windows show who (`windowImbalance`), the probe's timing of
 * every steady step (`RunContext.probeBalance`, doctor) whether it holds over the run.
 */
export const rankImbalance: CrossRankRule = (ranks: TraceMetrics[], collectives: readonly CollectiveTimings[], contexts = []) => {
  if (ranks.length < 2) return null;
  const balance = contexts.find((c) => c?.probeBalance)?.probeBalance ?? null;
  // Windows begun at different steps: the waits in them are the profiler's; only the probe's timing is left.
  const inWindow = contexts.some((c) => c?.windowsApart === true) ? null : windowImbalance(ranks, collectives, contexts);
  if (balance === null) return inWindow;
  return inWindow === null ? probeImbalanceFinding(balance) : weighedAgainstProbe(inWindow, balance);
};

/**
 * rank-imbalance from the probe alone (doctor: a job whose ranks have no windows to compare, or whose windows show
 * none): a finding when the steps name a straggler.
 */
export function probeImbalanceFinding(b: ProbeBalance): Finding | null {
  if (b.straggler === null || b.job === null) return null;
  const fix = probeBalanceFix(b, b.straggler.rank);
  return finding({
    id: 'rank-imbalance',
    title: b.straggler.title,
    ranks: b.ranks,
    evidence: b.evidence,
    data: { straggler: b.straggler.rank, by: b.straggler.by, ...b.data },
    recommendation: rankImbalanceRecommendation(b.straggler.rank),
    fix,
    estimatedGain: jobGainOf(b.job, fix, b.ranks),
  });
}

/** Balancing as the probe times the ranks: each takes the mean of the ranks' own work (pace/job.ts). */
function probeBalanceFix(b: ProbeBalance, straggler: number): Fix {
  return { label: `rank ${straggler} balanced with the others`, ops: [{ kind: 'balance' }], arithmetic: b.balanceArithmetic };
}

/**
 * The window's rank-imbalance with the probe's figures beside it, and the probe's gain when that is the larger. When
 * every steady step says the ranks keep pace, the window's imbalance is the profiler's (it slows each rank's CPU by a
 * different amount; 2x H200 DDP: 49.5 ms a step in the window beside medians 2.4% apart): kept as information, no gain.
 */
export function weighedAgainstProbe(w: Finding, b: ProbeBalance): Finding {
  const extended: Finding = { ...w, evidence: [...w.evidence, ...b.evidence], data: { ...w.data, ...b.data } };
  if (b.straggler === null && b.compared)
    return withGain(
      {
        ...extended,
        evidence: [
          ...extended.evidence,
          "over the run's steady steps the ranks keep pace (no rank 10% slower, DataLoader waits within 10% of the step): the window's imbalance comes from the profiler's own cost, which differs by rank",
        ],
      },
      null,
    );
  const windowShare = w.estimatedGain?.savedFraction ?? 0;
  if (b.job === null || b.straggler === null) return extended;
  const probeFix = probeBalanceFix(b, b.straggler.rank);
  const gain = jobGainOf(b.job, probeFix, b.ranks);
  if (gain === null || gain.savedFraction <= windowShare) return extended;
  // The probe's gain, its arithmetic naming the window's estimate it replaces: the same fix on the same job, worded.
  const fix: Fix = {
    ...probeFix,
    arithmetic: `${probeFix.arithmetic} (probe, every steady step; the window's own estimate was ${fmtPct(windowShare)}: ${w.estimatedGain?.arithmetic ?? 'none'})`,
  };
  return withGain({ ...extended, fix }, jobGainOf(b.job, fix, b.ranks));
}

/**
 * The imbalance the ranks' windows show: each rank's wait in collectives for the others (collectiveWaits: beyond a
 * collective's shortest duration across the ranks, a rank waits; the straggler waits least) and its compute. The fix
 * balances the ranks (pace/job.ts): each takes the mean of the ranks' own work, its gain the job's step before and after.
 */
function windowImbalance(ranks: TraceMetrics[], collectives: readonly CollectiveTimings[], contexts: readonly (RunContext | undefined)[]): Finding | null {
  // Without every rank's collectives, only the compute skew is seen.
  const { waitNsPerStep: waitPerStep, matched } = collectiveWaits(collectives.length === ranks.length ? collectives : [], ranks.map((r) => r.steps.length));
  const busy = ranks.map((r) => r.perStep.busyNs - r.perStep.kernelNsByCategory.communication);
  const step = Math.max(...ranks.map(stepNs));
  const maxBusy = Math.max(...busy);
  const minBusy = Math.min(...busy);
  const meanBusy = busy.reduce((a, b) => a + b, 0) / busy.length;
  const maxWait = Math.max(...waitPerStep);
  const minWait = Math.min(...waitPerStep);
  // Balanced ranks wait about equally (jitter goes both ways); imbalance is the difference.
  const skew = Math.max(maxBusy - minBusy, maxWait - minWait);
  // Ranks that never meet in a collective do not wait for each other (two independent jobs, traces without
  // communication): a difference in their compute is not an imbalance. Without the collectives' timings, the
  // communication kernels tell whether they met.
  if (collectives.length === ranks.length ? matched === 0 : ranks.every((r) => r.perStep.kernelNsByCategory.communication === 0)) return null;
  if (step <= 0 || skew / step < IMBALANCE_MIN_SHARE) return null;
  const straggler = ranks[busy.indexOf(maxBusy)]!.rank;
  // Judged on the job: every rank's pipeline (doctor's run, else the window's) less its wait for the others.
  const job = windowJob(ranks, collectives, ranks.map((m, i) => pipelineOf(m, contexts[i]?.pace)));
  const all = ranks.map((r) => r.rank);
  const limits = job ? balanceLimits(job, all) : '';
  const fix: Fix = {
    label: `rank ${straggler} balanced with the others`,
    ops: [{ kind: 'balance' }],
    arithmetic: `balanced ranks each take the mean of the ranks' own work (compute ${fmtMs(meanBusy)} a step on average; rank ${straggler} takes ${fmtMs(maxBusy)}, the longest wait for the others is ${fmtMs(maxWait)})${limits ? `; ${limits}` : ''}`,
  };
  return finding({
    id: 'rank-imbalance',
    title: `Rank ${straggler} is slower: the other ranks wait up to ${fmtMs(maxWait)} per step in collectives`,
    ranks: all,
    evidence: [
      ...ranks.map(
        (r, i) =>
          `rank ${r.rank}: compute ${fmtMs(busy[i]!)} per step, waiting in collectives ${fmtMs(waitPerStep[i]!)} per step, step ${fmtMs(stepNs(r))}`,
      ),
      `${matched} collectives matched across ranks by ${collectives[0]?.matchedBy === 'order' ? 'order' : 'process group and sequence number'}`,
    ],
    data: { straggler, maxComputeNs: maxBusy, minComputeNs: minBusy, maxWaitNsPerStep: maxWait, matchedCollectives: matched },
    recommendation: rankImbalanceRecommendation(straggler),
    fix,
    estimatedGain: job ? jobGainOf(job, fix, all) : null,
  });
}
