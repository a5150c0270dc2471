/**
 * NVML through koffi (shell). Binds the versioned symbols of libnvidia-ml.so.1 lazily, resolves each
 * optional symbol once and turns a missing one into "not available" instead of a failure.
 *
 * Cost rules (see ../shared/reference/monitoring.md section 9):
 *  - per sample, only calls that cost microseconds: memory v2, utilisation, power, temperature,
 *    clocks, clock-event reasons, compute processes (fan speed and P-state until the GPU says
 *    NOT_SUPPORTED);
 *  - graphics processes (12 us a call on an H200, and rare on a compute GPU) once a second;
 *  - per-process utilisation (~2 ms a call, a one-second window) at most once a second, and only
 *    when a GPU runs two or more processes: a sole process's utilisation is the GPU's own;
 *  - the PCIe byte counters from nvmlDeviceGetFieldValues (about 0.5 ms) at most once per
 *    `slowIntervalMs` (1 s);
 *  - rarely-changing figures (ECC, PCIe link, power limit, compute/MIG mode: about 2 ms a pass on
 *    an H200) every 10 s, the energy counter (about 4 ms a call) every 60 s;
 *  - never nvmlDeviceGetPcieThroughput (blocks about 21 ms per call).
 * NVML_ERROR_GPU_IS_LOST marks that GPU lost for good; the others keep being sampled.
 */
import { type Koffi, loadKoffi } from '../io/koffiLoader.js';
import {
  TWO_POW_32,
  CLOCK_MEM,
  CLOCK_SM,
  cString,
  counterRate,
  decodeFieldValues,
  decodeMemoryV1,
  decodeMemoryV2,
  decodeProcessInfos,
  decodeProcessUtilSamples,
  ECC_CORRECTED,
  ECC_UNCORRECTED,
  ECC_VOLATILE,
  encodeFieldRequests,
  FI,
  FIELD_VALUE_SIZE,
  latestUtilByPid,
  MEMORY_V2_SIZE,
  MEMORY_V2_VERSION,
  NVML,
  processInfoCount,
  processInfoLayout,
  processInfoPid,
  processInfoUsedBytes,
  TEMPERATURE_GPU,
  TEMPERATURE_V1_SIZE,
  TEMPERATURE_V1_VERSION,
} from '../telemetry/nvmlStructs.js';
import { emptyGpu, emptyProcess, type GpuSample, type ProcessSample, SNAPSHOT_SCHEMA_VERSION, type Snapshot } from '../telemetry/sample.js';
import { decodeClockEventReasons } from '../telemetry/smiValues.js';

/** Power limit, PCIe link, ECC counters, compute/MIG mode: read this often. */
const RARE_INTERVAL_MS = 10_000;
/** The energy counter (the most expensive rare call): read this often. */
const ENERGY_INTERVAL_MS = 60_000;
/** Per-process utilisation is a one-second window: read it at most this often. */
const PROCESS_UTIL_INTERVAL_MS = 1000;
/** Graphics contexts are rare on compute GPUs and their memory is in the device total anyway. */
const GRAPHICS_PROCESSES_INTERVAL_MS = 1000;

/** NVML cannot be used here (no library, no driver, no GPU); the message says which. */
export class NvmlUnavailable extends Error {
  override name = 'NvmlUnavailable';
}

class GpuLost extends Error {}

let deviceTypeDefined = false;

// biome-ignore lint/suspicious/noExplicitAny: koffi functions are variadic by nature
type Fn = (...args: any[]) => number;

/**
 * Every NVML entry point gpuwise uses, bound once. An object literal (fixed shape, fast properties), so a
 * per-sample call is a direct call with fixed arity; dispatch by name through a rest/spread helper added
 * about a third to each koffi call (0.16 against 0.12 us, docs/telemetry.md).
 */
