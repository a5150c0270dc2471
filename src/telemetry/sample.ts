/**
 * The telemetry sample model: what one look at the GPUs of a host returns, whatever the source
 * (NVML, an `nvidia-smi` process, an `nvidia-smi -q -x` / `--query-gpu` file, or a recording).
 *
 * Rule for every figure: `null` means "not available" (the source does not report it, the driver
 * said NOT_SUPPORTED / N/A, or the GPU is lost). It is never folded into 0, because 0 % utilisation
 * or 0 bytes used are real, meaningful readings.
 */

export const SNAPSHOT_SCHEMA_VERSION = 1;

/** Where a snapshot came from. */
export type SampleSource = 'nvml' | 'nvidia-smi' | 'smi-xml' | 'smi-csv' | 'smi-table' | 'replay';

/** One process that holds a context on one GPU. */
export interface ProcessSample {
  pid: number;
  /** NVML index of the GPU this row is about (a process on two GPUs has two rows). */
  gpuIndex: number;
  /** C = compute, G = graphics, C+G = both; null when the source does not say. */
  type: 'C' | 'G' | 'C+G' | null;
  /** Short process name (from nvidia-smi or /proc/PID/comm). */
  name: string | null;
  /** GPU memory the process holds on this GPU (CUDA context + allocator pools). null on WDDM/MIG without permission. */
  usedMemoryBytes: number | null;
  /** Share of the last second in which a kernel of this process ran on the SMs (nvmlDeviceGetProcessUtilization). */
  smUtilPercent: number | null;
  /** Share of the last second in which this process read or wrote device memory. */
  memUtilPercent: number | null;
  /** Host side, from /proc: login name of the owner. */
  user: string | null;
  /** Full command line, arguments joined by spaces. */
  command: string | null;
  /** Host CPU use of the process since the previous sample, in percent of one core. */
  cpuPercent: number | null;
  /** Resident host memory. */
  rssBytes: number | null;
  /** torchrun / torch.distributed environment of the process (RANK, LOCAL_RANK, WORLD_SIZE). */
  rank: number | null;
  localRank: number | null;
  worldSize: number | null;
  /** SLURM_JOB_ID from the process environment. */
  slurmJobId: string | null;
}

/** One GPU at one moment. */
export interface GpuSample {
  /** NVML / nvidia-smi index (PCI bus order). */
  index: number;
  /** The ordinal CUDA gives this GPU under the current CUDA_VISIBLE_DEVICES; null when hidden from CUDA. */
  cudaIndex: number | null;
  uuid: string;
  name: string;
  pciBusId: string | null;
  /** True once NVML said NVML_ERROR_GPU_IS_LOST: the GPU fell off the bus; its figures are null from then on. */
  lost: boolean;
  memoryTotalBytes: number | null;
  /** Memory the driver and firmware reserve (NVML memory v2). */
  memoryReservedBytes: number | null;
  /** Memory allocated by processes (NVML v2 semantics: excludes the reserved part). */
  memoryUsedBytes: number | null;
  memoryFreeBytes: number | null;
  /** Percent of the last sample period in which one or more kernels ran ("GPU-Util"). */
  utilizationGpuPercent: number | null;
  /** Percent of the last sample period in which device memory was read or written. */
  utilizationMemoryPercent: number | null;
  powerWatts: number | null;
  powerLimitWatts: number | null;
  /** Energy since the driver was loaded (counter). */
  energyJoules: number | null;
  temperatureC: number | null;
  memoryTemperatureC: number | null;
  fanPercent: number | null;
  performanceState: string | null;
  smClockMhz: number | null;
  memoryClockMhz: number | null;
  smClockMaxMhz: number | null;
  /** Active clock event ("throttle") reasons, e.g. `sw_power_cap`; [] when none; null when unknown. */
  clocksEventReasons: string[] | null;
  pcieLinkGen: number | null;
  pcieLinkWidth: number | null;
  /** PCIe payload rates from differencing the driver's byte counters; null until two readings exist. */
  pcieTxBytesPerSecond: number | null;
  pcieRxBytesPerSecond: number | null;
  eccErrorsCorrectedVolatile: number | null;
  eccErrorsUncorrectedVolatile: number | null;
  migMode: 'enabled' | 'disabled' | null;
  computeMode: string | null;
  processes: ProcessSample[];
}

