/**
 * How the GPUs one process drives overlap in time: a model split by hand over devices (`seq1.to('cuda:0')`,
 * `seq2.to('cuda:1')`) keeps one GPU idle while the other works; DataParallel's replicas run side by side.
 *
 * Busy = the union of a device's kernel, memcpy and memset intervals (timeline.ts's definition). The devices'
 * ops are read in one pass, all devices' logs merged by start: when an op starts at t, every device's busy state
 * before t is final (no later op starts earlier), so the time before t is split by how many devices were busy.
 * Each device's open busy segment is kept (its start and end), nothing per op. Cross-device copies are Kineto's
 * `Memcpy PtoP` (CUPTI's peer-to-peer kind, `fromDevice` != `toDevice`; `Memcpy DtoD` stays within one device),
 * counted on the device that runs them, in the window where they start.
 */
import { CopyKind } from '../kernelClass.js';
import type { TraceModel } from '../model.js';
import { forEachOpByStart, OpKind } from '../opLog.js';
import type { StepWindow } from './steps.js';
import type { CrossDeviceStats, CrossDeviceStep } from './types.js';

/** Null when fewer than two devices ran work in the windows (one GPU per process: the common case, no pass). */
export function crossDeviceStats(model: TraceModel, windows: readonly StepWindow[]): CrossDeviceStats | null {
  const ids = [...new Set(model.gpu.logs.filter((l) => l.count > 0).map((l) => l.device))].sort((a, b) => a - b);
  if (ids.length < 2 || windows.length === 0) return null;
  const sweep = new Sweep(ids, windows);
  forEachOpByStart(model.gpu.logs, model.gpu.launches, (op, log) => sweep.add(log.device, op.startNs, op.durNs, op.kind, op.copyKind, op.bytes));
  sweep.finish();
  // Devices that did no work inside the analysed steps are left out (a warm-up copy to a spare GPU, say).
  const keep = ids.map((_, k) => sweep.steps.some((s) => s.busyNsByDevice[k]! > 0));
  const devices = ids.filter((_, k) => keep[k]);
  if (devices.length < 2) return null;
  const steps: CrossDeviceStep[] = sweep.steps.map((s, i) => ({
    step: windows[i]!.step,
    busyNsByDevice: s.busyNsByDevice.filter((_, k) => keep[k]),
    anyBusyNs: s.anyBusyNs,
    concurrentNs: s.concurrentNs,
    soloNs: s.anyBusyNs - s.concurrentNs,
    peerCopyNsByDevice: s.peerCopyNsByDevice.filter((_, k) => keep[k]),
    peerCopies: s.peerCopies,
    peerCopyBytes: s.peerCopyBytes,
  }));
  const n = steps.length;
  const mean = (f: (s: CrossDeviceStep) => number) => steps.reduce((a, s) => a + f(s), 0) / n;
  const busyNsByDevice = devices.map((_, k) => mean((s) => s.busyNsByDevice[k]!));
  const anyBusyNs = mean((s) => s.anyBusyNs);
  const sumBusy = busyNsByDevice.reduce((a, b) => a + b, 0);
  return {
    devices,
    steps,
    perStep: {
      busyNsByDevice,
      anyBusyNs,
      concurrentNs: mean((s) => s.concurrentNs),
      soloNs: mean((s) => s.soloNs),
      peerCopyNsByDevice: devices.map((_, k) => mean((s) => s.peerCopyNsByDevice[k]!)),
      peerCopies: mean((s) => s.peerCopies),
      peerCopyBytes: mean((s) => s.peerCopyBytes),
    },
    bubbleShare: anyBusyNs > 0 ? Math.max(0, 1 - sumBusy / (devices.length * anyBusyNs)) : 0,
  };
}

interface StepAcc {
  busyNsByDevice: number[];
  anyBusyNs: number;
  concurrentNs: number;
  peerCopyNsByDevice: number[];
  peerCopies: number;
  peerCopyBytes: number;
}

