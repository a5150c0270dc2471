/**
 * `nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]` and `--query-compute-apps=...` into
 * the sample model. The header names the fields (nvidia-smi always prints the canonical name even
 * when an alias was asked for) and carries units (`memory.used [MiB]`); without a header the columns
 * must be gpuwise's own field order, GPU_QUERY_FIELDS (or a prefix of it), which is also what the
 * live nvidia-smi fallback asks for.
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
import { decodeClockEventReasons, isNotAvailable, parseMigMode, parseQuantity, textOrNull } from './smiValues.js';

/** The --query-gpu fields gpuwise reads, in the order its own nvidia-smi calls use. */
export const GPU_QUERY_FIELDS = [
  'index',
  'uuid',
  'name',
  'pci.bus_id',
  'driver_version',
  'memory.total',
  'memory.reserved',
  'memory.used',
  'memory.free',
  'utilization.gpu',
  'utilization.memory',
  'power.draw',
  'power.limit',
  'temperature.gpu',
  'clocks.current.sm',
  'clocks.current.memory',
  'clocks.max.sm',
  'pcie.link.gen.current',
  'pcie.link.width.current',
  'compute_mode',
  'mig.mode.current',
  'ecc.errors.uncorrected.volatile.total',
  'ecc.errors.corrected.volatile.total',
  'temperature.memory',
  'fan.speed',
  'pstate',
  'clocks_event_reasons.active',
  'enforced.power.limit',
] as const;

/** The --query-compute-apps fields gpuwise asks for. */
export const APPS_QUERY_FIELDS = ['pid', 'process_name', 'used_gpu_memory', 'gpu_uuid', 'gpu_bus_id'] as const;

/** Aliases nvidia-smi accepts, mapped to the canonical name used above. */
const ALIASES: Record<string, string> = {
  gpu_uuid: 'uuid',
  gpu_name: 'name',
  gpu_bus_id: 'pci.bus_id',
  'clocks.sm': 'clocks.current.sm',
  'clocks.mem': 'clocks.current.memory',
  'clocks.memory': 'clocks.current.memory',
  'clocks.max.memory': 'clocks.max.memory',
  'gpu.power.draw.average': 'power.draw.average',
  'power.draw.average': 'power.draw.average',
  'gpu.power.requested_limit': 'power.limit',
  'gpu.power.current_limit': 'enforced.power.limit',
  'clocks_throttle_reasons.active': 'clocks_event_reasons.active',
  used_memory: 'used_gpu_memory',
};

type Setter = (g: GpuSample, raw: string, unit: string) => void;

function numberOf(raw: string, unit: string, field: string): number | null {
  const v = parseQuantity(raw, unit);
  if (v === undefined) throw new TelemetryParseError(`${field}: '${raw}' is not a number`);
  return v;
}

const n =
  (key: keyof GpuSample, defaultUnit: string): Setter =>
  (g, raw, unit) => {
    (g as unknown as Record<string, unknown>)[key] = numberOf(raw, unit || defaultUnit, String(key));
  };
const t =
  (key: keyof GpuSample): Setter =>
  (g, raw) => {
    (g as unknown as Record<string, unknown>)[key] = textOrNull(raw);
  };

