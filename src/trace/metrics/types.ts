/**
 * TraceMetrics: the figures computed from one rank's trace. Plain JSON data:
 * this is what `--json` prints under `ranks[].metrics`, and what the rules in
 * advice/ read. Every duration is in ns; definitions are in docs/analyze.md.
 */
import type { AttentionBackend } from '../attentionOps.js';
import type { TraceFramework } from '../framework.js';
import type { CategoryName } from '../kernelClass.js';

export const IDLE_CAUSES = ['dataloader', 'hostSync', 'h2dCopy', 'communication', 'launch', 'other'] as const;
export type IdleCause = (typeof IDLE_CAUSES)[number];
export type IdleByCause = Record<IdleCause, number>;
export type NsByCategory = Record<CategoryName, number>;

export interface DeviceTime {
  device: number;
  /** Union of kernel, memcpy and memset intervals inside the window. */
  busyNs: number;
  idleNs: number;
  idleByCauseNs: IdleByCause;
  /** Sum of kernel durations by category (overlapping kernels each count). */
  kernelNsByCategory: NsByCategory;
  /** Union of communication kernels, and the part of it not hidden under compute kernels. */
  commNs: number;
  commExposedNs: number;
  kernels: number;
  /**
   * Launch gaps after a sync drained the queue, until the CPU led again (already counted in
   * idleByCauseNs.hostSync, not launch); 0 where the CPU never regains its lead (then they stay launch).
   */
  syncRefillNs: number;
  /** Idle gaps that began while the host was blocked in a sync (the queue drained). */
  syncDrains: number;
}

export interface StepMetrics {
  step: number;
  startNs: number;
  endNs: number;
  durNs: number;
  devices: DeviceTime[];
}

export interface CopyStats {
  kind: string;
  count: number;
  bytes: number;
  durNs: number;
  /** bytes / durNs, in GB/s (1e9 bytes per second). */
  bandwidthGBs: number;
}

export interface KernelStat {
  name: string;
  category: CategoryName;
  count: number;
  totalNs: number;
  meanNs: number;
}

export interface LaunchStats {
  kernels: number;
  kernelsPerStep: number;
  medianKernelNs: number;
  /** Time the CPU spent inside kernel-launch API calls. */
  cpuLaunchNs: number;
  /** Sum of kernel durations. */
  gpuKernelNs: number;
  /** Median of kernel start minus the end of its launch call: how far the CPU runs ahead. */
  medianLaunchToStartNs: number;
  /** Kernels that ran shorter than the CPU call that launched them. */
  shorterThanLaunchFraction: number;
  /** CUDA graph launches per step (a step that replays captured graphs: its launches are those left outside them).
   * Added after schema 2's first release: absent from older outputs. */
  graphLaunchesPerStep?: number;
}

export interface PrecisionStats {
  /** Matrix-multiply (GEMM, convolution, attention) kernel time by precision class. */
  tensorCore16Ns: number;
  tensorCoreTf32Ns: number;
  tensorCore8Ns: number;
  fp32Ns: number;
  unknownNs: number;
  /** Tensor-core share of the matmul time whose precision is known (0..1), null when none. */
  tensorCoreShare: number | null;
  topFp32Kernels: KernelStat[];
}

export interface GemmShapeStat {
  op: string;
  /** Problem size per call (batch x M x N x K). */
  batch: number;
  m: number;
  n: number;
  k: number;
  dtype: string | null;
  calls: number;
  gpuNs: number;
  flopsPerCall: number;
  /** Achieved TFLOP/s of this shape. */
  tflops: number;
  /** The dimensions (M, N or K) that are not a multiple of the tensor-core alignment for the dtype. */
  misalignedDims: string[];
}

/**
 * The kernel mix per step (ns and counts are means per analysed step), from kernel names: see
 * kernelMix.ts. Memory-bound = elementwise and reduction kernels (normalisation, softmax, losses,
 * copies), without the optimizer's and without the layout transposes.
 */
