/**
 * The training process's CPU time a step, by thread (pure), from the probe's `cpu` records (CpuRecord): what the
 * stepping thread's own clock (`hostCpuS`) leaves out. On CUDA the backward pass runs on autograd's device thread while
 * the stepping thread waits in `loss.backward()`, so the host's work a step is both threads' CPU together.
 *
 * The records are cumulative readings about a second apart; a step's share is taken over the intervals between two
 * readings that lie in the steady steps and hold no step the probe's own work slowed (the profiled window, a trace
 * being written): the same steps the step statistics use.
 */
import type { CpuRecord } from './records.js';

/** Fewer steps than this between usable readings tell too little (a reading's resolution is 10 ms of CPU). */
export const MIN_THREAD_CPU_STEPS = 5;

export interface ThreadCpuPerStep {
  /** CPU ns a step of the stepping thread, autograd's device threads, the probe's thread and every other thread. */
  steppingNs: number;
  autogradNs: number;
  probeNs: number;
  otherNs: number;
  /** Steps the figures are over. */
  steps: number;
}

/**
 * The CPU a step by thread over the usable intervals; null with fewer than MIN_THREAD_CPU_STEPS steps in them.
 * `steadyFrom`: the first steady step; `slowed`: steps the probe's work slowed (run/steps.ts slowedByProbe); `before`:
 * only steps before it (the statistics' steps end at the profiler window when those after it ran slower).
 */
export function threadCpuPerStep(records: readonly CpuRecord[], steadyFrom: number, slowed: ReadonlySet<number>, before = Number.POSITIVE_INFINITY): ThreadCpuPerStep | null {
  const ordered = [...records].sort((a, b) => a.step - b.step || a.t - b.t);
  let steps = 0;
  const sum = { stepping: 0, autograd: 0, probe: 0, other: 0 };
  for (let i = 1; i < ordered.length; i++) {
    const a = ordered[i - 1] as CpuRecord;
    const b = ordered[i] as CpuRecord;
    const n = b.step - a.step;
    // The interval holds steps a.step+1 .. b.step (a step's record is queued before the reading that counts it).
    if (n <= 0 || a.step + 1 < steadyFrom || b.step >= before) continue;
    let clean = true;
    for (let s = a.step + 1; s <= b.step && clean; s++) if (slowed.has(s)) clean = false;
    if (!clean) continue;
    steps += n;
    sum.stepping += b.steppingCpuS - a.steppingCpuS;
    sum.autograd += b.autogradCpuS - a.autogradCpuS;
    sum.probe += b.probeCpuS - a.probeCpuS;
    sum.other += b.otherCpuS - a.otherCpuS;
  }
  if (steps < MIN_THREAD_CPU_STEPS) return null;
  const per = (s: number) => (Math.max(0, s) / steps) * 1e9;
  return { steppingNs: per(sum.stepping), autogradNs: per(sum.autograd), probeNs: per(sum.probe), otherNs: per(sum.other), steps };
}