const GPU_SETTERS: Record<string, Setter> = {
  uuid: (g, raw) => {
    g.uuid = raw;
  },
  name: (g, raw) => {
    g.name = raw;
  },
  'pci.bus_id': t('pciBusId'),
  'memory.total': n('memoryTotalBytes', 'MiB'),
  'memory.reserved': n('memoryReservedBytes', 'MiB'),
  'memory.used': n('memoryUsedBytes', 'MiB'),
  'memory.free': n('memoryFreeBytes', 'MiB'),
  'utilization.gpu': n('utilizationGpuPercent', '%'),
  'utilization.memory': n('utilizationMemoryPercent', '%'),
  'power.draw': n('powerWatts', 'W'),
  'power.draw.average': n('powerWatts', 'W'),
  'power.limit': n('powerLimitWatts', 'W'),
  'enforced.power.limit': n('powerLimitWatts', 'W'),
  'temperature.gpu': n('temperatureC', 'C'),
  'temperature.memory': n('memoryTemperatureC', 'C'),
  'fan.speed': n('fanPercent', '%'),
  pstate: t('performanceState'),
  'clocks.current.sm': n('smClockMhz', 'MHz'),
  'clocks.current.memory': n('memoryClockMhz', 'MHz'),
  'clocks.max.sm': n('smClockMaxMhz', 'MHz'),
  'pcie.link.gen.current': n('pcieLinkGen', ''),
  'pcie.link.width.current': n('pcieLinkWidth', ''),
  compute_mode: t('computeMode'),
  'mig.mode.current': (g, raw) => {
    g.migMode = parseMigMode(raw);
  },
  'ecc.errors.uncorrected.volatile.total': n('eccErrorsUncorrectedVolatile', ''),
  'ecc.errors.corrected.volatile.total': n('eccErrorsCorrectedVolatile', ''),
  'clocks_event_reasons.active': (g, raw) => {
    g.clocksEventReasons = isNotAvailable(raw) || !/^0x[0-9a-f]+$/i.test(raw.trim()) ? null : decodeClockEventReasons(BigInt(raw.trim()));
  },
};

interface Column {
  field: string;
  unit: string;
}

/** `memory.used [MiB]` -> { field: 'memory.used', unit: 'MiB' } */
function parseHeaderCell(cell: string): Column {
  const m = /^\s*([^[\]]+?)\s*(?:\[([^\]]*)\])?\s*$/.exec(cell);
  const field = (m?.[1] ?? cell).trim();
  return { field: ALIASES[field] ?? field, unit: (m?.[2] ?? '').trim() };
}

function splitRows(text: string): string[][] {
  return text
    .split(/\r?\n/)
    .filter((l) => l.trim() !== '')
    .map((l) => l.split(',').map((c) => c.trim()));
}

/** A header row names fields; a data row starts with a number (index or pid). */
function looksLikeHeader(row: string[]): boolean {
  return row.every((c) => /^[A-Za-z_][\w.]*(\s*\[[^\]]*\])?$/.test(c));
}

function columnsFor(rows: string[][], defaults: readonly string[], what: string): { columns: Column[]; data: string[][] } {
  const first = rows[0];
  if (first === undefined) throw new TelemetryParseError(`empty ${what} CSV`);
  if (looksLikeHeader(first)) return { columns: first.map(parseHeaderCell), data: rows.slice(1) };
  if (first.length > defaults.length)
    throw new TelemetryParseError(
      `${what} CSV has no header and ${first.length} columns; without a header gpuwise expects its own field order: ${defaults.join(',')}`,
    );
  return { columns: defaults.slice(0, first.length).map((field) => ({ field, unit: '' })), data: rows };
}

/** Is this CSV a --query-compute-apps listing (it has a pid column)? */
export function isAppsCsv(text: string): boolean {
  const first = splitRows(text.slice(0, 4096))[0];
  return first !== undefined && looksLikeHeader(first) && first.some((c) => parseHeaderCell(c).field === 'pid');
}