/** All GPUs of one host at one moment. */
export interface Snapshot {
  schemaVersion: typeof SNAPSHOT_SCHEMA_VERSION;
  source: SampleSource;
  /** Wall clock of the sample, ms since the Unix epoch (null when a file does not carry a parseable time). */
  timestampMs: number | null;
  hostname: string | null;
  driverVersion: string | null;
  cudaVersion: string | null;
  gpus: GpuSample[];
  /** Human-readable caveats: hidden processes, missing fields, lost GPUs. */
  notes: string[];
}

/** A GPU sample with every figure "not available": the start point of each source. */
/**
 * The memory CUDA can use on this GPU, the one figure reports give for it (util/format.ts fmtGpuMemory): NVML's total
 * less what the driver and firmware reserve, which is what torch's `total_memory` and a trace's `totalGlobalMem` say
 * (139.8 GiB on an H200, whose NVML total is 140.4 GiB). NVML's total where the reserved part is not reported.
 */
export function usableMemoryBytes(g: Pick<GpuSample, 'memoryTotalBytes' | 'memoryReservedBytes'>): number | null {
  if (g.memoryTotalBytes === null) return null;
  return g.memoryReservedBytes !== null && g.memoryReservedBytes < g.memoryTotalBytes ? g.memoryTotalBytes - g.memoryReservedBytes : g.memoryTotalBytes;
}

/** A GPU as the JSON views write it: `memoryUsableBytes` (usableMemoryBytes) beside NVML's total, the figure the text shows. */
export type GpuJson = GpuSample & { memoryUsableBytes: number | null };

/**
 * A snapshot as `smi --json`, `smi --replay --json` and `monitor --json-stream` write it: each GPU with
 * `memoryUsableBytes`, the total the table, Markdown and HTML show (issue 47 item 7: the text said 139.8 GiB where the
 * JSON's only total said 140.4 GiB), placed after `memoryTotalBytes`.
 */
export function snapshotJson(s: Snapshot): Omit<Snapshot, 'gpus'> & { gpus: GpuJson[] } {
  return {
    ...s,
    gpus: s.gpus.map((g) => {
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(g)) {
        out[k] = v;
        if (k === 'memoryTotalBytes') out.memoryUsableBytes = usableMemoryBytes(g);
      }
      return out as unknown as GpuJson;
    }),
  };
}

export function emptyGpu(index: number, uuid: string, name: string): GpuSample {
  return {
    index,
    cudaIndex: null,
    uuid,
    name,
    pciBusId: null,
    lost: false,
    memoryTotalBytes: null,
    memoryReservedBytes: null,
    memoryUsedBytes: null,
    memoryFreeBytes: null,
    utilizationGpuPercent: null,
    utilizationMemoryPercent: null,
    powerWatts: null,
    powerLimitWatts: null,
    energyJoules: null,
    temperatureC: null,
    memoryTemperatureC: null,
    fanPercent: null,
    performanceState: null,
    smClockMhz: null,
    memoryClockMhz: null,
    smClockMaxMhz: null,
    clocksEventReasons: null,
    pcieLinkGen: null,
    pcieLinkWidth: null,
    pcieTxBytesPerSecond: null,
    pcieRxBytesPerSecond: null,
    eccErrorsCorrectedVolatile: null,
    eccErrorsUncorrectedVolatile: null,
    migMode: null,
    computeMode: null,
    processes: [],
  };
}

/** A process row with only what the GPU side knows. */
export function emptyProcess(pid: number, gpuIndex: number): ProcessSample {
  return {
    pid,
    gpuIndex,
    type: null,
    name: null,
    usedMemoryBytes: null,
    smUtilPercent: null,
    memUtilPercent: null,
    user: null,
    command: null,
    cpuPercent: null,
    rssBytes: null,
    rank: null,
    localRank: null,
    worldSize: null,
    slurmJobId: null,
  };
}

/** Thrown by the pure parsers for malformed input; shells turn it into InputError (one line, exit 2). */
export class TelemetryParseError extends Error {
  override name = 'TelemetryParseError';
}

export const MIB = 1024 * 1024;