function bindNvml(bind: (prototype: string) => Fn) {
  return {
    nvmlInit_v2: bind('int nvmlInit_v2()'),
    nvmlShutdown: bind('int nvmlShutdown()'),
    nvmlErrorString: bind('const char *nvmlErrorString(int result)'),
    nvmlSystemGetDriverVersion: bind('int nvmlSystemGetDriverVersion(void *version, unsigned int length)'),
    nvmlSystemGetCudaDriverVersion_v2: bind('int nvmlSystemGetCudaDriverVersion_v2(void *version)'),
    nvmlDeviceGetCount_v2: bind('int nvmlDeviceGetCount_v2(void *count)'),
    nvmlDeviceGetHandleByIndex_v2: bind('int nvmlDeviceGetHandleByIndex_v2(unsigned int index, _Out_ gpuwise_nvmlDevice_t *device)'),
    nvmlDeviceGetName: bind('int nvmlDeviceGetName(gpuwise_nvmlDevice_t d, void *name, unsigned int length)'),
    nvmlDeviceGetUUID: bind('int nvmlDeviceGetUUID(gpuwise_nvmlDevice_t d, void *uuid, unsigned int length)'),
    nvmlDeviceGetPciInfo_v3: bind('int nvmlDeviceGetPciInfo_v3(gpuwise_nvmlDevice_t d, void *pci)'),
    nvmlDeviceGetMemoryInfo_v2: bind('int nvmlDeviceGetMemoryInfo_v2(gpuwise_nvmlDevice_t d, void *memory)'),
    nvmlDeviceGetMemoryInfo: bind('int nvmlDeviceGetMemoryInfo(gpuwise_nvmlDevice_t d, void *memory)'),
    nvmlDeviceGetUtilizationRates: bind('int nvmlDeviceGetUtilizationRates(gpuwise_nvmlDevice_t d, void *utilization)'),
    nvmlDeviceGetPowerUsage: bind('int nvmlDeviceGetPowerUsage(gpuwise_nvmlDevice_t d, void *milliwatts)'),
    nvmlDeviceGetEnforcedPowerLimit: bind('int nvmlDeviceGetEnforcedPowerLimit(gpuwise_nvmlDevice_t d, void *milliwatts)'),
    nvmlDeviceGetTotalEnergyConsumption: bind('int nvmlDeviceGetTotalEnergyConsumption(gpuwise_nvmlDevice_t d, void *millijoules)'),
    nvmlDeviceGetTemperatureV: bind('int nvmlDeviceGetTemperatureV(gpuwise_nvmlDevice_t d, void *temperature)'),
    nvmlDeviceGetTemperature: bind('int nvmlDeviceGetTemperature(gpuwise_nvmlDevice_t d, int sensor, void *temp)'),
    nvmlDeviceGetFanSpeed: bind('int nvmlDeviceGetFanSpeed(gpuwise_nvmlDevice_t d, void *speed)'),
    nvmlDeviceGetPerformanceState: bind('int nvmlDeviceGetPerformanceState(gpuwise_nvmlDevice_t d, void *pstate)'),
    nvmlDeviceGetClockInfo: bind('int nvmlDeviceGetClockInfo(gpuwise_nvmlDevice_t d, int type, void *mhz)'),
    nvmlDeviceGetMaxClockInfo: bind('int nvmlDeviceGetMaxClockInfo(gpuwise_nvmlDevice_t d, int type, void *mhz)'),
    nvmlDeviceGetCurrentClocksEventReasons: bind('int nvmlDeviceGetCurrentClocksEventReasons(gpuwise_nvmlDevice_t d, void *reasons)'),
    nvmlDeviceGetCurrentClocksThrottleReasons: bind('int nvmlDeviceGetCurrentClocksThrottleReasons(gpuwise_nvmlDevice_t d, void *reasons)'),
    nvmlDeviceGetCurrPcieLinkGeneration: bind('int nvmlDeviceGetCurrPcieLinkGeneration(gpuwise_nvmlDevice_t d, void *gen)'),
    nvmlDeviceGetCurrPcieLinkWidth: bind('int nvmlDeviceGetCurrPcieLinkWidth(gpuwise_nvmlDevice_t d, void *width)'),
    nvmlDeviceGetTotalEccErrors: bind(
      'int nvmlDeviceGetTotalEccErrors(gpuwise_nvmlDevice_t d, int errorType, int counterType, void *count)',
    ),
    nvmlDeviceGetComputeMode: bind('int nvmlDeviceGetComputeMode(gpuwise_nvmlDevice_t d, void *mode)'),
    nvmlDeviceGetMigMode: bind('int nvmlDeviceGetMigMode(gpuwise_nvmlDevice_t d, void *current, void *pending)'),
    nvmlDeviceGetFieldValues: bind('int nvmlDeviceGetFieldValues(gpuwise_nvmlDevice_t d, int count, void *values)'),
    nvmlDeviceGetComputeRunningProcesses_v3: bind(
      'int nvmlDeviceGetComputeRunningProcesses_v3(gpuwise_nvmlDevice_t d, void *count, void *infos)',
    ),
    nvmlDeviceGetGraphicsRunningProcesses_v3: bind(
      'int nvmlDeviceGetGraphicsRunningProcesses_v3(gpuwise_nvmlDevice_t d, void *count, void *infos)',
    ),
    nvmlDeviceGetProcessUtilization: bind(
      'int nvmlDeviceGetProcessUtilization(gpuwise_nvmlDevice_t d, void *samples, void *count, unsigned long long lastSeen)',
    ),
    // Probed only for their presence (process-info layout detection).
    nvmlDeviceGetRunningProcessDetailList: bind('int nvmlDeviceGetRunningProcessDetailList(gpuwise_nvmlDevice_t d, void *plist)'),
    nvmlDeviceGetConfComputeMemSizeInfo: bind('int nvmlDeviceGetConfComputeMemSizeInfo(gpuwise_nvmlDevice_t d, void *info)'),
  };
}

