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
 * Then a fix that only shortens the GPU's work (`savesGpuWork`) cannot take the step below the host's own time to
 * issue it: the probe's CPU time of the stepping thread per step floors its expected step (`floorByHost`), where that
 * time is the host's work and not a wait on the GPU (measured on an H100: ResNet-50 at batch 64 was promised 38.2 ->
 * 20.6 ms by mixed precision and ran 39.8 ms after it, its host needing about 38 ms a step).
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
    ...(gain.savesHostWork ? { savesHostWork: true as const } : {}),
  };
}

/** What the probe measured of a rank's host outside the profiler (its steady step statistics, run/steps.ts). */
export interface HostTime {
  /** Median CPU time of the stepping thread per step; null when the probe did not measure it (older records). */
  cpuNs: number | null;
  /** Median steps the GPU was behind the host at step ends; null without GPU timing. */
  stepsInFlight: number | null;
}

/** Sync calls above this share of the window's step make the CPU time suspect (a sync may spin while it waits). */
export const HOST_SYNC_MAX_SHARE = 0.05;
/** About how many launches CUDA's launch queue holds before a launch call blocks (waits on the GPU). */
export const LAUNCH_QUEUE_KERNELS = 1000;

/**
 * Why the stepping thread's CPU time may hold waits on the GPU rather than the host's own work, or null when it is the
 * host's work. A wait on the GPU may spin (CUDA's default schedule spins when there are more cores than GPUs), and CPU
 * time counts a spin: in a sync (`.item()`, `synchronize()`), and in a launch call that finds the launch queue full.
 * A host that waited on a full queue runs ahead of the GPU by the queue's length: more than a step when a step has
 * fewer kernels than the queue holds, so a GPU at most one step behind clears it; a GPU that had done all the work
 * at the step's end (none in flight) clears it whatever the kernel count.
 */
export function hostTimeProblem(host: HostTime, metrics: TraceMetrics): string | null {
  if (host.stepsInFlight === null) return 'the steps were not timed on the GPU, so whether the host waited on it is unknown';
  if (host.stepsInFlight >= 2)
    return `the host ran ${host.stepsInFlight} steps ahead of the GPU (it waits on the GPU, and a launch that finds the queue full may spin)`;
  if (host.stepsInFlight >= 1 && metrics.launch.kernelsPerStep > LAUNCH_QUEUE_KERNELS)
    return `the GPU was still on the step at its end and a step launches ${Math.round(metrics.launch.kernelsPerStep)} kernels, more than the launch queue holds: the host may have spun waiting for room in it`;
  const syncNs = syncNsPerStep(metrics);
  if (syncNs > HOST_SYNC_MAX_SHARE * metrics.perStep.durNs)
    return `sync calls take ${fmtMs(syncNs)} of the window's ${fmtMs(metrics.perStep.durNs)} step, and a sync may spin while it waits`;
  return null;
}

/** GPU idle above this share of the run's step (outside the profiler) means the host side sets the pace. */
export const HOST_PACE_IDLE_SHARE = 0.1;

/** The window's time in sync calls per step. */
function syncNsPerStep(metrics: TraceMetrics): number {
  return metrics.examples.syncCalls.reduce((a, c) => a + c.totalNs, 0) / Math.max(1, metrics.steps.length);
}

/**
 * A fix that shortens the GPU's work (`savesGpuWork`) leaves the host's own time to issue the step: expected =
 * max(expected, host CPU time per step), capped at the step now; and when the host side sets the pace (the GPU idles
 * a tenth of the run's step without syncs, or had finished each step's work at its end) the step itself. Other gains,
 * a host time below the expectation or a CPU time that may hold waits on the GPU (hostTimeProblem: then the
 * arithmetic says so) leave the gain as it is.
 */
