/** Pure text helpers for the terminal views: units, sparklines, aligned tables, the `smi` table. */
import { SPARK_BARS, fmtGpuMemory } from '../util/format.js';
import { type GpuSample, type ProcessSample, type Snapshot, usableMemoryBytes } from './sample.js';

const GIB = 1024 ** 3;
const MIB_ = 1024 ** 2;

/** "6.6 GiB", "616 MiB", "-" for not available. */
export function formatBytes(bytes: number | null): string {
  if (bytes === null) return '-';
  if (bytes >= 10 * GIB) return `${(bytes / GIB).toFixed(1)} GiB`;
  if (bytes >= GIB) return `${(bytes / GIB).toFixed(2)} GiB`;
  if (bytes >= MIB_) return `${Math.round(bytes / MIB_)} MiB`;
  if (bytes >= 1024) return `${Math.round(bytes / 1024)} KiB`;
  return `${bytes} B`;
}

export function formatNumber(v: number | null, unit = '', digits = 0): string {
  return v === null ? '-' : `${v.toFixed(digits)}${unit}`;
}

/**
 * A sparkline of the last `width` values scaled to [0, max]; a value that is not available is a
 * space, so a gap in the data stays visible. Shorter histories are right-aligned (newest at the right).
 */
export function sparkline(values: ReadonlyArray<number | null>, width: number, max: number): string {
  if (width <= 0) return '';
  const tail = values.slice(-width);
  const cells = tail.map((v) => {
    if (v === null || !Number.isFinite(v)) return ' ';
    const f = max > 0 ? Math.min(1, Math.max(0, v / max)) : 0;
    return SPARK_BARS[Math.min(SPARK_BARS.length - 1, Math.floor(f * SPARK_BARS.length))]!;
  });
  return ' '.repeat(width - cells.length) + cells.join('');
}

const SURROGATE = /[\uD800-\uDFFF]/;