type NvmlFns = ReturnType<typeof bindNvml>;

/** What an absent symbol answers: the figure is "not available", as with an older driver. */
const notFound: Fn = () => NVML.FUNCTION_NOT_FOUND;

/** Read every RARE_INTERVAL_MS (the energy counter every ENERGY_INTERVAL_MS). */
interface RareFigures {
  powerLimitWatts: number | null;
  pcieLinkGen: number | null;
  pcieLinkWidth: number | null;
  eccErrorsCorrectedVolatile: number | null;
  eccErrorsUncorrectedVolatile: number | null;
  computeMode: string | null;
  migMode: 'enabled' | 'disabled' | null;
  energyJoules: number | null;
}

/** Read every `slowIntervalMs` (one nvmlDeviceGetFieldValues call). */
interface SlowFigures {
  pcieTxBytesPerSecond: number | null;
  pcieRxBytesPerSecond: number | null;
  memoryTemperatureC: number | null;
}

const noRare = (): RareFigures => ({
  powerLimitWatts: null,
  pcieLinkGen: null,
  pcieLinkWidth: null,
  eccErrorsCorrectedVolatile: null,
  eccErrorsUncorrectedVolatile: null,
  computeMode: null,
  migMode: null,
  energyJoules: null,
});

const COMPUTE_MODES = ['Default', 'Exclusive_Thread', 'Prohibited', 'Exclusive_Process'];
/** One GetFieldValues call: the PCIe byte counters and memory temperature (about 0.5 ms on an H200). */
const SLOW_FIELD_IDS: readonly number[] = [FI.PCIE_COUNT_TX_BYTES, FI.PCIE_COUNT_RX_BYTES, FI.MEMORY_TEMP];

interface DeviceState {
  index: number;
  handle: unknown;
  static: GpuSample;
  lost: boolean;
  lastSlowMs: number;
  slow: SlowFigures;
  pcie: { tx: { value: number; timeUs: number } | null; rx: { value: number; timeUs: number } | null };
  procCapacity: number;
  procBuf: Uint8Array;
  procView: DataView;
  utilCapacity: number;
  utilBuf: Uint8Array;
  /** Last per-process utilisation read, and when (ms); null when NVML could not say. */
  procUtil: Map<number, { smUtil: number | null; memUtil: number | null }> | null;
  lastProcUtilMs: number;
  rare: RareFigures;
  lastRareMs: number;
  energyJoules: number | null;
  lastEnergyMs: number;
  graphicsProcs: { pid: number; usedMemoryBytes: number | null }[] | null;
  lastGraphicsMs: number;
  /**
   * Per-sample calls this GPU answered NOT_SUPPORTED are not asked again: on an H200 (no fans)
   * nvmlDeviceGetFanSpeed takes ~300 us to say so, ten times the rest of a sample together.
   */
  fanUnsupported: boolean;
  pstateUnsupported: boolean;
}

export interface NvmlOptions {
  /** Library to open (tests point this at a fake); default libnvidia-ml.so.1 from the loader path. */
  libraryPath?: string;
  /** Minimum time between reads of slow-changing figures and the PCIe counters. */
  slowIntervalMs?: number;
}

export class NvmlSource {
  readonly kind = 'nvml' as const;
  private readonly fn: NvmlFns;
  /** Symbols this library lacks (older driver): their figures are "not available". */
  private readonly missing = new Set<string>();
  private readonly hasTemperatureV: boolean;
  private readonly hasEventReasons: boolean;
  private readonly devices: DeviceState[] = [];
  private readonly slowIntervalMs: number;
  private procStructSize: number;
  readonly driverVersion: string | null;
  readonly cudaVersion: string | null;
  // Reused buffers: the NVML side of a sample allocates only the sample itself.
  /** Out-parameter of the u32 calls, both words of the utilisation call, and the two halves of a u64. */
  private readonly words = new Uint32Array(2);
  private readonly mem = new Uint8Array(MEMORY_V2_SIZE);
  private readonly memView = new DataView(this.mem.buffer);
  private readonly temp = new Uint8Array(TEMPERATURE_V1_SIZE);
  private readonly tempView = new DataView(this.temp.buffer);
  private readonly fields = new Uint8Array(FIELD_VALUE_SIZE * 4);
  private readonly fieldsView = new DataView(this.fields.buffer);
  private closed = false;
  /** Decoded clock-event masks (those below 2^32, i.e. every reason NVML defines), by mask. */
  private readonly reasonCache = new Map<number, string[]>();
  private readonly timings: Map<string, { calls: number; ms: number }> | null = process.env.GPUWISE_NVML_TIMINGS === '1' ? new Map() : null;
  /** The unwrapped GetFieldValues, for timeFieldsAlone (timings only). */
  private rawFieldValues: Fn | null = null;

