/**
 * Host-side spans read off the GPU ops' launch calls: the API
 * calls of host-to-device copies, copies into pageable host memory (they
 * block the host), and every memcpy-kind runtime call.
 */
import { CopyKind, RuntimeKind } from '../kernelClass.js';
import type { TraceModel } from '../model.js';
import { type GpuOp, OpKind } from '../opLog.js';

export interface HostSpans {
  h2d: [number, number][];
  d2hPageable: [number, number][];
  /** Each memcpy-kind runtime call once (cudaMemcpyAsync ...). */
  memcpyCalls: [number, number][];
}

/** Gathers the spans op by op (so another pass can share the walk); `finish` adds the calls kept by id. */
export class HostSpanCollector {
  readonly spans: HostSpans = { h2d: [], d2hPageable: [], memcpyCalls: [] };

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
    return this.spans;
  }
}
