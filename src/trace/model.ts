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
import type { FrameworkEvidence } from './framework.js';
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

/**
 * Collective kernels (NCCL) with the args that identify them across ranks, one
 * column per field (a DDP trace has some 20,000 a GB; objects cost 120 bytes each).
 */
export interface CollectiveKernels {
  count: number;
  startNs: Float64Array;
  durNs: Float64Array;
  /** Start of the runtime call that launched it; NaN when not known while parsing (see `correlation`). */
  launchStartNs: Float64Array;
  /** Correlation id to find the launch in GpuActivity.launches when launchStartNs is NaN. */
  correlation: Float64Array;
  bytes: Float64Array;
  /** Collective name (all_reduce, ...), in `names`. */
  nameId: Int32Array;
  /** Process group name or description, in `names`; -1 when absent. */
  processGroupId: Int32Array;
  /** NCCL sequence number; NaN when absent. */
  seq: Float64Array;
  /** Sequence numbers wider than 2^53, as their decimal text, by row. */
  seqText: Map<number, string>;
}

/** A matrix-multiply or convolution CPU op with its shapes, linked to its kernels by External id. */
export interface GemmOp {
  name: string;
  dims: number[][];
  dtype: string | null;
  /** A convolution's FLOPs per call (convFlops.ts), worked out while parsing from its args; null for a matrix multiply. */
  convFlops: number | null;
}

/** A fused attention CPU op (`F.scaled_dot_product_attention`'s backends: trace/attentionOps.ts) with its shapes. */
export interface AttentionOp {
  name: string;
  dims: number[][];
  /** `is_causal` from its Concrete Inputs; null when not recorded. */
  causal: boolean | null;
}

/** The calls of the attention ops, by CPU start (columns: a step makes a few per layer). */
export interface AttentionCalls {
  count: number;
  startNs: Float64Array;
  /** Index in attentionOps. */
  op: Int32Array;
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
  /** Op logs by device id: one per device, or one per device and part after a parallel parse (read together). */
  logs: OpLog[];
  /**
   * Launch calls no op consumed while parsing, by correlation id: a call whose op
   * came much later or never, and CUDA graph launches (one call, many kernels).
   * Ops written without their launch find it here when read.
   */
  launches: Map<number, LaunchCall>;
  syncCalls: SyncCalls;
  /** Start times of CUDA graph launches (`cudaGraphLaunch`: one call replays a captured graph's kernels), in order. */
  graphLaunchStartsNs: number[];
}

/** GEMM and convolution CPU-op calls by External id (sorted), to find the shape behind a kernel's launch. */
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
  /**
   * Spans of CPU-side collectives (`c10d::...`, gloo), which can hold the host; NCCL's
   * own `nccl:*` CPU ops are not kept. Columns: a DDP trace has some 20,000 a GB.
   */
  cpuCollectives: { count: number; startNs: Float64Array; endNs: Float64Array };
  /** Starts of CPU-side all-reduce ops (`nccl:all_reduce`, `c10d::allreduce_`, gloo), sorted. */
  cpuAllReduceStartsNs: Float64Array;
  collectives: CollectiveKernels;
  /** The first event naming each training framework (trace/framework.ts); empty for most traces. */
  frameworks: FrameworkEvidence[];
  gemmOps: GemmOp[];
  gemmCalls: GemmCalls;
  /** Fused attention ops (distinct op, shapes and causality) and their calls. */
  attentionOps: AttentionOp[];
  attentionCalls: AttentionCalls;
  memoryPeaks: MemoryPeak[];
  /** Number of events read, by category (for the report's provenance line). */
  eventCounts: Record<string, number>;
  cpuRangeNs: [number, number];
  warnings: string[];
  /**
   * Why reading stopped before the end of the trace (the file is cut, a damaged gzip stream, a syntax error), or null
   * when it was read to its end. A trace that ended early holds its last steps only in part (trace/coverage.ts).
   */
  endedEarly: string | null;
}
