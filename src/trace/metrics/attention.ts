/**
 * Attention in a step: written out by hand, or fused.
 *
 * Hand-written attention (`q @ k.transpose(-2, -1) * scale`, a mask, `softmax`, dropout, `@ v`) runs as batched
 * matmuls (`aten::bmm` under `aten::matmul`; `baddbmm` in some models) over a score matrix of `[batch x heads, T, T]`,
 * with elementwise and softmax kernels between them that read and write that matrix from memory, in the forward and
 * again in the backward. Found in two steps:
 *   1. by shape: batched GEMMs whose M, N, K are {T, T, d} with the same batch, among them a score form (K = d: the
 *      output is T x T: Q·Kᵀ, and dP = dY·Vᵀ in the backward) and a form that consumes a T x T operand (K = T: P·V, dV,
 *      dQ, dK). Cross-attention (Tq != Tk) is not recognised;
 *   2. by the kernels between them: on one stream, in start order, the kernels (and device-to-device copies) that run
 *      between two kernels of such GEMMs, when no other matmul runs in between and a softmax (forward or backward,
 *      not the loss's log-softmax) is among them. A shape that never has a softmax between its GEMMs is not attention.
 * The pass runs only when step 1 finds a shape, so traces without batched matmuls pay nothing.
 *
 * Fused attention: SDPA's ops (`aten::_scaled_dot_product_{flash,efficient,cudnn}_attention[_backward]`, kept with their
 * shapes by the builder: trace/attentionOps.ts) and the attention kernels by name (flash, fmha, cuDNN's sdpa), so a
 * model that already runs fused attention is never told to.
 */
import { attentionBackend, attentionOpFlops, type AttentionBackend } from '../attentionOps.js';
import { CopyKind, FP32_KERNEL, HALF_KERNEL, isLayoutCopy, KernelCategory } from '../kernelClass.js';
import type { TraceModel } from '../model.js';
import { forEachOpByStart, OpKind } from '../opLog.js';
import { dtypeBytes } from '../../util/dtype.js';
import { fusableKind, type NamedKernelTime } from './kernelMix.js';
import { gemmCallIndex, gemmDims, inWindows } from './kernels.js';
import type { StepWindow } from './steps.js';
import type { AttentionShape, AttentionStats, FusedAttention, HandWrittenAttention, KernelMix } from './types.js';

/** More kernels than this between two attention matmuls is not one attention's chain (a layer's whole forward). */
const MAX_BETWEEN = 24;
/** The batched matmuls that launch the kernels (`matmul` dispatches to `bmm`, whose External id the kernels carry). */
const BATCHED = new Set(['aten::bmm', 'aten::baddbmm']);
const SOFTMAX = /softmax/i;
const NOT_ATTENTION_SOFTMAX = /log_?softmax|LogSoftMax/i;
const SOFTMAX_BACKWARD = /softmax_warp_backward|SoftMaxBackward|softmax_backward/i;
const MASKING = /masked_fill|where/i;
const MATMUL = new Set<number>([KernelCategory.gemm, KernelCategory.conv, KernelCategory.attention]);

/**
 * Hand-written attention's kernels, one by one: per stream (`device|stream`), the starts of its matmuls' kernels, of
 * the kernels between them and of the layout copies around them (what `HandWrittenAttention` adds up). The one definition of which kernels a fused attention
 * kernel replaces: the chains of pointwise kernels (pointwiseChains.ts) take them out to read the step as SDPA leaves it.
 */
export type AttentionKernelStarts = ReadonlyMap<string, ReadonlySet<number>>;

/** An attention shape found by step 1, with what the pass adds up for it. */
interface Group {
  shape: AttentionShape;
  /** Elements of one score matrix. */
  scoreElements: number;
  confirmed: boolean;
  gemmNs: number;
  gemmKernels: number;
  gemmFlops: number;
  scoreGemmCalls: number;
  betweenNs: number;
  betweenKernels: number;
  scoreBytes: number;
  forwardSoftmaxes: number;
  masked: boolean;
  backward: boolean;
  /** The copies that make its operands and its output contiguous (HandWrittenAttention.layoutCopyNs). */
  layoutNs: number;
  layoutKernels: number;
  /** Its matmuls' and layout copies' kernels, by stream: attention's only once a softmax between them confirms the group. */
  ownStarts: Map<string, number[]>;
}

