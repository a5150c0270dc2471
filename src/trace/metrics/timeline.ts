/**
 * GPU busy and idle time per step and device, and why the GPU sat idle.
 *
 * Busy = the union of kernel, memcpy and memset intervals on a device. Each
 * idle gap is handed to causes in this order, each taking the part of the gap
 * it covers and leaving the rest to the next:
 *   1. dataloader:    the host was inside `enumerate(DataLoader)#...__next__`;
 *   2. communication: the host was inside a CPU-side collective (gloo, barrier, c10d);
 *   3. h2dCopy:       the host was inside the API call of a host-to-device copy;
 *   4. hostSync:      the host was blocked in a synchronising call (cudaStreamSynchronize,
 *                     cudaDeviceSynchronize, a blocking copy ...) at the moment the GPU ran out
 *                     of work, so the queue drained and the rest of the gap is the refill;
 *   5. launch:        the next GPU op was launched after the GPU went idle: the CPU could
 *                     not issue work fast enough (Python and launch overhead);
 *   6. other:         the next op was already queued (a cross-stream or event dependency).
 */
import { CATEGORY_NAMES, CopyKind, KernelCategory, RuntimeKind } from '../kernelClass.js';
import type { TraceModel } from '../model.js';
import { EMPTY_SEGMENTS, type Segments, claim, coveredLen, covers, firstEndingAfter, intersectionLen, piecesLen, unionOf } from './intervals.js';
import type { Links } from './link.js';
import type { StepWindow } from './steps.js';
import type { DeviceTime, IdleByCause, NsByCategory, TimelineBucket } from './types.js';

/** A sync call counts as the cause if it covers the moment the GPU went idle, within this tolerance. */
const SYNC_TOLERANCE_NS = 2_000;
const TIMELINE_BUCKETS = 240;

export function emptyIdle(): IdleByCause {
  return { dataloader: 0, hostSync: 0, h2dCopy: 0, communication: 0, launch: 0, other: 0 };
}

export function emptyCategories(): NsByCategory {
  const o = {} as NsByCategory;
  for (const c of CATEGORY_NAMES) o[c] = 0;
  return o;
}

interface DeviceOps {
  device: number;
  /** Op indices sorted by start. */
  order: Int32Array;
  busy: Segments;
  /** Op that starts each busy segment (its launch time decides the 'launch' cause). */
  segFirstOp: Int32Array;
  comm: Segments;
  compute: Segments;
}

interface HostCauses {
  dataloader: Segments;
  communication: Segments;
  h2d: Segments;
  sync: Segments;
}

export interface TimelineResult {
  /** [window][device] */
  perWindow: DeviceTime[][];
  devices: number[];
  timeline: TimelineBucket[];
}

export function analyseTimeline(model: TraceModel, links: Links, windows: StepWindow[]): TimelineResult {
  const devices = groupByDevice(model);
  const host = hostCauses(model, links);
  const perWindow: DeviceTime[][] = windows.map(() => []);
  for (const d of devices) {
    const times = windows.map((w) => deviceWindow(model, links, d, host, w));
    addCategories(model, d, windows, times);
    times.forEach((t, i) => {
      perWindow[i]!.push(t);
    });
  }
  const first = devices.find((d) => d.busy.n > 0);
  return { perWindow, devices: devices.map((d) => d.device), timeline: first ? busyTimeline(first.busy, windows) : [] };
}

function groupByDevice(model: TraceModel): DeviceOps[] {
  const { gpu } = model;
  const ids = [...new Set(gpu.device.subarray(0, gpu.count))].sort((a, b) => a - b);
  return ids.map((device) => {
    let n = 0;
    for (let i = 0; i < gpu.count; i++) if (gpu.device[i] === device) n++;
    const order = new Int32Array(n);
    n = 0;
    for (let i = 0; i < gpu.count; i++) if (gpu.device[i] === device) order[n++] = i;
    order.sort((a, b) => gpu.startNs[a]! - gpu.startNs[b]!);
    // One pass over ops sorted by start builds three unions (all work, communication,
    // compute) and remembers which op opens each busy segment.
    // Unions start small and grow: a busy GPU's ops merge into far fewer segments than ops.
    const busy = new UnionBuilder(0);
    const comm = new UnionBuilder(0);
    const compute = new UnionBuilder(0);
    let firstOp = new Int32Array(16);
    for (const i of order) {
      const s = gpu.startNs[i]!;
      const e = s + gpu.durNs[i]!;
      if (busy.add(s, e)) {
        if (busy.n > firstOp.length) {
          const grown = new Int32Array(firstOp.length * 2);
          grown.set(firstOp);
          firstOp = grown;
        }
        firstOp[busy.n - 1] = i;
      }
      if (gpu.category[i] === KernelCategory.communication) comm.add(s, e);
      else if (gpu.kind[i] === 0) compute.add(s, e);
    }
    return { device, order, busy: busy.done(), segFirstOp: firstOp.subarray(0, busy.n), comm: comm.done(), compute: compute.done() };
  });
}

