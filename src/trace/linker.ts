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
import type { Collective } from './model.js';
import { type GpuOp, type LaunchCall, type OpLog, OpLogWriter } from './opLog.js';

const PENDING_OPS = 4096;

interface PendingOp {
  op: GpuOp;
  device: number;
  correlation: number;
  collective: Collective | null;
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
  /** Collective kernels in the order they were written. */
  readonly collectives: Collective[] = [];
  private readonly writers = new Map<number, OpLogWriter>();
  private readonly waiting = new Map<number, PendingOp>();
  private readonly launches = new Map<number, LaunchCall>();
  private readonly graphLaunches = new Set<number>();
  private queue: PendingOp[] = [];
  private head = 0;
  private arrivals = 0;
  private uncorrelated = 0;

  onOp(device: number, op: GpuOp, correlation: number, collective: Collective | null): void {
    const p: PendingOp = {
      op: { ...op, launch: { ...op.launch }, ownsLaunch: false, correlation: -1 },
      device,
      correlation,
      collective,
      arrival: this.arrivals++,
      linked: correlation < 0, // nothing to wait for
      nextSame: null,
    };
    p.op.launch.startNs = Number.NaN;
    if (correlation >= 0) {
      const call = this.launches.get(correlation);
      if (call !== undefined) {
        const graph = this.graphLaunches.has(correlation);
        link(p, call, !graph);
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
    this.queue.push(p);
    this.drain(false);
  }

  onLaunch(correlation: number, call: LaunchCall, isGraphLaunch: boolean): void {
    if (!(correlation >= 0)) {
      // Cannot link; kept (under an id no op has) so its time still counts.
      this.launches.set(-2 - this.uncorrelated++, call);
      return;
    }
    const first = this.waiting.get(correlation);
    if (first === undefined) {
      if (!this.launches.has(correlation)) this.launches.set(correlation, call);
      if (isGraphLaunch) this.graphLaunches.add(correlation);
      return;
    }
    this.waiting.delete(correlation);
    // The first op carries the call's own accounting; a graph launch's call stays kept for kernels still to come.
    let owns = !isGraphLaunch;
    for (let p: PendingOp | null = first; p !== null; p = p.nextSame) {
      link(p, call, owns);
      owns = false;
    }
    if (isGraphLaunch) {
      this.launches.set(correlation, call);
      this.graphLaunches.add(correlation);
    }
    this.drain(false);
  }

  finish(): LinkedActivity {
    this.drain(true);
    const logs = [...this.writers.entries()].sort((a, b) => a[0] - b[0]).map(([, w]) => w.finish());
    return { count: logs.reduce((n, l) => n + l.count, 0), logs, launches: this.launches };
  }

  /** Writes the queue's head while it is linked or has waited long enough (everything when `all`). */
  private drain(all: boolean): void {
    const q = this.queue;
    let h = this.head;
    while (h < q.length) {
      const p = q[h]!;
      if (!p.linked && !all && this.arrivals - p.arrival < PENDING_OPS) break;
      if (!p.linked) this.giveUpWaiting(p);
      let w = this.writers.get(p.device);
      if (w === undefined) this.writers.set(p.device, (w = new OpLogWriter(p.device)));
      w.append(p.op);
      if (p.collective !== null) this.collectives.push(p.collective);
      q[h++] = undefined as never;
    }
    if (h === q.length) {
      this.queue = [];
      h = 0;
    } else if (h > 4096 && h * 2 > q.length) {
      this.queue = q.slice(h);
      h = 0;
    }
    this.head = h;
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

function link(p: PendingOp, call: LaunchCall, owns: boolean): void {
  const l = p.op.launch;
  l.startNs = call.startNs;
  l.durNs = call.durNs;
  l.kind = call.kind;
  l.externalId = call.externalId;
  p.op.ownsLaunch = owns;
  p.linked = true;
  if (p.collective !== null) p.collective.launchStartNs = call.startNs;
}