/** Which GEMM ops are attention's score or value matmuls, by the shape rule (step 1): gemm op index -> group, and the groups. */
function attentionShapes(model: TraceModel): { groupOf: Int32Array; groups: Group[] } {
  const groupOf = new Int32Array(model.gemmOps.length).fill(-1);
  const forms = new Map<string, { shape: AttentionShape; score: number[]; consume: number[] }>();
  model.gemmOps.forEach((op, i) => {
    if (op.convFlops !== null || !BATCHED.has(op.name)) return;
    const d = gemmDims(op.name, op.dims);
    if (d === null) return;
    const sizes = [d.m, d.n, d.k].sort((a, b) => a - b);
    // {T, T, d}: two equal sizes are the sequence, the third the head dimension (all three equal: T = d).
    const seq = sizes[1] === sizes[2] ? sizes[2]! : sizes[0] === sizes[1] ? sizes[0]! : -1;
    if (seq < 0) return;
    const headDim = sizes[1] === sizes[2] ? sizes[0]! : sizes[2]!;
    const key = `${d.batch}|${seq}|${headDim}|${op.dtype ?? ''}`;
    let f = forms.get(key);
    if (f === undefined) forms.set(key, (f = { shape: { batch: d.batch, seq, headDim, dtype: op.dtype }, score: [], consume: [] }));
    if (d.k === headDim && d.m === seq && d.n === seq) f.score.push(i);
    if (d.k === seq) f.consume.push(i);
  });
  const groups: Group[] = [];
  for (const f of forms.values()) {
    if (f.score.length === 0 || f.consume.length === 0) continue;
    const g = groups.length;
    for (const i of [...f.score, ...f.consume]) groupOf[i] = g;
    groups.push({
      shape: f.shape,
      scoreElements: f.shape.batch * f.shape.seq * f.shape.seq,
      confirmed: false,
      gemmNs: 0,
      gemmKernels: 0,
      gemmFlops: 0,
      scoreGemmCalls: 0,
      betweenNs: 0,
      betweenKernels: 0,
      scoreBytes: 0,
      forwardSoftmaxes: 0,
      masked: false,
      backward: false,
      layoutNs: 0,
      layoutKernels: 0,
      ownStarts: new Map(),
    });
  }
  return { groupOf, groups };
}

/** Bytes an elementwise kernel writes per element, from the dtype its name carries; the matmuls' dtype otherwise. */
function elementBytes(name: string, fallback: number): number {
  if (HALF_KERNEL.test(name)) return 2;
  if (FP32_KERNEL.test(name)) return 4;
  return fallback;
}

/** What the pass finds: the figures, and the kernels they add up (empty without hand-written attention). */
interface HandWrittenFound {
  stats: HandWrittenAttention | null;
  kernels: AttentionKernelStarts;
}

/** The starts of a stream's kernels, kept as they are added. */
function startsOf(marks: Map<string, Set<number>>, stream: string): Set<number> {
  let s = marks.get(stream);
  if (s === undefined) marks.set(stream, (s = new Set()));
  return s;
}

/** What a stream last ran: the attention group of its last matmul (-1: another matmul, or none yet), and the kernels since. */
interface Lane {
  stream: string;
  group: number;
  ids: number[];
  ns: number[];
  categories: number[];
  starts: number[];
  /** The layout copies that ran last, with no other kernel after them: an attention matmul next takes them as its operands'. */
  copies: { ns: number[]; starts: number[] };
}

/** A group's own kernel (a matmul's or a layout copy's), kept by its stream and start. */
function ownKernel(g: Group, stream: string, startNs: number): void {
  let starts = g.ownStarts.get(stream);
  if (starts === undefined) g.ownStarts.set(stream, (starts = []));
  starts.push(startNs);
}

/** Layout copies (kernelClass.ts isLayoutCopy) next to a group's matmuls: its operands' or its output's. */
function addLayoutCopies(g: Group, stream: string, ns: readonly number[], starts: readonly number[]): void {
  ns.forEach((d, j) => {
    g.layoutNs += d;
    g.layoutKernels++;
    ownKernel(g, stream, starts[j]!);
  });
}