  private constructor(
    private readonly koffi: Koffi,
    private readonly lib: ReturnType<Koffi['load']>,
    opts: NvmlOptions,
  ) {
    this.slowIntervalMs = opts.slowIntervalMs ?? 1000;
    this.fn = this.bindAll();
    this.hasTemperatureV = !this.missing.has('nvmlDeviceGetTemperatureV');
    this.hasEventReasons = !this.missing.has('nvmlDeviceGetCurrentClocksEventReasons');
    const rc = this.fn.nvmlInit_v2();
    if (rc !== NVML.SUCCESS) throw new NvmlUnavailable(`nvmlInit failed: ${this.errorString(rc)}`);
    // Process-info layout by driver generation, as nvitop decides it (monitoring.md pitfall 5).
    this.procStructSize = !this.missing.has('nvmlDeviceGetRunningProcessDetailList')
      ? 24
      : !this.missing.has('nvmlDeviceGetConfComputeMemSizeInfo')
        ? 32
        : 24;
    const version = new Uint8Array(80);
    this.driverVersion = this.fn.nvmlSystemGetDriverVersion(version, version.length) === NVML.SUCCESS ? cString(version) : null;
    const cuda = new Int32Array(1);
    this.cudaVersion =
      this.fn.nvmlSystemGetCudaDriverVersion_v2(cuda) === NVML.SUCCESS ? `${Math.floor(cuda[0]! / 1000)}.${(cuda[0]! % 1000) / 10}` : null;
    const count = new Uint32Array(1);
    const crc = this.fn.nvmlDeviceGetCount_v2(count);
    if (crc !== NVML.SUCCESS) throw new NvmlUnavailable(`nvmlDeviceGetCount failed: ${this.errorString(crc)}`);
    for (let i = 0; i < count[0]!; i++) this.devices.push(this.openDevice(i));
    if (this.timings !== null) this.timeFieldsAlone();
  }

  /** Loads koffi and NVML; throws NvmlUnavailable with the reason. */
  static open(opts: NvmlOptions = {}): NvmlSource {
    let koffi: Koffi;
    try {
      koffi = loadKoffi();
    } catch (e) {
      throw new NvmlUnavailable((e as Error).message);
    }
    let lib: ReturnType<Koffi['load']>;
    const libPath = opts.libraryPath ?? 'libnvidia-ml.so.1';
    try {
      lib = koffi.load(libPath);
    } catch (e) {
      throw new NvmlUnavailable(`cannot load ${libPath} (no NVIDIA driver here?): ${(e as Error).message.split('\n')[0]}`);
    }
    return new NvmlSource(koffi, lib, opts);
  }

  get deviceCount(): number {
    return this.devices.length;
  }

