/**
 * Builds a TraceModel from the parser's event stream: the sink side of
 * `parser.ts`. Reduces CPU events on the fly and keeps GPU activities and
 * runtime calls in typed columns (see model.ts for why).
 */
import type { RawEvent, TraceSink } from './event.js';
import { CopyKind, KernelCategory, RuntimeKind, categoriseKernel, copyKind, dtypeBytes, runtimeKind } from './kernelClass.js';
import type { Collective, CpuSpan, DeviceProperties, DistributedInfo, GemmOp, GpuOps, MemoryPeak, RuntimeCalls, StepMarker, TraceModel } from './model.js';

/** Events longer than this are clock glitches (CUPTI overflow, `Record Window End`): dropped, as HTA and tb_plugin do. */
const MAX_EVENT_DUR_NS = 24 * 3600 * 1e9;

const STEP_RE = /^ProfilerStep\s*#\s*(\d+)/;
const DATALOADER_RE = /^enumerate\((DataLoader|DataPipe)\)#.*__next__/;
const OPTIMIZER_RE = /^Optimizer\.step#/;
const SYNC_OP_RE = /^aten::(item|_local_scalar_dense|nonzero|is_nonzero|equal|allclose|unique|_unique2|masked_select|tolist)$/;
const GEMM_OP_RE = /^aten::(mm|addmm|bmm|baddbmm|matmul|linear|_scaled_mm|addbmm|_addmm_activation)$/;
const CPU_COLLECTIVE_RE = /^(nccl:|gloo:|c10d::|record_param_comms$)/;

type TypedArray = Float64Array | Float32Array | Int32Array | Int16Array | Uint8Array;

/** A typed column that grows by half when full (doubling wasted up to 50% at 2 GB traces). */
class Column<T extends TypedArray> {
  a: T;
  constructor(private readonly make: (n: number) => T) {
    this.a = make(4096);
  }
  grow(n: number): void {
    if (n >= this.a.length) {
      const b = this.make(Math.ceil(this.a.length * 1.5));
      b.set(this.a as never);
      this.a = b;
    }
  }
  /** The first n values in an array of their own; the column lets go of its buffer (up to a third unused). */
  take(n: number): T {
    const out = this.make(n);
    out.set(this.a.subarray(0, n) as never);
    this.a = this.make(0);
    return out;
  }
}
const f64 = () => new Column((n) => new Float64Array(n));
const f32 = () => new Column((n) => new Float32Array(n));
const i32 = () => new Column((n) => new Int32Array(n));
const i16 = () => new Column((n) => new Int16Array(n));
const u8 = () => new Column((n) => new Uint8Array(n));

export class TraceModelBuilder implements TraceSink {
  private names: string[] = [];
  private kernelCategoryByName: KernelCategory[] = [];
  private nameIds = new Map<string, number>();
  // GPU op columns
  private gN = 0;
  private gDevice = i16();
  private gKind = u8();
  private gCategory = u8();
  private gCopy = u8();
  private gStart = f64();
  private gDur = f64();
  private gCorr = f64();
  private gName = i32();
  private gBytes = f64();
  private gBlocks = f32();
  // runtime columns
  private rN = 0;
  private rKind = u8();
  private rStart = f64();
  private rDur = f64();
  private rCorr = f64();
  private rExt = f64();
  private rName = i32();

  private readonly gpuColumns: Column<TypedArray>[] = [
    this.gDevice,
    this.gName,
    this.gKind,
    this.gCategory,
    this.gCopy,
    this.gStart,
    this.gDur,
    this.gCorr,
    this.gBytes,
    this.gBlocks,
  ];
  private readonly runtimeColumns: Column<TypedArray>[] = [this.rKind, this.rStart, this.rDur, this.rCorr, this.rExt, this.rName];

  private steps: StepMarker[] = [];
  private dataLoader: CpuSpan[] = [];
  private optimizerSteps: CpuSpan[] = [];
  private syncOps: CpuSpan[] = [];
  private dataParallelForwards: CpuSpan[] = [];
  private ddpForwards: CpuSpan[] = [];
  private cpuCollectives: CpuSpan[] = [];
  private collectives: Collective[] = [];
  private gemmOps: GemmOp[] = [];
  private gemmByExternalId = new Map<number, number>();
  private gemmKeys = new Map<string, number>();
  private memPeaks = new Map<number, MemoryPeak>();
  private counts: Record<string, number> = {};
  private cpuLo = Number.POSITIVE_INFINITY;
  private cpuHi = Number.NEGATIVE_INFINITY;
  private devices: DeviceProperties[] = [];
  private distributed: DistributedInfo | null = null;
  private baseTimeNs: string | null = null;
  private dropped = { badTime: 0, hugeDur: 0 };

