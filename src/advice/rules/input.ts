/** Input pipeline rules: a starved DataLoader, copies from pageable memory. */

import { gainFrom } from '../../findings/finding.js';
import { fmtBytes, fmtMs, fmtPct, fmtWindow } from '../../util/format.js';
import { finding, type RankRule, stepNs, whenInSteps } from './rule.js';

/** Fires when the GPU idles in DataLoader waits for at least this share of the step. */
const DATALOADER_MIN_SHARE = 0.05;
/** Pinned host-to-device bandwidth assumed when the trace has no pinned copy to measure (PCIe Gen4 x16, practical). */
const ASSUMED_PINNED_GBS = 20;
const PAGEABLE_MIN_SHARE = 0.002;

export const dataloaderBound: RankRule = (m) => {
  const step = stepNs(m);
  const idle = m.perStep.idleByCauseNs.dataloader;
  if (step <= 0 || idle / step < DATALOADER_MIN_SHARE) return null;
  // With loading moved to worker processes and overlapped, the GPU no longer waits; the step cannot drop below the GPU's own busy time.
  const expected = Math.max(step - idle, m.perStep.busyNs);
  return finding({
    id: 'dataloader-bound',
    title: 'The GPU waits on the DataLoader',
    ranks: [m.rank],
    evidence: [
      `GPU idle while the main process was inside DataLoader.__next__: ${fmtMs(idle)} per step of ${fmtMs(step)} (${fmtPct(idle / step)})`,
      `DataLoader.__next__ takes ${fmtMs(m.examples.dataLoaderWaitNsPerStep)} per step on the CPU; the GPU is busy ${fmtPct(m.gpuBusyShare)} of the time`,
    ],
    data: {
      dataloaderIdleNsPerStep: idle,
      stepNs: step,
      dataLoaderNextNsPerStep: m.examples.dataLoaderWaitNsPerStep,
      gpuBusyShare: m.gpuBusyShare,
    },
    recommendation: {
      summary:
        'Load and augment in worker processes, pin host memory, and copy without blocking so loading overlaps compute. If workers still cannot keep up, move decoding/augmentation to the GPU (DALI, torchvision.transforms.v2 on CUDA tensors) or pre-process the dataset.',
      code: [
        'loader = DataLoader(dataset, batch_size=B, num_workers=8, pin_memory=True,',
        '                    persistent_workers=True, prefetch_factor=4)',
        'for x, y in loader:',
        '    x = x.to(device, non_blocking=True); y = y.to(device, non_blocking=True)',
      ].join('\n'),
    },
    estimatedGain: gainFrom(
      step,
      step - expected,
      `step ${fmtMs(step)} - DataLoader idle ${fmtMs(idle)} = ${fmtMs(expected)} (not below GPU busy time ${fmtMs(m.perStep.busyNs)})`,
    ),
  });
};

export const pageableH2d: RankRule = (m) => {
  const pageable = m.copies.find((c) => c.kind === 'HtoD pageable');
  const step = stepNs(m);
  if (!pageable || step <= 0) return null;
  const nSteps = Math.max(1, m.steps.length);
  const copyNs = pageable.durNs / nSteps;
  const idleNs = m.perStep.idleByCauseNs.h2dCopy;
  if ((copyNs + idleNs) / step < PAGEABLE_MIN_SHARE) return null;
  const pinned = m.copies.find((c) => c.kind === 'HtoD pinned');
  const pinnedGBs = Math.max(pinned?.bandwidthGBs ?? 0, ASSUMED_PINNED_GBS);
  const fasterCopyNs = pageable.bandwidthGBs > 0 ? copyNs * Math.max(0, 1 - pageable.bandwidthGBs / pinnedGBs) : 0;
  const saved = idleNs + fasterCopyNs;
  const ex = m.examples.pageableH2dExample;
  return finding({
    id: 'pageable-h2d',
    title: `Host-to-device copies from pageable memory (${fmtBytes(pageable.bytes / nSteps)} per step at ${pageable.bandwidthGBs.toFixed(1)} GB/s)`,
    ranks: [m.rank],
    evidence: [
      `${pageable.count} HtoD copies from pageable memory ${fmtWindow(m.steps.length)}, ${fmtBytes(pageable.bytes)} in ${fmtMs(pageable.durNs)} (${pageable.bandwidthGBs.toFixed(1)} GB/s)`,
      `GPU idle while the host was inside the copy call: ${fmtMs(idleNs)} per step`,
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
      code: [
        'DataLoader(..., pin_memory=True)',
        '# or for your own tensors: x = x.pin_memory()',
        'x = x.to(device, non_blocking=True)',
      ].join('\n'),
    },
    estimatedGain: gainFrom(
      step,
      saved,
      `copy-call idle ${fmtMs(idleNs)} + copy time ${fmtMs(copyNs)} x (1 - ${pageable.bandwidthGBs.toFixed(1)} / ${pinnedGBs.toFixed(0)} GB/s pinned) = ${fmtMs(saved)} saved per step`,
    ),
  });
};