/** Union of intervals fed in order of start, into typed arrays. */
class UnionBuilder {
  start: Float64Array;
  end: Float64Array;
  n = 0;
  constructor(capacity: number) {
    this.start = new Float64Array(Math.max(capacity, 16));
    this.end = new Float64Array(Math.max(capacity, 16));
  }
  /** Adds [s, e]; returns true when it opened a new segment. */
  add(s: number, e: number): boolean {
    const n = this.n;
    if (n > 0 && s <= this.end[n - 1]!) {
      if (e > this.end[n - 1]!) this.end[n - 1] = e;
      return false;
    }
    if (n === this.start.length) {
      const grow = (a: Float64Array) => {
        const b = new Float64Array(a.length * 2);
        b.set(a);
        return b;
      };
      this.start = grow(this.start);
      this.end = grow(this.end);
    }
    this.start[n] = s;
    this.end[n] = e;
    this.n = n + 1;
    return true;
  }
  done(): Segments {
    return this.n === 0 ? EMPTY_SEGMENTS : { start: this.start.subarray(0, this.n), end: this.end.subarray(0, this.n), n: this.n };
  }
}

function hostCauses(model: TraceModel, links: Links): HostCauses {
  const { gpu, runtime } = model;
  const h2d: [number, number][] = [];
  const sync: [number, number][] = [];
  for (let r = 0; r < runtime.count; r++) {
    if (runtime.kind[r] === RuntimeKind.sync) sync.push([runtime.startNs[r]!, runtime.startNs[r]! + runtime.durNs[r]!]);
  }
  for (let i = 0; i < gpu.count; i++) {
    if (gpu.kind[i] !== 1) continue;
    const r = links.launchOf[i]!;
    if (r < 0) continue;
    const span: [number, number] = [runtime.startNs[r]!, runtime.startNs[r]! + runtime.durNs[r]!];
    const ck = gpu.copyKind[i];
    if (ck === CopyKind.h2dPageable || ck === CopyKind.h2dPinned) h2d.push(span);
    // A copy into pageable host memory blocks the host until the GPU has caught up: a sync.
    else if (ck === CopyKind.d2hPageable) sync.push(span);
  }
  const spans = (list: { startNs: number; endNs: number }[]) => unionOf(list.map((s) => [s.startNs, s.endNs] as const));
  return {
    dataloader: spans(model.dataLoader),
    communication: spans(model.cpuCollectives.filter((c) => !c.name.startsWith('nccl:') && c.name !== 'record_param_comms')),
    h2d: unionOf(h2d),
    sync: unionOf(sync),
  };
}

function deviceWindow(model: TraceModel, links: Links, d: DeviceOps, host: HostCauses, w: StepWindow): DeviceTime {
  const idle = emptyIdle();
  let busy = 0;
  let cursor = w.startNs;
  const b = d.busy;
  let i = firstEndingAfter(b, w.startNs);
  for (; i < b.n && b.start[i]! < w.endNs; i++) {
    const s = Math.max(b.start[i]!, w.startNs);
    const e = Math.min(b.end[i]!, w.endNs);
    if (s > cursor) attributeGap(model, links, host, cursor, s, d.segFirstOp[i]!, idle);
    busy += e - s;
    cursor = Math.max(cursor, e);
  }
  if (cursor < w.endNs) attributeGap(model, links, host, cursor, w.endNs, i < b.n ? d.segFirstOp[i]! : -1, idle);
  const commNs = coveredLen(d.comm, w.startNs, w.endNs);
  const hidden = commNs > 0 ? intersectionLen(d.comm, d.compute, w.startNs, w.endNs) : 0;
  const dur = w.endNs - w.startNs;
  return {
    device: d.device,
    busyNs: busy,
    idleNs: dur - busy,
    idleByCauseNs: idle,
    kernelNsByCategory: emptyCategories(),
    commNs,
    commExposedNs: commNs - hidden,
    kernels: 0,
  };
}

function attributeGap(model: TraceModel, links: Links, host: HostCauses, a: number, b: number, nextOp: number, idle: IdleByCause): void {
  const pieces = [a, b];
  idle.dataloader += claim(pieces, host.dataloader);
  idle.communication += claim(pieces, host.communication);
  idle.h2dCopy += claim(pieces, host.h2d);
  if (pieces.length === 0) return;
  const rest = piecesLen(pieces);
  if (covers(host.sync, a, SYNC_TOLERANCE_NS)) {
    idle.hostSync += rest;
    return;
  }
  const r = nextOp >= 0 ? links.launchOf[nextOp]! : -1;
  if (r >= 0 && model.runtime.startNs[r]! > a) idle.launch += rest;
  else idle.other += rest;
}

/** Kernel time by category and kernel counts, each op in the window where it starts. */
function addCategories(model: TraceModel, d: DeviceOps, windows: StepWindow[], times: DeviceTime[]): void {
  const { gpu } = model;
  let w = 0;
  for (const i of d.order) {
    const s = gpu.startNs[i]!;
    while (w < windows.length && s >= windows[w]!.endNs) w++;
    if (w >= windows.length) break;
    if (s < windows[w]!.startNs) continue;
    const t = times[w]!;
    t.kernelNsByCategory[CATEGORY_NAMES[gpu.category[i]!]!] += gpu.durNs[i]!;
    if (gpu.kind[i] === 0) t.kernels++;
  }
}

function busyTimeline(busy: Segments, windows: StepWindow[]): TimelineBucket[] {
  if (windows.length === 0) return [];
  const lo = windows[0]!.startNs;
  const hi = windows[windows.length - 1]!.endNs;
  const width = (hi - lo) / TIMELINE_BUCKETS;
  if (!(width > 0)) return [];
  const out: TimelineBucket[] = [];
  for (let k = 0; k < TIMELINE_BUCKETS; k++) {
    const s = lo + k * width;
    out.push({ startNs: s, busyShare: coveredLen(busy, s, s + width) / width });
  }
  return out;
}
