/** Input pipeline rules: a starved DataLoader, copies from pageable memory. */

import type { Finding } from '../../findings/finding.js';
import type { Fix } from '../../pace/fix.js';
import { gainOf } from '../../pace/gain.js';
import { LOADER_HEADROOM, type Pipeline, stepOf, workerCap, workersToAsk, workerStartUpNs } from '../../pace/pipeline.js';
import { COPY_IDLE_WORDS, INPUT_BINDS_SHARE } from '../../pace/window.js';
import type { TraceMetrics } from '../../trace/metrics/types.js';
import { fmtInt, fmtBytes, fmtMs, fmtPct, fmtWindow } from '../../util/format.js';
import { finding, ofWindowStep, paced, pipelineOf, type RankRule, stepNs, whenInSteps } from './rule.js';

/** Pinned host-to-device bandwidth assumed when the trace has no pinned copy to measure (PCIe Gen4 x16, practical). */
const ASSUMED_PINNED_GBS = 20;
const PAGEABLE_MIN_SHARE = 0.002;
/** The workers' start-up at epoch starts worth persistent workers: this share of the mean step or more. */
const EPOCH_START_MIN_SHARE = 0.02;

const fmtRate = (perS: number) => fmtInt(perS);

/**
 * The loader's capacity in words, when its production was measured in the workers: "4 workers deliver 1,100
 * samples/s, 275 per worker; the rest of the step takes 1,830/s".
 */
export function loaderCapacity(p: Pipeline): string | null {
  const l = p.loader;
  if (!l || l.batchNsPerWorker === null || l.workers === null) return null;
  const unit = l.samplesPerBatch !== null ? 'samples' : 'batches';
  const perBatch = l.samplesPerBatch ?? 1;
  const perWorker = (perBatch * 1e9) / l.batchNsPerWorker;
  const host = p.stages.host.ns ?? 0;
  const device = (p.stages.gpu.ns ?? 0) + (p.stages.comm.ns ?? 0);
  const demandNs = Math.max(host, device);
  const demand = demandNs > 0 ? ` ; the rest of the step takes ${fmtRate((perBatch * l.batchesPerStep * 1e9) / demandNs)}/s` : '';
  return `${l.workers} worker(s) deliver ${fmtRate(perWorker * Math.max(1, l.workers))} ${unit}/s, ${fmtRate(perWorker)} per worker${demand.replace(' ;', ';')}`;
}

/**
 * The worker count to recommend: what the demand of the other stages needs (pipeline.ts workersForDemand), never fewer
 * than the run has while the loop waits; past the cores when the workers wait on I/O (their wall time a batch well
 * above their CPU time), and said so; where no count keeps up, the one that reaches the floor the CPU sets.
 */
function workersFor(p: Pipeline): { workers: number; text: string } | null {
  const l = p.loader;
  if (!l || l.batchNsPerWorker === null) return null;
  const s = stepOf({ ...p, loader: { ...l, workersTo: 'enough' } });
  if (s.workersNeeded === null) return null;
  const workers = workersToAsk(l, s.workersNeeded);
  const cores = workerCap(l);
  const io =
    l.cpuNsPerBatch !== null && l.cpuNsPerBatch < 0.7 * l.batchNsPerWorker
      ? `; a worker spends ${fmtMs(l.cpuNsPerBatch)} of CPU in its ${fmtMs(l.batchNsPerWorker)} a batch (it waits on I/O the rest)`
      : '';
  const pastCores = Number.isFinite(cores) && workers > cores ? `, more than the ${cores} core(s) left to the workers: waiting workers hold no core${io}` : io;
  const floor =
    s.workersKeepUp === false
      ? `; no count keeps up: the CPU a batch costs over the ${Number.isFinite(cores) ? cores : ''} core(s) left to the workers sets the loader's pace, so then decode on the GPU (DALI, torchvision.io.decode_jpeg on CUDA) or pre-process the dataset`
      : '';
  const keeps = s.workersKeepUp === false ? 'come closest to keeping up' : `keep up with the rest of the step with ${Math.round((LOADER_HEADROOM - 1) * 100)}% to spare`;
  return {
    workers,
    text: `about ${workers} workers ${keeps} (a batch takes ${fmtMs(l.batchNsPerWorker)} in a worker, a time that moves between runs${pastCores})${floor}`,
  };
}