  private bindAll(): NvmlFns {
    const k = this.koffi;
    if (!deviceTypeDefined) {
      k.pointer('gpuwise_nvmlDevice_t', k.opaque());
      deviceTypeDefined = true; // koffi type names are process-wide
    }
    const fns = bindNvml((prototype) => {
      const name = /(\w+)\(/.exec(prototype)![1]!;
      let fn: Fn;
      try {
        fn = this.lib.func(prototype) as Fn;
      } catch {
        this.missing.add(name); // older driver: the feature is off, the figure "not available"
        return notFound;
      }
      if (this.timings === null) return fn;
      if (name === 'nvmlDeviceGetFieldValues') this.rawFieldValues = fn;
      return this.timed(name, fn);
    });
    if (this.missing.has('nvmlInit_v2'))
      throw new NvmlUnavailable('libnvidia-ml has no nvmlInit_v2 (a CUDA stub library, not the driver?)');
    return fns;
  }

  /** GPUWISE_NVML_TIMINGS=1: the function wrapped to add up its calls and time (the timing costs too). */
  private timed(name: string, fn: Fn): Fn {
    const timings = this.timings!;
    return (...args: unknown[]) => {
      const t0 = performance.now();
      const rc = fn(...args);
      const t = timings.get(name) ?? { calls: 0, ms: 0 };
      t.calls++;
      t.ms += performance.now() - t0;
      timings.set(name, t);
      return rc;
    };
  }

  /**
   * GPUWISE_NVML_TIMINGS=1 only: each field of the slow GetFieldValues call asked alone (10 calls each, first
   * GPU), reported as `nvmlDeviceGetFieldValues[NAME]`: which part of its ~0.5 ms on an H200 is which field.
   */
  private timeFieldsAlone(): void {
    const d = this.devices.find((x) => !x.lost);
    const raw = this.rawFieldValues;
    if (d === undefined || raw === null || this.timings === null) return;
    const buf = new Uint8Array(FIELD_VALUE_SIZE);
    const view = new DataView(buf.buffer);
    for (const [fieldName, id] of Object.entries(FI)) {
      if (!SLOW_FIELD_IDS.includes(id)) continue;
      const t = { calls: 0, ms: 0 };
      for (let i = 0; i < 10; i++) {
        buf.fill(0);
        encodeFieldRequests(view, [id]);
        const t0 = performance.now();
        raw(d.handle, 1, buf);
        t.ms += performance.now() - t0;
        t.calls++;
      }
      this.timings.set(`nvmlDeviceGetFieldValues[${fieldName}]`, t);
    }
  }

  /** Where a sample's time goes, call by call (only with GPUWISE_NVML_TIMINGS=1: the timing costs too). */
  callTimings(): Record<string, { calls: number; usPerCall: number }> | null {
    if (this.timings === null) return null;
    const out: Record<string, { calls: number; usPerCall: number }> = {};
    for (const [name, t] of [...this.timings].sort((a, b) => b[1].ms - a[1].ms))
      out[name] = { calls: t.calls, usPerCall: (t.ms * 1000) / t.calls };
    return out;
  }

  private errorString(rc: number): string {
    const text = this.missing.has('nvmlErrorString') ? 'error' : (this.fn.nvmlErrorString as unknown as (rc: number) => string)(rc);
    return `${text} (NVML ${rc})`;
  }

  /** Checks a return code of a per-device call: lost GPUs throw, anything else but success means "not available". */
  private ok(rc: number): boolean {
    if (rc === NVML.GPU_IS_LOST) throw new GpuLost();
    return rc === NVML.SUCCESS;
  }

  /** The u32 out-parameter of the last call, or null when it failed (GPU_IS_LOST throws). */
  private u32If(rc: number): number | null {
    return this.ok(rc) ? this.words[0]! : null;
  }

  /** The u64 out-parameter (both words) of the last call, or null when it failed. Same value as Number(BigInt). */
  private u64If(rc: number): number | null {
    return this.ok(rc) ? this.words[1]! * TWO_POW_32 + this.words[0]! : null;
  }

  private openDevice(index: number): DeviceState {
    const f = this.fn;
    const out: unknown[] = [null];
    const rc = f.nvmlDeviceGetHandleByIndex_v2(index, out);
    const g = emptyGpu(index, '', '');
    const procBuf = new Uint8Array(16 * 32); // room for the 32-byte layout too
    const state: DeviceState = {
      index,
      handle: out[0],
      static: g,
      lost: rc === NVML.GPU_IS_LOST,
      lastSlowMs: Number.NEGATIVE_INFINITY,
      slow: { pcieTxBytesPerSecond: null, pcieRxBytesPerSecond: null, memoryTemperatureC: null },
      pcie: { tx: null, rx: null },
      procCapacity: 16,
      procBuf,
      procView: new DataView(procBuf.buffer),
      utilCapacity: 80,
      utilBuf: new Uint8Array(80 * 32),
      procUtil: null,
      lastProcUtilMs: Number.NEGATIVE_INFINITY,
      rare: noRare(),
      lastRareMs: Number.NEGATIVE_INFINITY,
      energyJoules: null,
      lastEnergyMs: Number.NEGATIVE_INFINITY,
      graphicsProcs: null,
      lastGraphicsMs: Number.NEGATIVE_INFINITY,
      fanUnsupported: false,
      pstateUnsupported: false,
    };
    if (rc !== NVML.SUCCESS) {
      g.name = `unreadable GPU (${this.errorString(rc)})`;
      if (rc !== NVML.GPU_IS_LOST) state.lost = true;
      return state;
    }
    const h = state.handle;
    const text = new Uint8Array(96);
    g.name = f.nvmlDeviceGetName(h, text, text.length) === NVML.SUCCESS ? cString(text) : '';
    text.fill(0);
    g.uuid = f.nvmlDeviceGetUUID(h, text, text.length) === NVML.SUCCESS ? cString(text) : '';
    const pci = new Uint8Array(68);
    if (f.nvmlDeviceGetPciInfo_v3(h, pci) === NVML.SUCCESS) g.pciBusId = cString(pci.subarray(36, 68));
    if (f.nvmlDeviceGetMaxClockInfo(h, CLOCK_SM, this.words) === NVML.SUCCESS) g.smClockMaxMhz = this.words[0]!;
    return state;
  }

  /** Reasons change rarely: decode each distinct mask once (a copy per sample: samples do not share arrays). */
  private reasonNames(lo: number, hi: number): string[] {
    if (hi !== 0) return decodeClockEventReasons((BigInt(hi) << 32n) | BigInt(lo));
    let names = this.reasonCache.get(lo);
    if (names === undefined) {
      names = decodeClockEventReasons(BigInt(lo));
      if (this.reasonCache.size < 256) this.reasonCache.set(lo, names);
    }
    return names.slice();
  }

  private readMemory(h: unknown, g: GpuSample): void {
    this.memView.setUint32(0, MEMORY_V2_VERSION, true);
    let m = this.ok(this.fn.nvmlDeviceGetMemoryInfo_v2(h, this.mem)) ? decodeMemoryV2(this.memView) : null;
    if (m === null && this.ok(this.fn.nvmlDeviceGetMemoryInfo(h, this.mem))) m = decodeMemoryV1(this.memView);
    if (m === null) return;
    g.memoryTotalBytes = m.totalBytes;
    g.memoryReservedBytes = m.reservedBytes;
    g.memoryUsedBytes = m.usedBytes;
    g.memoryFreeBytes = m.freeBytes;
  }

  private readTemperature(h: unknown): number | null {
    if (this.hasTemperatureV) {
      const v = this.tempView;
      v.setUint32(0, TEMPERATURE_V1_VERSION, true);
      v.setInt32(4, TEMPERATURE_GPU, true);
      if (this.ok(this.fn.nvmlDeviceGetTemperatureV(h, this.temp))) return v.getInt32(8, true);
    }
    return this.u32If(this.fn.nvmlDeviceGetTemperature(h, TEMPERATURE_GPU, this.words));
  }

  /**
   * Figures that change rarely, read every RARE_INTERVAL_MS: measured on an H200, one pass
   * costs 5-12 ms (the energy counter alone 3-10 ms, the two ECC counters 1.6 ms), which
   * once a second was most of monitor's CPU.
   */
  private readRare(d: DeviceState, nowMs: number): void {
    const f = this.fn;
    const h = d.handle;
    const w = this.words;
    const limit = this.u32If(f.nvmlDeviceGetEnforcedPowerLimit(h, w));
    const pcieLinkGen = this.u32If(f.nvmlDeviceGetCurrPcieLinkGeneration(h, w));
    const pcieLinkWidth = this.u32If(f.nvmlDeviceGetCurrPcieLinkWidth(h, w));
    const ce = this.u64If(f.nvmlDeviceGetTotalEccErrors(h, ECC_CORRECTED, ECC_VOLATILE, w));
    const ue = this.u64If(f.nvmlDeviceGetTotalEccErrors(h, ECC_UNCORRECTED, ECC_VOLATILE, w));
    const cm = this.u32If(f.nvmlDeviceGetComputeMode(h, w));
    const pending = new Uint32Array(1);
    const migMode = this.ok(f.nvmlDeviceGetMigMode(h, w, pending)) ? (w[0] === 1 ? 'enabled' : 'disabled') : null;
    if (nowMs - d.lastEnergyMs >= ENERGY_INTERVAL_MS) {
      const energy = this.u64If(f.nvmlDeviceGetTotalEnergyConsumption(h, w));
      d.energyJoules = energy === null ? null : energy / 1000;
      d.lastEnergyMs = nowMs;
    }
    d.rare = {
      powerLimitWatts: limit === null ? null : limit / 1000,
      pcieLinkGen,
      pcieLinkWidth,
      eccErrorsCorrectedVolatile: ce,
      eccErrorsUncorrectedVolatile: ue,
      computeMode: cm === null ? null : (COMPUTE_MODES[cm] ?? String(cm)),
      migMode,
      energyJoules: d.energyJoules,
    };
    d.lastRareMs = nowMs;
  }

  private readSlow(d: DeviceState, nowMs: number): void {
    const s: SlowFigures = { pcieTxBytesPerSecond: null, pcieRxBytesPerSecond: null, memoryTemperatureC: null };
    const view = this.fieldsView;
    this.fields.fill(0);
    encodeFieldRequests(view, SLOW_FIELD_IDS);
    if (this.ok(this.fn.nvmlDeviceGetFieldValues(d.handle, SLOW_FIELD_IDS.length, this.fields))) {
      for (const fv of decodeFieldValues(view, SLOW_FIELD_IDS.length)) {
        if (fv.nvmlReturn === NVML.GPU_IS_LOST) throw new GpuLost();
        if (fv.value === null) continue;
        const timeUs = fv.timestampUs > 0 ? fv.timestampUs : nowMs * 1000;
        if (fv.fieldId === FI.MEMORY_TEMP) s.memoryTemperatureC = fv.value;
        else if (fv.fieldId === FI.PCIE_COUNT_TX_BYTES) {
          s.pcieTxBytesPerSecond = counterRate(d.pcie.tx, fv.value, timeUs);
          d.pcie.tx = { value: fv.value, timeUs };
        } else if (fv.fieldId === FI.PCIE_COUNT_RX_BYTES) {
          s.pcieRxBytesPerSecond = counterRate(d.pcie.rx, fv.value, timeUs);
          d.pcie.rx = { value: fv.value, timeUs };
        }
      }
    }
    d.slow = s;
    d.lastSlowMs = nowMs;
  }

  /**
   * One list call with the INSUFFICIENT_SIZE protocol (grow to count*2+5 and retry). Returns how many
   * entries d.procView now holds (their layout: this.procStructSize), or -1 when NVML could not say.
   */
  private listProcesses(d: DeviceState, list: Fn): number {
    const count = this.words;
    for (let attempt = 0; attempt < 4; attempt++) {
      count[0] = d.procCapacity;
      const rc = list(d.handle, count, d.procBuf);
      if (rc === NVML.INSUFFICIENT_SIZE) {
        d.procCapacity = count[0]! * 2 + 5;
        d.procBuf = new Uint8Array(d.procCapacity * 32); // room for either layout
        d.procView = new DataView(d.procBuf.buffer);
        continue;
      }
      if (!this.ok(rc)) return -1;
      const n = count[0]!;
      this.procStructSize = processInfoLayout(d.procView, n, this.procStructSize);
      return n;
    }
    return -1;
  }

  /**
   * Adds one listed process to the sample's rows; a pid listed twice (compute and graphics) is one row.
   * Found by a scan: a GPU runs a few processes (MPS caps clients at 48-60), where a Map per sample cost more.
   */
  private addProcessRow(d: DeviceState, rows: ProcessSample[], pid: number, usedMemoryBytes: number | null, type: 'C' | 'G'): void {
    let cur: ProcessSample | undefined;
    for (const r of rows)
      if (r.pid === pid) {
        cur = r;
        break;
      }
    if (cur) {
      cur.type = cur.type === type ? type : 'C+G';
      if (usedMemoryBytes !== null) cur.usedMemoryBytes = Math.max(cur.usedMemoryBytes ?? 0, usedMemoryBytes);
      return;
    }
    const ps = emptyProcess(pid, d.index);
    ps.type = type;
    ps.usedMemoryBytes = usedMemoryBytes;
    rows.push(ps);
  }

  private readProcesses(d: DeviceState, g: GpuSample, nowMs: number): ProcessSample[] {
    const rows: ProcessSample[] = [];
    // Compute rows straight from the driver's buffer, before the graphics call reuses it.
    const nCompute = this.listProcesses(d, this.fn.nvmlDeviceGetComputeRunningProcesses_v3);
    const size = this.procStructSize;
    const n = processInfoCount(d.procView, nCompute, size);
    for (let i = 0; i < n; i++) {
      this.addProcessRow(d, rows, processInfoPid(d.procView, i, size), processInfoUsedBytes(d.procView, i, size), 'C');
    }
    if (nowMs - d.lastGraphicsMs >= GRAPHICS_PROCESSES_INTERVAL_MS) {
      const n = this.listProcesses(d, this.fn.nvmlDeviceGetGraphicsRunningProcesses_v3);
      d.graphicsProcs = n < 0 ? null : decodeProcessInfos(d.procView, n, this.procStructSize);
      d.lastGraphicsMs = nowMs;
    }
    if (d.graphicsProcs !== null) for (const p of d.graphicsProcs) this.addProcessRow(d, rows, p.pid, p.usedMemoryBytes, 'G');
    if (rows.length === 0) return rows;
    if (rows.length === 1) {
      // One process: its share of the GPU's busy time is all of it, so the 2 ms call is not needed.
      const only = rows[0]!;
      only.smUtilPercent = g.utilizationGpuPercent;
      only.memUtilPercent = g.utilizationMemoryPercent;
      d.lastProcUtilMs = Number.NEGATIVE_INFINITY; // a second process gets a fresh reading at once
      return rows;
    }
    // Per-process utilisation over the last second; NOT_FOUND means no process ran a kernel in it.
    // The figure is a one-second window, so it is read at most once a second (the call costs
    // milliseconds with the driver's sample buffers full, far more than the rest of a sample).
    if (nowMs - d.lastProcUtilMs >= PROCESS_UTIL_INTERVAL_MS) {
      d.procUtil = this.readProcessUtilization(d, nowMs);
      d.lastProcUtilMs = nowMs;
    }
    const util = d.procUtil;
    if (util !== null)
      for (const p of rows) {
        const u = util.get(p.pid);
        p.smUtilPercent = u ? u.smUtil : 0;
        p.memUtilPercent = u ? u.memUtil : 0;
      }
    return rows;
  }

  private readProcessUtilization(d: DeviceState, nowMs: number): Map<number, { smUtil: number | null; memUtil: number | null }> | null {
    const count = this.words;
    for (let attempt = 0; attempt < 4; attempt++) {
      count[0] = d.utilCapacity;
      const rc = this.fn.nvmlDeviceGetProcessUtilization(d.handle, d.utilBuf, count, BigInt(Math.max(0, nowMs - 1000)) * 1000n);
      if (rc === NVML.INSUFFICIENT_SIZE) {
        d.utilCapacity = count[0]! * 2 + 5;
        d.utilBuf = new Uint8Array(d.utilCapacity * 32);
        continue;
      }
      if (rc === NVML.NOT_FOUND) return new Map();
      if (this.ok(rc)) return latestUtilByPid(decodeProcessUtilSamples(new DataView(d.utilBuf.buffer), count[0]!));
      return null;
    }
    return null;
  }

  private sampleDevice(d: DeviceState, nowMs: number): GpuSample {
    const g: GpuSample = { ...d.static, processes: [] };
    if (d.lost) {
      g.lost = true;
      return g;
    }
    try {
      const f = this.fn;
      const h = d.handle;
      const w = this.words;
      this.readMemory(h, g);
      if (this.ok(f.nvmlDeviceGetUtilizationRates(h, w))) {
        g.utilizationGpuPercent = w[0]!;
        g.utilizationMemoryPercent = w[1]!;
      }
      const mw = this.u32If(f.nvmlDeviceGetPowerUsage(h, w));
      g.powerWatts = mw === null ? null : mw / 1000;
      g.temperatureC = this.readTemperature(h);
      if (!d.fanUnsupported) {
        const rc = f.nvmlDeviceGetFanSpeed(h, w);
        if (rc === NVML.NOT_SUPPORTED) d.fanUnsupported = true;
        g.fanPercent = this.u32If(rc);
      }
      if (!d.pstateUnsupported) {
        const rc = f.nvmlDeviceGetPerformanceState(h, w);
        if (rc === NVML.NOT_SUPPORTED) d.pstateUnsupported = true;
        const ps = this.u32If(rc);
        g.performanceState = ps === null || ps === 32 ? null : `P${ps}`;
      }
      g.smClockMhz = this.u32If(f.nvmlDeviceGetClockInfo(h, CLOCK_SM, w));
      g.memoryClockMhz = this.u32If(f.nvmlDeviceGetClockInfo(h, CLOCK_MEM, w));
      let rc = f.nvmlDeviceGetCurrentClocksEventReasons(h, w);
      if (!this.ok(rc) && !this.hasEventReasons) rc = f.nvmlDeviceGetCurrentClocksThrottleReasons(h, w);
      g.clocksEventReasons = this.ok(rc) ? this.reasonNames(w[0]!, w[1]!) : null;
      if (nowMs - d.lastRareMs >= RARE_INTERVAL_MS) this.readRare(d, nowMs);
      if (nowMs - d.lastSlowMs >= this.slowIntervalMs) this.readSlow(d, nowMs);
      const r = d.rare;
      g.powerLimitWatts = r.powerLimitWatts;
      g.pcieLinkGen = r.pcieLinkGen;
      g.pcieLinkWidth = r.pcieLinkWidth;
      g.eccErrorsCorrectedVolatile = r.eccErrorsCorrectedVolatile;
      g.eccErrorsUncorrectedVolatile = r.eccErrorsUncorrectedVolatile;
      g.computeMode = r.computeMode;
      g.migMode = r.migMode;
      g.energyJoules = r.energyJoules;
      const s = d.slow;
      g.pcieTxBytesPerSecond = s.pcieTxBytesPerSecond;
      g.pcieRxBytesPerSecond = s.pcieRxBytesPerSecond;
      g.memoryTemperatureC = s.memoryTemperatureC;
      g.processes = this.readProcesses(d, g, nowMs);
    } catch (e) {
      if (!(e instanceof GpuLost)) throw e;
      d.lost = true;
      return { ...d.static, lost: true, processes: [] };
    }
    return g;
  }

  /** One sample of every GPU. Synchronous: NVML answers in microseconds. */
  sample(): Snapshot {
    if (this.closed) throw new Error('NVML source is closed');
    const nowMs = Date.now();
    const gpus: GpuSample[] = [];
    for (const d of this.devices) gpus.push(this.sampleDevice(d, nowMs));
    const notes: string[] = [];
    for (const g of gpus) {
      if (g.lost)
        notes.push(
          `GPU ${g.index} (${g.uuid || g.name}) is lost: it fell off the bus or its driver state is broken; the others are still sampled`,
        );
      else if (g.migMode === 'enabled' && g.utilizationGpuPercent === null)
        notes.push(`GPU ${g.index} is in MIG mode: NVML reports no utilisation for MIG GPUs`);
    }
    return {
      schemaVersion: SNAPSHOT_SCHEMA_VERSION,
      source: 'nvml',
      timestampMs: nowMs,
      hostname: null,
      driverVersion: this.driverVersion,
      cudaVersion: this.cudaVersion,
      gpus,
      notes,
    };
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.fn.nvmlShutdown();
  }
}
