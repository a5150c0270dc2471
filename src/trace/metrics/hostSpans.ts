/**
 * Host-side spans read off the GPU ops' launch calls, in one pass: the API
 * calls of host-to-device copies, copies into pageable host memory (they
 * block the host), and every memcpy-kind runtime call.
 */
import { CopyKind, RuntimeKind } from '../kernelClass.js';
import type { TraceModel } from '../model.js';
import { OpKind, forEachOp } from '../opLog.js';

export interface HostSpans {
  h2d: [number, number][];
  d2hPageable: [number, number][];
  /** Each memcpy-kind runtime call once (cudaMemcpyAsync ...). */
  memcpyCalls: [number, number][];
}

export function hostSpans(model: TraceModel): HostSpans {
  const out: HostSpans = { h2d: [], d2hPageable: [], memcpyCalls: [] };
  forEachOp(model.gpu.logs, model.gpu.launches, (op) => {
    const l = op.launch;
    if (Number.isNaN(l.startNs)) return;
    if (op.ownsLaunch && l.kind === RuntimeKind.memcpy) out.memcpyCalls.push([l.startNs, l.startNs + l.durNs]);
    if (op.kind !== OpKind.memcpy) return;
    const ck = op.copyKind;
    if (ck === CopyKind.h2dPageable || ck === CopyKind.h2dPinned) out.h2d.push([l.startNs, l.startNs + l.durNs]);
    else if (ck === CopyKind.d2hPageable) out.d2hPageable.push([l.startNs, l.startNs + l.durNs]);
  });
  // Calls no op consumed while parsing are counted from where they were kept.
  for (const call of model.gpu.launches.values()) {
    if (call.kind === RuntimeKind.memcpy) out.memcpyCalls.push([call.startNs, call.startNs + call.durNs]);
  }
  return out;
}
