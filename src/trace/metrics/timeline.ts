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
 *                     and the launch gaps after it, until the CPU has a lead again (a kernel
 *                     queued REFILL_LEAD_NS before it ran): the GPU waited for launches only
 *                     because the sync emptied its queue. Counted so only on a device where the
 *                     CPU does get its lead back after most drains; where it never does, the
 *                     CPU cannot keep ahead even without syncs, and those gaps stay 'launch'.
 *                     The same holds after a DataLoader wait or a host-to-device copy call that
 *                     let the queue run dry: their refill is theirs;
 *   5. launch:        the next GPU op was launched after the GPU went idle: the CPU could
 *                     not issue work fast enough (Python and launch overhead);
 *   6. other:         the next op was already queued (a cross-stream or event dependency).
 */
import { CATEGORY_NAMES, KernelCategory } from '../kernelClass.js';
import type { TraceModel } from '../model.js';
import { forEachOpByStart, type GpuOp, OpKind } from '../opLog.js';
import type { HostSpans } from './hostSpans.js';
import { claim, covers, coveringIndex, piecesLen, type Segments, unionOf, unionOfColumns } from './intervals.js';
import type { StepWindow } from './steps.js';
import type { DeviceTime, IdleByCause, NsByCategory, TimelineBucket } from './types.js';

/** A sync call counts as the cause if it covers the moment the GPU went idle, within this tolerance. */
const SYNC_TOLERANCE_NS = 2_000;
/**
 * The CPU has its lead back once a kernel starts this long after its launch returned: the queue holds
 * that much work, more than a launch hiccup (5-20 us) can drain. Healthy loops run tens of ms ahead.
 */
const REFILL_LEAD_NS = 1_000_000;
const TIMELINE_BUCKETS = 240;

export function emptyIdle(): IdleByCause {
  return { dataloader: 0, hostSync: 0, h2dCopy: 0, communication: 0, launch: 0, other: 0 };
}

