/**
 * The `gpuwise monitor` screen as pure functions of (history, snapshot, terminal size): the shell only
 * writes the returned lines. Every line fits the width and the frame has exactly `rows` lines, so
 * resizing (or tmux splitting the pane) never leaves stale text or wraps.
 */
import { fitLine, formatBytes, formatNumber, padLeft, padRight, processRows, sparkline, table } from './render.js';
import { fmtGpuMemory } from '../util/format.js';
import { type ProcessSample, type Snapshot, usableMemoryBytes } from './sample.js';

export const SORT_KEYS = ['memory', 'sm', 'cpu', 'pid', 'gpu'] as const;

/** nvitop's load thresholds (percent): below the first is light (green), from the second heavy (red), between moderate (yellow). */
export const GPU_UTIL_THRESHOLDS = [10, 75] as const;
export const MEMORY_THRESHOLDS = [10, 80] as const;
export type Load = 'light' | 'moderate' | 'heavy';
const LOAD_COLOR: Record<Load, string> = { light: '\x1b[32m', moderate: '\x1b[33m', heavy: '\x1b[31m' };

export function loadOf(percent: number, thresholds: readonly [number, number]): Load {
  return percent < thresholds[0] ? 'light' : percent < thresholds[1] ? 'moderate' : 'heavy';
}

/** The snapshot with only the GPUs whose index is listed (`monitor -o 0 2`); all of them for an empty list. */
export function onlyGpus(s: Snapshot, indices: readonly number[]): Snapshot {
  if (indices.length === 0) return s;
  return { ...s, gpus: s.gpus.filter((g) => indices.includes(g.index)) };
}

/** What the keys do, for the key line and the help screen (h or ?). */
export const MONITOR_KEYS: readonly [string, string][] = [
  ['q, Ctrl-C', 'quit'],
  ['s', 'cycle the process order (memory, sm, cpu, pid, gpu)'],
  ['+ / -', 'refresh faster / slower (100 ms .. 1 s)'],
  ['space', 'pause or resume (a replay: stop where it is)'],
  ['h, ?', 'this help; any key closes it'],
];
export type SortKey = (typeof SORT_KEYS)[number];

/** Per-GPU rings of recent utilisation and memory-use fractions. */
export class History {
  private readonly util = new Map<string, (number | null)[]>();
  private readonly mem = new Map<string, (number | null)[]>();

  constructor(readonly capacity = 512) {}

  push(s: Snapshot): void {
    for (const g of s.gpus) {
      const key = g.uuid || String(g.index);
      const total = usableMemoryBytes(g);
      const memPct = g.memoryUsedBytes !== null && total ? (100 * g.memoryUsedBytes) / total : null;
      for (const [map, v] of [
        [this.util, g.lost ? null : g.utilizationGpuPercent],
        [this.mem, g.lost ? null : memPct],
      ] as const) {
        let ring = map.get(key);
        if (!ring) map.set(key, (ring = []));
        ring.push(v);
        if (ring.length > this.capacity) ring.splice(0, ring.length - this.capacity);
      }
    }
  }

  utilOf(key: string): (number | null)[] {
    return this.util.get(key) ?? [];
  }

  memOf(key: string): (number | null)[] {
    return this.mem.get(key) ?? [];
  }
}

export function sortProcesses(procs: readonly ProcessSample[], key: SortKey): ProcessSample[] {
  const v = (x: number | null) => x ?? -1;
  const by: Record<SortKey, (a: ProcessSample, b: ProcessSample) => number> = {
    memory: (a, b) => v(b.usedMemoryBytes) - v(a.usedMemoryBytes) || a.pid - b.pid,
    sm: (a, b) => v(b.smUtilPercent) - v(a.smUtilPercent) || a.pid - b.pid,
    cpu: (a, b) => v(b.cpuPercent) - v(a.cpuPercent) || a.pid - b.pid,
    pid: (a, b) => a.pid - b.pid || a.gpuIndex - b.gpuIndex,
    gpu: (a, b) => a.gpuIndex - b.gpuIndex || a.pid - b.pid,
  };
  return [...procs].sort(by[key]);
}

export interface MonitorFrameInput {
  snapshot: Snapshot;
  history: History;
  sort: SortKey;
  intervalMs: number;
  cols: number;
  rows: number;
  /** Own cost, shown in the header so overhead is visible. */
  sampleMs?: number;
  /** Colour utilisation and memory by load (nvitop's thresholds and colours). */
  color?: boolean;
  /** Show the key help instead of the processes. */
  help?: boolean;
  paused?: boolean;
  /** Playing back a recording: where it is. */
  replay?: { file: string; sample: number; samples: number; offsetMs: number };
}

/** Fits `lines` into exactly `rows` lines of at most `cols` columns. */
export function fitFrame(lines: readonly string[], cols: number, rows: number): string[] {
  const out = lines.slice(0, Math.max(0, rows)).map((l) => fitLine(l, cols));
  while (out.length < rows) out.push(' '.repeat(Math.max(0, cols)));
  return out;
}

