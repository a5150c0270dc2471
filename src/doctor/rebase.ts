/**
 * Trace findings re-based on the run (pure). analyze estimates a finding's gain inside the profiled window, where
 * the profiler's own cost lengthens the step: measured on H200s, 1.1x for a starved ResNet-50, 1.9x for a
 * DataParallel loop, 1.3x for DDP with 100 all-reduces a step. doctor also knows the step outside the window (the
 * probe's GPU-timed median), so it re-bases on it. Where the cost lands depends on what bounds the window:
 * - host-bound window (the busiest GPU busy < 80% of the step): the cost is host time (recording every op and its
 *   shapes), gone in the run too, so the expected step is the window's expected step less Δ = window - run step,
 *   but never below the GPU work the estimate kept (min(expected, busiest GPU busy per step));
 * - GPU-bound window: the cost is on the GPU timeline (activity tracing around every kernel), spread over the
 *   step, so the expected step is scaled by run / window.
 */
import { type EstimatedGain, type Finding, withGain } from '../findings/finding.js';
import type { TraceMetrics } from '../trace/metrics/types.js';
import { fmtMs, fmtPct } from '../util/format.js';

/** The window's step must exceed the run's by this share before re-basing (noise between steps is smaller). */
const MIN_PROFILER_COST_SHARE = 0.02;
/** A window whose busiest GPU is busy this share of the step is GPU-bound. */
const GPU_BOUND_SHARE = 0.8;

/** Mean busy time per step of the busiest device (the per-step figure is a mean over devices). */
function busiestDeviceBusyNs(m: TraceMetrics): number {
  const byDevice = new Map<number, number>();
  for (const st of m.steps) for (const d of st.devices) byDevice.set(d.device, (byDevice.get(d.device) ?? 0) + d.busyNs);
  const n = Math.max(1, m.steps.length);
  return byDevice.size ? Math.max(...byDevice.values()) / n : m.perStep.busyNs;
}

export function rebaseGain(gain: EstimatedGain, metrics: TraceMetrics, runStepNs: number): EstimatedGain {
  const windowStepNs = gain.stepTimeNs;
  const profilerNs = windowStepNs - runStepNs;
  if (!(runStepNs > 0) || !(profilerNs > windowStepNs * MIN_PROFILER_COST_SHARE)) return gain;
  const busyNow = busiestDeviceBusyNs(metrics);
  // The GPU work the estimate keeps: all of it for idle-time fixes, less what the fix saves for GPU-time ones.
  const busyNs = gain.savesGpuWork ? Math.max(0, busyNow - (windowStepNs - gain.expectedStepTimeNs)) : busyNow;
  const gpuBound = busyNow >= GPU_BOUND_SHARE * windowStepNs;
  const expectedNs = gpuBound
    ? Math.min(runStepNs, gain.expectedStepTimeNs * (runStepNs / windowStepNs))
    : Math.min(runStepNs, Math.max(gain.expectedStepTimeNs - profilerNs, Math.min(gain.expectedStepTimeNs, busyNs)));
  const how = gpuBound
    ? `the GPU is busy ${fmtMs(busyNow)} of it, so the cost is on the GPU timeline: expect ${fmtMs(gain.expectedStepTimeNs)} x ${fmtMs(runStepNs)} / ${fmtMs(windowStepNs)} = ${fmtMs(expectedNs)}`
    : `host time, so expect max(${fmtMs(gain.expectedStepTimeNs)} - ${fmtMs(profilerNs)}, min(that, GPU busy ${gain.savesGpuWork ? `after the fix ${fmtMs(busyNs)}` : fmtMs(busyNs)})) = ${fmtMs(expectedNs)}`;
  return {
    stepTimeNs: runStepNs,
    expectedStepTimeNs: expectedNs,
    savedFraction: Math.max(0, 1 - expectedNs / runStepNs),
    arithmetic: `${gain.arithmetic}. On this run: the step is ${fmtMs(runStepNs)} outside the profiled window and ${fmtMs(windowStepNs)} inside it (the profiler's own cost ${fmtMs(profilerNs)}); ${how}`,
    ...(gain.savesGpuWork ? { savesGpuWork: true as const } : {}),
  };
}

/** Re-bases a trace finding's gain on its first rank's run step; severity follows the new gain. */
export function rebaseFinding(
  f: Finding,
  metricsOfRank: (rank: number) => TraceMetrics | null,
  runStepNsOfRank: (rank: number) => number | null,
): Finding {
  if (f.estimatedGain === null) return f;
  const rank = f.ranks[0] ?? 0;
  const m = metricsOfRank(rank);
  const run = runStepNsOfRank(rank);
  if (m === null || run === null) return f;
  const estimatedGain = rebaseGain(f.estimatedGain, m, run);
  if (estimatedGain === f.estimatedGain) return f;
  return withGain(f, estimatedGain);
}

/**
 * One number per finding: when re-basing changed the finding's share of the step and its title states the window's
 * share (as the rules write it, fmtPct), the title states the run's instead and the window's figure goes to the
 * evidence. A title whose percentage is something else (memory fullness, a count) is left as it is.
 */
export function restateShare(windowFinding: Finding, rebased: Finding): Finding {
  const w = windowFinding.estimatedGain;
  const r = rebased.estimatedGain;
  if (w === null || r === null || w === r) return rebased;
  // the rules write shares with fmtPct: the window's share, as written, is what the title states
  const wText = fmtPct(w.savedFraction);
  const rText = fmtPct(r.savedFraction);
  const stated = new RegExp(`(^|[^0-9.])${wText.replace(/[.%]/g, (c) => `\\${c}`)}`);
  if (wText === rText || !stated.test(rebased.title)) return rebased;
  return {
    ...rebased,
    title: rebased.title.replace(stated, (_m, before: string) => `${before}${rText}`),
    evidence: [
      ...rebased.evidence,
      `${rText} is the share of the run's steady ${fmtMs(r.stepTimeNs)} step; in the profiled window it was ${wText} of a ${fmtMs(w.stepTimeNs)} step (the profiler's own cost lengthens it)`,
    ],
  };
}
