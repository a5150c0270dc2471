/**
 * Builds a TraceModel from the parser's event stream: the sink side of
 * `parser.ts`. Reduces CPU events on the fly and writes GPU activities, joined
 * with their launches, to compact per-device op logs (see model.ts for why).
 */
import type { RawEvent, TraceSink } from './event.js';
import { dtypeBytes } from '../util/dtype.js';
import { CopyKind, KernelCategory, RuntimeKind, categoriseKernel, copyKind, runtimeKind } from './kernelClass.js';
import { attentionCausal, isAttentionOp } from './attentionOps.js';
import { CONV_OPS, convFlops } from './convFlops.js';
import { type FrameworkEvidence, type TraceFramework, frameworkOfFrame, frameworkOfLabel } from './framework.js';
import { OpLinker } from './linker.js';
import type { AttentionOp, CpuSpan, DeviceProperties, DistributedInfo, GemmOp, MemoryPeak, StepMarker, TraceModel } from './model.js';
import { type ChunkStore, OpKind, emptyGpuOp } from './opLog.js';

/** Events longer than this are clock glitches (CUPTI overflow, `Record Window End`): dropped, as HTA and tb_plugin do. */
const MAX_EVENT_DUR_NS = 24 * 3600 * 1e9;

const STEP_RE = /^ProfilerStep\s*#\s*(\d+)/;
const DATALOADER_RE = /^enumerate\((DataLoader|DataPipe)\)#.*__next__/;
const OPTIMIZER_RE = /^Optimizer\.step#/;
const SYNC_OP_RE = /^aten::(item|_local_scalar_dense|nonzero|is_nonzero|equal|allclose|unique|_unique2|masked_select|tolist)$/;
const GEMM_OP_RE = /^aten::(mm|addmm|bmm|baddbmm|matmul|linear|_scaled_mm|addbmm|_addmm_activation)$/;
const CONV_OP_NAMES = new Set<string>(CONV_OPS);
/** CPU-side collectives: `c10d::`/gloo ops hold the host; NCCL's `nccl:*` ops are kept only for all-reduce starts. */
const CPU_COLLECTIVE_RE = /^(nccl:|gloo:|c10d::)/;
const ALL_REDUCE_RE = /all_?reduce/i;

type TypedArray = Float64Array | Float32Array | Int32Array | Int16Array | Uint8Array;

/** Values per block of a Column: 64 KB of float64, small enough to come from malloc's heap rather than mmap. */
const BLOCK_BITS = 13;
const BLOCK = 1 << BLOCK_BITS;

/**
 * A typed column in fixed blocks. Growing never copies or frees: a column that
 * grows by reallocating leaves its old buffers to malloc, which keeps them
 * (peak RSS grew 17 MB a GB on a DDP trace with many collectives).
 */
class Column<T extends TypedArray> {
  private readonly blocks: T[] = [];
  constructor(private readonly make: (n: number) => T) {}
  set(i: number, v: number): void {
    const b = i >>> BLOCK_BITS;
    while (b >= this.blocks.length) this.blocks.push(this.make(BLOCK));
    this.blocks[b]![i & (BLOCK - 1)] = v;
  }
  /** The first n values in one array of their own; the column lets go of its blocks. */
  take(n: number): T {
    const out = this.make(n);
    for (let b = 0; b * BLOCK < n; b++) out.set(this.blocks[b]!.subarray(0, Math.min(BLOCK, n - b * BLOCK)) as never, b * BLOCK);
    this.blocks.length = 0;
    return out;
  }
}
const f64 = () => new Column((n) => new Float64Array(n));
const i32 = () => new Column((n) => new Int32Array(n));

export class TraceModelBuilder implements TraceSink {
  private names: string[] = [];
  private kernelCategoryByName: KernelCategory[] = [];
  private nameIds = new Map<string, number>();
  private readonly linker: OpLinker;
  private readonly op = emptyGpuOp();
  // Synchronising runtime calls
  private sN = 0;
  private sStart = f64();
  private graphLaunchStarts: number[] = [];
  private sDur = f64();
  private sName = i32();
  // Collective kernels
  private cN = 0;
  private cStart = f64();
  private cDur = f64();
  private cLaunch = f64();
  private cCorr = f64();
  private cBytes = f64();
  private cName = i32();
  private cGroup = i32();
  private cSeq = f64();
  private cSeqText = new Map<number, string>();
  private allReduceStarts = f64();
  private allReduceN = 0;
  // GEMM calls by External id
  private gcN = 0;
  private gcExt = f64();
  private gcGemm = i32();
  // Fused attention calls
  private attentionOps: AttentionOp[] = [];
  private attentionKeys = new Map<string, number>();
  private acN = 0;
  private acStart = f64();
  private acOp = i32();