export interface KernelMix {
  memoryBoundFp32Ns: number;
  memoryBoundHalfNs: number;
  memoryBoundOtherNs: number;
  /** cuDNN's nchwToNhwc / nhwcToNchw: a convolution fed NCHW tensors it runs in NHWC. */
  nchwTransposeNs: number;
  /** Normalisation and pooling kernels of the NCHW layout, and of channels_last. */
  nchwNormPoolNs: number;
  channelsLastNormPoolNs: number;
  /** Of the normalisation and pooling kernels, those in bf16/fp16. */
  halfNormPoolNs: number;
  /** Inductor's (torch.compile) Triton kernels: time and count per step. */
  tritonNs: number;
  tritonKernels: number;
  /** Kernels in fp16 (c10::Half), and the GradScaler's unscale / update kernels, per step. */
  fp16Kernels: number;
  gradScalerKernels: number;
  /**
   * The kernel time a compiler could fuse (elementwise, reduction, optimizer and other kernels that are not Triton's),
   * by what it does, for the fusion rule (added in schema 2): casts and copies (`copy_kernel`: autocast's weight
   * casts, `.contiguous()`), normalisations (layer/RMS/group/batch norm, forward and backward), softmax and the loss
   * over the vocabulary, other reductions (`reduce_kernel`: bias gradients, sums), the optimizer's multi-tensor
   * kernels, and the rest: pointwise ops (add, mul, GELU, tanh, dropout, fill, index, concatenation).
   */
  fusable: { castNs: number; pointwiseNs: number; normNs: number; softmaxNs: number; reduceNs: number; optimizerNs: number };
  /**
   * `memoryBoundFp32Ns` by what bf16 autocast would do to each kernel (advice/autocast.ts; added in schema 2): ops of
   * autocast's fp32 list (layer/RMS/group norm, softmax, losses, pow: they stay fp32, and casts cross in and out of
   * them), batch norm, activations and dropout, copies and concatenations, other reductions, other pointwise ops.
   */
  memoryBoundFp32ByAutocast: { keptFp32Ns: number; activationNs: number; copyNs: number; reductionNs: number; batchNormNs: number; pointwiseNs: number };
}

/**
 * Consecutive cast and pointwise kernels of a stream (pointwiseChains.ts), per analysed step: their time, the time
 * with each chain one kernel as long as its mean member (what a compiler fusing each chain would leave at one kernel's
 * traffic), how many chains and how many kernels they hold.
 */
export interface PointwiseChains extends ChainFigures {
  /**
   * The same with hand-written attention's kernels (`attention.handWritten`: its matmuls and the kernels between them)
   * taken out of each stream's sequence: the step as F.scaled_dot_product_attention leaves it, where the chains that
   * only attention's kernels split join. Absent without hand-written attention (added after schema 2's release).
   */
  withoutHandWrittenAttention?: ChainFigures;
}

/** Chains of cast and pointwise kernels, per analysed step (PointwiseChains says what each figure is). */
export interface ChainFigures {
  ns: number;
  asOneKernelNs: number;
  chainsPerStep: number;
  kernelsPerStep: number;
}

/** The shape of an attention: the batched matmuls' batch (batch x heads), the sequence and the head dimension. */
export interface AttentionShape {
  batch: number;
  seq: number;
  headDim: number;
  dtype: string | null;
}

/**
 * Attention written out by hand (attention.ts): batched matmuls over a `[batch x heads, T, T]` score matrix (Q·Kᵀ
 * makes it, P·V consumes it, and their backward), with a softmax between them on the same stream. Figures are means per
 * analysed step.
 */
export interface HandWrittenAttention {
  shapes: AttentionShape[];
  /** The score and value matmuls, forward and backward: their kernels' time, their kernels, their FLOPs. */
  gemmNs: number;
  gemmKernels: number;
  gemmFlops: number;
  /** The kernels between them on the stream (scaling, masking, softmax, dropout, casts): time and count. */
  betweenNs: number;
  betweenKernels: number;
  /**
   * The same time by what the kernels do (KernelMix.fusable's kinds): the kernels alone, as KernelMix.fusable holds
   * them, without the device-to-device copies (betweenNs has them).
   */
  betweenByKind: KernelMix['fusable'];
  /**
   * The copies that make its operands and its output contiguous, time and count: copies of one dtype from a strided
   * view (kernelClass.ts isLayoutCopy) directly before its first matmul (q and k's transposed views; the incoming
   * gradient) and after its last (the output's transpose; dQ and dK). A fused kernel reads and writes those layouts as
   * they are: llm.c's GPT-2 on an H200 ran 72 a step (1.65 ms), its SDPA twin none (added after schema 2's release).
   */
  layoutCopyNs: number;
  layoutCopyKernels: number;
  /** The kernels between them that take the most time (at most three), with their time per step. */
  topBetween: { name: string; ns: number }[];
  /** Bytes of score-sized tensors the matmuls and the kernels between them write (an upper estimate: one each). */
  scoreBytes: number;
  /** Attention forwards per step (one softmax each), and their model FLOPs (Q·Kᵀ and P·V over the whole score matrix). */
  forwardCalls: number;
  forwardFlops: number;
  /** A masking kernel (masked_fill, where) runs between the matmuls. */
  masked: boolean;
  /** Softmax's backward runs between them: the step trains through the attention. */
  backward: boolean;
  /** It is SDPA's own math fallback (aten::_scaled_dot_product_attention_math ran): no fused kernel took the inputs. */
  mathFallback: boolean;
}