export function floorByHost(gain: EstimatedGain, metrics: TraceMetrics, host: HostTime | null): EstimatedGain {
  if (!gain.savesGpuWork) return gain;
  // The GPU idles a tenth of the run's step or more while the host issues no sync: the host side (Python, launches,
  // input) sets the pace, and a fix that only shortens GPU work leaves it. On an H100, ResNet-50 fp32 at batch 64:
  // GPU busy 37.0 ms of a 47.5 ms step, mixed precision promised 29.9 ms and measured 50.3 ms. Not for compile-style
  // fixes, which also remove launches (a Trainer GPT-2 with GPU busy 86% of its step went from 74.6 to 40.8 ms).
  const syncNs = syncNsPerStep(metrics);
  const idleNs = gain.stepTimeNs - metrics.perStep.busyNs;
  if (
    !gain.savesHostWork &&
    idleNs >= HOST_PACE_IDLE_SHARE * gain.stepTimeNs &&
    syncNs <= HOST_SYNC_MAX_SHARE * metrics.perStep.durNs &&
    gain.expectedStepTimeNs < gain.stepTimeNs
  )
    return {
      ...gain,
      expectedStepTimeNs: gain.stepTimeNs,
      savedFraction: 0,
      arithmetic: `${gain.arithmetic}. But outside the profiler the GPU is busy ${fmtMs(metrics.perStep.busyNs)} of the run's ${fmtMs(gain.stepTimeNs)} step (idle ${fmtPct(idleNs / gain.stepTimeNs)}, syncs under ${fmtPct(HOST_SYNC_MAX_SHARE)}): the host side sets the pace, so a shorter GPU step leaves the step at ${fmtMs(gain.stepTimeNs)}. First make the host keep ahead: CUDA graphs (torch.compile mode="reduce-overhead"), a larger batch, a faster input pipeline`,
    };
  if (host === null) return gain;
  // The GPU had finished the step's work at (the median) step end: it waits for the host, whose pace is the step's.
  // Shortening the GPU's work then leaves the step as it is, whatever the host's thread clock says (on an H100 the
  // main thread's CPU time was 21 ms of a 47.5 ms step: the rest is time the clock does not see, the GIL held by the
  // DataLoader's pinning thread, the scheduler); bf16 autocast then measured 50.3 ms. A sync in the step also leaves
  // the GPU idle at its end, so this needs the window's syncs to be small too.
  if (host.stepsInFlight === 0 && gain.expectedStepTimeNs < gain.stepTimeNs) {
    const problem = hostTimeProblem(host, metrics);
    if (problem === null)
      return {
        ...gain,
        expectedStepTimeNs: gain.stepTimeNs,
        savedFraction: 0,
        arithmetic: `${gain.arithmetic}. But the GPU had finished each step's work when the step ended (0 steps in flight, GPU-timed outside the profiler; syncs under ${fmtPct(HOST_SYNC_MAX_SHARE)} of the step): it waits for the host, so a shorter GPU step leaves the step at ${fmtMs(gain.stepTimeNs)}. The host side binds: CUDA graphs (torch.compile mode="reduce-overhead"), a larger batch, or a faster input pipeline come first`,
      };
  }
  if (host.cpuNs === null || !(host.cpuNs > gain.expectedStepTimeNs)) return gain;
  const problem = hostTimeProblem(host, metrics);
  if (problem !== null)
    return {
      ...gain,
      arithmetic: `${gain.arithmetic}. The stepping thread's CPU time is ${fmtMs(host.cpuNs)} a step (outside the profiler), above this expectation, but not taken as a floor: ${problem}`,
    };
  const expectedNs = Math.min(gain.stepTimeNs, host.cpuNs);
  return {
    ...gain,
    expectedStepTimeNs: expectedNs,
    savedFraction: Math.max(0, 1 - expectedNs / gain.stepTimeNs),
    arithmetic: `${gain.arithmetic}. The host needs ${fmtMs(host.cpuNs)} a step to issue this work (the main thread's CPU time, outside the profiler; the GPU kept up with it and syncs are under ${fmtPct(HOST_SYNC_MAX_SHARE)} of the step): the step cannot go below it, so expect max(${fmtMs(gain.expectedStepTimeNs)}, ${fmtMs(host.cpuNs)}) = ${fmtMs(expectedNs)}; after this fix the run is host-bound: next, CUDA graphs (torch.compile mode="reduce-overhead") or a larger batch`,
  };
}

/**
 * Re-bases a trace finding's gain on its first rank's run step, then floors a GPU-work fix by that rank's host time;
 * severity follows the new gain (a fix the host leaves nothing of stays, as info, so the user sees why).
 */
export function rebaseFinding(
  f: Finding,
  metricsOfRank: (rank: number) => TraceMetrics | null,
  runStepNsOfRank: (rank: number) => number | null,
  hostOfRank: (rank: number) => HostTime | null = () => null,
): Finding {
  if (f.estimatedGain === null) return f;
  const rank = f.ranks[0] ?? 0;
  const m = metricsOfRank(rank);
  const run = runStepNsOfRank(rank);
  if (m === null || run === null) return f;
  const estimatedGain = floorByHost(rebaseGain(f.estimatedGain, m, run), m, hostOfRank(rank));
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