  private steps: StepMarker[] = [];
  private dataLoader: CpuSpan[] = [];
  private optimizerSteps: CpuSpan[] = [];
  private syncOps: CpuSpan[] = [];
  private dataParallelForwards: CpuSpan[] = [];
  private ddpForwards: CpuSpan[] = [];
  private ccN = 0;
  private ccStart = f64();
  private ccEnd = f64();
  private gemmOps: GemmOp[] = [];
  private gemmKeys = new Map<string, number>();
  private memPeaks = new Map<number, MemoryPeak>();
  private frameworks: FrameworkEvidence[] = [];
  private counts: Record<string, number> = {};
  private cpuLo = Number.POSITIVE_INFINITY;
  private cpuHi = Number.NEGATIVE_INFINITY;
  private devices: DeviceProperties[] = [];
  private distributed: DistributedInfo | null = null;
  private baseTimeNs: string | null = null;
  private dropped = { badTime: 0, hugeDur: 0 };

  /** `chunkStore`: where the op logs' chunks beyond its memory budget go (see opLog.ts); none keeps them all. */
  constructor(
    private readonly source: string,
    chunkStore: ChunkStore | null = null,
  ) {
    this.linker = new OpLinker((row, startNs) => {
      this.cLaunch.set(row, startNs);
    }, chunkStore);
  }

  private nameId(name: string): number {
    let id = this.nameIds.get(name);
    if (id === undefined) {
      id = this.names.length;
      const own = detach(name);
      this.names.push(own);
      this.nameIds.set(own, id);
    }
    return id;
  }

  /**
   * Strings sliced from the parser's buffer keep the whole buffer (a megabyte)
   * alive; every string the model keeps goes through here to get its own copy,
   * once per distinct value.
   */
  private intern(s: string): string {
    return this.names[this.nameId(s)]!;
  }

  /** A tid the model may keep: string tids are sliced from the parser's buffer. */
  private tid(t: number | string): number | string {
    return typeof t === 'string' ? this.intern(t) : t;
  }

  private internOrNull(s: string | null): string | null {
    return s === null ? null : this.intern(s);
  }

  private span(name: string, startNs: number, endNs: number, tid: number | string): CpuSpan {
    return { name: this.intern(name), startNs, endNs, tid: this.tid(tid) };
  }

  onMetadata(key: string, value: unknown): void {
    if (key === 'deviceProperties' && Array.isArray(value)) {
      for (const d of value as Record<string, unknown>[]) {
        if (d === null || typeof d !== 'object') continue;
        this.devices.push({
          id: num(d.id, this.devices.length),
          name: typeof d.name === 'string' ? detach(d.name) : 'unknown GPU',
          totalGlobalMemBytes: num(d.totalGlobalMem, 0),
          computeMajor: num(d.computeMajor, 0),
          computeMinor: num(d.computeMinor, 0),
          numSms: num(d.numSms, 0),
        });
      }
    } else if (key === 'distributedInfo' && value !== null && typeof value === 'object') {
      const d = value as Record<string, unknown>;
      // Kineto may write it twice (before and after traceEvents): the first one wins.
      this.distributed ??= {
        backend: typeof d.backend === 'string' ? detach(d.backend) : null,
        rank: num(d.rank, 0),
        worldSize: num(d.world_size, 1),
      };
    } else if (key === 'baseTimeNanoseconds' && (typeof value === 'number' || typeof value === 'string')) {
      this.baseTimeNs = String(value);
    }
  }

  /** Skips what no analysis reads: flows, Python frames but those that name a training framework, and CPU ops other than the few kept below. */
  wants(ph: string, cat: string, name: string): boolean {
    if (ph === 's' || ph === 'f') return false;
    if (cat === 'python_function') return frameworkOfFrame(name) !== null;
    return cat !== 'cpu_op' || isKeptCpuOp(name);
  }

