/**
 * Per-kernel figures: launch statistics, matmul precision, memcpy traffic,
 * GEMM shapes and their alignment, SM efficiency, the top kernels, and
 * collectives. One pass over the op logs gathers the sums; the two medians
 * take a few more (select.ts), so nothing here holds a value per kernel.
 */
import {
  CATEGORY_NAMES,
  COPY_KIND_NAMES,
  CopyKind,
  KernelCategory,
  MatmulPrecision,
  matmulPrecision,
  RuntimeKind,
} from '../kernelClass.js';
import type { TraceModel } from '../model.js';
import { forEachOp, type GpuOp, OpKind } from '../opLog.js';
import type { NamedKernelTime } from './kernelMix.js';
import { Medians } from './select.js';
import type { StepWindow } from './steps.js';
import type { CommStats, CopyStats, GemmShapeStat, KernelStat, LaunchStats, PrecisionStats } from './types.js';
import { isHalfDtype } from '../../util/dtype.js';

export function median(values: ArrayLike<number>): number {
  const n = values.length;
  if (n === 0) return 0;
  const sorted = Float64Array.from(values as ArrayLike<number>).sort();
  return n % 2 ? sorted[(n - 1) >> 1]! : (sorted[n / 2 - 1]! + sorted[n / 2]!) / 2;
}

/** Ops whose start falls inside one of the windows (the analysed steps). */
export function inWindows(windows: StepWindow[]): (t: number) => boolean {
  if (windows.length === 0) return () => false;
  const lo = windows[0]!.startNs;
  const hi = windows[windows.length - 1]!.endNs;
  return (t) => t >= lo && t < hi;
}

export interface KernelFigures {
  launch: LaunchStats;
  precision: PrecisionStats;
  copies: CopyStats[];
  gemmShapes: GemmShapeStat[];
  topKernels: KernelStat[];
  smEfficiency: number | null;
  pageableH2dExample: { name: string; atNs: number; bytes: number; durNs: number } | null;
  /** Every distinct kernel name with its totals over the windows (for kernelMix; not in the JSON). */
  byName: NamedKernelTime[];
  /** Convolutions with a FLOP count (convFlops.ts) over the windows, for modelFlops (not in the JSON). */
  convolutions: ConvolutionTotals;
}

export interface ConvolutionTotals {
  /** Convolution CPU ops with kernels in the windows, and their FLOPs. */
  calls: number;
  flops: number;
  /** Their matmul-class kernel time (cuDNN's layout transposes and other helpers left out, as from matmul time). */
  matmulNs: number;
}

const MATMUL_CATEGORIES = new Set<number>([KernelCategory.gemm, KernelCategory.conv, KernelCategory.attention]);

