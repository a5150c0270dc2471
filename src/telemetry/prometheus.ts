/**
 * Prometheus text exposition (format 0.0.4) of a snapshot. GPU metrics use NVIDIA dcgm-exporter's
 * names, units and labels (`gpu`, `UUID`, `pci_bus_id`, `device`, `modelName`, `Hostname`), so
 * dashboards built for dcgm-exporter (e.g. Grafana 12239) work unchanged. Per-process metrics, which
 * dcgm-exporter lacks, are `gpuwise_process_*` with the GPU labels plus `pid`, `user`, `command`,
 * `rank`, `local_rank`, `world_size`, `slurm_job_id`. A figure that is not available is left out
 * (no series), never written as 0.
 */
import type { GpuSample, ProcessSample, Snapshot } from './sample.js';
import { MIB } from './sample.js';

type Kind = 'gauge' | 'counter';

interface GpuMetric {
  name: string;
  kind: Kind;
  help: string;
  value: (g: GpuSample) => number | null;
}

const mib = (v: number | null) => (v === null ? null : Math.floor(v / MIB));

/** dcgm-exporter's default counters that NVML can supply, with dcgm-exporter's help texts and units. */
export const GPU_METRICS: readonly GpuMetric[] = [
  { name: 'DCGM_FI_DEV_SM_CLOCK', kind: 'gauge', help: 'SM clock frequency (in MHz).', value: (g) => g.smClockMhz },
  { name: 'DCGM_FI_DEV_MEM_CLOCK', kind: 'gauge', help: 'Memory clock frequency (in MHz).', value: (g) => g.memoryClockMhz },
  { name: 'DCGM_FI_DEV_MEMORY_TEMP', kind: 'gauge', help: 'Memory temperature (in C).', value: (g) => g.memoryTemperatureC },
  { name: 'DCGM_FI_DEV_GPU_TEMP', kind: 'gauge', help: 'GPU temperature (in C).', value: (g) => g.temperatureC },
  { name: 'DCGM_FI_DEV_POWER_USAGE', kind: 'gauge', help: 'Power draw (in W).', value: (g) => g.powerWatts },
  { name: 'DCGM_FI_DEV_POWER_MGMT_LIMIT', kind: 'gauge', help: 'Power management limit (in W).', value: (g) => g.powerLimitWatts },
  {
    name: 'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION',
    kind: 'counter',
    help: 'Total energy consumption since boot (in mJ).',
    value: (g) => (g.energyJoules === null ? null : Math.round(g.energyJoules * 1000)),
  },
  { name: 'DCGM_FI_DEV_GPU_UTIL', kind: 'gauge', help: 'GPU utilization (in %).', value: (g) => g.utilizationGpuPercent },
  { name: 'DCGM_FI_DEV_MEM_COPY_UTIL', kind: 'gauge', help: 'Memory utilization (in %).', value: (g) => g.utilizationMemoryPercent },
  { name: 'DCGM_FI_DEV_FB_TOTAL', kind: 'gauge', help: 'Framebuffer memory total (in MiB).', value: (g) => mib(g.memoryTotalBytes) },
  { name: 'DCGM_FI_DEV_FB_FREE', kind: 'gauge', help: 'Framebuffer memory free (in MiB).', value: (g) => mib(g.memoryFreeBytes) },
  { name: 'DCGM_FI_DEV_FB_USED', kind: 'gauge', help: 'Framebuffer memory used (in MiB).', value: (g) => mib(g.memoryUsedBytes) },
  {
    name: 'DCGM_FI_DEV_FB_RESERVED',
    kind: 'gauge',
    help: 'Framebuffer memory reserved (in MiB).',
    value: (g) => mib(g.memoryReservedBytes),
  },
  { name: 'DCGM_FI_DEV_FAN_SPEED', kind: 'gauge', help: 'Fan speed (in 0-100%).', value: (g) => g.fanPercent },
  {
    name: 'DCGM_FI_DEV_ECC_SBE_VOL_TOTAL',
    kind: 'counter',
    help: 'Total number of single-bit volatile ECC errors.',
    value: (g) => g.eccErrorsCorrectedVolatile,
  },
  {
    name: 'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL',
    kind: 'counter',
    help: 'Total number of double-bit volatile ECC errors.',
    value: (g) => g.eccErrorsUncorrectedVolatile,
  },
  {
    name: 'DCGM_FI_PROF_PCIE_TX_BYTES',
    kind: 'gauge',
    help: 'The rate of data transmitted over the PCIe bus (in bytes per second).',
    value: (g) => g.pcieTxBytesPerSecond,
  },
  {
    name: 'DCGM_FI_PROF_PCIE_RX_BYTES',
    kind: 'gauge',
    help: 'The rate of data received over the PCIe bus (in bytes per second).',
    value: (g) => g.pcieRxBytesPerSecond,
  },
  { name: 'DCGM_FI_DEV_PCIE_LINK_GEN', kind: 'gauge', help: 'PCIe current link generation.', value: (g) => g.pcieLinkGen },
  { name: 'DCGM_FI_DEV_PCIE_LINK_WIDTH', kind: 'gauge', help: 'PCIe current link width.', value: (g) => g.pcieLinkWidth },
];