/** Fused attention in use (attention.ts): `F.scaled_dot_product_attention`'s fused backends and attention kernels. */
export interface FusedAttention {
  /** The SDPA backends whose ops ran (none recorded: attention kernels by name alone, e.g. the flash-attn package). */
  backends: AttentionBackend[];
  /** Fused attention ops per step, forward and backward. */
  callsPerStep: number;
  /** Their model FLOPs per step (causal halved; a backward twice its forward); 0 when no op was recorded. */
  flops: number;
  /** Attention kernels' time per step (flash, fmha, cuDNN SDPA: the `attention` kernel category). */
  kernelNs: number;
  /** `is_causal` of the calls; null when not recorded or mixed. */
  causal: boolean | null;
  /** The attention kernel with the most time. */
  topKernel: string | null;
}

/** Attention in the step: hand-written (the lever) and fused (already pulled); null parts where the trace shows none. */
export interface AttentionStats {
  handWritten: HandWrittenAttention | null;
  fused: FusedAttention | null;
}

/**
 * Model FLOPs utilisation from the matmuls and convolutions the trace records with shapes (GEMMs and
 * batched GEMMs: 2·M·N·K each; cuDNN convolutions forward and backward: convFlops.ts) and from attention: hand-written
 * attention's matmuls, and SDPA's fused ops from their recorded shapes (trace/attentionOps.ts; causal halved). Attention
 * kernels without an op that gives their shapes (the flash-attn package) are not counted, so this is a floor; null
 * when matmuls without shapes dominate or the GPU is unknown.
 */
export interface ModelFlops {
  flopsPerStep: number;
  /** Of which GEMMs and convolutions (added in schema 2, after flopsPerStep). */
  gemmFlopsPerStep: number;
  convFlopsPerStep: number;
  /**
   * Of which fused attention ops (SDPA's flash, efficient and cuDNN kernels, from their recorded shapes); and, among the
   * GEMMs, hand-written attention's matmuls. Both added after schema 2's first release (absent from older reports).
   */
  fusedAttentionFlopsPerStep: number;
  handWrittenAttentionFlopsPerStep: number;
  /** Attention kernel time per step whose FLOPs are not counted (no op recorded their shapes); 0 when all are. */
  uncountedAttentionNsPerStep: number;
  achievedTflops: number;
  /** The GPU's dense peak for the precision most matmul time ran in, and which one it is. */
  peakTflops: number;
  peakPrecision: 'bf16' | 'fp16' | 'tf32' | 'fp32' | 'fp8';
  gpu: string;
  mfu: number;
  /** Share of the matmul kernel time whose FLOPs are counted (GEMMs with shapes, convolutions). */
  coveredShare: number;
}

export interface CommStats {
  collectives: number;
  bytes: number;
  /** Per-step means over devices. */
  commNsPerStep: number;
  exposedNsPerStep: number;
  /** Share of communication time hidden under compute (0..1), null without communication. */
  overlapShare: number | null;
  medianMessageBytes: number;
  allReducesPerStep: number;
}

export interface MemoryStats {
  device: number;
  peakAllocatedBytes: number;
  peakReservedBytes: number;
  deviceTotalBytes: number | null;
}

/** One step of the devices one process drives (crossDevice.ts); device figures in `CrossDeviceStats.devices` order. */
export interface CrossDeviceStep {
  step: number;
  /** Each device's busy time: the union of its kernels, copies and memsets (as DeviceTime.busyNs). */
  busyNsByDevice: number[];
  /** Time at least one of the devices was busy (the union over devices). */
  anyBusyNs: number;
  /** Time two or more were busy at once. */
  concurrentNs: number;
  /** Time exactly one was busy (anyBusyNs - concurrentNs). */
  soloNs: number;
  /** Peer-to-peer copies (Kineto's `Memcpy PtoP`: between two devices), summed on the device that ran them. */
  peerCopyNsByDevice: number[];
  peerCopies: number;
  peerCopyBytes: number;
}