  onSkipped(ph: string, cat: string, count: number): void {
    const key = cat || ph;
    this.counts[key] = (this.counts[key] ?? 0) + count;
  }

  onEvent(ev: RawEvent): void {
    const cat = ev.cat;
    this.counts[cat || ev.ph] = (this.counts[cat || ev.ph] ?? 0) + 1;
    const ph = ev.ph;
    if (ph !== 'X') {
      if (ph === 'i' || ph === 'I') {
        if (ev.name === '[memory]' && ev.args.totalAllocated >= 0 && ev.args.deviceType === 1) this.onMemory(ev);
      }
      return;
    }
    const ts = ev.tsNs;
    const dur = ev.durNs;
    if (!Number.isFinite(ts) || !Number.isFinite(dur) || dur < 0) {
      this.dropped.badTime++;
      return;
    }
    if (dur > MAX_EVENT_DUR_NS) {
      this.dropped.hugeDur++;
      return;
    }
    switch (cat) {
      case 'kernel':
      case 'gpu_memcpy':
      case 'gpu_memset':
        this.onGpuOp(ev, cat);
        return;
      case 'cuda_runtime':
      case 'cuda_driver':
        this.onRuntime(ev);
        return;
      case 'cpu_op':
      case 'user_annotation':
        this.onCpuOp(ev);
        return;
      case 'python_function':
        this.onFramework(frameworkOfFrame(ev.name), ev.name);
        return;
      default:
        return;
    }
  }

  private onMemory(ev: RawEvent): void {
    const dev = ev.args.deviceId;
    const cur = this.memPeaks.get(dev);
    const alloc = ev.args.totalAllocated;
    const reserved = ev.args.totalReserved;
    if (cur === undefined) this.memPeaks.set(dev, { device: dev, allocatedBytes: alloc, reservedBytes: reserved, atNs: ev.tsNs });
    else {
      if (alloc > cur.allocatedBytes) {
        cur.allocatedBytes = alloc;
        cur.atNs = ev.tsNs;
      }
      if (reserved > cur.reservedBytes) cur.reservedBytes = reserved;
    }
  }

  private onGpuOp(ev: RawEvent, cat: string): void {
    const a = ev.args;
    const op = this.op;
    const device = a.device >= 0 ? a.device : typeof ev.pid === 'number' ? ev.pid : 0;
    op.startNs = ev.tsNs;
    op.durNs = ev.durNs;
    op.bytes = a.bytes;
    // Kept at float32 precision, as the typed rows before it did, so figures do not move.
    op.smShare = a.blocksPerSm < 0 ? -1 : Math.min(1, Math.fround(a.blocksPerSm));
    const nameId = this.nameId(ev.name);
    op.nameId = nameId;
    op.copyKind = CopyKind.none;
    let collective = -1;
    if (cat === 'kernel') {
      op.kind = OpKind.kernel;
      const isCollective = a.collectiveName !== null;
      // Names repeat thousands of times: classify each distinct name once.
      let category = isCollective ? KernelCategory.communication : this.kernelCategoryByName[nameId];
      if (category === undefined) category = this.kernelCategoryByName[nameId] = categoriseKernel(ev.name, false);
      op.category = category;
      if (category === KernelCategory.communication) collective = this.onCollectiveKernel(ev);
    } else if (cat === 'gpu_memcpy') {
      op.kind = OpKind.memcpy;
      op.category = KernelCategory.memcpy;
      op.copyKind = copyKind(ev.name);
    } else {
      op.kind = OpKind.memset;
      op.category = KernelCategory.memset;
    }
    this.linker.onOp(device, this.tid(ev.tid), op, a.correlation, collective);
  }

  /** Adds a collective kernel's row; returns it (the linker fills in its launch). */
  private onCollectiveKernel(ev: RawEvent): number {
    const a = ev.args;
    const i = this.cN++;
    this.cStart.set(i, ev.tsNs);
    this.cDur.set(i, ev.durNs);
    this.cLaunch.set(i, Number.NaN);
    this.cCorr.set(i, a.correlation);
    this.cBytes.set(i, Math.max(a.inMsgNelems, a.outMsgNelems, 0) * dtypeBytes(a.dtype));
    this.cName.set(i, this.nameId(a.collectiveName ?? collectiveFromName(ev.name)));
    const group = a.processGroupName ?? a.processGroupDesc;
    this.cGroup.set(i, group === null ? -1 : this.nameId(group));
    // A number as is: interning every sequence number would grow the name table with the trace.
    this.cSeq.set(i, typeof a.seq === 'number' ? a.seq : Number.NaN);
    if (typeof a.seq === 'string') this.cSeqText.set(i, detach(a.seq));
    return i;
  }

