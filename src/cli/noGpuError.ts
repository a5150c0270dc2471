/**
 * No GPU can be read (no driver, no NVML, no nvidia-smi). Not a usage error: the command was right, the machine has
 * no GPU; main() exits with EXIT_NO_GPU (9, as nvidia-smi does without a driver). Its own module so that main()
 * knows it without loading the telemetry code.
 */
export class NoGpuError extends Error {
  override name = 'NoGpuError';
}
