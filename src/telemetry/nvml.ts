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
import { type Koffi, loadKoffi } from './koffiLoader.js';
import {
  CLOCK_MEM,
  CLOCK_SM,
  cString,
  counterRate,
  decodeFieldValues,
  decodeMemoryV1,
  decodeMemoryV2,
  decodeProcessInfosChecked,
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
  TEMPERATURE_GPU,
  TEMPERATURE_V1_SIZE,
  TEMPERATURE_V1_VERSION,
} from './nvmlStructs.js';
import { emptyGpu, emptyProcess, type GpuSample, type ProcessSample, SNAPSHOT_SCHEMA_VERSION, type Snapshot } from './sample.js';
import { decodeClockEventReasons } from './smiValues.js';

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

interface DeviceState {
  index: number;
  handle: unknown;
  static: GpuSample;
  lost: boolean;
  lastSlowMs: number;
  slow: Partial<GpuSample>;
  pcie: { tx: { value: number; timeUs: number } | null; rx: { value: number; timeUs: number } | null };
  procCapacity: number;
  procBuf: Uint8Array;
  utilCapacity: number;
  utilBuf: Uint8Array;
  /** Last per-process utilisation read, and when (ms); null when NVML could not say. */
  procUtil: Map<number, { smUtil: number | null; memUtil: number | null }> | null;
  lastProcUtilMs: number;
  rare: Partial<GpuSample>;
  lastRareMs: number;
  energyJoules: number | null;
  lastEnergyMs: number;
  graphicsProcs: { pid: number; usedMemoryBytes: number | null }[] | null;
  lastGraphicsMs: number;
  /** Per-sample calls this GPU answered NOT_SUPPORTED: not asked again. */
  unsupported: Set<string>;
}

export interface NvmlOptions {
  /** Library to open (tests point this at a fake); default libnvidia-ml.so.1 from the loader path. */
  libraryPath?: string;
  /** Minimum time between reads of slow-changing figures and the PCIe counters. */
  slowIntervalMs?: number;
}

export class NvmlSource {
  readonly kind = 'nvml' as const;
  private readonly f: Record<string, Fn | null> = {};
  private readonly devices: DeviceState[] = [];
  private readonly slowIntervalMs: number;
  private procStructSize: number;
  readonly driverVersion: string | null;
  readonly cudaVersion: string | null;
  // Reused buffers: one sample allocates nothing on the NVML side.
  private readonly u32 = new Uint32Array(2);
  private readonly u64 = new BigUint64Array(1);
  private readonly mem = new Uint8Array(MEMORY_V2_SIZE);
  private readonly memView = new DataView(this.mem.buffer);
  private readonly temp = new Uint8Array(TEMPERATURE_V1_SIZE);
  private readonly fields = new Uint8Array(FIELD_VALUE_SIZE * 4);
  private closed = false;
  private readonly reasonCache = new Map<bigint, string[]>();