/** Display width of a string, counting each code point as one column (the UI uses no wide glyphs). */
export function textWidth(s: string): number {
  // Fast path: without surrogate pairs every UTF-16 unit is one code point. Iterating code points
  // of every padded line was most of a monitor frame's cost.
  if (!SURROGATE.test(s)) return s.length;
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/** Cuts a string to `width` columns, with an ellipsis when cut. */
export function clip(s: string, width: number): string {
  if (width <= 0) return '';
  if (textWidth(s) <= width) return s;
  if (!SURROGATE.test(s)) return `${s.slice(0, Math.max(0, width - 1))}…`;
  return `${[...s].slice(0, Math.max(0, width - 1)).join('')}…`;
}

/** Exactly `width` columns: padded, or cut with an ellipsis (one width measurement in the common case). */
export function fitLine(s: string, width: number): string {
  if (width <= 0) return '';
  const w = textWidth(s);
  if (w === width) return s;
  return w < width ? s + ' '.repeat(width - w) : padRight(clip(s, width), width);
}

export function padRight(s: string, width: number): string {
  const w = textWidth(s);
  return w >= width ? clip(s, width) : s + ' '.repeat(width - w);
}

export function padLeft(s: string, width: number): string {
  const w = textWidth(s);
  return w >= width ? clip(s, width) : ' '.repeat(width - w) + s;
}

/** Aligns rows into columns. `rightAligned[i]` right-aligns column i (numbers). The last column is not padded. */
export function table(rows: ReadonlyArray<ReadonlyArray<string>>, rightAligned: ReadonlyArray<boolean> = []): string[] {
  const widths: number[] = [];
  for (const r of rows) for (const [i, c] of r.entries()) widths[i] = Math.max(widths[i] ?? 0, textWidth(c));
  return rows.map((r) =>
    r
      .map((c, i) => (i === r.length - 1 && !rightAligned[i] ? c : rightAligned[i] ? padLeft(c, widths[i]!) : padRight(c, widths[i]!)))
      .join('  ')
      .trimEnd(),
  );
}

export function memoryCell(g: GpuSample): string {
  const total = usableMemoryBytes(g);
  if (g.memoryUsedBytes === null && total === null) return '-';
  return `${formatBytes(g.memoryUsedBytes)} / ${total === null ? '-' : fmtGpuMemory(total)}`;
}

export function powerCell(g: GpuSample): string {
  if (g.powerWatts === null) return '-';
  return g.powerLimitWatts === null ? `${g.powerWatts.toFixed(0)} W` : `${g.powerWatts.toFixed(0)} / ${g.powerLimitWatts.toFixed(0)} W`;
}

export function rankCell(p: ProcessSample): string {
  if (p.rank === null && p.slurmJobId === null) return '';
  const parts: string[] = [];
  if (p.rank !== null) parts.push(`rank ${p.rank}${p.worldSize !== null ? `/${p.worldSize}` : ''}`);
  if (p.localRank !== null) parts.push(`local ${p.localRank}`);
  if (p.slurmJobId !== null) parts.push(`job ${p.slurmJobId}`);
  return parts.join(' ');
}

export function gpuRows(s: Snapshot): string[][] {
  // "Mem busy": NVML's memory utilisation is the share of the sample period the memory controller was busy, not a
  // bandwidth (issue 47 item 7: it was labelled "MemBW"). "usable": the total CUDA can use, `memoryUsableBytes` in --json.
  const head = ['GPU', 'Name', 'Bus id', 'Memory used / usable', 'Util', 'Mem busy', 'Power', 'Temp', 'SM clock', 'Clock events'];
  const rows = s.gpus.map((g) =>
    g.lost
      ? [String(g.index), g.name, g.pciBusId ?? '-', 'LOST (fell off the bus)', '', '', '', '', '', '']
      : [
          String(g.index),
          g.name,
          g.pciBusId ?? '-',
          memoryCell(g),
          formatNumber(g.utilizationGpuPercent, '%'),
          formatNumber(g.utilizationMemoryPercent, '%'),
          powerCell(g),
          formatNumber(g.temperatureC, 'C'),
          formatNumber(g.smClockMhz, ' MHz'),
          g.clocksEventReasons === null ? '-' : g.clocksEventReasons.filter((r) => r !== 'gpu_idle').join(',') || 'none',
        ],
  );
  return [head, ...rows];
}

export function processRows(procs: readonly ProcessSample[]): string[][] {
  const head = ['GPU', 'PID', 'User', 'GPU mem', 'SM%', 'CPU%', 'Host RSS', 'Job', 'Command'];
  return [
    head,
    ...procs.map((p) => [
      String(p.gpuIndex),
      String(p.pid),
      p.user ?? '-',
      formatBytes(p.usedMemoryBytes),
      formatNumber(p.smUtilPercent),
      formatNumber(p.cpuPercent),
      formatBytes(p.rssBytes),
      rankCell(p),
      p.command ?? p.name ?? '-',
    ]),
  ];
}

/** Which columns of processRows are numbers (right-aligned). */
export const PROCESS_RIGHT: readonly boolean[] = [true, true, false, true, true, true, true, false, false];

/** The GPU rows as `smi` shows them (the text view and the `--html` page), with which columns are numbers. */
export function smiGpuTable(s: Snapshot): { rows: string[][]; right: boolean[] } {
  let rows = gpuRows(s);
  let right = [true, false, false, true, true, true, true, true, true, false];
  // Under CUDA_VISIBLE_DEVICES the ordinal a program sees differs from the index: show both.
  const live = s.source === 'nvml' || s.source === 'nvidia-smi';
  if (live && s.gpus.some((g) => g.cudaIndex !== g.index)) {
    rows = rows.map((r, i) => [r[0]!, i === 0 ? 'CUDA' : (s.gpus[i - 1]!.cudaIndex?.toString() ?? 'hidden'), ...r.slice(1)]);
    right = [true, true, ...right.slice(1)];
  }
  return { rows, right };
}

/** The `gpuwise smi` text view. */
export function renderSmi(s: Snapshot, width = 160): string {
  const lines: string[] = [];
  const head = [`source: ${s.source}`];
  if (s.driverVersion) head.push(`driver ${s.driverVersion}`);
  if (s.cudaVersion) head.push(`CUDA ${s.cudaVersion}`);
  if (s.hostname) head.push(`host ${s.hostname}`);
  lines.push(head.join('   '), '');
  if (s.gpus.length === 0) lines.push('no GPU');
  else {
    const { rows, right } = smiGpuTable(s);
    lines.push(...table(rows, right));
  }
  const procs = s.gpus.flatMap((g) => g.processes);
  lines.push('');
  if (procs.length === 0) lines.push('Processes: none');
  else lines.push('Processes:', ...table(processRows(procs), PROCESS_RIGHT));
  for (const n of s.notes) lines.push(`note: ${n}`);
  return `${lines.map((l) => clip(l, width)).join('\n')}\n`;
}