/** The merged sweep: each device's open busy segment, and the time before `cursor` already split over the windows. */
class Sweep {
  readonly steps: StepAcc[];
  private readonly slot = new Map<number, number>();
  private readonly open: boolean[];
  private readonly segEnd: Float64Array;
  private cursor = Number.NEGATIVE_INFINITY;
  /** The first window not ended by the cursor, and the window of the last copy's start (both only move forward). */
  private w = 0;
  private copyW = 0;
  private readonly ends: number[] = [];

  constructor(
    ids: readonly number[],
    private readonly windows: readonly StepWindow[],
  ) {
    ids.forEach((id, k) => {
      this.slot.set(id, k);
    });
    this.open = ids.map(() => false);
    this.segEnd = new Float64Array(ids.length);
    this.steps = windows.map(() => ({
      busyNsByDevice: ids.map(() => 0),
      anyBusyNs: 0,
      concurrentNs: 0,
      peerCopyNsByDevice: ids.map(() => 0),
      peerCopies: 0,
      peerCopyBytes: 0,
    }));
  }

  add(device: number, s: number, durNs: number, kind: number, copyKind: number, bytes: number): void {
    const k = this.slot.get(device);
    if (k === undefined) return;
    this.advance(s);
    const e = s + durNs;
    if (this.open[k]) {
      if (e > this.segEnd[k]!) this.segEnd[k] = e;
    } else {
      this.open[k] = true;
      this.segEnd[k] = e;
    }
    if (kind === OpKind.memcpy && copyKind === CopyKind.p2p) this.addCopy(k, s, durNs, bytes);
  }

  finish(): void {
    this.advance(Number.POSITIVE_INFINITY);
  }

  /** Splits [cursor, t) by how many devices were busy, then closes the segments that ended by t. */
  private advance(t: number): void {
    if (t <= this.cursor) return;
    const ends = this.ends;
    ends.length = 0;
    for (let k = 0; k < this.open.length; k++) if (this.open[k] && this.segEnd[k]! > this.cursor) ends.push(this.segEnd[k]!);
    if (ends.length > 0) {
      const ws = this.windows;
      while (this.w < ws.length && ws[this.w]!.endNs <= this.cursor) this.w++;
      ends.sort((a, b) => a - b);
      // Between consecutive ends the number of busy devices is constant: ends.length - i.
      let a = this.cursor;
      for (let i = 0; i < ends.length && a < t; i++) {
        const b = Math.min(ends[i]!, t);
        if (b > a) this.level(a, b, ends.length - i);
        a = Math.max(a, b);
      }
      for (let k = 0; k < this.open.length; k++) if (this.open[k]) this.busy(k, this.cursor, Math.min(this.segEnd[k]!, t));
    }
    for (let k = 0; k < this.open.length; k++) if (this.open[k] && this.segEnd[k]! <= t) this.open[k] = false;
    this.cursor = t;
  }

  /** [a, b) with `count` devices busy, split over the windows (from the cursor's window on). */
  private level(a: number, b: number, count: number): void {
    const ws = this.windows;
    for (let j = this.w; j < ws.length && ws[j]!.startNs < b; j++) {
      const len = Math.min(b, ws[j]!.endNs) - Math.max(a, ws[j]!.startNs);
      if (len <= 0) continue;
      this.steps[j]!.anyBusyNs += len;
      if (count >= 2) this.steps[j]!.concurrentNs += len;
    }
  }

  /** Device k busy on [a, b), split over the windows (from the cursor's window on). */
  private busy(k: number, a: number, b: number): void {
    const ws = this.windows;
    for (let j = this.w; j < ws.length && ws[j]!.startNs < b; j++) {
      const len = Math.min(b, ws[j]!.endNs) - Math.max(a, ws[j]!.startNs);
      if (len > 0) this.steps[j]!.busyNsByDevice[k]! += len;
    }
  }

  private addCopy(k: number, s: number, durNs: number, bytes: number): void {
    const ws = this.windows;
    while (this.copyW < ws.length && s >= ws[this.copyW]!.endNs) this.copyW++;
    if (this.copyW >= ws.length || s < ws[this.copyW]!.startNs) return;
    const acc = this.steps[this.copyW]!;
    acc.peerCopyNsByDevice[k]! += durNs;
    acc.peerCopies++;
    if (bytes > 0) acc.peerCopyBytes += bytes;
  }
}