  private constructor(
    private readonly koffi: Koffi,
    private readonly lib: ReturnType<Koffi['load']>,
    opts: NvmlOptions,
  ) {
    this.slowIntervalMs = opts.slowIntervalMs ?? 1000;
    this.bindAll();
    const rc = this.call('nvmlInit_v2');
    if (rc !== NVML.SUCCESS) throw new NvmlUnavailable(`nvmlInit failed: ${this.errorString(rc)}`);
    // Process-info layout by driver generation, as nvitop decides it (monitoring.md pitfall 5).
    this.procStructSize = this.f.nvmlDeviceGetRunningProcessDetailList ? 24 : this.f.nvmlDeviceGetConfComputeMemSizeInfo ? 32 : 24;
    this.driverVersion = this.readString('nvmlSystemGetDriverVersion', 80);
    const cuda = new Int32Array(1);
    this.cudaVersion =
      this.call('nvmlSystemGetCudaDriverVersion_v2', cuda) === NVML.SUCCESS
        ? `${Math.floor(cuda[0]! / 1000)}.${(cuda[0]! % 1000) / 10}`
        : null;
    const count = new Uint32Array(1);
    const crc = this.call('nvmlDeviceGetCount_v2', count);
    if (crc !== NVML.SUCCESS) throw new NvmlUnavailable(`nvmlDeviceGetCount failed: ${this.errorString(crc)}`);
    for (let i = 0; i < count[0]!; i++) this.devices.push(this.openDevice(i));
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

  private bindAll(): void {
    const k = this.koffi;
    if (!deviceTypeDefined) {
      k.pointer('gpuwise_nvmlDevice_t', k.opaque());
      deviceTypeDefined = true; // koffi type names are process-wide
    }
    const protos = [
      'int nvmlInit_v2()',
      'int nvmlShutdown()',
      'const char *nvmlErrorString(int result)',
      'int nvmlSystemGetDriverVersion(void *version, unsigned int length)',
      'int nvmlSystemGetCudaDriverVersion_v2(void *version)',
      'int nvmlDeviceGetCount_v2(void *count)',
      'int nvmlDeviceGetHandleByIndex_v2(unsigned int index, _Out_ gpuwise_nvmlDevice_t *device)',
      'int nvmlDeviceGetName(gpuwise_nvmlDevice_t d, void *name, unsigned int length)',
      'int nvmlDeviceGetUUID(gpuwise_nvmlDevice_t d, void *uuid, unsigned int length)',
      'int nvmlDeviceGetPciInfo_v3(gpuwise_nvmlDevice_t d, void *pci)',
      'int nvmlDeviceGetMemoryInfo_v2(gpuwise_nvmlDevice_t d, void *memory)',
      'int nvmlDeviceGetMemoryInfo(gpuwise_nvmlDevice_t d, void *memory)',
      'int nvmlDeviceGetUtilizationRates(gpuwise_nvmlDevice_t d, void *utilization)',
      'int nvmlDeviceGetPowerUsage(gpuwise_nvmlDevice_t d, void *milliwatts)',
      'int nvmlDeviceGetEnforcedPowerLimit(gpuwise_nvmlDevice_t d, void *milliwatts)',
      'int nvmlDeviceGetTotalEnergyConsumption(gpuwise_nvmlDevice_t d, void *millijoules)',
      'int nvmlDeviceGetTemperatureV(gpuwise_nvmlDevice_t d, void *temperature)',
      'int nvmlDeviceGetTemperature(gpuwise_nvmlDevice_t d, int sensor, void *temp)',
      'int nvmlDeviceGetFanSpeed(gpuwise_nvmlDevice_t d, void *speed)',
      'int nvmlDeviceGetPerformanceState(gpuwise_nvmlDevice_t d, void *pstate)',
      'int nvmlDeviceGetClockInfo(gpuwise_nvmlDevice_t d, int type, void *mhz)',
      'int nvmlDeviceGetMaxClockInfo(gpuwise_nvmlDevice_t d, int type, void *mhz)',
      'int nvmlDeviceGetCurrentClocksEventReasons(gpuwise_nvmlDevice_t d, void *reasons)',
      'int nvmlDeviceGetCurrentClocksThrottleReasons(gpuwise_nvmlDevice_t d, void *reasons)',
      'int nvmlDeviceGetCurrPcieLinkGeneration(gpuwise_nvmlDevice_t d, void *gen)',
      'int nvmlDeviceGetCurrPcieLinkWidth(gpuwise_nvmlDevice_t d, void *width)',
      'int nvmlDeviceGetTotalEccErrors(gpuwise_nvmlDevice_t d, int errorType, int counterType, void *count)',
      'int nvmlDeviceGetComputeMode(gpuwise_nvmlDevice_t d, void *mode)',
      'int nvmlDeviceGetMigMode(gpuwise_nvmlDevice_t d, void *current, void *pending)',
      'int nvmlDeviceGetFieldValues(gpuwise_nvmlDevice_t d, int count, void *values)',
      'int nvmlDeviceGetComputeRunningProcesses_v3(gpuwise_nvmlDevice_t d, void *count, void *infos)',
      'int nvmlDeviceGetGraphicsRunningProcesses_v3(gpuwise_nvmlDevice_t d, void *count, void *infos)',
      'int nvmlDeviceGetProcessUtilization(gpuwise_nvmlDevice_t d, void *samples, void *count, unsigned long long lastSeen)',
      // Probed only for their presence (process-info layout detection).
      'int nvmlDeviceGetRunningProcessDetailList(gpuwise_nvmlDevice_t d, void *plist)',
      'int nvmlDeviceGetConfComputeMemSizeInfo(gpuwise_nvmlDevice_t d, void *info)',
    ];
    for (const p of protos) {
      const name = /(\w+)\(/.exec(p)![1]!;
      try {
        this.f[name] = this.lib.func(p) as Fn;
      } catch {
        this.f[name] = null; // older driver: the feature is off, the figure "not available"
      }
    }
    if (!this.f.nvmlInit_v2) throw new NvmlUnavailable('libnvidia-ml has no nvmlInit_v2 (a CUDA stub library, not the driver?)');
  }

  private readonly timings: Map<string, { calls: number; ms: number }> | null = process.env.GPUWISE_NVML_TIMINGS === '1' ? new Map() : null;

  private call(name: string, ...args: unknown[]): number {
    const fn = this.f[name];
    if (!fn) return NVML.FUNCTION_NOT_FOUND;
    if (this.timings === null) return fn(...args);
    const t0 = performance.now();
    const rc = fn(...args);
    const t = this.timings.get(name) ?? { calls: 0, ms: 0 };
    t.calls++;
    t.ms += performance.now() - t0;
    this.timings.set(name, t);
    return rc;
  }

  /** Where a sample's time goes, call by call (only with GPUWISE_NVML_TIMINGS=1: the timing costs too). */
  callTimings(): Record<string, { calls: number; usPerCall: number }> | null {
    if (this.timings === null) return null;
    const out: Record<string, { calls: number; usPerCall: number }> = {};
    for (const [name, t] of [...this.timings].sort((a, b) => b[1].ms - a[1].ms)) out[name] = { calls: t.calls, usPerCall: (t.ms * 1000) / t.calls };
    return out;
  }

  private errorString(rc: number): string {
    const fn = this.f.nvmlErrorString as unknown as ((rc: number) => string) | null;
    return `${fn ? fn(rc) : 'error'} (NVML ${rc})`;
  }

  private readString(name: string, len: number, ...before: unknown[]): string | null {
    const buf = new Uint8Array(len);
    return this.call(name, ...before, buf, len) === NVML.SUCCESS ? cString(buf) : null;
  }

  /** Checks a return code of a per-device call: lost GPUs throw, anything else but success means "not available". */
  private ok(rc: number): boolean {
    if (rc === NVML.GPU_IS_LOST) throw new GpuLost();
    return rc === NVML.SUCCESS;
  }

  private openDevice(index: number): DeviceState {
    const out: unknown[] = [null];
    const rc = this.call('nvmlDeviceGetHandleByIndex_v2', index, out);
    const g = emptyGpu(index, '', '');
    const state: DeviceState = {
      index,
      handle: out[0],
      static: g,
      lost: rc === NVML.GPU_IS_LOST,
      lastSlowMs: Number.NEGATIVE_INFINITY,
      slow: {},
      pcie: { tx: null, rx: null },
      procCapacity: 16,
      procBuf: new Uint8Array(16 * 32), // room for the 32-byte layout too
      utilCapacity: 80,
      utilBuf: new Uint8Array(80 * 32),
      procUtil: null,
      lastProcUtilMs: Number.NEGATIVE_INFINITY,
      unsupported: new Set(),
      rare: {},
      lastRareMs: Number.NEGATIVE_INFINITY,
      energyJoules: null,
      lastEnergyMs: Number.NEGATIVE_INFINITY,
      graphicsProcs: null,
      lastGraphicsMs: Number.NEGATIVE_INFINITY,
    };
    if (rc !== NVML.SUCCESS) {
      g.name = `unreadable GPU (${this.errorString(rc)})`;
      if (rc !== NVML.GPU_IS_LOST) state.lost = true;
      return state;
    }
    const h = state.handle;
    g.name = this.readString('nvmlDeviceGetName', 96, h) ?? '';
    g.uuid = this.readString('nvmlDeviceGetUUID', 96, h) ?? '';
    const pci = new Uint8Array(68);
    if (this.call('nvmlDeviceGetPciInfo_v3', h, pci) === NVML.SUCCESS) g.pciBusId = cString(pci.subarray(36, 68));
    if (this.call('nvmlDeviceGetMaxClockInfo', h, CLOCK_SM, this.u32) === NVML.SUCCESS) g.smClockMaxMhz = this.u32[0]!;
    return state;
  }

  private u32Of(name: string, ...args: unknown[]): number | null {
    return this.ok(this.call(name, ...args, this.u32)) ? this.u32[0]! : null;
  }

  /**
   * A per-sample u32 read that stops asking once the GPU says NOT_SUPPORTED: on an
   * H200 (no fans) nvmlDeviceGetFanSpeed takes ~300 us to say so, ten times the rest
   * of a sample together (measured with GPUWISE_NVML_TIMINGS=1).
   */
  private perSampleU32(d: DeviceState, name: string): number | null {
    if (d.unsupported.has(name)) return null;
    const rc = this.call(name, d.handle, this.u32);
    if (rc === NVML.NOT_SUPPORTED) d.unsupported.add(name);
    return this.ok(rc) ? this.u32[0]! : null;
  }

  private u64Of(name: string, ...args: unknown[]): bigint | null {
    return this.ok(this.call(name, ...args, this.u64)) ? this.u64[0]! : null;
  }

  /** Reasons change rarely: decode each distinct mask once. */
  private reasonNames(mask: bigint): string[] {
    let names = this.reasonCache.get(mask);
    if (names === undefined) {
      names = decodeClockEventReasons(mask);
      if (this.reasonCache.size < 256) this.reasonCache.set(mask, names);
    }
    return [...names];
  }

  private readMemory(d: DeviceState, g: GpuSample): void {
    this.memView.setUint32(0, MEMORY_V2_VERSION, true);
    let m = this.ok(this.call('nvmlDeviceGetMemoryInfo_v2', d.handle, this.mem)) ? decodeMemoryV2(this.memView) : null;
    if (m === null && this.ok(this.call('nvmlDeviceGetMemoryInfo', d.handle, this.mem))) m = decodeMemoryV1(this.memView);
    if (m === null) return;
    g.memoryTotalBytes = m.totalBytes;
    g.memoryReservedBytes = m.reservedBytes;
    g.memoryUsedBytes = m.usedBytes;
    g.memoryFreeBytes = m.freeBytes;
  }

  private readTemperature(d: DeviceState): number | null {
    if (this.f.nvmlDeviceGetTemperatureV) {
      const v = new DataView(this.temp.buffer);
      v.setUint32(0, TEMPERATURE_V1_VERSION, true);
      v.setInt32(4, TEMPERATURE_GPU, true);
      if (this.ok(this.call('nvmlDeviceGetTemperatureV', d.handle, this.temp))) return v.getInt32(8, true);
    }
    return this.u32Of('nvmlDeviceGetTemperature', d.handle, TEMPERATURE_GPU);
  }

  /**
   * Figures that change rarely, read every RARE_INTERVAL_MS: measured on an H200, one pass
   * costs 5-12 ms (the energy counter alone 3-10 ms, the two ECC counters 1.6 ms), which
   * once a second was most of monitor's CPU.
   */
  private readRare(d: DeviceState, nowMs: number): void {
    const s: Partial<GpuSample> = {};
    const h = d.handle;
    const limit = this.u32Of('nvmlDeviceGetEnforcedPowerLimit', h);
    s.powerLimitWatts = limit === null ? null : limit / 1000;
    s.pcieLinkGen = this.u32Of('nvmlDeviceGetCurrPcieLinkGeneration', h);
    s.pcieLinkWidth = this.u32Of('nvmlDeviceGetCurrPcieLinkWidth', h);
    const ce = this.u64Of('nvmlDeviceGetTotalEccErrors', h, ECC_CORRECTED, ECC_VOLATILE);
    const ue = this.u64Of('nvmlDeviceGetTotalEccErrors', h, ECC_UNCORRECTED, ECC_VOLATILE);
    s.eccErrorsCorrectedVolatile = ce === null ? null : Number(ce);
    s.eccErrorsUncorrectedVolatile = ue === null ? null : Number(ue);
    const cm = this.u32Of('nvmlDeviceGetComputeMode', h);
    s.computeMode = cm === null ? null : (['Default', 'Exclusive_Thread', 'Prohibited', 'Exclusive_Process'][cm] ?? String(cm));
    const pending = new Uint32Array(1);
    s.migMode = this.ok(this.call('nvmlDeviceGetMigMode', h, this.u32, pending)) ? (this.u32[0] === 1 ? 'enabled' : 'disabled') : null;
    if (nowMs - d.lastEnergyMs >= ENERGY_INTERVAL_MS) {
      const energy = this.u64Of('nvmlDeviceGetTotalEnergyConsumption', h);
      d.energyJoules = energy === null ? null : Number(energy) / 1000;
      d.lastEnergyMs = nowMs;
    }
    s.energyJoules = d.energyJoules;
    d.rare = s;
    d.lastRareMs = nowMs;
  }

  private readSlow(d: DeviceState, nowMs: number): void {
    const s: Partial<GpuSample> = {};
    const h = d.handle;
    // One GetFieldValues call for the PCIe byte counters and memory temperature (about 0.5 ms).
    const ids = [FI.PCIE_COUNT_TX_BYTES, FI.PCIE_COUNT_RX_BYTES, FI.MEMORY_TEMP];
    const view = new DataView(this.fields.buffer);
    this.fields.fill(0);
    encodeFieldRequests(view, ids);
    s.pcieTxBytesPerSecond = null;
    s.pcieRxBytesPerSecond = null;
    s.memoryTemperatureC = null;
    if (this.ok(this.call('nvmlDeviceGetFieldValues', h, ids.length, this.fields))) {
      for (const fv of decodeFieldValues(view, ids.length)) {
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

  /** One list call with the INSUFFICIENT_SIZE protocol: grow to count*2+5 and retry. */
  private listProcesses(d: DeviceState, fn: string): { pid: number; usedMemoryBytes: number | null }[] | null {
    const count = this.u32;
    for (let attempt = 0; attempt < 4; attempt++) {
      count[0] = d.procCapacity;
      const rc = this.call(fn, d.handle, count, d.procBuf);
      if (rc === NVML.INSUFFICIENT_SIZE) {
        d.procCapacity = count[0]! * 2 + 5;
        d.procBuf = new Uint8Array(d.procCapacity * 32); // room for either layout
        continue;
      }
      if (!this.ok(rc)) return null;
      const got = decodeProcessInfosChecked(new DataView(d.procBuf.buffer), count[0]!, this.procStructSize);
      if (got.structSize !== this.procStructSize) {
        this.procStructSize = got.structSize;
        d.procBuf = new Uint8Array(d.procCapacity * Math.max(24, this.procStructSize) + 64);
      }
      return got.processes;
    }
    return null;
  }

  private readProcesses(d: DeviceState, g: GpuSample, nowMs: number): ProcessSample[] {
    const compute = this.listProcesses(d, 'nvmlDeviceGetComputeRunningProcesses_v3');
    if (nowMs - d.lastGraphicsMs >= GRAPHICS_PROCESSES_INTERVAL_MS) {
      d.graphicsProcs = this.listProcesses(d, 'nvmlDeviceGetGraphicsRunningProcesses_v3');
      d.lastGraphicsMs = nowMs;
    }
    const graphics = d.graphicsProcs;
    const byPid = new Map<number, ProcessSample>();
    for (const [list, type] of [
      [compute, 'C'],
      [graphics, 'G'],
    ] as const) {
      for (const p of list ?? []) {
        const cur = byPid.get(p.pid);
        if (cur) {
          cur.type = cur.type === type ? type : 'C+G';
          if (p.usedMemoryBytes !== null) cur.usedMemoryBytes = Math.max(cur.usedMemoryBytes ?? 0, p.usedMemoryBytes);
        } else {
          const ps = emptyProcess(p.pid, d.index);
          ps.type = type;
          ps.usedMemoryBytes = p.usedMemoryBytes;
          byPid.set(p.pid, ps);
        }
      }
    }
    if (byPid.size === 0) return [];
    if (byPid.size === 1) {
      // One process: its share of the GPU's busy time is all of it, so the 2 ms call is not needed.
      const only = byPid.values().next().value as ProcessSample;
      only.smUtilPercent = g.utilizationGpuPercent;
      only.memUtilPercent = g.utilizationMemoryPercent;
      d.lastProcUtilMs = Number.NEGATIVE_INFINITY; // a second process gets a fresh reading at once
      return [only];
    }
    // Per-process utilisation over the last second; NOT_FOUND means no process ran a kernel in it.
    // The figure is a one-second window, so it is read at most once a second (the call costs
    // milliseconds with the driver's sample buffers full, far more than the rest of a sample).
    if (nowMs - d.lastProcUtilMs < PROCESS_UTIL_INTERVAL_MS) {
      for (const p of byPid.values()) {
        const u = d.procUtil?.get(p.pid);
        if (d.procUtil !== null) {
          p.smUtilPercent = u ? u.smUtil : 0;
          p.memUtilPercent = u ? u.memUtil : 0;
        }
      }
      return [...byPid.values()];
    }
    const count = this.u32;
    let util: Map<number, { smUtil: number | null; memUtil: number | null }> | null = null;
    for (let attempt = 0; attempt < 4; attempt++) {
      count[0] = d.utilCapacity;
      const rc = this.call('nvmlDeviceGetProcessUtilization', d.handle, d.utilBuf, count, BigInt(Math.max(0, nowMs - 1000)) * 1000n);
      if (rc === NVML.INSUFFICIENT_SIZE) {
        d.utilCapacity = count[0]! * 2 + 5;
        d.utilBuf = new Uint8Array(d.utilCapacity * 32);
        continue;
      }
      if (rc === NVML.NOT_FOUND) util = new Map();
      else if (this.ok(rc)) util = latestUtilByPid(decodeProcessUtilSamples(new DataView(d.utilBuf.buffer), count[0]!));
      break;
    }
    d.procUtil = util;
    d.lastProcUtilMs = nowMs;
    for (const p of byPid.values()) {
      if (util === null) continue;
      const u = util.get(p.pid);
      p.smUtilPercent = u ? u.smUtil : 0;
      p.memUtilPercent = u ? u.memUtil : 0;
    }
    return [...byPid.values()];
  }

  private sampleDevice(d: DeviceState, nowMs: number): GpuSample {
    const g: GpuSample = { ...d.static, processes: [] };
    if (d.lost) {
      g.lost = true;
      return g;
    }
    try {
      const h = d.handle;
      this.readMemory(d, g);
      const util = this.u32;
      if (this.ok(this.call('nvmlDeviceGetUtilizationRates', h, util))) {
        g.utilizationGpuPercent = util[0]!;
        g.utilizationMemoryPercent = util[1]!;
      }
      const mw = this.u32Of('nvmlDeviceGetPowerUsage', h);
      g.powerWatts = mw === null ? null : mw / 1000;
      g.temperatureC = this.readTemperature(d);
      g.fanPercent = this.perSampleU32(d, 'nvmlDeviceGetFanSpeed');
      const ps = this.perSampleU32(d, 'nvmlDeviceGetPerformanceState');
      g.performanceState = ps === null || ps === 32 ? null : `P${ps}`;
      g.smClockMhz = this.u32Of('nvmlDeviceGetClockInfo', h, CLOCK_SM);
      g.memoryClockMhz = this.u32Of('nvmlDeviceGetClockInfo', h, CLOCK_MEM);
      let reasons = this.u64Of('nvmlDeviceGetCurrentClocksEventReasons', h);
      if (reasons === null && !this.f.nvmlDeviceGetCurrentClocksEventReasons)
        reasons = this.u64Of('nvmlDeviceGetCurrentClocksThrottleReasons', h);
      g.clocksEventReasons = reasons === null ? null : this.reasonNames(reasons);
      if (nowMs - d.lastRareMs >= RARE_INTERVAL_MS) this.readRare(d, nowMs);
      if (nowMs - d.lastSlowMs >= this.slowIntervalMs) this.readSlow(d, nowMs);
      Object.assign(g, d.rare, d.slow);
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
    const gpus = this.devices.map((d) => this.sampleDevice(d, nowMs));
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
    this.call('nvmlShutdown');
  }
}
