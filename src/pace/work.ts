/**
 * The work items a fix names (pure, a leaf): the GPU's kernels by kind and the host's work by kind, each a closed list,
 * so two fixes of the same item compose (`Pipeline.work`: what is left of each) and a misspelt item is a type error,
 * not a fix that silently composes with nothing.
 */

/** The GPU's work a fix shortens, by the kernels it names (window ns). */
export const GPU_WORK = [
  /** fp32 GEMMs on the SIMT cores (no tensor cores): autocast, bf16 weights. */
  'fp32-matmul',
  /** fp32 GEMMs at the TF32 rate: autocast. */
  'tf32-matmul',
  /** Memory-bound kernels (elementwise, normalisation, reductions): autocast, fusion. */
  'memory-bound',
  /**
   * GEMMs whose shapes miss the tensor cores' alignment: fusion, misaligned-shapes pad them. Autocast adds to it: an
   * fp32 GEMM with a dimension not a multiple of 8 runs as fast as an aligned one on the SIMT cores and far slower in
   * bf16, and that excess is what padding then removes.
   */
  'misaligned-gemms',
  /** NCHW <-> NHWC transposes around convolutions: channels_last, autocast. */
  'nchw-transposes',
  /** Normalisation and pooling on NCHW tensors: channels_last. */
  'nchw-norm-pool',
  /** fp32 fused attention: autocast, bf16 weights. */
  'fp32-attention',
  /** Hand-written attention (batched matmuls and a softmax): SDPA. */
  'attention',
  /** Copies from pageable host memory: pin_memory. */
  'pageable-copies',
  /** Collectives hidden under compute that still slow it: no_sync. */
  'hidden-collectives',
  /** DataParallel's replication, scatter and gather on the GPUs: DDP. */
  'dataparallel',
] as const;
export type GpuWork = (typeof GPU_WORK)[number];

/** The host's own work a fix shortens, by kind. */
export const HOST_WORK = [
  /** Kernel launches (dispatch, Python per op): fusion, SDPA, CUDA graphs. */
  'launches',
  /** Autograd's bookkeeping in a loop that never runs a backward: inference_mode. */
  'autograd',
  /** DataParallel's one thread driving every GPU: DDP. */
  'dataparallel',
] as const;
export type HostWork = (typeof HOST_WORK)[number];

/** What is left of each work item fixes named (1 = untouched; absent = untouched), by stage. */
export interface WorkLeft {
  gpu: Partial<Record<GpuWork, number>>;
  host: Partial<Record<HostWork, number>>;
  /** GPU work (window ns) that fixes added to an item and that is left of it (FixOp `addNs`: autocast's misaligned GEMMs). */
  gpuAdded?: Partial<Record<GpuWork, number>>;
}

/** No work item touched yet. */
export function noWorkTouched(): WorkLeft {
  return { gpu: {}, host: {}, gpuAdded: {} };
}
