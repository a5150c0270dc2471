/**
 * The trace model: what one rank's trace is reduced to while it streams in.
 *
 * Only what the analyses need is kept. GPU activities and runtime calls go
 * into growable typed-array columns (45 and 37 bytes a row); CPU ops are
 * reduced on the fly (GEMM shapes, DataLoader and sync spans, step markers,
 * memory peaks), so the bulk of a trace (CPU ops, flows, memory instants) costs
 * no memory at all. Everything here is plain data; building happens in
 * `builder.ts`.
 */
export interface DeviceProperties {
  id: number;
  name: string;
  totalGlobalMemBytes: number;
  computeMajor: number;
  computeMinor: number;
  numSms: number;
}

export interface DistributedInfo {
  backend: string | null;
  rank: number;
  worldSize: number;
}

/** A CPU-side span gpuwise keeps (DataLoader waits, syncs, optimizer steps ...). */
export interface CpuSpan {
  name: string;
  startNs: number;
  endNs: number;
  tid: number | string;
}

export interface StepMarker {
  /** N of `ProfilerStep#N`. */
  step: number;
  startNs: number;
  endNs: number;
}

/** A collective seen on a GPU (NCCL kernel) with the args that identify it across ranks. */
export interface Collective {
  opIndex: number;
  name: string;
  processGroup: string | null;
  seq: string | null;
  bytes: number;
  groupSize: number;
}

/** A matrix-multiply CPU op with its shapes, linked to its kernels by External id. */
export interface GemmOp {
  name: string;
  dims: number[][];
  dtype: string | null;
}

export interface MemoryPeak {
  device: number;
  allocatedBytes: number;
  reservedBytes: number;
  atNs: number;
}

/** GPU activities (kernels, memcpy, memset): one row each. */
export interface GpuOps {
  count: number;
  device: Int16Array;
  /** 0 kernel, 1 memcpy, 2 memset. */
  kind: Uint8Array;
  /** KernelCategory. */
  category: Uint8Array;
  /** CopyKind. */
  copyKind: Uint8Array;
  startNs: Float64Array;
  durNs: Float64Array;
  correlation: Float64Array;
  nameId: Int32Array;
  bytes: Float64Array;
  /** Kineto's `blocks per SM` (-1 when absent): feeds the SM-efficiency estimate. */
  blocksPerSm: Float32Array;
}

/** CUDA runtime / driver calls on CPU threads. */
export interface RuntimeCalls {
  count: number;
  /** RuntimeKind. */
  kind: Uint8Array;
  startNs: Float64Array;
  durNs: Float64Array;
  correlation: Float64Array;
  externalId: Float64Array;
  nameId: Int32Array;
}

export interface TraceModel {
  /** File the trace came from (for messages only). */
  source: string;
  rank: number;
  worldSize: number;
  distributed: DistributedInfo | null;
  devices: DeviceProperties[];
  /** `baseTimeNanoseconds` as an exact decimal string, when present. */
  baseTimeNs: string | null;
  /** Integer µs subtracted from all timestamps in the file. */
  originUs: number;
  names: string[];
  gpu: GpuOps;
  runtime: RuntimeCalls;
  steps: StepMarker[];
  dataLoader: CpuSpan[];
  optimizerSteps: CpuSpan[];
  /** Host-blocking ops (`aten::item`, `aten::_local_scalar_dense`, `.cpu()` copies ...): the user-level culprits of syncs. */
  syncOps: CpuSpan[];
  /** Forward passes of DataParallel / DistributedDataParallel wrappers. */
  dataParallelForwards: CpuSpan[];
  ddpForwards: CpuSpan[];
  /** CPU-side collective ops (`nccl:all_reduce`, `record_param_comms`, `c10d::...`). */
  cpuCollectives: CpuSpan[];
  collectives: Collective[];
  gemmOps: GemmOp[];
  /** External id of a GEMM CPU op -> index in gemmOps. */
  gemmByExternalId: Map<number, number>;
  memoryPeaks: MemoryPeak[];
  /** Number of events read, by category (for the report's provenance line). */
  eventCounts: Record<string, number>;
  cpuRangeNs: [number, number];
  warnings: string[];
}