// The DataLoader's change as its fix makes it: its workers, and persistent workers (and a deeper queue) only where
// epoch starts stall. Pinned memory is the pageable-copies finding's fix, not this one's: a plan that holds both says
// each in its own step.
const LOADER_CODE = (workers: string, epochStarts: boolean) =>
  epochStarts
    ? `loader = DataLoader(dataset, batch_size=B, num_workers=${workers},\n                    persistent_workers=True, prefetch_factor=4)`
    : `loader = DataLoader(dataset, batch_size=B, num_workers=${workers})`;

/**
 * The one DataLoader finding, from the pipeline's evidence: the loop's waits (the probe's over every step in a run,
 * the GPU's idle in DataLoader.__next__ in a window), the loader's measured capacity when there is one, and when the
 * waits fall. `m`: the window, for its figures in the evidence (null when doctor has no window for the rank).
 */
export function dataloaderFinding(p: Pipeline, m: TraceMetrics | null, rank: number): Finding | null {
  const step = p.stepNs;
  const wait = p.inputWaitNs;
  // Epoch starts that stall the loop: a serial cost measured from the stalls (without the loader's records), or the
  // workers' start-up measured at epoch starts (pace/run.ts; pipeline.ts workerStartUpNs), a step's share of it.
  const l0 = p.loader;
  const startUp = l0?.stepsPerEpoch ? workerStartUpNs(l0) / l0.stepsPerEpoch : 0;
  const epochStarts = p.serial.some((c) => c.kind === 'epoch-starts') || startUp >= EPOCH_START_MIN_SHARE * step;
  if (!(step > 0) || wait / step < INPUT_BINDS_SHARE) return null;
  const run = p.source === 'run';
  const rec = workersFor(p);
  const capacity = loaderCapacity(p);
  const l = p.loader;
  const evidence = [
    run
      ? `the training loop waited ${fmtMs(wait)} a step inside DataLoader.__next__ (${fmtPct(wait / step)} of the mean step ${fmtMs(step)}, over every measured step)`
      : `GPU idle while the main process was inside DataLoader.__next__: ${fmtMs(wait)} per step ${ofWindowStep(wait, step)}`,
    // A window without a GPU (a CPU run) has no GPU idle to time the loader's wait by: nothing to add there.
    ...(m && m.devices.length > 0
      ? [
          `in the profiled window DataLoader.__next__ takes ${fmtMs(m.examples.dataLoaderWaitNsPerStep)} per step on the CPU; the GPU is busy ${fmtPct(m.gpuBusyShare)} of the time`,
        ]
      : []),
    ...(p.stalls && p.stalls.stalledSteps > 0 ? [p.stages.input.evidence] : []),
    ...(capacity ? [capacity] : []),
    ...(rec ? [rec.text] : []),
    ...(l && l.workers !== null
      ? [
          `DataLoader: num_workers=${l.workers}, persistent_workers=${l.persistentWorkers}, prefetch_factor=${l.prefetchFactor ?? 'n/a'}, pin_memory=${l.pinMemory}${l.cpuCores !== null ? `; ${l.cpuCores} CPU cores available` : ''}`,
        ]
      : []),
  ];
  const workers = rec ? String(rec.workers) : '8';
  const waitHow = l0?.epochFillNs !== null ? 'measured' : 'from the stalls there';
  // The start-up is part of what an epoch start costs (the pace section's figure): said as such, so that the two agree.
  const epochCostNs = stepOf(p).epochStartsNs;
  const ofEpochCost = epochCostNs > startUp * 1.05 ? ` (part of the ${fmtMs(epochCostNs)} a step that epoch starts cost, the first batch's fill included)` : '';
  const startUpText = `the workers start again at each epoch start: ${fmtMs(l0?.startNs ?? 0)} every ${l0?.stepsPerEpoch} steps (the wait for an epoch's first batch, ${waitHow}, less the fill of it), ${fmtMs(startUp)} a step${ofEpochCost}`;
  // Too few workers and their start-up at every epoch are two causes, often together (a JPEG loader whose 4 workers
  // stall the loop every 4 steps also starts them again each epoch): the fix takes each that the evidence shows. More
  // workers where their measured rate needs more than the run has, or where no epoch start explains the waits.
  const current = l?.workers ?? null;
  const moreWorkers = !epochStarts || (rec !== null && current !== null && rec.workers > current);
  const workersLabel = current !== null && rec ? `num_workers ${current} -> ${rec.workers}` : 'more DataLoader workers';
  const fix: Fix = {
    label: [...(moreWorkers ? [workersLabel] : []), ...(epochStarts ? ['persistent DataLoader workers'] : [])].join(', '),
    ops: [
      // Enough workers for whatever the other stages demand: the plan says how many once other fixes speed them up.
      ...(moreWorkers ? [{ kind: 'workers' as const, to: 'enough' as const }] : []),
      ...(epochStarts ? [{ kind: 'persistent-workers' as const }] : []),
    ],
    arithmetic: [
      ...(moreWorkers
        ? [
            rec
              ? `the loader's measured rate: ${rec.text}`
              : 'with enough workers (and loading overlapped) the loop no longer waits: the DataLoader leaves the critical path',
          ]
        : []),
      ...(epochStarts
        ? [
            `${p.serial.find((c) => c.kind === 'epoch-starts')?.evidence ?? startUpText}; persistent_workers=True keeps the workers between epochs, prefetch_factor fills their queues ahead`,
          ]
        : []),
    ].join('; '),
  };
  // When the stalls come, where they show a pattern (no pattern: said without one, never "every undefined steps").
  const atStarts = p.stalls?.when === 'epoch-starts';
  const every = p.stalls?.when === 'periodic' && p.stalls.everySteps ? p.stalls.everySteps : null;
  const stallText = atStarts
    ? 'The waits come in stalls at epoch starts'
    : every !== null
      ? `The waits come in stalls every ${every} steps`
      : 'The loop waits on the DataLoader';
  const startUpSummary =
    'the workers are started again for every epoch: keep them (persistent_workers=True) and let them fill their queues ahead (prefetch_factor).';
  return finding({
    id: 'dataloader-bound',
    title: run
      ? `The training loop waits on the DataLoader${epochStarts ? (atStarts ? ' at the start of each epoch' : every !== null ? `: stalls every ${every} steps` : '') : ''}`
      : 'The GPU waits on the DataLoader',
    ranks: [rank],
    evidence,
    data: {
      // a window's GPU idle in __next__, or a run's loop wait: two figures, two names
      ...(run ? { dataloaderWaitNsPerStep: wait } : { dataloaderIdleNsPerStep: wait }),
      stepNs: step,
      ...(m ? { dataLoaderNextNsPerStep: m.examples.dataLoaderWaitNsPerStep, gpuBusyShare: m.gpuBusyShare } : {}),
      ...(l?.workers !== null && l?.workers !== undefined ? { workers: l.workers } : {}),
      ...(rec ? { workersRecommended: rec.workers } : {}),
      ...(p.stalls ? { stallShare: p.stalls.share, stallWhen: p.stalls.when } : {}),
    },
    recommendation: {
      summary:
        moreWorkers && epochStarts && rec
          ? `${stallText}: ${current ?? 'the'} workers cannot keep up (${rec.text}), and ${startUpSummary}`
          : epochStarts
            ? `${atStarts ? 'The waits come in long stalls at epoch starts' : every !== null ? `The waits come in long stalls every ${every} steps (epoch starts, most likely)` : 'The loop waits on the DataLoader at epoch starts'}: ${startUpSummary}`
            : `Load and augment in ${rec ? `${rec.workers} ` : ''}worker processes so that loading overlaps compute. If workers still cannot keep up, move decoding/augmentation to the GPU (DALI, torchvision.transforms.v2 on CUDA tensors) or pre-process the dataset.`,
      code: LOADER_CODE(workers, epochStarts),
    },
    fix,
    estimatedGain: gainOf(p, fix),
  });
}

