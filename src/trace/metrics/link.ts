/**
 * Links GPU activities to the runtime calls that launched them (equal
 * `args.correlation`, the rule Kineto guarantees; flows are not 1:1) and,
 * through the runtime call's External id, to the GEMM CPU op that issued them.
 */
import type { TraceModel } from '../model.js';

export interface Links {
  /** Runtime-call index per GPU op, -1 when unlinked. */
  launchOf: Int32Array;
  /** GemmOp index per GPU op, -1 when not issued by a known GEMM op. */
  gemmOf: Int32Array;
}

export function linkGpuOps(model: TraceModel): Links {
  const { gpu, runtime } = model;
  const byCorrelation = new Map<number, number>();
  for (let i = 0; i < runtime.count; i++) {
    const c = runtime.correlation[i]!;
    if (c >= 0) byCorrelation.set(c, i);
  }
  const launchOf = new Int32Array(gpu.count).fill(-1);
  const gemmOf = new Int32Array(gpu.count).fill(-1);
  for (let i = 0; i < gpu.count; i++) {
    const c = gpu.correlation[i]!;
    if (c < 0) continue;
    const r = byCorrelation.get(c);
    if (r === undefined) continue;
    launchOf[i] = r;
    const ext = runtime.externalId[r]!;
    if (ext >= 0) {
      const g = model.gemmByExternalId.get(ext);
      if (g !== undefined) gemmOf[i] = g;
    }
  }
  return { launchOf, gemmOf };
}
