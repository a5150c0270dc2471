/**
 * What the Live GPUs page receives (pure): a compact frame per sample, built once and sent to every viewer, and
 * the bounded history the page draws its charts from. Figures keep the sample model's rule: null = not available.
 */
import type { Snapshot } from '../telemetry/sample.js';

export const LIVE_SCHEMA_VERSION = 1;

export interface LiveGpu {
  index: number;
  cudaIndex: number | null;
  name: string;
  uuid: string;
  lost: boolean;
  utilPercent: number | null;
  memUtilPercent: number | null;
  memUsedBytes: number | null;
  memReservedBytes: number | null;
  memTotalBytes: number | null;
  powerW: number | null;
  powerLimitW: number | null;
  tempC: number | null;
  smClockMhz: number | null;
  smClockMaxMhz: number | null;
  memClockMhz: number | null;
  /** Active clock event ("throttle") reasons; null when unknown. */
  throttle: string[] | null;
}

export interface LiveProcess {
  pid: number;
  gpu: number;
  name: string | null;
  user: string | null;
  command: string | null;
  usedBytes: number | null;
  smPercent: number | null;
  cpuPercent: number | null;
  rank: number | null;
  localRank: number | null;
  worldSize: number | null;
  job: string | null;
  /** What a probe in this process reports (a `%%gpuwise doctor` cell or a run sent to the server): allocator figures. */
  allocatedBytes?: number | null;
  reservedBytes?: number | null;
}

export interface LiveFrame {
  schemaVersion: typeof LIVE_SCHEMA_VERSION;
  tMs: number;
  host: string | null;
  driver: string | null;
  gpus: LiveGpu[];
  processes: LiveProcess[];
  notes: string[];
}

export function frameOf(s: Snapshot, nowMs: number): LiveFrame {
  const processes: LiveProcess[] = [];
  for (const g of s.gpus)
    for (const p of g.processes)
      processes.push({
        pid: p.pid,
        gpu: g.index,
        name: p.name,
        user: p.user,
        command: p.command === null ? null : p.command.length > 200 ? `${p.command.slice(0, 200)}…` : p.command,
        usedBytes: p.usedMemoryBytes,
        smPercent: p.smUtilPercent,
        cpuPercent: p.cpuPercent,
        rank: p.rank,
        localRank: p.localRank,
        worldSize: p.worldSize,
        job: p.slurmJobId,
      });
  return {
    schemaVersion: LIVE_SCHEMA_VERSION,
    tMs: s.timestampMs ?? nowMs,
    host: s.hostname,
    driver: s.driverVersion,
    gpus: s.gpus.map((g) => ({
      index: g.index,
      cudaIndex: g.cudaIndex,
      name: g.name,
      uuid: g.uuid,
      lost: g.lost,
      utilPercent: g.utilizationGpuPercent,
      memUtilPercent: g.utilizationMemoryPercent,
      memUsedBytes: g.memoryUsedBytes,
      memReservedBytes: g.memoryReservedBytes,
      memTotalBytes: g.memoryTotalBytes,
      powerW: g.powerWatts,
      powerLimitW: g.powerLimitWatts,
      tempC: g.temperatureC,
      smClockMhz: g.smClockMhz,
      smClockMaxMhz: g.smClockMaxMhz,
      memClockMhz: g.memoryClockMhz,
      throttle: g.clocksEventReasons,
    })),
    processes,
    notes: s.notes.slice(0, 20),
  };
}

/** The figures charted per GPU, in the order `SeriesRing` stores them. */
export const SERIES_FIELDS = ['utilPercent', 'memUsedBytes', 'powerW', 'smClockMhz'] as const;
export type SeriesField = (typeof SERIES_FIELDS)[number];

/** One GPU's history as the page draws it: NaN in the ring is null here (not available). */
export interface GpuSeries {
  index: number;
  name: string;
  memTotalBytes: number | null;
  utilPercent: (number | null)[];
  memUsedBytes: (number | null)[];
  powerW: (number | null)[];
  smClockMhz: (number | null)[];
}

export interface LiveHistory {
  schemaVersion: typeof LIVE_SCHEMA_VERSION;
  /** Seconds since the Unix epoch (uPlot's time axis). */
  tS: number[];
  gpus: GpuSeries[];
}

/**
 * Fixed-size history of the charted figures: one Float64Array of times and one Float32Array per GPU and figure,
 * overwritten in a circle. Its memory is set when it is made (capacity x GPUs x 4 figures x 4 bytes: a day at
 * 1 Hz of 8 GPUs is 11 MB) and never grows, however long the server runs or however many pages read it.
 */
export class SeriesRing {
  private readonly t: Float64Array;
  private readonly values = new Map<number, { name: string; total: number | null; cols: Float32Array[] }>();
  private head = 0;
  private size = 0;

  constructor(readonly capacity: number) {
    this.t = new Float64Array(capacity);
  }

  get length(): number {
    return this.size;
  }

  push(tMs: number, gpus: readonly LiveGpu[]): void {
    // Out-of-order times (a recording older than what is held) are dropped: the charts need ascending x.
    if (this.size > 0 && tMs <= this.t[(this.head - 1 + this.capacity) % this.capacity]!) return;
    const at = this.head;
    this.t[at] = tMs;
    const seen = new Set<number>();
    for (const g of gpus) {
      seen.add(g.index);
      let v = this.values.get(g.index);
      if (v === undefined) {
        v = { name: g.name, total: g.memTotalBytes, cols: SERIES_FIELDS.map(() => new Float32Array(this.capacity).fill(Number.NaN)) };
        this.values.set(g.index, v);
      }
      v.total = g.memTotalBytes ?? v.total;
      SERIES_FIELDS.forEach((f, i) => {
        const x = g[f];
        v.cols[i]![at] = x === null ? Number.NaN : x;
      });
    }
    for (const [index, v] of this.values) if (!seen.has(index)) for (const c of v.cols) c[at] = Number.NaN;
    this.head = (this.head + 1) % this.capacity;
    this.size = Math.min(this.capacity, this.size + 1);
  }

  /** The samples at or after `sinceMs`, thinned to at most `maxPoints` (every k-th sample, the newest kept). */
  history(sinceMs: number, maxPoints: number): LiveHistory {
    const start = (this.head - this.size + this.capacity) % this.capacity;
    const idx: number[] = [];
    for (let k = 0; k < this.size; k++) {
      const i = (start + k) % this.capacity;
      if (this.t[i]! >= sinceMs) idx.push(i);
    }
    const stride = Math.max(1, Math.ceil(idx.length / Math.max(1, maxPoints)));
    const picked: number[] = [];
    for (let k = idx.length - 1; k >= 0; k -= stride) picked.push(idx[k]!);
    picked.reverse();
    const num = (x: number) => (Number.isNaN(x) ? null : x);
    return {
      schemaVersion: LIVE_SCHEMA_VERSION,
      tS: picked.map((i) => this.t[i]! / 1000),
      gpus: [...this.values.entries()]
        .sort((a, b) => a[0] - b[0])
        .map(([index, v]) => ({
          index,
          name: v.name,
          memTotalBytes: v.total,
          utilPercent: picked.map((i) => num(v.cols[0]![i]!)),
          memUsedBytes: picked.map((i) => num(v.cols[1]![i]!)),
          powerW: picked.map((i) => num(v.cols[2]![i]!)),
          smClockMhz: picked.map((i) => num(v.cols[3]![i]!)),
        })),
    };
  }
}
