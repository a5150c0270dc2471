/**
 * The pipeline of a profiled window, from its own evidence alone (pure): analyze's view of a step, and the reference
 * doctor scales to the run. The GPU's idle time, split by what the host was doing meanwhile (docs/analyze.md), says
 * which stage it waited for:
 * - the GPU stage is its busy time (kernels, copies, memsets; the union over the devices one process drives), less the
 *   communication no compute hides, which is the communication stage;
 * - the input stage binds when the GPU waits in DataLoader.__next__ for 5% of the step or more: the loader then
 *   delivers about one batch a step, its period is the step less the serial costs (assumed);
 * - the host stage: with syncs, the time the stepping thread was not blocked in them or in the DataLoader (an upper
 *   bound: the profiler's own cost is host time); without, when the GPU waits for launches 10% of the step or more and
 *   is busy less than 80% of it, the GPU ran at the host's pace (busy + those gaps); otherwise the window cannot tell
 *   the host's own time (a GPU busy 80% of the step waits in gaps for its host only in parts of it): the stage stays
 *   untimed and says so, and the gaps are a serial cost;
 * - serial costs: the GPU idle after syncs (the drain and the refill until the host is ahead again; with syncs, the
 *   launch gaps too, since without them the host runs ahead), in copy calls (pageable copies block), in collective
 *   calls, and launch gaps the host stage does not explain.
 */
import type { TraceMetrics } from '../trace/metrics/types.js';
import { fmtMs, fmtPct } from '../util/format.js';
import { gpuPerStepOf } from './batch.js';
import { calibrated, type Pipeline, type SerialCost, type Stage } from './pipeline.js';
import { noWorkTouched } from './work.js';

/** The GPU waits in DataLoader.__next__ this share of the step or more: the loader sets the pace. */
export const INPUT_BINDS_SHARE = 0.05;
/**
 * The window's idle that pageable copies cause, named once: the host in the copy call (and the copy's own stream sync)
 * and the launch gaps while the queue it drained fills again (trace/metrics/timeline.ts). More than the host's own
 * time inside copy calls, which the host stage leaves out (issue 47: a cold reader took 32.5 and 8.08 ms for one figure).
 */
export const COPY_IDLE_WORDS = "the GPU's idle in host-to-device copy calls and the queue's refill after them";
/** The GPU waits for launches this share of the step or more (without syncs): the host sets the pace. */
export const HOST_BINDS_IDLE_SHARE = 0.1;
/** A window whose GPU is busy this share of its step is GPU-bound: launch gaps in it do not make the host the bound. */
export const GPU_BOUND_SHARE = 0.8;
/** Sync calls block the host this share of the step or more: its own time is the rest. */
const SYNC_BLOCKED_SHARE = 0.01;

/** The time per step the process's devices are busy: the union over the devices it drives. */
export function deviceBusyNs(m: TraceMetrics): number {
  return m.crossDevice ? m.crossDevice.perStep.anyBusyNs : m.perStep.busyNs;
}

/** Time per step the stepping thread was blocked in sync calls. */
export function syncBlockedNs(m: TraceMetrics): number {
  return m.examples.syncCalls.reduce((a, c) => a + c.totalNs, 0) / Math.max(1, m.steps.length);
}

/** The stepping thread blocks in syncs a share of the step worth counting: its own time is the rest. */
export function hostSyncs(m: TraceMetrics): boolean {
  return m.perStep.durNs > 0 && syncBlockedNs(m) >= SYNC_BLOCKED_SHARE * m.perStep.durNs;
}

/**
 * How the window says the host's own time per step: from its syncs or its launch gaps in a window whose GPU waits for
 * its host, or not at all in a GPU-bound one (the host's time there is at most the step less its blocked time, and
 * that bound carries the profiler's cost: it is said, not used).
 */
