/**
 * Host-side spans read off the GPU ops' launch calls: the API
 * calls of host-to-device copies, copies into pageable host memory (they
 * block the host), and every memcpy-kind runtime call; and which sync calls
 * belong to a copy.
 */
import { CopyKind, RuntimeKind } from '../kernelClass.js';
import type { TraceModel } from '../model.js';
import { type GpuOp, OpKind } from '../opLog.js';
import { firstAfter } from './intervals.js';

export interface HostSpans {
  h2d: [number, number][];
  d2hPageable: [number, number][];
  /** Each memcpy-kind runtime call once (cudaMemcpyAsync ...). */
  memcpyCalls: [number, number][];
  /**
   * The sync calls (indices into `model.gpu.syncCalls`) that are a host-to-device copy's own: PyTorch's blocking copy
   * (`x.to(device)` without `non_blocking`) issues the copy, then syncs its stream. The queue they drain is the
   * copy's doing, and pinned memory with `non_blocking=True` removes them, not keeping values on the GPU.
   */
  copySyncs: Set<number>;
}

/** A sync call this soon after a host-to-device copy call returned is that copy's (measured: 0.5-10 us on an H200). */
export const COPY_SYNC_GAP_NS = 50_000;

/** Gathers the spans op by op (so another pass can share the walk); `finish` adds the calls kept by id. */
export class HostSpanCollector {
  readonly spans: HostSpans = { h2d: [], d2hPageable: [], memcpyCalls: [], copySyncs: new Set() };

  add(op: GpuOp): void {
    const l = op.launch;
    if (Number.isNaN(l.startNs)) return;
    const out = this.spans;
    if (op.ownsLaunch && l.kind === RuntimeKind.memcpy) out.memcpyCalls.push([l.startNs, l.startNs + l.durNs]);
    if (op.kind !== OpKind.memcpy) return;
    const ck = op.copyKind;
    if (ck === CopyKind.h2dPageable || ck === CopyKind.h2dPinned) out.h2d.push([l.startNs, l.startNs + l.durNs]);
    else if (ck === CopyKind.d2hPageable) out.d2hPageable.push([l.startNs, l.startNs + l.durNs]);
  }

  finish(model: TraceModel): HostSpans {
    // Calls no op consumed while parsing are counted from where they were kept.
    for (const call of model.gpu.launches.values()) {
      if (call.kind === RuntimeKind.memcpy) this.spans.memcpyCalls.push([call.startNs, call.startNs + call.durNs]);
    }
    this.spans.copySyncs = copySyncsOf(model, this.spans.h2d);
    return this.spans;
  }
}

/** The sync calls that start within COPY_SYNC_GAP_NS of a host-to-device copy call's return (see `copySyncs`). */
function copySyncsOf(model: TraceModel, h2d: readonly [number, number][]): Set<number> {
  const out = new Set<number>();
  if (h2d.length === 0) return out;
  const ends = h2d.map(([, e]) => e).sort((a, b) => a - b);
  const sc = model.gpu.syncCalls;
  for (let i = 0; i < sc.count; i++) {
    const t = sc.startNs[i]!;
    const last = firstAfter(ends, t) - 1; // the last copy return at or before the sync's start
    if (last >= 0 && t - ends[last]! <= COPY_SYNC_GAP_NS) out.add(i);
  }
  return out;
}