export function kernelFigures(model: TraceModel, windows: StepWindow[], topLimit: number): KernelFigures {
  const { gpu } = model;
  const inside = inWindows(windows);
  const gemmCalls = model.gemmCalls;
  // launch
  let kernels = 0;
  let linked = 0;
  let shorter = 0;
  // Sums of nanoseconds live in a typed array: a double in a variable the pass's closure writes is a new
  // heap number at every addition, which made the pass allocate per kernel.
  const sums = new Float64Array(2);
  const GPU_KERNEL_NS = 0;
  const CPU_LAUNCH_NS = 1;
  // precision
  const byPrecision = [0, 0, 0, 0, 0, 0];
  const fp32ByName = new Map<number, { count: number; total: number }>();
  const precisionByPair = new Map<number, MatmulPrecision>();
  // top kernels, copies, SM efficiency, pageable example
  const byName = new Map<number, { count: number; total: number; cat: number }>();
  const byCopy = new Map<number, { count: number; bytes: number; dur: number }>();
  let pageable: { nameId: number; startNs: number; bytes: number; durNs: number } | null = null;
  // GEMM shapes: time per shape, and calls counted once per GEMM CPU op (one op may launch a GEMM plus a split-K reduction)
  const gemmNs = new Float64Array(model.gemmOps.length);
  const gemmCallCount = new Int32Array(model.gemmOps.length);
  const gemmCallSeen = new Uint8Array(gemmCalls.count);
  // Convolutions: calls, FLOPs, matmul kernel ns (a typed array, as `sums`).
  const conv = new Float64Array(3);
  // Kernel time by occupancy value (few distinct: blocks / SMs), in integer ns: the weighted mean is then the same
  // in any order of ops (parsing on several threads merges them in another order).
  const smDurNs = new ValueSums();
  // Medians of kernel durations (series 0) and launch-to-start delays (1): their first pass is this one.
  const medians = new Medians(2);
  const times = (op: GpuOp) => {
    if (op.kind !== OpKind.kernel || !inside(op.startNs)) return;
    medians.visit(0, op.durNs);
    if (!Number.isNaN(op.launch.startNs)) medians.visit(1, op.startNs - (op.launch.startNs + op.launch.durNs));
  };

  const visit = (op: GpuOp) => {
    const l = op.launch;
    if (op.ownsLaunch && l.kind === RuntimeKind.launch && inside(l.startNs)) sums[CPU_LAUNCH_NS]! += l.durNs;
    const t = op.startNs;
    if (!inside(t)) return;
    const d = op.durNs;
    let e = byName.get(op.nameId);
    if (e === undefined) byName.set(op.nameId, (e = { count: 0, total: 0, cat: op.category }));
    e.count++;
    e.total += d;
    if (op.kind === OpKind.memcpy) {
      let c = byCopy.get(op.copyKind);
      if (c === undefined) byCopy.set(op.copyKind, (c = { count: 0, bytes: 0, dur: 0 }));
      c.count++;
      c.bytes += Math.max(0, op.bytes);
      c.dur += d;
      if (op.copyKind === CopyKind.h2dPageable && (pageable === null || d > pageable.durNs))
        pageable = { nameId: op.nameId, startNs: t, bytes: op.bytes, durNs: d };
    }
    if (op.kind !== OpKind.kernel) return;
    kernels++;
    sums[GPU_KERNEL_NS]! += d;
    times(op);
    if (!Number.isNaN(l.startNs)) {
      linked++;
      if (d < l.durNs) shorter++;
    }
    if (op.smShare >= 0) smDurNs.add(op.smShare, d);
    const g = l.externalId >= 0 ? gemmCallIndex(gemmCalls, l.externalId) : -1;
    const gemm = g >= 0 ? gemmCalls.gemm[g]! : -1;
    const convFlops = gemm >= 0 ? model.gemmOps[gemm]!.convFlops : null;
    const matmul = MATMUL_CATEGORIES.has(op.category);
    if (convFlops !== null) {
      // A convolution: its FLOPs once per call, its matmul kernels' time; it has no GEMM shape.
      if (gemmCallSeen[g] === 0) {
        gemmCallSeen[g] = 1;
        conv[0]! += 1;
        conv[1]! += convFlops;
      }
      if (matmul) conv[2]! += d;
    }
    if (matmul) {
      // The precision depends on the kernel name and the op's dtype only: worked out once per pair (regular expressions).
      // A convolution's kernel is read by its name alone, as before convolutions were linked to their ops.
      const pairKey = op.nameId * (model.gemmOps.length + 1) + gemm + 1;
      let p = precisionByPair.get(pairKey);
      if (p === undefined)
        precisionByPair.set(
          pairKey,
          (p = matmulPrecision(model.names[op.nameId]!, gemm >= 0 && convFlops === null ? model.gemmOps[gemm]!.dtype : null)),
        );
      byPrecision[p]! += d;
      if (p === MatmulPrecision.fp32) {
        let f = fp32ByName.get(op.nameId);
        if (f === undefined) fp32ByName.set(op.nameId, (f = { count: 0, total: 0 }));
        f.count++;
        f.total += d;
      }
    }
    if (gemm >= 0 && convFlops === null) {
      gemmNs[gemm]! += d;
      if (gemmCallSeen[g] === 0) {
        gemmCallSeen[g] = 1;
        gemmCallCount[gemm]!++;
      }
    }
  };
  forEachOp(gpu.logs, gpu.launches, visit);
  // Launch calls no op consumed while parsing (graph launches, launches of ops never recorded).
  for (const call of gpu.launches.values())
    if (call.kind === RuntimeKind.launch && inside(call.startNs)) sums[CPU_LAUNCH_NS]! += call.durNs;

  while (medians.endPass([kernels, linked])) forEachOp(gpu.logs, gpu.launches, times);
  const [medianKernelNs, medianLaunchToStartNs] = medians.results();
  const tc = byPrecision[1]! + byPrecision[2]! + byPrecision[3]!;
  const known = tc + byPrecision[4]!;
  const stat = (id: number, category: string, e: { count: number; total: number }): KernelStat => ({
    name: model.names[id]!,
    category: category as KernelStat['category'],
    count: e.count,
    totalNs: e.total,
    meanNs: e.total / e.count,
  });
  const ex = pageable as { nameId: number; startNs: number; bytes: number; durNs: number } | null;
  return {
    launch: {
      kernels,
      kernelsPerStep: windows.length ? kernels / windows.length : 0,
      medianKernelNs: medianKernelNs!,
      cpuLaunchNs: sums[CPU_LAUNCH_NS]!,
      gpuKernelNs: sums[GPU_KERNEL_NS]!,
      medianLaunchToStartNs: medianLaunchToStartNs!,
      shorterThanLaunchFraction: linked ? shorter / linked : 0,
      graphLaunchesPerStep: windows.length ? gpu.graphLaunchStartsNs.filter(inside).length / windows.length : 0,
    },
    precision: {
      tensorCore16Ns: byPrecision[1]!,
      tensorCoreTf32Ns: byPrecision[2]!,
      tensorCore8Ns: byPrecision[3]!,
      fp32Ns: byPrecision[4]!,
      unknownNs: byPrecision[5]!,
      tensorCoreShare: known > 0 ? tc / known : null,
      topFp32Kernels: [...fp32ByName.entries()]
        .sort((a, b) => b[1].total - a[1].total)
        .slice(0, 5)
        .map(([id, e]) => stat(id, 'gemm', e)),
    },
    copies: [...byCopy.entries()]
      .sort((a, b) => b[1].dur - a[1].dur)
      .map(([k, e]) => ({
        kind: COPY_KIND_NAMES[k]!,
        count: e.count,
        bytes: e.bytes,
        durNs: e.dur,
        bandwidthGBs: e.dur > 0 ? e.bytes / e.dur : 0,
      })),
    gemmShapes: gemmShapeStats(model, gemmNs, gemmCallCount),
    topKernels: [...byName.entries()]
      .sort((a, b) => b[1].total - a[1].total)
      .slice(0, topLimit)
      .map(([id, e]) => stat(id, CATEGORY_NAMES[e.cat]!, e)),
    smEfficiency: smDurNs.weightedMean(),
    convolutions: { calls: conv[0]!, flops: conv[1]!, matmulNs: conv[2]! },
    byName: [...byName.entries()].map(([id, e]) => ({ name: model.names[id]!, category: e.cat, count: e.count, totalNs: e.total })),
    pageableH2dExample: ex === null ? null : { name: model.names[ex.nameId]!, atNs: ex.startNs, bytes: ex.bytes, durNs: ex.durNs },
  };
}