  private onRuntime(ev: RawEvent): void {
    this.cpuExtent(ev.tsNs, ev.durNs);
    const kind = runtimeKind(ev.name);
    // Queries such as cudaGetErrorString or cudaStreamIsCapturing launch no GPU work and block
    // nothing: about 40% of runtime events, not worth keeping.
    if (kind === RuntimeKind.other) return;
    if (kind === RuntimeKind.sync) {
      const i = this.sN++;
      this.sStart.set(i, ev.tsNs);
      this.sDur.set(i, ev.durNs);
      this.sName.set(i, this.nameId(ev.name));
    }
    const graph = kind === RuntimeKind.launch && ev.name.includes('GraphLaunch');
    if (graph) this.graphLaunchStarts.push(ev.tsNs);
    this.linker.onLaunch(ev.args.correlation, this.tid(ev.tid), ev.tsNs, ev.durNs, kind, ev.args.externalId, graph);
  }

  private cpuExtent(ts: number, dur: number): void {
    if (ts < this.cpuLo) this.cpuLo = ts;
    if (ts + dur > this.cpuHi) this.cpuHi = ts + dur;
  }

  private onCpuOp(ev: RawEvent): void {
    const name = ev.name;
    const ts = ev.tsNs;
    const end = ts + ev.durNs;
    this.cpuExtent(ts, ev.durNs);
    const c0 = name.charCodeAt(0);
    if (c0 === 80 /* P */) {
      const m = STEP_RE.exec(name);
      if (m) {
        this.steps.push({ step: Number(m[1]), startNs: ts, endNs: end });
        return;
      }
    }
    if (c0 === 97 /* a */) {
      if (GEMM_OP_RE.test(name) || CONV_OP_NAMES.has(name)) this.onGemmOp(ev);
      else if (isAttentionOp(name)) this.onAttentionOp(ev);
      else if (SYNC_OP_RE.test(name)) this.syncOps.push(this.span(name, ts, end, ev.tid));
      return;
    }
    if (c0 === 91 /* [ */) {
      this.onFramework(frameworkOfLabel(name), name);
      return;
    }
    if (c0 === 101 /* e */ && DATALOADER_RE.test(name)) this.dataLoader.push(this.span(name, ts, end, ev.tid));
    else if (c0 === 79 /* O */ && OPTIMIZER_RE.test(name)) this.optimizerSteps.push(this.span(name, ts, end, ev.tid));
    else if (name === 'DataParallel.forward' || name.startsWith('torch::autograd::Broadcast') || name === 'Broadcast' || name === 'ReduceAddCoalesced') {
      if (name === 'DataParallel.forward') this.dataParallelForwards.push(this.span(name, ts, end, ev.tid));
    } else if (name === 'DistributedDataParallel.forward') this.ddpForwards.push(this.span(name, ts, end, ev.tid));
    else if (CPU_COLLECTIVE_RE.test(name)) {
      if (ALL_REDUCE_RE.test(name)) {
        const i = this.allReduceN++;
        this.allReduceStarts.set(i, ts);
      }
      if (!name.startsWith('nccl:')) {
        const i = this.ccN++;
        this.ccStart.set(i, ts);
        this.ccEnd.set(i, end);
      }
    }
  }

  /** The first event that named each framework (framework.ts). */
  private onFramework(framework: TraceFramework | null, name: string): void {
    if (framework !== null && !this.frameworks.some((f) => f.framework === framework)) this.frameworks.push({ framework, name: detach(name) });
  }