/**
 * The GPUs one process drives, side by side (a model split by hand over devices, DataParallel); null for a process
 * with one GPU. Definitions in docs/analyze.md.
 */
export interface CrossDeviceStats {
  /** Device ids that ran work in the analysed steps, ascending. */
  devices: number[];
  steps: CrossDeviceStep[];
  /** Means over the steps. */
  perStep: Omit<CrossDeviceStep, 'step'>;
  /**
   * Share of device time spent idle while another device of the process works: 1 - sum(busy_i) / (n x anyBusy), over
   * the steps. 0 when the devices always work together, 1 - 1/n when they strictly take turns.
   */
  bubbleShare: number;
}

export interface TimelineBucket {
  startNs: number;
  busyShare: number;
}

export interface TraceMetrics {
  rank: number;
  worldSize: number;
  devices: { id: number; name: string; totalMemoryBytes: number; computeCapability: string }[];
  /** Whether steps came from ProfilerStep#N markers (false: the whole trace is one window). */
  stepsFromMarkers: boolean;
  steps: StepMetrics[];
  stepTime: { meanNs: number; medianNs: number; minNs: number; maxNs: number };
  /** Means per step over the analysed steps and over the devices that ran work (one GPU's view of a step). */
  perStep: {
    durNs: number;
    busyNs: number;
    idleNs: number;
    idleByCauseNs: IdleByCause;
    kernelNsByCategory: NsByCategory;
    /** Of idleByCauseNs.hostSync: the refill after the syncs (see DeviceTime.syncRefillNs). */
    syncRefillNs: number;
    /** Syncs that drained the GPU's queue, per step. */
    syncDrains: number;
  };
  /** perStep.busyNs / perStep.durNs (0..1). */
  gpuBusyShare: number;
  /** tb_plugin-style estimate: duration-weighted min(1, blocks per SM) over kernels (0..1), null if unknown. */
  smEfficiency: number | null;
  launch: LaunchStats;
  precision: PrecisionStats;
  copies: CopyStats[];
  gemmShapes: GemmShapeStat[];
  kernelMix: KernelMix;
  /** Chains of cast and pointwise kernels (pointwiseChains.ts; added after schema 2's release). */
  pointwiseChains: PointwiseChains;
  /** null when the trace cannot tell (see ModelFlops). */
  modelFlops: ModelFlops | null;
  /** Attention in the step: hand-written, fused (added after schema 2's first release). */
  attention: AttentionStats;
  comm: CommStats;
  memory: MemoryStats[];
  topKernels: KernelStat[];
  /** Devices driven by this one process, side by side; null with one device (added in schema 2). */
  crossDevice: CrossDeviceStats | null;
  /** Busy share over time for the first device with kernels (for charts). */
  timeline: TimelineBucket[];
  /** Dataloader waits, sync calls, etc. with examples for evidence. */
  examples: {
    syncCalls: { name: string; count: number; totalNs: number }[];
    syncOps: { name: string; count: number; firstAtNs: number }[];
    dataLoaderWaitNsPerStep: number;
    pageableH2dExample: { name: string; atNs: number; bytes: number; durNs: number } | null;
    /** Time per step the host spent inside memcpy runtime calls (blocking copies wait there on the GPU); added after schema 2's release. */
    memcpyBlockedNsPerStep?: number;
    /**
     * The stepping thread's time a step outside memcpy and sync calls and DataLoader waits: the median over the step
     * spans, the profiler's cost included (an upper bound of the host's own work); null without two step spans.
     */
    hostFreeNsPerStep?: number | null;
  };
  /** Structure facts the rules read. */
  structure: {
    dataParallel: boolean;
    dataParallelDevices: number;
    ddp: boolean;
    ddpForwardsPerStep: number;
    optimizerStepsPerStep: number;
    /** Micro-steps (forwards) followed by an all-reduce before the next forward, among those that were not the last of their step. */
    accumulationMicroStepsWithAllReduce: number;
    accumulationMicroSteps: number;
    /**
     * The training framework the trace names (Python frames of `with_stack=True`, Lightning's profiler labels:
     * trace/framework.ts) and the event that named it; null when it names none (added in schema 2).
     */
    framework: { name: TraceFramework; evidence: string } | null;
  };
}
