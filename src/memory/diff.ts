/**
 * `gpuwise memory diff A B`: what grew between two snapshots, by category and
 * by source line, for the memory live at the end of each snapshot and at its
 * allocated peak.
 */
import { type Category, CATEGORIES } from './categorize.js';
import { shortSource, sourceLineOf } from './frames.js';
import { type Analysis, SCHEMA_VERSION } from './report.js';
import { liveAt } from './replay.js';
import { fmtBytes, fmtSignedBytes } from '../util/format.js';

export interface DiffRow {
  key: string;
  /** For source rows: shortened `dir/file.py:line`, else the category. */
  label: string;
  aBytes: number;
  bBytes: number;
  deltaBytes: number;
}

export interface LiveDiff {
  totalA: number;
  totalB: number;
  byCategory: DiffRow[];
  /** Sources whose bytes changed, largest growth first (at most `top`). */
  bySource: DiffRow[];
}

export interface MemoryDiff {
  schemaVersion: number;
  a: string;
  b: string;
  /** `key` is the memory report's totals field (stable), `label` the same in words (what the human reports print). */
  totals: { key: DiffTotalKey; label: string; aBytes: number; bBytes: number; deltaBytes: number }[];
  final: LiveDiff;
  peak: LiveDiff;
}

/** The memory report's totals a diff compares, each with its words. */
const DIFF_TOTALS = {
  peakAllocatedBytes: 'allocated at the peak',
  peakReservedBytes: 'reserved at the peak',
  finalAllocatedBytes: 'allocated at the end',
  finalReservedBytes: 'reserved at the end',
  finalInactiveSplitBytes: 'inactive split blocks at the end',
} as const;
type DiffTotalKey = keyof typeof DIFF_TOTALS;

type Grouped = { cats: Map<Category, number>; sources: Map<string, { label: string; bytes: number }>; total: number };

function group(an: Analysis, index: number): Grouped {
  const cats = new Map<Category, number>();
  const sources = new Map<string, { label: string; bytes: number }>();
  let total = 0;
  for (const a of liveAt(an.replay, index)) {
    const c = a.category;
    cats.set(c, (cats.get(c) ?? 0) + a.blockBytes);
    const s = sourceLineOf(a.frames);
    const label = shortSource(s);
    const row = sources.get(s.key) ?? { label, bytes: 0 };
    row.bytes += a.blockBytes;
    sources.set(s.key, row);
    total += a.blockBytes;
  }
  return { cats, sources, total };
}

function diffLive(a: Grouped, b: Grouped, top: number): LiveDiff {
  const byCategory = CATEGORIES.map((c) => {
    const x = a.cats.get(c) ?? 0;
    const y = b.cats.get(c) ?? 0;
    return { key: c, label: c.replace('_', ' '), aBytes: x, bBytes: y, deltaBytes: y - x };
  }).filter((r) => r.aBytes !== 0 || r.bBytes !== 0);
  const keys = new Set([...a.sources.keys(), ...b.sources.keys()]);
  const bySource: DiffRow[] = [];
  for (const k of keys) {
    const x = a.sources.get(k);
    const y = b.sources.get(k);
    const d = (y?.bytes ?? 0) - (x?.bytes ?? 0);
    if (d !== 0) bySource.push({ key: k, label: (y ?? x)!.label, aBytes: x?.bytes ?? 0, bBytes: y?.bytes ?? 0, deltaBytes: d });
  }
  bySource.sort((p, q) => q.deltaBytes - p.deltaBytes || p.key.localeCompare(q.key));
  return { totalA: a.total, totalB: b.total, byCategory, bySource: bySource.slice(0, top) };
}

export function diffSnapshots(a: Analysis, b: Analysis, top = 15): MemoryDiff {
  const ta = a.report.totals;
  const tb = b.report.totals;
  return {
    schemaVersion: SCHEMA_VERSION,
    a: a.report.input.path,
    b: b.report.input.path,
    totals: (Object.keys(DIFF_TOTALS) as DiffTotalKey[]).map((k) => ({
      key: k,
      label: DIFF_TOTALS[k],
      aBytes: ta[k],
      bBytes: tb[k],
      deltaBytes: tb[k] - ta[k],
    })),
    final: diffLive(group(a, a.replay.trace.length - 1), group(b, b.replay.trace.length - 1), top),
    peak: diffLive(group(a, a.report.peak.entryIndex), group(b, b.report.peak.entryIndex), top),
  };
}

export function renderDiffText(d: MemoryDiff): string {
  const out = [`gpuwise memory diff: A=${d.a}  B=${d.b}`, ''];
  out.push(`  ${''.padEnd(34)}${'A'.padStart(12)}${'B'.padStart(12)}${'B-A'.padStart(13)}`);
  for (const t of d.totals) out.push(`  ${t.label.padEnd(34)}${fmtBytes(t.aBytes).padStart(12)}${fmtBytes(t.bBytes).padStart(12)}${fmtSignedBytes(t.deltaBytes).padStart(13)}`);
  const section = (title: string, l: LiveDiff): void => {
    out.push('', `${title}: ${fmtBytes(l.totalA)} -> ${fmtBytes(l.totalB)} (${fmtSignedBytes(l.totalB - l.totalA)})`);
    for (const r of l.byCategory) out.push(`  ${r.label.padEnd(34)}${fmtBytes(r.aBytes).padStart(12)}${fmtBytes(r.bBytes).padStart(12)}${fmtSignedBytes(r.deltaBytes).padStart(13)}`);
    if (l.bySource.length > 0) {
      out.push('  by source line (largest growth first):');
      for (const r of l.bySource) out.push(`    ${fmtSignedBytes(r.deltaBytes).padStart(12)}  ${r.label}  (${fmtBytes(r.aBytes)} -> ${fmtBytes(r.bBytes)})`);
    }
  };
  section('Live at the end', d.final);
  section('Live at the allocated peak', d.peak);
  return `${out.join('\n')}\n`;
}

export function renderDiffMarkdown(d: MemoryDiff): string {
  const out = [`## gpuwise memory diff`, '', `A: \`${d.a}\`, B: \`${d.b}\``, '', '| | A | B | B-A |', '|---|---:|---:|---:|'];
  for (const t of d.totals) out.push(`| ${t.label} | ${fmtBytes(t.aBytes)} | ${fmtBytes(t.bBytes)} | ${fmtSignedBytes(t.deltaBytes)} |`);
  const section = (title: string, l: LiveDiff): void => {
    out.push('', `### ${title}`, '', '| Category or source line | A | B | B-A |', '|---|---:|---:|---:|');
    for (const r of l.byCategory) out.push(`| ${r.label} | ${fmtBytes(r.aBytes)} | ${fmtBytes(r.bBytes)} | ${fmtSignedBytes(r.deltaBytes)} |`);
    for (const r of l.bySource) out.push(`| \`${r.label}\` | ${fmtBytes(r.aBytes)} | ${fmtBytes(r.bBytes)} | ${fmtSignedBytes(r.deltaBytes)} |`);
  };
  section('Live at the end', d.final);
  section('Live at the allocated peak', d.peak);
  return `${out.join('\n')}\n`;
}