  private onGemmOp(ev: RawEvent): void {
    const dims = ev.args.inputDims;
    if (dims === null || ev.args.externalId < 0) return;
    const types = ev.args.inputType;
    const dtype = types?.find((t) => typeof t === 'string' && t !== '') as string | undefined;
    const numericDims = dims.map((d) => (Array.isArray(d) ? d.map(Number) : []));
    const isConv = CONV_OP_NAMES.has(ev.name);
    const flops = isConv ? convFlops(ev.name, numericDims, ev.args.concreteInputs) : null;
    // A convolution without its count (no Concrete Inputs before torch 2.1) is left unlinked: nothing reads it.
    if (isConv && flops === null) return;
    // Identical (op, shapes, dtype) share one record: a 10,000-step trace has few distinct GEMMs.
    const key = gemmOpKey(ev.name, numericDims, dtype ?? null, flops);
    let idx = this.gemmKeys.get(key);
    if (idx === undefined) {
      idx = this.gemmOps.length;
      this.gemmOps.push({ name: this.intern(ev.name), dims: numericDims, dtype: this.internOrNull(dtype ?? null), convFlops: flops });
      this.gemmKeys.set(key, idx);
    }
    const i = this.gcN++;
    this.gcExt.set(i, ev.args.externalId);
    this.gcGemm.set(i, idx);
  }

  private onAttentionOp(ev: RawEvent): void {
    const dims = ev.args.inputDims;
    if (dims === null) return;
    const numericDims = dims.map((d) => (Array.isArray(d) ? d.map(Number) : []));
    const causal = attentionCausal(ev.name, ev.args.concreteInputs);
    const key = attentionOpKey(ev.name, numericDims, causal);
    let idx = this.attentionKeys.get(key);
    if (idx === undefined) {
      idx = this.attentionOps.length;
      this.attentionOps.push({ name: this.intern(ev.name), dims: numericDims, causal });
      this.attentionKeys.set(key, idx);
    }
    const i = this.acN++;
    this.acStart.set(i, ev.tsNs);
    this.acOp.set(i, idx);
  }

  /** `endedEarly`: why the parser stopped before the end of the trace, null when it read to the end (see model.ts). */
  finish(originUs: number, parseWarnings: string[], endedEarly: string | null = null): TraceModel {
    const warnings = [...parseWarnings];
    if (this.dropped.badTime > 0) warnings.push(`${this.dropped.badTime} events without a valid ts/dur were dropped`);
    if (this.dropped.hugeDur > 0) warnings.push(`${this.dropped.hugeDur} events lasting over 24 h (clock glitches) were dropped`);
    this.steps.sort((a, b) => a.startNs - b.startNs);
    for (const list of [this.dataLoader, this.optimizerSteps, this.syncOps, this.dataParallelForwards, this.ddpForwards]) {
      list.sort((a, b) => a.startNs - b.startNs);
    }
    const gpu = this.linker.finish();
    const sN = this.sN;
    const syncCalls = { count: sN, startNs: this.sStart.take(sN), durNs: this.sDur.take(sN), nameId: this.sName.take(sN) };
    const gemmCalls = sortGemmCalls(this.gcExt.take(this.gcN), this.gcGemm.take(this.gcN));
    const dist = this.distributed;
    return {
      source: this.source,
      rank: dist?.rank ?? 0,
      worldSize: dist?.worldSize ?? 1,
      distributed: dist,
      devices: this.devices,
      baseTimeNs: this.baseTimeNs,
      originUs,
      names: this.names,
      gpu: { ...gpu, syncCalls, graphLaunchStartsNs: this.graphLaunchStarts },
      steps: dedupeSteps(this.steps),
      dataLoader: this.dataLoader,
      optimizerSteps: this.optimizerSteps,
      syncOps: this.syncOps,
      dataParallelForwards: this.dataParallelForwards,
      ddpForwards: this.ddpForwards,
      cpuCollectives: { count: this.ccN, startNs: this.ccStart.take(this.ccN), endNs: this.ccEnd.take(this.ccN) },
      cpuAllReduceStartsNs: this.allReduceStarts.take(this.allReduceN).sort(),
      gemmOps: this.gemmOps,
      gemmCalls,
      attentionOps: this.attentionOps,
      attentionCalls: { count: this.acN, startNs: this.acStart.take(this.acN), op: this.acOp.take(this.acN) },
      collectives: {
        count: this.cN,
        startNs: this.cStart.take(this.cN),
        durNs: this.cDur.take(this.cN),
        launchStartNs: this.cLaunch.take(this.cN),
        correlation: this.cCorr.take(this.cN),
        bytes: this.cBytes.take(this.cN),
        nameId: this.cName.take(this.cN),
        processGroupId: this.cGroup.take(this.cN),
        seq: this.cSeq.take(this.cN),
        seqText: this.cSeqText,
      },
      frameworks: this.frameworks,
      memoryPeaks: [...this.memPeaks.values()].sort((a, b) => a.device - b.device),
      eventCounts: this.counts,
      cpuRangeNs: Number.isFinite(this.cpuLo) ? [this.cpuLo, this.cpuHi] : [0, 0],
      warnings,
      endedEarly,
    };
  }
}

