/**
 * A GPU given by its numbers instead of its name (`--gpu-memory`, `--gpu-tflops`, `--gpu-bandwidth`): the other
 * figures the planner needs are derived from them, with the ratios of current data-centre parts. Pure.
 */
import type { GpuSpec } from './gpus.js';

/** Bandwidth assumed when none is given (an A100-class part), GB/s. */
export const DEFAULT_CUSTOM_BANDWIDTH_GBS = 2000;

export function customGpu(memoryBytes: number, bf16Tflops: number, bandwidthGBs: number = DEFAULT_CUSTOM_BANDWIDTH_GBS): GpuSpec {
  const gib = memoryBytes / 1024 ** 3;
  return {
    id: 'custom',
    name: `custom GPU (${Number.isInteger(gib) ? gib : gib.toFixed(1)} GiB, ${bf16Tflops} TFLOP/s)`,
    memoryBytes,
    bf16Tflops,
    fp16Tflops: bf16Tflops,
    // Tensor-core TF32 runs at half the bf16 rate, plain fp32 at about a fifteenth (H100, A100).
    tf32Tflops: bf16Tflops / 2,
    fp32Tflops: bf16Tflops / 15,
    memoryBandwidth: bandwidthGBs * 1e9,
    intraNodeBandwidth: 64e9,
    source: 'given on the command line',
  };
}