/** Parses `--query-gpu` CSV. Rows must have as many cells as the header. */
export function parseGpuCsv(text: string): Snapshot {
  const { columns, data } = columnsFor(splitRows(text), GPU_QUERY_FIELDS, '--query-gpu');
  if (!columns.some((c) => c.field === 'uuid' || c.field === 'index'))
    throw new TelemetryParseError('--query-gpu CSV needs an index or uuid column to tell GPUs apart');
  let driverVersion: string | null = null;
  const gpus: GpuSample[] = [];
  data.forEach((cells, rowNo) => {
    if (cells.length !== columns.length)
      throw new TelemetryParseError(`--query-gpu CSV row ${rowNo + 1} has ${cells.length} cells, the header has ${columns.length}`);
    const g = emptyGpu(rowNo, '', '');
    columns.forEach((col, i) => {
      const raw = cells[i]!;
      if (col.field === 'index') {
        const idx = Number(raw);
        if (!Number.isInteger(idx) || idx < 0)
          throw new TelemetryParseError(`--query-gpu CSV row ${rowNo + 1}: index '${raw}' is not a GPU index`);
        g.index = idx;
      } else if (col.field === 'driver_version') driverVersion = textOrNull(raw);
      else GPU_SETTERS[col.field]?.(g, raw, col.unit);
    });
    gpus.push(g);
  });
  if (gpus.length === 0) throw new TelemetryParseError('--query-gpu CSV lists no GPU');
  const known = new Set(columns.map((c) => c.field));
  const ignored = columns
    .filter((c) => c.field !== 'index' && c.field !== 'driver_version' && !(c.field in GPU_SETTERS))
    .map((c) => c.field);
  const notes: string[] = [];
  if (ignored.length > 0) notes.push(`fields not used by gpuwise: ${ignored.join(', ')}`);
  if (!known.has('memory.reserved') && known.has('memory.used'))
    notes.push('no memory.reserved column: memory.used may include driver-reserved memory on old drivers');
  return {
    schemaVersion: SNAPSHOT_SCHEMA_VERSION,
    source: 'smi-csv',
    timestampMs: null,
    hostname: null,
    driverVersion,
    cudaVersion: null,
    gpus,
    notes,
  };
}

/** A compute-apps row, keyed by the GPU it runs on (uuid or bus id; whichever the file has). */
export interface AppRow {
  gpuUuid: string | null;
  gpuBusId: string | null;
  process: ProcessSample;
}

/** Parses `--query-compute-apps` CSV. Process names may contain commas: extra cells are folded back into the name. */
export function parseAppsCsv(text: string): AppRow[] {
  const { columns, data } = columnsFor(splitRows(text), APPS_QUERY_FIELDS, '--query-compute-apps');
  const nameCol = columns.findIndex((c) => c.field === 'process_name');
  return data.map((cellsIn, rowNo) => {
    let cells = cellsIn;
    if (cells.length > columns.length && nameCol >= 0) {
      const extra = cells.length - columns.length;
      cells = [...cells.slice(0, nameCol), cells.slice(nameCol, nameCol + extra + 1).join(','), ...cells.slice(nameCol + extra + 1)];
    }
    if (cells.length !== columns.length)
      throw new TelemetryParseError(
        `--query-compute-apps CSV row ${rowNo + 1} has ${cells.length} cells, the header has ${columns.length}`,
      );
    const p = emptyProcess(-1, -1);
    p.type = 'C';
    let gpuUuid: string | null = null;
    let gpuBusId: string | null = null;
    columns.forEach((col, i) => {
      const raw = cells[i]!;
      if (col.field === 'pid') {
        p.pid = Number(raw);
        if (!Number.isInteger(p.pid))
          throw new TelemetryParseError(`--query-compute-apps CSV row ${rowNo + 1}: pid '${raw}' is not a number`);
      } else if (col.field === 'process_name') p.name = textOrNull(raw);
      else if (col.field === 'used_gpu_memory') p.usedMemoryBytes = numberOf(raw, col.unit || 'MiB', 'used_gpu_memory');
      else if (col.field === 'uuid') gpuUuid = textOrNull(raw);
      else if (col.field === 'pci.bus_id') gpuBusId = textOrNull(raw);
    });
    return { gpuUuid, gpuBusId, process: p };
  });
}

/** Attaches compute-app rows to the GPUs of a snapshot (by UUID, else bus id). Unmatched rows become a note. */
export function attachApps(snapshot: Snapshot, apps: AppRow[]): Snapshot {
  let unmatched = 0;
  for (const a of apps) {
    const g = snapshot.gpus.find((x) => (a.gpuUuid !== null && x.uuid === a.gpuUuid) || (a.gpuBusId !== null && x.pciBusId === a.gpuBusId));
    if (!g) {
      unmatched++;
      continue;
    }
    g.processes.push({ ...a.process, gpuIndex: g.index });
  }
  if (unmatched > 0) snapshot.notes.push(`${unmatched} compute-app rows name a GPU that is not in the GPU list`);
  return snapshot;
}