/** The CPU ops onCpuOp keeps (steps, GEMMs and convolutions, fused attention, syncs, DataLoader, optimizer, data-parallel forwards, collectives). */
function isKeptCpuOp(name: string): boolean {
  switch (name.charCodeAt(0)) {
    case 80 /* P */:
      return STEP_RE.test(name);
    case 97 /* a */:
      return GEMM_OP_RE.test(name) || SYNC_OP_RE.test(name) || CONV_OP_NAMES.has(name) || isAttentionOp(name);
    case 101 /* e */:
      return DATALOADER_RE.test(name);
    case 79 /* O */:
      return OPTIMIZER_RE.test(name);
    case 68 /* D */:
      return name === 'DataParallel.forward' || name === 'DistributedDataParallel.forward';
    case 91 /* [ */:
      return frameworkOfLabel(name) !== null;
    default:
      return CPU_COLLECTIVE_RE.test(name);
  }
}

/**
 * The one record of identical (op, shapes, dtype) calls; a convolution's FLOPs stand for its stride and padding
 * (the same shapes with another stride are another record).
 */
export function gemmOpKey(name: string, dims: number[][], dtype: string | null, convFlops: number | null): string {
  return `${name}|${JSON.stringify(dims)}|${dtype ?? ''}${convFlops === null ? '' : `|${convFlops}`}`;
}

/** The one record of identical (op, shapes, causality) fused attention calls. */
export function attentionOpKey(name: string, dims: number[][], causal: boolean | null): string {
  return `${name}|${JSON.stringify(dims)}|${causal}`;
}

/** GEMM calls sorted by External id (a repeated id keeps its last shape, as a map would). */
export function sortGemmCalls(ext: Float64Array, gemm: Int32Array): TraceModel['gemmCalls'] {
  // Kineto writes CPU ops in time order, so External ids usually arrive increasing: nothing to sort or copy.
  let increasing = true;
  for (let i = 1; i < ext.length && increasing; i++) increasing = ext[i - 1]! < ext[i]!;
  if (increasing) return { count: ext.length, externalId: ext, gemm };
  const order = new Int32Array(ext.length);
  for (let i = 0; i < order.length; i++) order[i] = i;
  order.sort((a, b) => ext[a]! - ext[b]! || b - a);
  const outExt = new Float64Array(order.length);
  const outGemm = new Int32Array(order.length);
  let n = 0;
  for (const i of order) {
    if (n > 0 && outExt[n - 1] === ext[i]) continue;
    outExt[n] = ext[i]!;
    outGemm[n] = gemm[i]!;
    n++;
  }
  return { count: n, externalId: outExt.slice(0, n), gemm: outGemm.slice(0, n) };
}

/** A step can be recorded twice (cpu_op and user_annotation in some torch versions): keep one per number. */
function dedupeSteps(steps: StepMarker[]): StepMarker[] {
  const seen = new Map<number, StepMarker>();
  for (const s of steps) {
    const prev = seen.get(s.step);
    if (prev === undefined || s.endNs - s.startNs > prev.endNs - prev.startNs) seen.set(s.step, s);
  }
  return [...seen.values()].sort((a, b) => a.startNs - b.startNs);
}

function collectiveFromName(name: string): string {
  const m = /(AllReduce|AllGather|ReduceScatter|Broadcast|Reduce|SendRecv|AllToAll|Send|Recv)/i.exec(name);
  return m ? m[1]!.toLowerCase() : 'collective';
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A copy of s that shares no memory with the buffer it was sliced from. */
function detach(s: string): string {
  return s.length < 13 ? s : decoder.decode(encoder.encode(s)); // V8 copies strings under 13 chars anyway
}

function num(v: unknown, fallback: number): number {
  const n = typeof v === 'number' ? v : typeof v === 'string' ? Number(v) : Number.NaN;
  return Number.isFinite(n) ? n : fallback;
}

