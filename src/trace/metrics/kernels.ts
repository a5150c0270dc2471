/**
 * Per-kernel figures: launch statistics, matmul precision, memcpy traffic,
 * GEMM shapes and their alignment, and collectives. Each takes the model and
 * its links and returns plain data.
 */
import { CATEGORY_NAMES, COPY_KIND_NAMES, CopyKind, KernelCategory, MatmulPrecision, RuntimeKind, matmulPrecision } from '../kernelClass.js';
import type { TraceModel } from '../model.js';
import type { Links } from './link.js';
import type { StepWindow } from './steps.js';
import type { CommStats, CopyStats, GemmShapeStat, KernelStat, LaunchStats, PrecisionStats } from './types.js';

export function median(values: ArrayLike<number>): number {
  return values.length === 0 ? 0 : medianInPlace(Float64Array.from(values as ArrayLike<number>));
}

/** Median of a Float64Array that may be reordered (no copy: these arrays hold one value per kernel). */
export function medianInPlace(values: Float64Array): number {
  const n = values.length;
  if (n === 0) return 0;
  const sorted = values.sort();
  return n % 2 ? sorted[(n - 1) >> 1]! : (sorted[n / 2 - 1]! + sorted[n / 2]!) / 2;
}

/** Ops whose start falls inside one of the windows (the analysed steps). */
export function inWindows(windows: StepWindow[]): (t: number) => boolean {
  if (windows.length === 0) return () => false;
  const lo = windows[0]!.startNs;
  const hi = windows[windows.length - 1]!.endNs;
  return (t) => t >= lo && t < hi;
}

export function launchStats(model: TraceModel, links: Links, windows: StepWindow[]): LaunchStats {
  const { gpu, runtime } = model;
  const inside = inWindows(windows);
  // Typed arrays of the exact size, sorted in place for the medians: one value per kernel.
  let nKernels = 0;
  let nLinked = 0;
  for (let i = 0; i < gpu.count; i++) {
    if (gpu.kind[i] !== 0 || !inside(gpu.startNs[i]!)) continue;
    nKernels++;
    if (links.launchOf[i]! >= 0) nLinked++;
  }
  const durs = new Float64Array(nKernels);
  const delays = new Float64Array(nLinked);
  nKernels = 0;
  nLinked = 0;
  let gpuKernelNs = 0;
  let shorter = 0;
  for (let i = 0; i < gpu.count; i++) {
    if (gpu.kind[i] !== 0 || !inside(gpu.startNs[i]!)) continue;
    const d = gpu.durNs[i]!;
    durs[nKernels++] = d;
    gpuKernelNs += d;
    const r = links.launchOf[i]!;
    if (r >= 0) {
      delays[nLinked++] = gpu.startNs[i]! - (runtime.startNs[r]! + runtime.durNs[r]!);
      if (d < runtime.durNs[r]!) shorter++;
    }
  }
  let cpuLaunchNs = 0;
  for (let r = 0; r < runtime.count; r++) {
    if (runtime.kind[r] === RuntimeKind.launch && inside(runtime.startNs[r]!)) cpuLaunchNs += runtime.durNs[r]!;
  }
  return {
    kernels: durs.length,
    kernelsPerStep: windows.length ? durs.length / windows.length : 0,
    medianKernelNs: medianInPlace(durs),
    cpuLaunchNs,
    gpuKernelNs,
    medianLaunchToStartNs: medianInPlace(delays),
    shorterThanLaunchFraction: delays.length ? shorter / delays.length : 0,
  };
}

const MATMUL_CATEGORIES = new Set<number>([KernelCategory.gemm, KernelCategory.conv, KernelCategory.attention]);

export function precisionStats(model: TraceModel, links: Links, windows: StepWindow[]): PrecisionStats {
  const { gpu } = model;
  const inside = inWindows(windows);
  const byPrecision = [0, 0, 0, 0, 0, 0];
  const fp32ByName = new Map<number, { count: number; total: number }>();
  for (let i = 0; i < gpu.count; i++) {
    if (!MATMUL_CATEGORIES.has(gpu.category[i]!) || !inside(gpu.startNs[i]!)) continue;
    const g = links.gemmOf[i]!;
    const p = matmulPrecision(model.names[gpu.nameId[i]!]!, g >= 0 ? model.gemmOps[g]!.dtype : null);
    byPrecision[p]! += gpu.durNs[i]!;
    if (p === MatmulPrecision.fp32) {
      const e = fp32ByName.get(gpu.nameId[i]!) ?? { count: 0, total: 0 };
      e.count++;
      e.total += gpu.durNs[i]!;
      fp32ByName.set(gpu.nameId[i]!, e);
    }
  }
  const tc = byPrecision[1]! + byPrecision[2]! + byPrecision[3]!;
  const known = tc + byPrecision[4]!;
  return {
    tensorCore16Ns: byPrecision[1]!,
    tensorCoreTf32Ns: byPrecision[2]!,
    tensorCore8Ns: byPrecision[3]!,
    fp32Ns: byPrecision[4]!,
    unknownNs: byPrecision[5]!,
    tensorCoreShare: known > 0 ? tc / known : null,
    topFp32Kernels: [...fp32ByName.entries()]
      .sort((a, b) => b[1].total - a[1].total)
      .slice(0, 5)
      .map(([id, e]) => ({ name: model.names[id]!, category: 'gemm', count: e.count, totalNs: e.total, meanNs: e.total / e.count })),
  };
}