export const dataloaderBound: RankRule = (m, ctx) => dataloaderFinding(pipelineOf(m, ctx?.pace), m, m.rank);

export const pageableH2d: RankRule = (m, ctx) => {
  const pageable = m.copies.find((c) => c.kind === 'HtoD pageable');
  const step = stepNs(m);
  if (!pageable || step <= 0) return null;
  const nSteps = Math.max(1, m.steps.length);
  const copyNs = pageable.durNs / nSteps;
  const idleNs = m.perStep.idleByCauseNs.h2dCopy;
  if ((copyNs + idleNs) / step < PAGEABLE_MIN_SHARE) return null;
  const pinned = m.copies.find((c) => c.kind === 'HtoD pinned');
  const pinnedGBs = Math.max(pinned?.bandwidthGBs ?? 0, ASSUMED_PINNED_GBS);
  const keep = pageable.bandwidthGBs > 0 ? Math.min(1, pageable.bandwidthGBs / pinnedGBs) : 1;
  const ex = m.examples.pageableH2dExample;
  // The run's own figure beside the window's, where doctor watched the run (the pace section's blocking wait).
  const runCopyNs = ctx?.pace?.source === 'run' ? (ctx.pace.serial.find((c) => c.kind === 'copy')?.ns ?? null) : null;
  return paced(
    m,
    ctx?.pace,
    {
      id: 'pageable-h2d',
      title: `Host-to-device copies from pageable memory (${fmtBytes(pageable.bytes / nSteps)} per step at ${pageable.bandwidthGBs.toFixed(1)} GB/s)`,
      ranks: [m.rank],
      evidence: [
        `${pageable.count} HtoD copies from pageable memory ${fmtWindow(m.steps.length)}, ${fmtBytes(pageable.bytes)} in ${fmtMs(pageable.durNs)} (${pageable.bandwidthGBs.toFixed(1)} GB/s)`,
        `${COPY_IDLE_WORDS.replace(/^t/, 'T')}: ${fmtMs(idleNs)} per step in the profiled window`,
        ...(ex ? [`largest: "${ex.name}" ${fmtBytes(ex.bytes)} in ${fmtMs(ex.durNs)} ${whenInSteps(m, ex.atNs)}`] : []),
        ...(pinned ? [`pinned copies in the same trace ran at ${pinned.bandwidthGBs.toFixed(1)} GB/s`] : []),
      ],
      data: {
        pageableBytes: pageable.bytes,
        pageableCopies: pageable.count,
        pageableGBs: pageable.bandwidthGBs,
        h2dIdleNsPerStep: idleNs,
        pinnedGBsAssumed: pinnedGBs,
      },
      recommendation: {
        summary: 'Pinned (page-locked) host buffers copy at full PCIe speed and let the copy run asynchronously, overlapped with compute.',
        // A run doctor watched with no torch DataLoader (its batches made by the loop, as llm.c's): its own tensors first.
        code: (ctx?.pace?.source === 'run' && ctx.pace.loader === null
          ? ['x = x.pin_memory()  # the batch your loop makes, in page-locked memory', 'x = x.to(device, non_blocking=True)']
          : ['DataLoader(..., pin_memory=True)', '# or for your own tensors: x = x.pin_memory()', 'x = x.to(device, non_blocking=True)']
        ).join('\n'),
      },
    },
    {
      label: 'pinned memory, non-blocking copies',
      ops: [
        { kind: 'serial', cost: 'copy', factor: 0 },
        { kind: 'gpu', work: 'pageable-copies', ns: copyNs, factor: keep },
      ],
      arithmetic: `${COPY_IDLE_WORDS} (${fmtMs(idleNs)} a step in the profiled window${runCopyNs !== null ? `, ${fmtMs(runCopyNs)} in the run outside the profiler` : ''}) goes, and the copies themselves (${fmtMs(copyNs)} a step) run at ${pinnedGBs.toFixed(0)} GB/s pinned instead of ${pageable.bandwidthGBs.toFixed(1)} GB/s`,
    },
  );
};
