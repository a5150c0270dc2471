/**
 * The trace model: what one rank's trace is reduced to while it streams in.
 *
 * Only what the analyses need is kept. GPU activities go into one compact op
 * log per device, each op with the runtime call that launched it (joined while
 * parsing: Kineto writes a GPU op and its launch next to each other); CPU ops
 * are reduced on the fly (GEMM shapes, DataLoader and sync spans, step
 * markers, memory peaks), so the bulk of a trace (CPU ops, flows, memory
 * instants, runtime calls) costs no memory at all. Everything here is plain
 * data; building happens in `builder.ts`.
 */
import type { Id } from './event.js';
import type { LaunchCall, OpLog } from './opLog.js';

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
  device: number;
  startNs: number;
  durNs: number;
  /** Start of the runtime call that launched it; NaN when it was not known while parsing (see `correlation`). */
  launchStartNs: number;
  /** Correlation id to find the launch in GpuActivity.launches when launchStartNs is NaN. */
  correlation: number;
  name: string;
  processGroup: string | null;
  /** NCCL sequence number (a decimal string when wider than 2^53). */
  seq: Id | null;
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

/** Synchronising runtime calls (stream/device/event synchronise, blocking copies), in arrival order. */
export interface SyncCalls {
  count: number;
  startNs: Float64Array;
  durNs: Float64Array;
  nameId: Int32Array;
}

/** What the GPUs did: kernels, memcpys and memsets with their launches. */
export interface GpuActivity {
  /** Ops in all logs. */
  count: number;
  /** One op log per device, by device id. */
  logs: OpLog[];
  /**
   * Launch calls no op consumed while parsing, by correlation id: a call whose op
   * came much later or never, and CUDA graph launches (one call, many kernels).
   * Ops written without their launch find it here when read.
   */
  launches: Map<number, LaunchCall>;
  syncCalls: SyncCalls;
}

/** GEMM CPU-op calls by External id (sorted), to find the shape behind a kernel's launch. */
export interface GemmCalls {
  count: number;
  externalId: Float64Array;
  /** Index in gemmOps. */
  gemm: Int32Array;
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
  gpu: GpuActivity;
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
  gemmCalls: GemmCalls;
  memoryPeaks: MemoryPeak[];
  /** Number of events read, by category (for the report's provenance line). */
  eventCounts: Record<string, number>;
  cpuRangeNs: [number, number];
  warnings: string[];
}