export function renderMonitor(i: MonitorFrameInput): string[] {
  const { snapshot: s, cols } = i;
  const lines: string[] = [];
  const spans: { row: number; from: number; to: number; load: Load }[] = [];
  const rate = i.intervalMs >= 1000 ? `${i.intervalMs / 1000}s` : `${i.intervalMs}ms`;
  const cost = i.sampleMs === undefined ? '' : ` · sample ${i.sampleMs.toFixed(2)} ms`;
  const where = i.replay
    ? `replay ${i.replay.file} · sample ${i.replay.sample}/${i.replay.samples} at +${(i.replay.offsetMs / 1000).toFixed(1)} s${i.replay.sample >= i.replay.samples ? ' (end)' : ''}`
    : `every ${rate}${cost}`;
  lines.push(`gpuwise monitor · ${s.hostname ?? ''} · driver ${s.driverVersion ?? '?'} · ${s.source} · ${where}${i.paused ? ' · PAUSED' : ''}`);
  lines.push(`keys: q quit · s sort (${i.sort}) · + faster · - slower · space pause · h help`);
  lines.push('');
  if (i.help) {
    lines.push('Keys', ...MONITOR_KEYS.map(([k, what]) => `  ${padRight(k, 10)} ${what}`), '');
    lines.push(`Colours (as nvitop): GPU utilisation green below ${GPU_UTIL_THRESHOLDS[0]}%, yellow below ${GPU_UTIL_THRESHOLDS[1]}%, red above;`);
    lines.push(`memory green below ${MEMORY_THRESHOLDS[0]}%, yellow below ${MEMORY_THRESHOLDS[1]}%, red above. NO_COLOR or --no-color: none.`);
    return fitFrame(lines, cols, i.rows);
  }
  // GPU rows: fixed text plus two sparklines sharing what width is left.
  for (const g of s.gpus) {
    const key = g.uuid || String(g.index);
    const head = `${padLeft(String(g.index), 2)} ${padRight(g.name, 18)}`;
    if (g.lost) {
      lines.push(`${head} LOST: fell off the bus`);
      continue;
    }
    const util = `util ${padLeft(formatNumber(g.utilizationGpuPercent, '%'), 4)}`;
    const total = usableMemoryBytes(g);
    const mem = `mem ${padLeft(formatBytes(g.memoryUsedBytes), 9)}/${padRight(total === null ? '-' : fmtGpuMemory(total), 9)}`;
    const tail = `${padLeft(formatNumber(g.powerWatts, 'W'), 5)} ${padLeft(formatNumber(g.temperatureC, 'C'), 4)}`;
    const fixed = head.length + util.length + mem.length + tail.length + 8;
    const w = Math.max(0, Math.floor((cols - fixed) / 2));
    const utilFrom = head.length + 1;
    const memFrom = utilFrom + util.length + 1 + w + 1;
    if (g.utilizationGpuPercent !== null) spans.push({ row: lines.length, from: utilFrom, to: utilFrom + util.length + 1 + w, load: loadOf(g.utilizationGpuPercent, GPU_UTIL_THRESHOLDS) });
    if (g.memoryUsedBytes !== null && total)
      spans.push({ row: lines.length, from: memFrom, to: memFrom + mem.length + 1 + w, load: loadOf((100 * g.memoryUsedBytes) / total, MEMORY_THRESHOLDS) });
    lines.push(`${head} ${util} ${sparkline(i.history.utilOf(key), w, 100)} ${mem} ${sparkline(i.history.memOf(key), w, 100)} ${tail}`);
  }
  lines.push('');
  const procs = sortProcesses(
    s.gpus.flatMap((g) => g.processes),
    i.sort,
  );
  if (procs.length === 0) lines.push('no GPU processes');
  else lines.push(...table(processRows(procs), [true, true, false, true, true, true, true, false, false]));
  const notes = s.notes.map((n) => `note: ${n}`);
  // Notes stay visible at the bottom: the process table yields rows to them.
  const body = fitFrame(lines, cols, Math.max(0, i.rows - notes.length));
  const frame = fitFrame([...body, ...notes], cols, i.rows);
  return i.color ? paint(frame, spans) : frame;
}

/** Colours spans of a fitted frame (positions in UTF-16 units of its plain lines; cut where the line was cut). */
function paint(frame: string[], spans: readonly { row: number; from: number; to: number; load: Load }[]): string[] {
  const out = [...frame];
  const byRow = new Map<number, typeof spans>();
  for (const sp of spans) byRow.set(sp.row, [...(byRow.get(sp.row) ?? []), sp]);
  for (const [row, list] of byRow) {
    const line = frame[row];
    if (line === undefined) continue;
    let text = '';
    let at = 0;
    for (const sp of [...list].sort((a, b) => a.from - b.from)) {
      const from = Math.min(sp.from, line.length);
      const to = Math.min(sp.to, line.length);
      if (to <= from) continue;
      text += `${line.slice(at, from)}${LOAD_COLOR[sp.load]}${line.slice(from, to)}\x1b[0m`;
      at = to;
    }
    out[row] = text + line.slice(at);
  }
  return out;
}

/** The screen shown while no GPU can be read (or sampling fails). */
export function renderNoGpu(reason: string, cols: number, rows: number, title = 'no NVIDIA GPU', retry = 'retrying every 5 s'): string[] {
  const words = reason.split(' ');
  const wrapped: string[] = [];
  let line = '';
  for (const w of words) {
    if (line.length + w.length + 1 > Math.max(20, cols - 4)) {
      wrapped.push(line);
      line = w;
    } else line = line ? `${line} ${w}` : w;
  }
  if (line) wrapped.push(line);
  return fitFrame(['gpuwise monitor', '', `  ${title}`, '', ...wrapped.map((l) => `  ${l}`), '', `  ${retry} · q to quit`], cols, rows);
}