export function topKernels(model: TraceModel, windows: StepWindow[], limit: number): KernelStat[] {
  const { gpu } = model;
  const inside = inWindows(windows);
  const agg = new Map<number, { count: number; total: number; cat: number }>();
  for (let i = 0; i < gpu.count; i++) {
    if (!inside(gpu.startNs[i]!)) continue;
    const id = gpu.nameId[i]!;
    const e = agg.get(id) ?? { count: 0, total: 0, cat: gpu.category[i]! };
    e.count++;
    e.total += gpu.durNs[i]!;
    agg.set(id, e);
  }
  return [...agg.entries()]
    .sort((a, b) => b[1].total - a[1].total)
    .slice(0, limit)
    .map(([id, e]) => ({ name: model.names[id]!, category: CATEGORY_NAMES[e.cat]!, count: e.count, totalNs: e.total, meanNs: e.total / e.count }));
}

export function copyStats(model: TraceModel, windows: StepWindow[]): CopyStats[] {
  const { gpu } = model;
  const inside = inWindows(windows);
  const agg = new Map<number, { count: number; bytes: number; dur: number }>();
  for (let i = 0; i < gpu.count; i++) {
    if (gpu.kind[i] !== 1 || !inside(gpu.startNs[i]!)) continue;
    const k = gpu.copyKind[i]!;
    const e = agg.get(k) ?? { count: 0, bytes: 0, dur: 0 };
    e.count++;
    e.bytes += Math.max(0, gpu.bytes[i]!);
    e.dur += gpu.durNs[i]!;
    agg.set(k, e);
  }
  return [...agg.entries()]
    .sort((a, b) => b[1].dur - a[1].dur)
    .map(([k, e]) => ({ kind: COPY_KIND_NAMES[k]!, count: e.count, bytes: e.bytes, durNs: e.dur, bandwidthGBs: e.dur > 0 ? e.bytes / e.dur : 0 }));
}

export function firstPageableH2d(model: TraceModel, windows: StepWindow[]): { name: string; atNs: number; bytes: number; durNs: number } | null {
  const { gpu } = model;
  const inside = inWindows(windows);
  let best = -1;
  for (let i = 0; i < gpu.count; i++) {
    if (gpu.copyKind[i] === CopyKind.h2dPageable && inside(gpu.startNs[i]!) && (best < 0 || gpu.durNs[i]! > gpu.durNs[best]!)) best = i;
  }
  if (best < 0) return null;
  return { name: model.names[gpu.nameId[best]!]!, atNs: gpu.startNs[best]!, bytes: gpu.bytes[best]!, durNs: gpu.durNs[best]! };
}

/** Batch, M, N, K of a matrix-multiply op from its input shapes; null when the shapes do not say. */
export function gemmDims(op: string, dims: number[][]): { batch: number; m: number; n: number; k: number } | null {
  const d = dims.filter((x) => x.length > 0);
  const name = op.replace('aten::', '');
  const prod = (xs: number[]) => xs.reduce((a, b) => a * b, 1);
  switch (name) {
    case 'mm':
    case '_scaled_mm': {
      const [a, b] = dims;
      if (a?.length !== 2 || b?.length !== 2) return null;
      return { batch: 1, m: a[0]!, k: a[1]!, n: b[1]! };
    }
    case 'addmm':
    case '_addmm_activation': {
      const a = dims[1];
      const b = dims[2];
      if (a?.length !== 2 || b?.length !== 2) return null;
      return { batch: 1, m: a[0]!, k: a[1]!, n: b[1]! };
    }
    case 'bmm': {
      const [a, b] = dims;
      if (a?.length !== 3 || b?.length !== 3) return null;
      return { batch: a[0]!, m: a[1]!, k: a[2]!, n: b[2]! };
    }
    case 'baddbmm':
    case 'addbmm': {
      const a = dims[1];
      const b = dims[2];
      if (a?.length !== 3 || b?.length !== 3) return null;
      return { batch: a[0]!, m: a[1]!, k: a[2]!, n: b[2]! };
    }
    case 'linear': {
      const [x, w] = dims;
      if (!x || x.length < 1 || w?.length !== 2) return null;
      return { batch: 1, m: prod(x.slice(0, -1)), k: x[x.length - 1]!, n: w[0]! };
    }
    case 'matmul': {
      const [a, b] = d;
      if (!a || !b || a.length < 2 || b.length < 2) return null;
      return { batch: prod(a.slice(0, -2)), m: a[a.length - 2]!, k: a[a.length - 1]!, n: b[b.length - 1]! };
    }
    default:
      return null;
  }
}