interface ProcessMetric {
  name: string;
  help: string;
  value: (p: ProcessSample) => number | null;
}

export const PROCESS_METRICS: readonly ProcessMetric[] = [
  {
    name: 'gpuwise_process_gpu_memory_bytes',
    help: 'GPU memory held by the process on this GPU (bytes).',
    value: (p) => p.usedMemoryBytes,
  },
  {
    name: 'gpuwise_process_sm_util_percent',
    help: 'Share of the last second in which kernels of the process ran (percent).',
    value: (p) => p.smUtilPercent,
  },
  {
    name: 'gpuwise_process_mem_util_percent',
    help: 'Share of the last second in which the process accessed device memory (percent).',
    value: (p) => p.memUtilPercent,
  },
  { name: 'gpuwise_process_cpu_percent', help: 'Host CPU use of the process (percent of one core).', value: (p) => p.cpuPercent },
  { name: 'gpuwise_process_rss_bytes', help: 'Resident host memory of the process (bytes).', value: (p) => p.rssBytes },
];

/** Escapes a label value as the text format requires (backslash, double quote, newline). */
export function escapeLabelValue(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function labels(pairs: ReadonlyArray<[string, string]>): string {
  return `{${pairs.map(([k, v]) => `${k}="${escapeLabelValue(v)}"`).join(',')}}`;
}

function formatValue(v: number): string {
  if (Number.isInteger(v)) return String(v);
  return String(Math.round(v * 1000) / 1000);
}

function gpuLabels(g: GpuSample, hostname: string): Array<[string, string]> {
  return [
    ['gpu', String(g.index)],
    ['UUID', g.uuid],
    ['pci_bus_id', g.pciBusId ?? ''],
    ['device', `nvidia${g.index}`],
    ['modelName', g.name],
    ['Hostname', hostname],
  ];
}

const COMMAND_LABEL_MAX = 200;

function processLabels(g: GpuSample, p: ProcessSample, hostname: string): Array<[string, string]> {
  const cmd = p.command ?? p.name ?? '';
  return [
    ...gpuLabels(g, hostname),
    ['pid', String(p.pid)],
    ['user', p.user ?? ''],
    ['command', cmd.length > COMMAND_LABEL_MAX ? `${cmd.slice(0, COMMAND_LABEL_MAX - 1)}…` : cmd],
    ['rank', p.rank === null ? '' : String(p.rank)],
    ['local_rank', p.localRank === null ? '' : String(p.localRank)],
    ['world_size', p.worldSize === null ? '' : String(p.worldSize)],
    ['slurm_job_id', p.slurmJobId ?? ''],
  ];
}

/** Renders the whole exposition. `hostname` fills dcgm-exporter's `Hostname` label. */
export function renderExposition(s: Snapshot, hostname: string): string {
  const out: string[] = [];
  for (const m of GPU_METRICS) {
    const lines: string[] = [];
    for (const g of s.gpus) {
      const v = g.lost ? null : m.value(g);
      if (v !== null && Number.isFinite(v)) lines.push(`${m.name}${labels(gpuLabels(g, hostname))} ${formatValue(v)}`);
    }
    if (lines.length === 0) continue;
    out.push(`# HELP ${m.name} ${m.help}`, `# TYPE ${m.name} ${m.kind}`, ...lines);
  }
  out.push('# HELP gpuwise_gpu_lost 1 when the GPU fell off the bus (NVML_ERROR_GPU_IS_LOST).', '# TYPE gpuwise_gpu_lost gauge');
  for (const g of s.gpus) out.push(`gpuwise_gpu_lost${labels(gpuLabels(g, hostname))} ${g.lost ? 1 : 0}`);
  const reasons: string[] = [];
  for (const g of s.gpus)
    for (const r of g.clocksEventReasons ?? [])
      reasons.push(`gpuwise_gpu_clocks_event_active${labels([...gpuLabels(g, hostname), ['reason', r]])} 1`);
  if (reasons.length > 0)
    out.push(
      '# HELP gpuwise_gpu_clocks_event_active Clock event (throttle) reasons active now.',
      '# TYPE gpuwise_gpu_clocks_event_active gauge',
      ...reasons,
    );
  for (const m of PROCESS_METRICS) {
    const lines: string[] = [];
    for (const g of s.gpus)
      for (const p of g.processes) {
        const v = m.value(p);
        if (v !== null && Number.isFinite(v)) lines.push(`${m.name}${labels(processLabels(g, p, hostname))} ${formatValue(v)}`);
      }
    if (lines.length === 0) continue;
    out.push(`# HELP ${m.name} ${m.help}`, `# TYPE ${m.name} gauge`, ...lines);
  }
  if (s.timestampMs !== null)
    out.push(
      '# HELP gpuwise_sample_timestamp_seconds When the GPUs were sampled (Unix time).',
      '# TYPE gpuwise_sample_timestamp_seconds gauge',
      `gpuwise_sample_timestamp_seconds ${formatValue(s.timestampMs / 1000)}`,
    );
  return `${out.join('\n')}\n`;
}