  constructor(private readonly source: string) {}

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

  private internOrNull(s: string | null): string | null {
    return s === null ? null : this.intern(s);
  }

  private span(name: string, startNs: number, endNs: number, tid: number | string): CpuSpan {
    return { name: this.intern(name), startNs, endNs, tid: typeof tid === 'string' ? this.intern(tid) : tid };
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

  /** Skips what no analysis reads: flows, Python frames, and CPU ops other than the few kept below. */
  wants(ph: string, cat: string, name: string): boolean {
    if (ph === 's' || ph === 'f' || cat === 'python_function') return false;
    return cat !== 'cpu_op' || isKeptCpuOp(name);
  }

  onSkipped(ph: string, cat: string): void {
    const key = cat || ph;
    this.counts[key] = (this.counts[key] ?? 0) + 1;
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
    const i = this.gN++;
    if (i >= this.gStart.a.length) for (const c of this.gpuColumns) c.grow(i);
    const a = ev.args;
    const device = a.device >= 0 ? a.device : typeof ev.pid === 'number' ? ev.pid : 0;
    this.gDevice.a[i] = device;
    this.gStart.a[i] = ev.tsNs;
    this.gDur.a[i] = ev.durNs;
    this.gCorr.a[i] = a.correlation;
    this.gBytes.a[i] = a.bytes;
    this.gBlocks.a[i] = a.blocksPerSm;
    const nameId = this.nameId(ev.name);
    this.gName.a[i] = nameId;
    if (cat === 'kernel') {
      this.gKind.a[i] = 0;
      const isCollective = a.collectiveName !== null;
      // Names repeat thousands of times: classify each distinct name once.
      let category = isCollective ? KernelCategory.communication : this.kernelCategoryByName[nameId];
      if (category === undefined) category = this.kernelCategoryByName[nameId] = categoriseKernel(ev.name, false);
      this.gCategory.a[i] = category;
      this.gCopy.a[i] = CopyKind.none;
      if (category === KernelCategory.communication) {
        const nelems = Math.max(a.inMsgNelems, a.outMsgNelems, 0);
        this.collectives.push({
          opIndex: i,
          name: this.intern(a.collectiveName ?? collectiveFromName(ev.name)),
          processGroup: this.internOrNull(a.processGroupName ?? a.processGroupDesc),
          seq: a.seq === null ? null : this.intern(String(a.seq)),
          bytes: nelems * dtypeBytes(a.dtype),
          groupSize: a.groupSize,
        });
      }
    } else if (cat === 'gpu_memcpy') {
      this.gKind.a[i] = 1;
      this.gCategory.a[i] = KernelCategory.memcpy;
      this.gCopy.a[i] = copyKind(ev.name);
    } else {
      this.gKind.a[i] = 2;
      this.gCategory.a[i] = KernelCategory.memset;
      this.gCopy.a[i] = CopyKind.none;
    }
  }

  private onRuntime(ev: RawEvent): void {
    this.cpuExtent(ev.tsNs, ev.durNs);
    const kind = runtimeKind(ev.name);
    // Queries such as cudaGetErrorString or cudaStreamIsCapturing launch no GPU work and block
    // nothing: about 40% of runtime events, not worth a row.
    if (kind === RuntimeKind.other) return;
    const i = this.rN++;
    if (i >= this.rStart.a.length) for (const c of this.runtimeColumns) c.grow(i);
    this.rKind.a[i] = kind;
    this.rStart.a[i] = ev.tsNs;
    this.rDur.a[i] = ev.durNs;
    this.rCorr.a[i] = ev.args.correlation;
    this.rExt.a[i] = ev.args.externalId;
    this.rName.a[i] = this.nameId(ev.name);
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
      if (GEMM_OP_RE.test(name)) this.onGemmOp(ev);
      else if (SYNC_OP_RE.test(name)) this.syncOps.push(this.span(name, ts, end, ev.tid));
      return;
    }
    if (c0 === 101 /* e */ && DATALOADER_RE.test(name)) this.dataLoader.push(this.span(name, ts, end, ev.tid));
    else if (c0 === 79 /* O */ && OPTIMIZER_RE.test(name)) this.optimizerSteps.push(this.span(name, ts, end, ev.tid));
    else if (name === 'DataParallel.forward' || name.startsWith('torch::autograd::Broadcast') || name === 'Broadcast' || name === 'ReduceAddCoalesced') {
      if (name === 'DataParallel.forward') this.dataParallelForwards.push(this.span(name, ts, end, ev.tid));
    } else if (name === 'DistributedDataParallel.forward') this.ddpForwards.push(this.span(name, ts, end, ev.tid));
    else if (CPU_COLLECTIVE_RE.test(name)) this.cpuCollectives.push(this.span(name, ts, end, ev.tid));
  }