/** Tensor cores want leading dimensions in multiples of 8 elements for 16-bit types, 4 for 32-bit, 16 for 8-bit. */
export function alignmentFor(dtype: string | null): number {
  if (dtype === null) return 8;
  if (/BFloat16|Half|bfloat16|float16/.test(dtype)) return 8;
  if (/Float8|fp8|e4m3|e5m2|int8|char/i.test(dtype)) return 16;
  return 4;
}

export function gemmShapeStats(model: TraceModel, links: Links, windows: StepWindow[]): GemmShapeStat[] {
  const { gpu } = model;
  const inside = inWindows(windows);
  const gpuNs = new Float64Array(model.gemmOps.length);
  const calls = new Map<number, Set<number>>();
  for (let i = 0; i < gpu.count; i++) {
    const g = links.gemmOf[i]!;
    if (g < 0 || gpu.kind[i] !== 0 || !inside(gpu.startNs[i]!)) continue;
    gpuNs[g]! += gpu.durNs[i]!;
    // Count calls by distinct launch (one op may launch a GEMM plus a split-K reduction).
    let set = calls.get(g);
    if (!set) calls.set(g, (set = new Set()));
    set.add(model.runtime.externalId[links.launchOf[i]!]!);
  }
  const out: GemmShapeStat[] = [];
  model.gemmOps.forEach((op, g) => {
    const t = gpuNs[g]!;
    if (t <= 0) return;
    const dims = gemmDims(op.name, op.dims);
    if (!dims) return;
    const n = calls.get(g)?.size ?? 1;
    const flopsPerCall = 2 * dims.batch * dims.m * dims.n * dims.k;
    const align = alignmentFor(op.dtype);
    // Any of M, N, K can be a leading dimension once the backward pass transposes the operands.
    const misaligned: string[] = [];
    if (dims.m % align !== 0) misaligned.push(`M=${dims.m}`);
    if (dims.n % align !== 0) misaligned.push(`N=${dims.n}`);
    if (dims.k % align !== 0) misaligned.push(`K=${dims.k}`);
    out.push({
      op: op.name,
      ...dims,
      dtype: op.dtype,
      calls: n,
      gpuNs: t,
      flopsPerCall,
      tflops: (flopsPerCall * n) / t / 1e3,
      misalignedDims: misaligned,
    });
  });
  return out.sort((a, b) => b.gpuNs - a.gpuNs);
}

export function commStats(model: TraceModel, windows: StepWindow[], commNsPerStep: number, exposedNsPerStep: number): CommStats {
  const { gpu } = model;
  const inside = inWindows(windows);
  const sizes: number[] = [];
  let bytes = 0;
  let allReduces = 0;
  for (const c of model.collectives) {
    if (!inside(gpu.startNs[c.opIndex]!)) continue;
    sizes.push(c.bytes);
    bytes += c.bytes;
    if (/all_?reduce/i.test(c.name)) allReduces++;
  }
  return {
    collectives: sizes.length,
    bytes,
    commNsPerStep,
    exposedNsPerStep,
    overlapShare: commNsPerStep > 0 ? 1 - exposedNsPerStep / commNsPerStep : null,
    medianMessageBytes: median(sizes),
    allReducesPerStep: windows.length ? allReduces / windows.length : 0,
  };
}

/** tb_plugin's estimated SM efficiency: duration-weighted min(1, blocks per SM). */
export function smEfficiency(model: TraceModel, windows: StepWindow[]): number | null {
  const { gpu } = model;
  const inside = inWindows(windows);
  let weighted = 0;
  let total = 0;
  for (let i = 0; i < gpu.count; i++) {
    const b = gpu.blocksPerSm[i]!;
    if (gpu.kind[i] !== 0 || b < 0 || !inside(gpu.startNs[i]!)) continue;
    weighted += Math.min(1, b) * gpu.durNs[i]!;
    total += gpu.durNs[i]!;
  }
  return total > 0 ? weighted / total : null;
}