/** Hand-written attention over the windows (step 2), or null when the trace shows none; with its kernels. */
function handWrittenAttention(model: TraceModel, windows: StepWindow[], mathFallback: boolean): HandWrittenFound {
  const { groupOf, groups } = attentionShapes(model);
  const marks = new Map<string, Set<number>>();
  if (groups.length === 0 || windows.length === 0) return { stats: null, kernels: marks };
  const inside = inWindows(windows);
  const calls = model.gemmCalls;
  const callSeen = new Uint8Array(calls.count);
  const byName = new Map<number, { ns: number; category: number }>();
  const names = model.names;
  // Per kernel name, whether it is a layout copy (its regular expression runs once a name).
  const layoutOf = new Int8Array(names.length).fill(-1);
  const layout = (nameId: number): boolean => {
    if (layoutOf[nameId] === -1) layoutOf[nameId] = isLayoutCopy(names[nameId]!) ? 1 : 0;
    return layoutOf[nameId] === 1;
  };
  const lanes = new Map<string, Lane>();
  const flush = (lane: Lane) => {
    const g = groups[lane.group]!;
    const softmaxes = lane.ids.filter((id) => SOFTMAX.test(names[id]!) && !NOT_ATTENTION_SOFTMAX.test(names[id]!));
    if (softmaxes.length === 0) return;
    g.confirmed = true;
    const gemmBytes = dtypeBytes(g.shape.dtype);
    const marked = startsOf(marks, lane.stream);
    for (const t of lane.starts) marked.add(t);
    lane.ids.forEach((id, j) => {
      const name = names[id]!;
      g.betweenNs += lane.ns[j]!;
      g.betweenKernels++;
      g.scoreBytes += g.scoreElements * elementBytes(name, gemmBytes);
      if (MASKING.test(name)) g.masked = true;
      let e = byName.get(id);
      if (e === undefined) byName.set(id, (e = { ns: 0, category: lane.categories[j]! }));
      e.ns += lane.ns[j]!;
    });
    for (const id of softmaxes) {
      if (SOFTMAX_BACKWARD.test(names[id]!)) g.backward = true;
      else g.forwardSoftmaxes++;
    }
  };
  // The kernels after the group's last matmul are not between two of its matmuls: the layout copies they open with
  // make its output contiguous (the forward's `y.transpose(1, 2).contiguous()`, the backward's dQ and dK).
  const leave = (lane: Lane) => {
    let j = 0;
    while (j < lane.ids.length && layout(lane.ids[j]!)) j++;
    addLayoutCopies(groups[lane.group]!, lane.stream, lane.ns.slice(0, j), lane.starts.slice(0, j));
    lane.group = -1;
  };
  const devices = [...new Set(model.gpu.logs.map((l) => l.device))];
  for (const device of devices) {
    const logs = model.gpu.logs.filter((l) => l.device === device);
    forEachOpByStart(logs, model.gpu.launches, (op, log) => {
      // Device-to-device copies inside the chain are its own (the score-sized copies the backward makes); other copies
      // and memsets are not kernels of attention.
      const chainCopy = op.kind === OpKind.memcpy && op.copyKind === CopyKind.d2d;
      if ((op.kind !== OpKind.kernel && !chainCopy) || !inside(op.startNs)) return;
      // Kernels of a stream run in order whatever thread launched them (the backward's come from autograd's).
      const stream = `${device}|${log.laneKeys[op.lane]!.split('|')[0]}`;
      let lane = lanes.get(stream);
      if (lane === undefined)
        lanes.set(stream, (lane = { stream, group: -1, ids: [], ns: [], categories: [], starts: [], copies: { ns: [], starts: [] } }));
      if (!MATMUL.has(op.category)) {
        if (op.kind === OpKind.kernel && layout(op.nameId)) {
          lane.copies.ns.push(op.durNs);
          lane.copies.starts.push(op.startNs);
        } else lane.copies.ns.length = lane.copies.starts.length = 0;
        if (lane.group < 0) return;
        if (lane.ids.length >= MAX_BETWEEN) leave(lane);
        else {
          lane.ids.push(op.nameId);
          lane.ns.push(op.durNs);
          lane.categories.push(op.category);
          lane.starts.push(op.startNs);
        }
        return;
      }
      const c = op.launch.externalId >= 0 ? gemmCallIndex(calls, op.launch.externalId) : -1;
      const gemm = c >= 0 ? calls.gemm[c]! : -1;
      const group = gemm >= 0 ? groupOf[gemm]! : -1;
      if (group >= 0 && lane.group === group && lane.ids.length > 0) flush(lane);
      if (lane.group >= 0 && lane.group !== group) leave(lane);
      // The attention starts here: the layout copies just before its matmul make its operands contiguous (q and k's
      // transposed views in the forward, the incoming gradient in the backward).
      if (group >= 0 && lane.group !== group) addLayoutCopies(groups[group]!, stream, lane.copies.ns, lane.copies.starts);
      lane.group = group;
      lane.ids.length = 0;
      lane.ns.length = 0;
      lane.categories.length = 0;
      lane.starts.length = 0;
      lane.copies.ns.length = lane.copies.starts.length = 0;
      if (group < 0) return;
      const g = groups[group]!;
      g.gemmNs += op.durNs;
      g.gemmKernels++;
      ownKernel(g, stream, op.startNs);
      if (callSeen[c] === 0) {
        callSeen[c] = 1;
        const d = gemmDims(model.gemmOps[gemm]!.name, model.gemmOps[gemm]!.dims)!;
        g.gemmFlops += 2 * d.batch * d.m * d.n * d.k;
        if (d.k === g.shape.headDim && d.m === g.shape.seq && d.n === g.shape.seq) {
          g.scoreGemmCalls++;
          g.scoreBytes += g.scoreElements * dtypeBytes(g.shape.dtype);
        }
      }
    });
  }
  const found = groups.filter((g) => g.confirmed);
  if (found.length === 0) return { stats: null, kernels: new Map() };
  for (const g of found) for (const [stream, starts] of g.ownStarts) for (const t of starts) startsOf(marks, stream).add(t);
  const n = windows.length;
  const sum = (f: (g: Group) => number) => found.reduce((a, g) => a + f(g), 0) / n;
  const byKind: KernelMix['fusable'] = { castNs: 0, pointwiseNs: 0, normNs: 0, softmaxNs: 0, reduceNs: 0, optimizerNs: 0 };
  // By kind, the kernels KernelMix.fusable holds: the device-to-device copies between are no kernels, and not there.
  for (const [id, e] of byName) {
    const kind = fusableKind(names[id]!, e.category);
    if (kind !== null) byKind[kind] += e.ns / n;
  }
  const stats: HandWrittenAttention = {
    shapes: found.map((g) => g.shape),
    gemmNs: sum((g) => g.gemmNs),
    gemmKernels: sum((g) => g.gemmKernels),
    gemmFlops: sum((g) => g.gemmFlops),
    betweenNs: sum((g) => g.betweenNs),
    betweenKernels: sum((g) => g.betweenKernels),
    betweenByKind: byKind,
    layoutCopyNs: sum((g) => g.layoutNs),
    layoutCopyKernels: sum((g) => g.layoutKernels),
    topBetween: [...byName.entries()]
      .sort((a, b) => b[1].ns - a[1].ns)
      .slice(0, 3)
      .map(([id, e]) => ({ name: names[id]!, ns: e.ns / n })),
    scoreBytes: sum((g) => g.scoreBytes),
    // Each forward softmax is one attention's forward: Q·Kᵀ and P·V, 2·batch·T·T·d each.
    forwardCalls: sum((g) => g.forwardSoftmaxes),
    forwardFlops: sum((g) => g.forwardSoftmaxes * 4 * g.scoreElements * g.shape.headDim),
    masked: found.some((g) => g.masked),
    backward: found.some((g) => g.backward),
    mathFallback,
  };
  return { stats, kernels: marks };
}

