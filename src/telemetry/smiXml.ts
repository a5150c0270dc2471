/**
 * `nvidia-smi -q -x` (schema nvsmi_device_v11..v13) into a Snapshot. Element names that moved between
 * driver generations (power_readings vs gpu_power_readings, clocks_throttle_reasons vs
 * clocks_event_reasons, single/double-bit vs sram/dram ECC) are all read.
 */
import {
  emptyGpu,
  emptyProcess,
  type GpuSample,
  type ProcessSample,
  SNAPSHOT_SCHEMA_VERSION,
  type Snapshot,
  TelemetryParseError,
} from './sample.js';
import { parseMigMode, parseQuantity, textOrNull } from './smiValues.js';
import { child, parseXml, textAt, type XmlElement } from './xml.js';

function num(el: XmlElement | undefined, ...path: string[]): number | null {
  const v = parseQuantity(textAt(el, ...path));
  return v === undefined ? null : v;
}

/** First available number among several element paths (schemas differ by driver). */
function firstNum(el: XmlElement, ...paths: string[][]): number | null {
  for (const p of paths) {
    const v = num(el, ...p);
    if (v !== null) return v;
  }
  return null;
}

/** Sum of the numeric children whose names match, or null when none is a number (ECC disabled: all N/A). */
function sumChildren(el: XmlElement | undefined, match: (name: string) => boolean): number | null {
  if (!el) return null;
  let total: number | null = null;
  for (const c of el.children) {
    if (!match(c.name)) continue;
    const direct = parseQuantity(c.text);
    const v = typeof direct === 'number' ? direct : num(c, 'total');
    if (typeof v === 'number') total = (total ?? 0) + v;
  }
  return total;
}

function activeReasons(gpu: XmlElement): string[] | null {
  const el = child(gpu, 'clocks_event_reasons') ?? child(gpu, 'clocks_throttle_reasons');
  if (!el) return null;
  const out: string[] = [];
  for (const c of el.children) {
    if (c.text.trim().toLowerCase() === 'active') out.push(c.name.replace(/^clocks_(event|throttle)_reason_/, ''));
  }
  return out;
}

function parseProcesses(gpu: XmlElement, gpuIndex: number): ProcessSample[] {
  const out: ProcessSample[] = [];
  for (const p of child(gpu, 'processes')?.children ?? []) {
    if (p.name !== 'process_info') continue;
    const pid = Number(textAt(p, 'pid'));
    if (!Number.isInteger(pid)) continue;
    const proc = emptyProcess(pid, gpuIndex);
    const type = textAt(p, 'type');
    proc.type = type === 'C' || type === 'G' || type === 'C+G' ? type : null;
    proc.name = textOrNull(textAt(p, 'process_name'));
    proc.usedMemoryBytes = num(p, 'used_memory');
    out.push(proc);
  }
  return out;
}

function parseGpu(gpu: XmlElement, index: number): GpuSample {
  const g = emptyGpu(index, textAt(gpu, 'uuid') ?? '', textAt(gpu, 'product_name') ?? '');
  g.pciBusId = textOrNull(textAt(gpu, 'pci', 'pci_bus_id')) ?? gpu.attrs.id ?? null;
  g.memoryTotalBytes = num(gpu, 'fb_memory_usage', 'total');
  g.memoryReservedBytes = num(gpu, 'fb_memory_usage', 'reserved');
  g.memoryUsedBytes = num(gpu, 'fb_memory_usage', 'used');
  g.memoryFreeBytes = num(gpu, 'fb_memory_usage', 'free');
  g.utilizationGpuPercent = num(gpu, 'utilization', 'gpu_util');
  g.utilizationMemoryPercent = num(gpu, 'utilization', 'memory_util');
  // power.draw is the 1 s average on Ampere+ (what NVML GetPowerUsage returns); older schemas have power_draw.
  g.powerWatts = firstNum(
    gpu,
    ['gpu_power_readings', 'average_power_draw'],
    ['gpu_power_readings', 'power_draw'],
    ['power_readings', 'power_draw'],
  );
  g.powerLimitWatts = firstNum(
    gpu,
    ['gpu_power_readings', 'current_power_limit'],
    ['gpu_power_readings', 'enforced_power_limit'],
    ['power_readings', 'enforced_power_limit'],
    ['power_readings', 'power_limit'],
  );
  g.temperatureC = num(gpu, 'temperature', 'gpu_temp');
  g.memoryTemperatureC = num(gpu, 'temperature', 'memory_temp');
  g.fanPercent = num(gpu, 'fan_speed');
  g.performanceState = textOrNull(textAt(gpu, 'performance_state'));
  g.smClockMhz = num(gpu, 'clocks', 'sm_clock');
  g.memoryClockMhz = num(gpu, 'clocks', 'mem_clock');
  g.smClockMaxMhz = num(gpu, 'max_clocks', 'sm_clock');
  g.clocksEventReasons = activeReasons(gpu);
  g.pcieLinkGen = num(gpu, 'pci', 'pci_gpu_link_info', 'pcie_gen', 'current_link_gen');
  g.pcieLinkWidth = num(gpu, 'pci', 'pci_gpu_link_info', 'link_widths', 'current_link_width');
  g.pcieTxBytesPerSecond = num(gpu, 'pci', 'tx_util');
  g.pcieRxBytesPerSecond = num(gpu, 'pci', 'rx_util');
  const vol = child(gpu, 'ecc_errors', 'volatile');
  g.eccErrorsCorrectedVolatile = sumChildren(vol, (n) => /(^|_)correctable$|^single_bit$/.test(n) && !n.includes('uncorrectable'));
  g.eccErrorsUncorrectedVolatile = sumChildren(vol, (n) => n.includes('uncorrectable') || n === 'double_bit');
  g.migMode = parseMigMode(textAt(gpu, 'mig_mode', 'current_mig'));
  g.computeMode = textOrNull(textAt(gpu, 'compute_mode'));
  g.processes = parseProcesses(gpu, index);
  return g;
}

/** Parses `nvidia-smi -q -x` output. Throws TelemetryParseError on malformed or foreign XML. */
export function parseSmiXml(text: string): Snapshot {
  const root = parseXml(text);
  if (root.name !== 'nvidia_smi_log') throw new TelemetryParseError(`not nvidia-smi -q -x output (root element <${root.name}>)`);
  const gpus = root.children.filter((c) => c.name === 'gpu').map((g, i) => parseGpu(g, i));
  const attached = Number(textAt(root, 'attached_gpus'));
  const notes: string[] = [];
  const when = textAt(root, 'timestamp');
  if (when) notes.push(`taken ${when} (clock of the host that ran nvidia-smi)`);
  if (Number.isInteger(attached) && attached !== gpus.length) notes.push(`file says ${attached} GPUs attached but lists ${gpus.length}`);
  return {
    schemaVersion: SNAPSHOT_SCHEMA_VERSION,
    source: 'smi-xml',
    timestampMs: null,
    hostname: null,
    driverVersion: textOrNull(textAt(root, 'driver_version')),
    cudaVersion: textOrNull(textAt(root, 'cuda_version')),
    gpus,
    notes,
  };
}
