/**
 * Joins GPU ops to the runtime calls that launched them (equal
 * `args.correlation`, the rule Kineto guarantees; flows are not 1:1) while the
 * trace streams, and writes the joined ops to one op log per device.
 *
 * Kineto writes each GPU op just before its launch call (two events apart in
 * every torch 2.11 trace measured), so ops wait in a short queue for their
 * launch and leave it in arrival order. An op still unlinked after
 * PENDING_OPS later ops is written with its correlation id instead, and a
 * launch call that finds no waiting op is kept by id: when the log is read,
 * such ops find their call there. Any order of events gives the same links;
 * only memory depends on the order, and in Kineto's it stays a few hundred KB.
 */
import type { Id } from './event.js';
import { type ChunkStore, type GpuOp, type LaunchCall, type OpLog, OpLogWriter, copyGpuOp, emptyGpuOp } from './opLog.js';

const PENDING_OPS = 4096;

/** A launch call kept by id, with the thread that made it (the lane of the ops it launched). */
interface KeptLaunch extends LaunchCall {
  thread: Id;
}

interface PendingOp {
  op: GpuOp;
  device: number;
  /** The op's stream (its tid) and the thread of the call that launched it (null while unknown): its lane. */
  stream: Id;
  launchThread: Id | null;
  correlation: number;
  /** Row of a collective kernel (its launch start is filled in when linked), or -1. */
  collective: number;
  arrival: number;
  linked: boolean;
  /** The next waiting op with the same correlation id (CUDA graphs launch many kernels in one call). */
  nextSame: PendingOp | null;
}

export interface LinkedActivity {
  count: number;
  logs: OpLog[];
  launches: Map<number, LaunchCall>;
}

export class OpLinker {
  private readonly writers = new Map<number, { log: OpLogWriter; lanes: Map<Id, Map<Id | null, number>> }>();
  private readonly waiting = new Map<number, PendingOp>();
  private readonly launches = new Map<number, KeptLaunch>();
  private readonly graphLaunches = new Set<number>();
  /** Waiting ops in arrival order: a ring of reused records (one allocation per slot, not per op). */
  private ring: PendingOp[] = Array.from({ length: 64 }, emptyPending);
  private head = 0;
  private size = 0;
  private arrivals = 0;
  private uncorrelated = 0;

  constructor(
    private readonly onCollectiveLaunch: (row: number, launchStartNs: number) => void,
    private readonly chunkStore: ChunkStore | null = null,
  ) {}

  onOp(device: number, stream: Id, op: GpuOp, correlation: number, collective: number): void {
    const p = this.slot();
    copyGpuOp(p.op, op); // arrives without its launch: the builder's op has none
    p.device = device;
    p.stream = stream;
    p.launchThread = null;
    p.correlation = correlation;
    p.collective = collective;
    p.arrival = this.arrivals++;
    p.linked = correlation < 0; // nothing to wait for
    p.nextSame = null;
    if (correlation >= 0) {
      const call = this.launches.get(correlation);
      if (call !== undefined) {
        const graph = this.graphLaunches.has(correlation);
        this.link(p, call.startNs, call.durNs, call.kind, call.externalId, !graph);
        p.launchThread = call.thread;
        if (!graph) this.launches.delete(correlation);
      } else {
        const first = this.waiting.get(correlation);
        if (first === undefined) this.waiting.set(correlation, p);
        else {
          let last = first;
          while (last.nextSame !== null) last = last.nextSame;
          last.nextSame = p;
        }
      }
    }
    this.drain(false);
  }