/** Fused attention over the windows: SDPA's ops by CPU start, and attention kernels by name; null when neither ran. */
function fusedAttention(model: TraceModel, windows: StepWindow[], topKernel: string | null, attentionKernelNsPerStep: number): FusedAttention | null {
  const n = Math.max(1, windows.length);
  const inside = inWindows(windows);
  const backends = new Set<AttentionBackend>();
  const causal = new Set<boolean | null>();
  let calls = 0;
  let flops = 0;
  const c = model.attentionCalls;
  for (let i = 0; i < c.count; i++) {
    if (!inside(c.startNs[i]!)) continue;
    const op = model.attentionOps[c.op[i]!]!;
    const backend = attentionBackend(op.name);
    if (backend === 'math') continue;
    backends.add(backend);
    causal.add(op.causal);
    calls++;
    flops += attentionOpFlops(op.name, op.dims, op.causal) ?? 0;
  }
  if (calls === 0 && !(attentionKernelNsPerStep > 0)) return null;
  return {
    backends: [...backends].sort(),
    callsPerStep: calls / n,
    flops: flops / n,
    kernelNs: attentionKernelNsPerStep,
    causal: causal.size === 1 ? [...causal][0]! : null,
    topKernel,
  };
}

/** Whether SDPA fell back to its math path inside the windows. */
function ranMathFallback(model: TraceModel, windows: StepWindow[]): boolean {
  const inside = inWindows(windows);
  const c = model.attentionCalls;
  for (let i = 0; i < c.count; i++) if (inside(c.startNs[i]!) && attentionBackend(model.attentionOps[c.op[i]!]!.name) === 'math') return true;
  return false;
}

/**
 * Attention in the analysed steps, and hand-written attention's kernels one by one (for the chains as SDPA leaves them).
 * `kernels`: every kernel name with its time over the windows (kernels.ts), for the fused side's top kernel;
 * `attentionKernelNsPerStep`: the attention kernels' time per step.
 */
export function attentionStats(
  model: TraceModel,
  windows: StepWindow[],
  kernels: readonly NamedKernelTime[],
  attentionKernelNsPerStep: number,
): { stats: AttentionStats; handWrittenKernels: AttentionKernelStarts } {
  const top = kernels.filter((k) => k.category === KernelCategory.attention).sort((a, b) => b.totalNs - a.totalNs)[0];
  const handWritten = handWrittenAttention(model, windows, ranMathFallback(model, windows));
  return {
    stats: { handWritten: handWritten.stats, fused: fusedAttention(model, windows, top?.name ?? null, attentionKernelNsPerStep) },
    handWrittenKernels: handWritten.kernels,
  };
}