export function windowHost(m: TraceMetrics): Stage & { basis: 'syncs' | 'launch-gaps' | 'none' } {
  const step = m.perStep.durNs;
  const idle = m.perStep.idleByCauseNs;
  const blocked = syncBlockedNs(m);
  const dl = m.examples.dataLoaderWaitNsPerStep;
  const gaps = idle.launch + idle.other;
  const busy = deviceBusyNs(m);
  const gpuBound = busy >= GPU_BOUND_SHARE * step;
  const notBlocked = Math.max(0, step - blocked - dl);
  if (hostSyncs(m) && !gpuBound)
    return {
      basis: 'syncs',
      ns: notBlocked,
      how: 'assumed',
      evidence: `the stepping thread's time not blocked in syncs (${fmtMs(blocked)} a step) or in the DataLoader (${fmtMs(dl)}): ${fmtMs(notBlocked)} of the window's ${fmtMs(step)} step, an upper bound of its own work (the profiler's cost is host time)`,
    };
  if (step > 0 && gaps >= HOST_BINDS_IDLE_SHARE * step && !gpuBound)
    return {
      basis: 'launch-gaps',
      // A stage is at most the step it is in: busy and gaps are means over the devices a process drives, which can
      // overlap in time (a pipelined model on two GPUs: 34.9 + 37.1 ms in a 57.9 ms step).
      ns: Math.min(step, busy + gaps),
      how: 'assumed',
      // Over several GPUs the wait is each one's mean and the work their union: said so, or the two read as one sum.
      evidence: m.crossDevice
        ? `its ${m.crossDevice.devices.length} GPUs each waited ${fmtMs(gaps)} a step on average for the host's next launch (${fmtPct(gaps / step)} of the step), and at least one of them worked ${fmtMs(busy)}: they ran at the host's pace`
        : `the GPU waited ${fmtMs(gaps)} a step for the host's next launch (${fmtPct(gaps / step)} of the step) and worked ${fmtMs(busy)}: it ran at the host's pace`,
    };
  return {
    basis: 'none',
    ns: null,
    how: 'assumed',
    evidence: gpuBound
      ? `the GPU is busy ${fmtPct(busy / Math.max(1, step))} of the step: the host keeps ahead, and the window cannot tell its own time${hostSyncs(m) ? ` (at most the ${fmtMs(notBlocked)} it was not blocked in syncs, the profiler's own cost included)` : ''}`
      : `the GPU waited only ${fmtMs(gaps)} a step for launches and the host was blocked in syncs under 1% of the step: the host keeps ahead, and the window cannot tell its own time`,
  };
}

const cache = new WeakMap<TraceMetrics, Pipeline>();

/** The window's pipeline (memoised per metrics object: every rule reads the same one). */
export function windowPipeline(m: TraceMetrics): Pipeline {
  const hit = cache.get(m);
  if (hit) return hit;
  const p = buildWindowPipeline(m);
  cache.set(m, p);
  return p;
}

function buildWindowPipeline(m: TraceMetrics): Pipeline {
  const step = m.perStep.durNs;
  const idle = m.perStep.idleByCauseNs;
  const busy = deviceBusyNs(m);
  const exposed = Math.min(busy, m.comm.exposedNsPerStep);
  const devices = m.crossDevice?.devices.length ?? 1;
  const host = windowHost(m);
  const gaps = idle.launch + idle.other;
  const serial: SerialCost[] = [];
  // With syncs, the launch gaps belong to them: without the syncs the host runs ahead and fills them.
  const syncs = hostSyncs(m);
  const syncNs = idle.hostSync + (syncs ? gaps : 0);
  if (syncNs > 0)
    serial.push({
      kind: 'syncs',
      ns: syncNs,
      perStep: m.perStep.syncDrains > 0 ? m.perStep.syncDrains : null,
      how: 'measured',
      evidence: `the GPU idle after the host blocked on it ${fmtMs(idle.hostSync)} a step${syncs && gaps > 0 ? `, and ${fmtMs(gaps)} of launch gaps the host would fill running ahead without them` : ''}`,
    });
  if (idle.h2dCopy > 0)
    serial.push({
      kind: 'copy',
      ns: idle.h2dCopy,
      perStep: null,
      how: 'measured',
      evidence: `${COPY_IDLE_WORDS}: ${fmtMs(idle.h2dCopy)} a step`,
    });
  if (host.basis === 'none' && !syncs && gaps > 0)
    serial.push({
      kind: 'gaps',
      ns: gaps,
      perStep: null,
      how: 'measured',
      evidence: `the GPU idle between launches: ${fmtMs(gaps)} a step`,
    });
  if (idle.communication > 0)
    serial.push({
      kind: 'other',
      ns: idle.communication,
      perStep: null,
      how: 'measured',
      evidence: `the GPU idle while the host was in a collective call: ${fmtMs(idle.communication)} a step`,
    });
  const input: Stage =
    step > 0 && idle.dataloader >= INPUT_BINDS_SHARE * step
      ? {
          ns: step,
          how: 'assumed',
          evidence: `the GPU waited ${fmtMs(idle.dataloader)} a step (${fmtPct(idle.dataloader / step)}) while the loop was in DataLoader.__next__: the loader delivers about one batch a step, so its period is the step`,
        }
      : {
          ns: null,
          how: 'assumed',
          evidence: `the GPU waited ${fmtMs(idle.dataloader)} a step on the DataLoader: it keeps up, and its capacity is not measured in a window`,
        };
  const { basis: _basis, ...hostStage } = host;
  const gpuNs = Math.max(0, busy - exposed);
  return calibrated({
    source: 'window',
    stepNs: step,
    stages: {
      input,
      host: hostStage,
      gpu: {
        ns: gpuNs,
        how: 'measured',
        // The stage is the busy time less the exposed communication, which is a stage of its own: said as arithmetic,
        // or "3.73 ms: kernels ... 39.0 ms" reads as two figures for one thing (issue 47, the DDP cold read).
        evidence: `kernels, copies and memsets ${fmtMs(busy)} a step${devices > 1 ? ` (at least one of its ${devices} GPUs busy)` : ''}${exposed > 0 ? ` less the ${fmtMs(exposed)} of communication no compute hides (the communication stage): ${fmtMs(gpuNs)}` : ''}`,
      },
      comm: {
        ns: exposed,
        how: 'measured',
        evidence:
          m.comm.collectives > 0
            ? `collectives ${fmtMs(m.comm.commNsPerStep)} a step, ${fmtMs(exposed)} of it not hidden under compute`
            : 'no collective in the window',
      },
    },
    serial,
    loader: null,
    scale: { gpu: 1, host: 1 },
    work: noWorkTouched(),
    batchScale: 1,
    // Analyze does not know decode steps (doctor's run pipeline does): the optimizer's kernels alone.
    gpuPerStep: gpuPerStepOf(m, gpuNs),
    deviceTimed: true,
    inputWaitNs: idle.dataloader,
    stalls: null,
  });
}
