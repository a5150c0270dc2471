/**
 * Constants fitted to measurements (test/fixtures/planner/memory-calibration.jsonl: torch 2.11, CUDA 13,
 * H200). Each is a property of PyTorch or the GPU stack, never of a particular model; the accuracy test
 * re-checks them against every committed measurement.
 */
import { MiB } from '../util/units.js';

export const CALIBRATION = {
  /** cuBLAS/cuBLASLt workspaces held by the caching allocator: alloc_before_step - mem_after_steps = 65 MiB on every row. */
  cublasWorkspaceBytes: 65 * MiB,
  /** Other small resident allocations (RNG state, step counters, input ids, allocator block rounding). */
  miscResidentBytes: 24 * MiB,
  /**
   * Bytes per token per vocabulary entry alive at the start of backward (cross-entropy backward): the
   * saved fp32 log-softmax, nll_loss's dense gradient and log_softmax's gradient, 3 x 4 bytes; fitted.
   */
  lossBackwardBytesPerVocab: 12,
  /** At the end of forward: logits + fp32 copy + log-softmax (fp32 model: no copy). */
  lossForwardBytesPerVocabFp32: 8,
  lossForwardBytesPerVocabHalf: 10,
  /** Foreach Adam/AdamW materialise one parameter-sized temporary list in step (GPT-2 first-step peak: 1.05x). */
  optimizerTemporaryFactor: 1.0,
  /**
   * Gradient-sized buffers DDP keeps besides `.grad` (default buckets, gradient_as_bucket_view=False): its GPT-2
   * peak exceeds the single-GPU peak by 0.994 GB = 2.0 x the 0.498 GB of fp32 gradients (trace-meta-peaks.jsonl).
   */
  ddpGradientBufferCopies: 2,
  /** peak reserved / peak allocated of the caching allocator (median of the measurements). */
  reservedOverAllocated: 1.06,
  /** nvidia-smi process memory minus reserved: the CUDA context (742 MiB on every transformer row, CUDA 13, H200). */
  cudaContextBytes: 742 * MiB,
  /** NCCL communicator buffers outside the caching allocator (per rank, default NCCL settings); estimate. */
  ncclBufferBytes: 512 * MiB,
  /** Headroom under a hard budget: the allocator frees its cache and retries before it fails. */
  fitSlack: 1.02,
  // Step-time constants (fitted on the single-GPU step_s column).
  /**
   * Fraction of the datasheet tensor-core rate that matmul-heavy training reaches. The free fit on the small
   * measured models gives 0.72; it is held at 0.55, the upper end of published eager-PyTorch MFU for
   * multi-billion-parameter models, which costs 2 points of median error here.
   */
  tensorEfficiency: 0.55,
  /** Fraction of the fp32 (non-tensor) rate. */
  fp32Efficiency: 0.75,
  /** Memory passes over the saved activations per training step (elementwise ops in forward and backward). */
  activationPasses: 17,
  /** CPU launch time per block per micro-step (eager PyTorch), ms; the GPU waits on it when kernels are tiny. */
  cpuMsPerLayer: 1.8,
  /** Extra launch time per expert per MoE layer (Hugging Face loops over experts: gather, 3 matmuls, scatter); estimate. */
  cpuMsPerExpert: 0.25,
  /** Host memory traffic a CPU optimizer step (offload) sustains per rank, bytes/s; estimate. */
  cpuOptimizerBytesPerSec: 10e9,
  /** Fraction of a collective that overlaps with compute when the framework overlaps it (DDP buckets, FSDP prefetch). */
  commOverlap: 0.8,
  /** Achievable fraction of link bandwidth for large collectives (nccl-tests bus bandwidth / link). */
  linkEfficiency: 0.8,
} as const;