/** Index in the sorted GEMM calls of an External id, or -1. */
export function gemmCallIndex(calls: TraceModel['gemmCalls'], ext: number): number {
  let lo = 0;
  let hi = calls.count - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const v = calls.externalId[mid]!;
    if (v < ext) lo = mid + 1;
    else if (v > ext) hi = mid - 1;
    else return mid;
  }
  return -1;
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

/** The multiple of elements tensor cores want a 16-bit GEMM's leading dimensions in. */
export const HALF_ALIGNMENT = 8;

/** Tensor cores want leading dimensions in multiples of 8 elements for 16-bit types, 4 for 32-bit, 16 for 8-bit. */
export function alignmentFor(dtype: string | null): number {
  if (dtype === null) return HALF_ALIGNMENT;
  if (isHalfDtype(dtype)) return HALF_ALIGNMENT;
  if (/Float8|fp8|e4m3|e5m2|int8|char/i.test(dtype)) return 16;
  return 4;
}

function gemmShapeStats(model: TraceModel, gemmNs: Float64Array, calls: Int32Array): GemmShapeStat[] {
  const out: GemmShapeStat[] = [];
  model.gemmOps.forEach((op, g) => {
    const t = gemmNs[g]!;
    if (t <= 0) return;
    const dims = gemmDims(op.name, op.dims);
    if (!dims) return;
    const n = calls[g] || 1;
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
  const inside = inWindows(windows);
  const sizes: number[] = [];
  let bytes = 0;
  let allReduces = 0;
  const c = model.collectives;
  for (let i = 0; i < c.count; i++) {
    if (!inside(c.startNs[i]!)) continue;
    sizes.push(c.bytes[i]!);
    bytes += c.bytes[i]!;
    if (/all_?reduce/i.test(model.names[c.nameId[i]!]!)) allReduces++;
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

/** Weights summed by value, in a typed array (no heap number per addition). */
class ValueSums {
  private readonly index = new Map<number, number>();
  private weights = new Float64Array(64);

  add(value: number, weight: number): void {
    let i = this.index.get(value);
    if (i === undefined) {
      i = this.index.size;
      this.index.set(value, i);
      if (i >= this.weights.length) {
        const bigger = new Float64Array(2 * this.weights.length);
        bigger.set(this.weights);
        this.weights = bigger;
      }
    }
    this.weights[i]! += weight;
  }

  /** Sum of value x weight over the sum of weights, taken in increasing order of value; null without weight. */
  weightedMean(): number | null {
    let weighted = 0;
    let total = 0;
    for (const v of [...this.index.keys()].sort((a, b) => a - b)) {
      const w = this.weights[this.index.get(v)!]!;
      weighted += v * w;
      total += w;
    }
    return total > 0 ? weighted / total : null;
  }
}
