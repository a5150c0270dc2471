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
  // Sort-merge join on correlation: typed arrays only (a Map of every runtime call
  // costs ~70 bytes an entry, this costs 4).
  const rOrder = sortedByKey(runtime.correlation, runtime.count);
  const gOrder = sortedByKey(gpu.correlation, gpu.count);
  const launchOf = new Int32Array(gpu.count).fill(-1);
  const gemmOf = new Int32Array(gpu.count).fill(-1);
  let r = 0;
  for (let k = 0; k < gOrder.length; k++) {
    const i = gOrder[k]!;
    const c = gpu.correlation[i]!;
    if (c < 0) continue;
    while (r < rOrder.length && runtime.correlation[rOrder[r]!]! < c) r++;
    if (r >= rOrder.length) break;
    const ri = rOrder[r]!;
    if (runtime.correlation[ri] !== c) continue;
    launchOf[i] = ri;
    const ext = runtime.externalId[ri]!;
    if (ext >= 0) {
      const g = model.gemmByExternalId.get(ext);
      if (g !== undefined) gemmOf[i] = g;
    }
  }
  return { launchOf, gemmOf };
}

function sortedByKey(keys: Float64Array, n: number): Int32Array {
  const order = new Int32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  return order.sort((a, b) => keys[a]! - keys[b]!);
}