export function emptyCategories(): NsByCategory {
  const o = {} as NsByCategory;
  for (const c of CATEGORY_NAMES) o[c] = 0;
  return o;
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

/**
 * One pass per device over its ops in start order (the log's runs merged):
 * busy segments form as ops arrive, and each finished segment and the idle gap
 * before it are split over the windows they cross.
 */
export function analyseTimeline(model: TraceModel, spans: HostSpans, windows: StepWindow[]): TimelineResult {
  const host = hostCauses(model, spans);
  const perWindow: DeviceTime[][] = windows.map(() => []);
  let timeline: TimelineBucket[] = [];
  const devices = [...new Set(model.gpu.logs.map((l) => l.device))];
  for (const device of devices) {
    // A parallel parse leaves a log per part and device: merged by start here.
    const logs = model.gpu.logs.filter((l) => l.device === device);
    const d = new DeviceTimeline(device, windows, host, model.collectives.count > 0);
    forEachOpByStart(logs, model.gpu.launches, (op) => d.add(op));
    d.finish();
    d.times.forEach((t, i) => {
      perWindow[i]!.push(t);
    });
    if (timeline.length === 0 && d.segments > 0) timeline = d.busyTimeline();
  }
  return { perWindow, devices, timeline };
}

class DeviceTimeline {
  readonly times: DeviceTime[];
  segments = 0;
  private open = false;
  private segStart = 0;
  private segEnd = 0;
  /** Launch start of the op that opened the segment (its timing decides the 'launch' cause), NaN if unknown. */
  private segLaunch = Number.NaN;
  private gapStart = Number.NEGATIVE_INFINITY;
  /** Largest lead (kernel start minus its launch's end) among the open segment's kernels. */
  private segLead = Number.NEGATIVE_INFINITY;
  /** Between a sync that drained the queue and the CPU's lead coming back. */
  private refilling = false;
  private drains = 0;
  private recovered = 0;
  /** The host wait (index into the sync segments) last counted as a drain: one wait is one drain, however many gaps it spans. */
  private lastSyncWait = -1;
  /** What drained the queue: the cause the refill belongs to. */
  private refillCause: RefillCause = 'hostSync';
  /** [window][cause] launch gaps of the refill, moved to their cause at the end. */
  private readonly refillNs: Float64Array;
  private w = 0;
  private catW = 0;
  private readonly comm: ClippedUnion;
  private readonly compute: ClippedUnion;
  private readonly kernels: ClippedUnion;
  private readonly buckets = new Float64Array(TIMELINE_BUCKETS);
  private readonly categoryNs: Float64Array;
  private readonly lo: number;
  private readonly width: number;

  constructor(
    device: number,
    private readonly windows: StepWindow[],
    private readonly host: HostCauses,
    private readonly withComm: boolean,
  ) {
    this.times = windows.map((w) => ({
      device,
      busyNs: 0,
      idleNs: w.endNs - w.startNs,
      idleByCauseNs: emptyIdle(),
      kernelNsByCategory: emptyCategories(),
      commNs: 0,
      commExposedNs: 0,
      kernels: 0,
      syncRefillNs: 0,
      syncDrains: 0,
    }));
    this.refillNs = new Float64Array(windows.length * REFILL_CAUSES.length);
    this.categoryNs = new Float64Array(windows.length * CATEGORY_NAMES.length);
    this.comm = new ClippedUnion(windows);
    this.compute = new ClippedUnion(windows);
    this.kernels = new ClippedUnion(windows);
    this.lo = windows.length > 0 ? windows[0]!.startNs : 0;
    this.width = windows.length > 0 ? (windows[windows.length - 1]!.endNs - this.lo) / TIMELINE_BUCKETS : 0;
  }

  add(op: GpuOp): void {
    const s = op.startNs;
    const e = s + op.durNs;
    this.addCategory(op);
    if (this.open && s <= this.segEnd) {
      if (e > this.segEnd) this.segEnd = e;
    } else {
      if (this.open) this.closeSegment();
      this.open = true;
      this.segStart = s;
      this.segEnd = e;
      this.segLaunch = op.launch.startNs;
      this.segLead = Number.NEGATIVE_INFINITY;
    }
    if (op.kind === OpKind.kernel && !Number.isNaN(op.launch.startNs)) {
      const lead = s - (op.launch.startNs + op.launch.durNs);
      if (lead > this.segLead) this.segLead = lead;
    }
    // Overlap is only asked of traces with collectives: the other unions are skipped without them.
    if (this.withComm && op.kind === OpKind.kernel) {
      if (op.category === KernelCategory.communication) this.comm.add(s, e);
      else this.compute.add(s, e);
      this.kernels.add(s, e);
    }
  }

  finish(): void {
    if (this.open) this.closeSegment();
    this.splitGap(this.gapStart, Number.POSITIVE_INFINITY, Number.NaN);
    this.comm.finish();
    this.compute.finish();
    this.kernels.finish();
    // Refill gaps are the syncs' doing only where the CPU gets its lead back after most of them.
    const drainsCauseRefill = this.drains > 0 && this.recovered >= this.drains / 2;
    this.times.forEach((t, i) => {
      if (drainsCauseRefill) {
        REFILL_CAUSES.forEach((cause, c) => {
          const ns = this.refillNs[i * REFILL_CAUSES.length + c]!;
          t.idleByCauseNs.launch -= ns;
          t.idleByCauseNs[cause] += ns;
          if (cause === 'hostSync') t.syncRefillNs = ns;
        });
      }
      CATEGORY_NAMES.forEach((name, c) => {
        t.kernelNsByCategory[name] = this.categoryNs[i * CATEGORY_NAMES.length + c]!;
      });
      t.idleNs -= t.busyNs;
      t.commNs = this.comm.lenNs[i]!;
      // comm ∩ compute = comm + compute - (comm ∪ compute); exact in integer nanoseconds.
      const hidden = t.commNs > 0 ? t.commNs + this.compute.lenNs[i]! - this.kernels.lenNs[i]! : 0;
      t.commExposedNs = t.commNs - hidden;
    });
  }

  busyTimeline(): TimelineBucket[] {
    if (!(this.width > 0)) return [];
    return Array.from(this.buckets, (covered, k) => ({ startNs: this.lo + k * this.width, busyShare: covered / this.width }));
  }

  /** Kernel time by category and kernel counts, each op in the window where it starts. */
  private addCategory(op: GpuOp): void {
    const ws = this.windows;
    const s = op.startNs;
    while (this.catW < ws.length && s >= ws[this.catW]!.endNs) this.catW++;
    if (this.catW >= ws.length || s < ws[this.catW]!.startNs) return;
    // Summed by category index (a typed array per window); named at the end.
    this.categoryNs[this.catW * CATEGORY_NAMES.length + op.category]! += op.durNs;
    if (op.kind === OpKind.kernel) this.times[this.catW]!.kernels++;
  }

  private closeSegment(): void {
    this.segments++;
    const s = this.segStart;
    const e = this.segEnd;
    this.splitGap(this.gapStart, s, this.segLaunch);
    if (this.refilling && this.segLead >= REFILL_LEAD_NS) {
      this.refilling = false;
      this.recovered++;
    }
    const ws = this.windows;
    for (let j = this.w; j < ws.length && ws[j]!.startNs < e; j++) {
      const a = Math.max(s, ws[j]!.startNs);
      const b = Math.min(e, ws[j]!.endNs);
      if (b > a) this.times[j]!.busyNs += b - a;
    }
    if (this.width > 0) {
      const first = Math.max(0, Math.floor((s - this.lo) / this.width) - 1);
      const last = Math.min(TIMELINE_BUCKETS - 1, Math.ceil((e - this.lo) / this.width));
      for (let k = first; k <= last; k++) {
        const bs = this.lo + k * this.width;
        const be = bs + this.width;
        if (e > bs && s < be) this.buckets[k]! += Math.min(be, e) - Math.max(bs, s);
      }
    }
    this.gapStart = e;
  }

  /** Hands the idle gap [a, b) to causes, window by window; nextLaunch is the launch of the op that ends it. */
  private splitGap(a: number, b: number, nextLaunch: number): void {
    const ws = this.windows;
    while (this.w < ws.length && ws[this.w]!.endNs <= a) this.w++;
    for (let j = this.w; j < ws.length && ws[j]!.startNs < b; j++) {
      const pa = Math.max(a, ws[j]!.startNs);
      const pb = Math.min(b, ws[j]!.endNs);
      if (pb <= pa) continue;
      const t = this.times[j]!;
      const before = t.idleByCauseNs.launch;
      const gap = attributeGap(this.host, pa, pb, nextLaunch, t.idleByCauseNs);
      if (gap.drainedBy !== null) {
        // One drain per wait: the gaps while the host still waits in the same call are part of it.
        if (!this.refilling || this.refillCause !== gap.drainedBy) this.drains++;
        // A long wait spans many short gaps (the GPU still works through what was queued before it): one drain.
        if (gap.drainedBy === 'hostSync' && gap.syncWait !== this.lastSyncWait) {
          t.syncDrains++;
          this.lastSyncWait = gap.syncWait;
        }
        this.refilling = true;
        this.refillCause = gap.drainedBy;
      }
      // A DataLoader wait or a copy call claims only the part of the gap it covers: the launch rest is refill too.
      if (this.refilling && gap.rest === 'launch') {
        this.refillNs[j * REFILL_CAUSES.length + REFILL_CAUSES.indexOf(this.refillCause)]! += t.idleByCauseNs.launch - before;
      }
    }
  }
}

/** A union of intervals fed in start order, its length split over the windows. */
class ClippedUnion {
  readonly lenNs: Float64Array;
  private open = false;
  private s = 0;
  private e = 0;
  private w = 0;

  constructor(private readonly windows: StepWindow[]) {
    this.lenNs = new Float64Array(windows.length);
  }

  add(s: number, e: number): void {
    if (this.open && s <= this.e) {
      if (e > this.e) this.e = e;
      return;
    }
    if (this.open) this.flush();
    this.open = true;
    this.s = s;
    this.e = e;
  }

  finish(): void {
    if (this.open) this.flush();
    this.open = false;
  }

  private flush(): void {
    const ws = this.windows;
    while (this.w < ws.length && ws[this.w]!.endNs <= this.s) this.w++;
    for (let j = this.w; j < ws.length && ws[j]!.startNs < this.e; j++) {
      const a = Math.max(this.s, ws[j]!.startNs);
      const b = Math.min(this.e, ws[j]!.endNs);
      if (b > a) this.lenNs[j]! += b - a;
    }
  }
}

function hostCauses(model: TraceModel, spans: HostSpans): HostCauses {
  const sc = model.gpu.syncCalls;
  const sync: [number, number][] = [...spans.d2hPageable];
  // A blocking copy's own stream sync is the copy's wait: the queue it drains is the copy's (hostSpans.ts).
  const h2d: [number, number][] = [...spans.h2d];
  for (let i = 0; i < sc.count; i++) (spans.copySyncs.has(i) ? h2d : sync).push([sc.startNs[i]!, sc.startNs[i]! + sc.durNs[i]!]);
  const cpu = (list: { startNs: number; endNs: number }[]) => unionOf(list.map((s) => [s.startNs, s.endNs] as const));
  return {
    dataloader: cpu(model.dataLoader),
    communication: unionOfColumns(model.cpuCollectives.startNs, model.cpuCollectives.endNs, model.cpuCollectives.count),
    h2d: unionOf(h2d),
    // A copy into pageable host memory blocks the host until the GPU has caught up: a sync.
    sync: unionOf(sync),
  };
}

/** Host waits whose drained queue makes the following launch gaps theirs (see the header). */
const REFILL_CAUSES = ['hostSync', 'dataloader', 'h2dCopy'] as const;
type RefillCause = (typeof REFILL_CAUSES)[number];

/**
 * Adds the gap to `idle` by cause. Returns what drained the queue (a sync that covered the moment the GPU went idle,
 * or a DataLoader wait or copy call that claimed part of the gap), and what took the part no host span claimed.
 */
function attributeGap(
  host: HostCauses,
  a: number,
  b: number,
  nextLaunch: number,
  idle: IdleByCause,
): { drainedBy: RefillCause | null; rest: 'sync' | 'launch' | 'other' | 'none'; syncWait: number } {
  const pieces = [a, b];
  const loader = claim(pieces, host.dataloader);
  idle.dataloader += loader;
  idle.communication += claim(pieces, host.communication);
  const copy = claim(pieces, host.h2d);
  idle.h2dCopy += copy;
  // A wait drained the queue only if the GPU ran out of work while the host was in it (as for a sync): a
  // fetch that began with the GPU already idle found the queue empty, and what follows is not its refill.
  const drainedBy: RefillCause | null =
    loader > 0 && covers(host.dataloader, a, SYNC_TOLERANCE_NS)
      ? 'dataloader'
      : copy > 0 && covers(host.h2d, a, SYNC_TOLERANCE_NS)
        ? 'h2dCopy'
        : null;
  if (pieces.length === 0) return { drainedBy, rest: 'none', syncWait: -1 };
  const rest = piecesLen(pieces);
  const syncWait = coveringIndex(host.sync, a, SYNC_TOLERANCE_NS);
  if (syncWait >= 0) {
    idle.hostSync += rest;
    return { drainedBy: drainedBy ?? 'hostSync', rest: 'sync', syncWait };
  }
  if (nextLaunch > a) {
    idle.launch += rest;
    return { drainedBy, rest: 'launch', syncWait };
  }
  idle.other += rest;
  return { drainedBy, rest: 'other', syncWait };
}
