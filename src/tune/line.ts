/**
 * The memory line of tune's search (types only): what the device allows and peak(value) = fixed + perValue x value.
 * Apart from predict.ts so the planner's hint (plannerHint.ts) and the search share it without importing each other.
 */

export interface DeviceBudget {
  totalBytes: number;
  /** GPU memory of the process outside PyTorch's allocator (CUDA context, NCCL, libraries). */
  nonAllocatorBytes: number;
  nonAllocatorSource: 'nvml' | 'calibration';
  /** What the allocator may hold at the peak: (total - non-allocator) / slack. */
  allocatorLimitBytes: number;
}

/** peak allocated(value) = fixedBytes + perValueBytes x value. */
export interface MemoryLine {
  fixedBytes: number;
  perValueBytes: number;
  /**
   * two-trials: through the peaks of the two largest measured values; one-trial+planner: the planner's line for the
   * model's Hugging Face config, scaled to the measured peak; one-trial+model: the fixed part from the model record
   * (weights, buffers, optimizer state, cuBLAS workspace) and the measured peak; one-trial: no model record, the
   * fixed part taken as 0 (the steepest line through the measured peak: safe, and corrected by the next trial).
   */
  source: 'two-trials' | 'one-trial+planner' | 'one-trial+model' | 'one-trial';
  /** The values whose measurements made the line. */
  values: number[];
  /** For one-trial+planner: the set-up the planner matched (precision, checkpointing). */
  note: string | null;
}
