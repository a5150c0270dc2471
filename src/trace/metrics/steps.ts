/**
 * Step windows. A step starts where its ProfilerStep#N span starts on the CPU
 * (or where the previous step's GPU work ended, if later) and ends at the later
 * of its CPU end and the end of the last GPU op launched inside its CPU span:
 * the CPU runs ahead of the GPU, so a step's kernels often finish after the
 * CPU has moved on. This is tb_plugin's rule; with it, windows do not overlap
 * and their sum is the profiled wall time.
 */
import type { TraceModel } from '../model.js';
import type { GpuOp } from '../opLog.js';

export interface StepWindow {
  step: number;
  startNs: number;
  endNs: number;
}

/** What the windows need from the GPU ops, gathered op by op (so another pass can share the walk). */
export class StepWindowBuilder {
  private readonly markers: TraceModel['steps'];
  private readonly gpuEnd: number[];
  private lo = Number.POSITIVE_INFINITY;
  private hi = Number.NEGATIVE_INFINITY;

  constructor(private readonly model: TraceModel) {
    this.markers = model.steps;
    this.gpuEnd = this.markers.map((m) => m.endNs);
  }

  add(op: GpuOp): void {
    const end = op.startNs + op.durNs;
    if (this.markers.length === 0) {
      // No markers: one window over everything the GPU did.
      if (op.startNs < this.lo) this.lo = op.startNs;
      if (end > this.hi) this.hi = end;
      return;
    }
    // Last GPU end among ops launched inside each step's CPU span.
    const t = Number.isNaN(op.launch.startNs) ? op.startNs : op.launch.startNs;
    const s = findStep(this.markers, t);
    if (s >= 0 && end > this.gpuEnd[s]!) this.gpuEnd[s] = end;
  }

  windows(): { windows: StepWindow[]; fromMarkers: boolean } {
    const markers = this.markers;
    if (markers.length === 0) {
      let [lo, hi] = [this.lo, this.hi];
      if (!Number.isFinite(lo)) [lo, hi] = this.model.cpuRangeNs; // no GPU ops: the CPU's extent
      return { windows: hi > lo ? [{ step: 0, startNs: lo, endNs: hi }] : [], fromMarkers: false };
    }
    const windows: StepWindow[] = [];
    let prevEnd = Number.NEGATIVE_INFINITY;
    for (let s = 0; s < markers.length; s++) {
      const m = markers[s]!;
      const start = Math.max(m.startNs, prevEnd);
      const end = Math.max(this.gpuEnd[s]!, start);
      windows.push({ step: m.step, startNs: start, endNs: end });
      prevEnd = end;
    }
    return { windows, fromMarkers: true };
  }
}

/** Index of the marker whose CPU span contains t (markers sorted, non-overlapping), or -1. */
export function findStep(markers: readonly { startNs: number; endNs: number }[], t: number): number {
  let lo = 0;
  let hi = markers.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const m = markers[mid]!;
    if (t < m.startNs) hi = mid - 1;
    else if (t >= m.endNs) lo = mid + 1;
    else return mid;
  }
  return -1;
}