  /** A runtime call that can launch GPU work (its fields, not an object: most are consumed at once). */
  onLaunch(correlation: number, thread: Id, startNs: number, durNs: number, kind: number, externalId: number, isGraphLaunch: boolean): void {
    if (!(correlation >= 0)) {
      // Cannot link; kept (under an id no op has) so its time still counts.
      this.launches.set(-2 - this.uncorrelated++, { startNs, durNs, kind, externalId, thread });
      return;
    }
    const first = this.waiting.get(correlation);
    if (first === undefined) {
      if (!this.launches.has(correlation)) this.launches.set(correlation, { startNs, durNs, kind, externalId, thread });
      if (isGraphLaunch) this.graphLaunches.add(correlation);
      return;
    }
    this.waiting.delete(correlation);
    // The first op carries the call's own accounting; a graph launch's call stays kept for kernels still to come.
    let owns = !isGraphLaunch;
    for (let p: PendingOp | null = first; p !== null; p = p.nextSame) {
      this.link(p, startNs, durNs, kind, externalId, owns);
      p.launchThread = thread;
      owns = false;
    }
    if (isGraphLaunch) {
      this.launches.set(correlation, { startNs, durNs, kind, externalId, thread });
      this.graphLaunches.add(correlation);
    }
    this.drain(false);
  }

  finish(): LinkedActivity {
    this.drain(true);
    const logs = [...this.writers.entries()].sort((a, b) => a[0] - b[0]).map(([, w]) => w.log.finish());
    return { count: logs.reduce((n, l) => n + l.count, 0), logs, launches: this.launches };
  }

  private link(p: PendingOp, startNs: number, durNs: number, kind: number, externalId: number, owns: boolean): void {
    const l = p.op.launch;
    l.startNs = startNs;
    l.durNs = durNs;
    l.kind = kind;
    l.externalId = externalId;
    p.op.ownsLaunch = owns;
    p.linked = true;
    if (p.collective >= 0) this.onCollectiveLaunch(p.collective, startNs);
  }

  /** The next free slot at the ring's tail (the ring doubles when full). */
  private slot(): PendingOp {
    const ring = this.ring;
    if (this.size === ring.length) {
      const grown: PendingOp[] = [];
      for (let i = 0; i < this.size; i++) grown.push(ring[(this.head + i) % ring.length]!);
      while (grown.length < ring.length * 2) grown.push(emptyPending());
      this.ring = grown;
      this.head = 0;
    }
    return this.ring[(this.head + this.size++) % this.ring.length]!;
  }

  /** Writes the oldest ops while they are linked or have waited long enough (everything when `all`). */
  private drain(all: boolean): void {
    const ring = this.ring;
    while (this.size > 0) {
      const p = ring[this.head]!;
      if (!p.linked && !all && this.arrivals - p.arrival < PENDING_OPS) break;
      if (!p.linked) this.giveUpWaiting(p);
      let w = this.writers.get(p.device);
      if (w === undefined) this.writers.set(p.device, (w = { log: new OpLogWriter(p.device, this.chunkStore), lanes: new Map() }));
      let byThread = w.lanes.get(p.stream);
      if (byThread === undefined) w.lanes.set(p.stream, (byThread = new Map()));
      let lane = byThread.get(p.launchThread);
      if (lane === undefined) byThread.set(p.launchThread, (lane = w.log.lane(`${p.stream}|${p.launchThread ?? ''}`)));
      p.op.lane = lane;
      w.log.append(p.op);
      p.collective = -1;
      p.nextSame = null;
      this.head = (this.head + 1) % ring.length;
      this.size--;
    }
  }

  /** Written without its launch: the reader looks the correlation id up among the kept calls. */
  private giveUpWaiting(p: PendingOp): void {
    p.op.correlation = p.correlation;
    // Ops leave in arrival order, so p heads its correlation's chain.
    if (this.waiting.get(p.correlation) === p) {
      if (p.nextSame === null) this.waiting.delete(p.correlation);
      else this.waiting.set(p.correlation, p.nextSame);
    }
  }
}

function emptyPending(): PendingOp {
  return { op: emptyGpuOp(), device: 0, stream: 0, launchThread: null, correlation: -1, collective: -1, arrival: 0, linked: false, nextSame: null };
}