  private onGemmOp(ev: RawEvent): void {
    const dims = ev.args.inputDims;
    if (dims === null || ev.args.externalId < 0) return;
    const types = ev.args.inputType;
    const dtype = types?.find((t) => typeof t === 'string' && t !== '') as string | undefined;
    const numericDims = dims.map((d) => (Array.isArray(d) ? d.map(Number) : []));
    // Identical (op, shapes, dtype) share one record: a 10,000-step trace has few distinct GEMMs.
    const key = `${ev.name}|${JSON.stringify(numericDims)}|${dtype ?? ''}`;
    let idx = this.gemmKeys.get(key);
    if (idx === undefined) {
      idx = this.gemmOps.length;
      this.gemmOps.push({ name: this.intern(ev.name), dims: numericDims, dtype: this.internOrNull(dtype ?? null) });
      this.gemmKeys.set(key, idx);
    }
    this.gemmByExternalId.set(ev.args.externalId, idx);
  }

  finish(originUs: number, parseWarnings: string[]): TraceModel {
    const warnings = [...parseWarnings];
    if (this.dropped.badTime > 0) warnings.push(`${this.dropped.badTime} events without a valid ts/dur were dropped`);
    if (this.dropped.hugeDur > 0) warnings.push(`${this.dropped.hugeDur} events lasting over 24 h (clock glitches) were dropped`);
    this.steps.sort((a, b) => a.startNs - b.startNs);
    for (const list of [this.dataLoader, this.optimizerSteps, this.syncOps, this.dataParallelForwards, this.ddpForwards, this.cpuCollectives]) {
      list.sort((a, b) => a.startNs - b.startNs);
    }
    // Exact-size copies, one column at a time: the analysis that follows is the peak of memory.
    const gN = this.gN;
    const rN = this.rN;
    const gpu: GpuOps = {
      count: gN,
      device: this.gDevice.take(gN),
      kind: this.gKind.take(gN),
      category: this.gCategory.take(gN),
      copyKind: this.gCopy.take(gN),
      startNs: this.gStart.take(gN),
      durNs: this.gDur.take(gN),
      correlation: this.gCorr.take(gN),
      nameId: this.gName.take(gN),
      bytes: this.gBytes.take(gN),
      blocksPerSm: this.gBlocks.take(gN),
    };
    const runtime: RuntimeCalls = {
      count: rN,
      kind: this.rKind.take(rN),
      startNs: this.rStart.take(rN),
      durNs: this.rDur.take(rN),
      correlation: this.rCorr.take(rN),
      externalId: this.rExt.take(rN),
      nameId: this.rName.take(rN),
    };
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
      gpu,
      runtime,
      steps: dedupeSteps(this.steps),
      dataLoader: this.dataLoader,
      optimizerSteps: this.optimizerSteps,
      syncOps: this.syncOps,
      dataParallelForwards: this.dataParallelForwards,
      ddpForwards: this.ddpForwards,
      cpuCollectives: this.cpuCollectives,
      collectives: this.collectives,
      gemmOps: this.gemmOps,
      gemmByExternalId: this.gemmByExternalId,
      memoryPeaks: [...this.memPeaks.values()].sort((a, b) => a.device - b.device),
      eventCounts: this.counts,
      cpuRangeNs: Number.isFinite(this.cpuLo) ? [this.cpuLo, this.cpuHi] : [0, 0],
      warnings,
    };
  }
}

/** The CPU ops onCpuOp keeps (steps, GEMMs, syncs, DataLoader, optimizer, data-parallel forwards, collectives). */
function isKeptCpuOp(name: string): boolean {
  switch (name.charCodeAt(0)) {
    case 80 /* P */:
      return STEP_RE.test(name);
    case 97 /* a */:
      return GEMM_OP_RE.test(name) || SYNC_OP_RE.test(name);
    case 101 /* e */:
      return DATALOADER_RE.test(name);
    case 79 /* O */:
      return OPTIMIZER_RE.test(name);
    case 68 /* D */:
      return name === 'DataParallel.forward' || name === 'DistributedDataParallel.forward';
    default:
      return CPU_COLLECTIVE_RE.test(name);
  }
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

