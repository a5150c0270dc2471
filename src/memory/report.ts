/**
 * The `gpuwise memory` report: the JSON-facing types (schemaVersion 1) and
 * the function that builds them from a snapshot. Definitions of each figure
 * are in docs/memory.md.
 */
import { type Category, CATEGORIES, categorize, phases } from './categorize.js';
import { findingsFor } from './findings.js';
import { type SourceLine, shortSource, sourceLineOf } from './frames.js';
import type { CategoryBytes, LiveSet, MemoryReport, Oom, Timeline, Totals } from './reportTypes.js';
import { type Allocation, type Replay, argMax, busiestDevice, liveAt, replay } from './replay.js';
import type { Snapshot } from './snapshot.js';

export const SCHEMA_VERSION = 1;

export type { CategoryBytes, LiveSet, MemoryReport, Oom, SourceBytes, Timeline, Totals } from './reportTypes.js';

export interface ReportOptions {
  path: string;
  device?: number;
  /** Batch size of the run, to turn activation bytes into a batch that fits. */
  batchSize?: number;
  topSources?: number;
  timelinePoints?: number;
}

/** The analysis behind the report: kept for diff and rendering. */
export interface Analysis {
  report: MemoryReport;
  replay: Replay;
}

export function analyze(snap: Snapshot, opts: ReportOptions): Analysis {
  const device = opts.device ?? busiestDevice(snap);
  const r = replay(snap, device);
  const t = r.trace;
  const n = t.length;
  const ph = phases(r);
  for (const a of r.allocations) a.category = categorize(a, ph, n);
  const top = opts.topSources ?? 15;

  const segs = snap.segments.filter((s) => s.device === device);
  let finalAllocated = 0;
  let finalRequested = 0;
  let finalReserved = 0;
  let finalActive = 0;
  let inactiveSplit = 0;
  let largestFree = 0;
  for (const s of segs) {
    finalReserved += s.totalBytes;
    const hasActive = s.blocks.some((b) => b.state !== 'inactive');
    for (const b of s.blocks) {
      if (b.state === 'active_allocated') {
        finalAllocated += b.sizeBytes;
        finalRequested += b.requestedBytes;
      }
      if (b.state !== 'inactive') finalActive += b.sizeBytes;
      else {
        if (hasActive) inactiveSplit += b.sizeBytes;
        largestFree = Math.max(largestFree, b.sizeBytes);
      }
    }
  }

  const peakIdx = n > 0 ? argMax(r.allocatedBytes) : -1;
  const peakResIdx = n > 0 ? argMax(r.reservedBytes) : -1;
  // The start of the history can be the peak (e.g. a history that begins at the high point).
  const startIsPeak = peakIdx < 0 || r.initial.allocatedBytes > r.allocatedBytes[peakIdx]!;
  const peakAt = startIsPeak ? -1 : peakIdx;
  const timeOf = (i: number): number | null => (i >= 0 && Number.isFinite(t.timeUs(i)) ? t.timeUs(i) : null);
  const peakAllocated = n > 0 ? Math.max(r.initial.allocatedBytes, r.allocatedBytes[peakIdx]!) : finalAllocated;
  const peakRequested = peakAt >= 0 ? r.requestedBytes[peakAt]! : n > 0 ? r.initial.requestedBytes : finalRequested;
  const peakReserved = n > 0 ? Math.max(r.initial.reservedBytes, r.reservedBytes[peakResIdx]!) : finalReserved;
  const reservedAtPeak = peakAt >= 0 ? r.reservedBytes[peakAt]! : n > 0 ? r.initial.reservedBytes : finalReserved;

  const totals: Totals = {
    peakAllocatedBytes: peakAllocated,
    peakRequestedBytes: peakRequested,
    peakReservedBytes: peakReserved,
    peakAllocatedAtUs: timeOf(peakAt),
    peakReservedAtUs: n > 0 && r.reservedBytes[peakResIdx]! >= r.initial.reservedBytes ? timeOf(peakResIdx) : null,
    reservedAtPeakAllocatedBytes: reservedAtPeak,
    roundingWasteAtPeakBytes: peakAllocated - peakRequested,
    finalAllocatedBytes: finalAllocated,
    finalRequestedBytes: finalRequested,
    finalReservedBytes: finalReserved,
    finalActiveBytes: finalActive,
    finalInactiveSplitBytes: inactiveSplit,
    finalRoundingWasteBytes: finalAllocated - finalRequested,
    finalReservedUnallocatedBytes: finalReserved - finalAllocated,
    finalLargestFreeBlockBytes: largestFree,
  };

  const liveSet = (index: number): LiveSet => groupLive(liveAt(r, index), index, timeOf(index), top);
  const peak = liveSet(peakAt);
  const final = liveSet(n - 1);

  let oom: Oom | null = null;
  const oi = r.oomIndexes[0];
  if (oi !== undefined) {
    const allocated = r.allocatedBytes[oi]!;
    const reserved = r.reservedBytes[oi]!;
    // The final segments describe the failure only if nothing changed the allocator after it.
    let changedAfter = false;
    for (let i = oi + 1; i < n && !changedAfter; i++) {
      const a = t.action(i);
      changedAfter = a !== 'oom' && a !== 'snapshot' && a !== 'free_completed';
    }
    let phase = 'unknown';
    for (let i = oi; i >= 0; i--) {
      if (ph.phase[i] !== 'unknown') {
        phase = ph.phase[i]!;
        break;
      }
    }
    oom = {
      entryIndex: oi,
      timeUs: timeOf(oi),
      requestedBytes: t.sizeBytes(oi),
      allocatedBytes: allocated,
      reservedBytes: reserved,
      reservedUnallocatedBytes: reserved - allocated,
      deviceFreeBytes: t.deviceFreeBytes(oi),
      largestFreeBlockBytes: changedAfter ? null : largestFree,
      phase,
      live: liveSet(oi),
      count: r.oomIndexes.length,
    };
  }

  const first = n > 0 ? t.timeUs(0) : Number.NaN;
  const last = n > 0 ? t.timeUs(n - 1) : Number.NaN;
  const report: MemoryReport = {
    schemaVersion: SCHEMA_VERSION,
    input: { path: opts.path, legacy: snap.legacy },
    device,
    history: {
      entries: n,
      firstUs: Number.isFinite(first) ? first : null,
      lastUs: Number.isFinite(last) ? last : null,
      durationUs: Number.isFinite(first) && Number.isFinite(last) ? last - first : null,
      complete: n > 0 && r.initial.allocatedBytes === 0 && r.initial.reservedBytes === 0,
      blockSizes: r.blockSizes,
    },
    allocatorSettings: snap.allocatorSettings,
    totals,
    timeline: timeline(r, opts.timelinePoints ?? 1000, peakAt),
    peak,
    final,
    oom,
    findings: [],
    warnings: [...snap.warnings, ...r.warnings],
  };
  if (n === 0) report.warnings.push('the snapshot has no allocator history (record it with torch.cuda.memory._record_memory_history()): only the final state is known');
  report.findings = findingsFor({ report, replay: r, phases: ph, batchSize: opts.batchSize ?? null });
  return { report, replay: r };
}

function groupLive(live: Allocation[], index: number, timeUs: number | null, top: number): LiveSet {
  const byCat = new Map<Category, CategoryBytes>(CATEGORIES.map((c) => [c, { category: c, bytes: 0, allocations: 0 }]));
  const bySrc = new Map<string, { line: SourceLine; bytes: number; allocations: number; cat: Map<Category, number> }>();
  let bytes = 0;
  for (const a of live) {
    const c = a.category;
    const cb = byCat.get(c)!;
    cb.bytes += a.blockBytes;
    cb.allocations++;
    bytes += a.blockBytes;
    const src = sourceLineOf(a.frames);
    let s = bySrc.get(src.key);
    if (!s) bySrc.set(src.key, (s = { line: src, bytes: 0, allocations: 0, cat: new Map() }));
    s.bytes += a.blockBytes;
    s.allocations++;
    s.cat.set(c, (s.cat.get(c) ?? 0) + a.blockBytes);
  }
  const bySource = [...bySrc.values()]
    .sort((x, y) => y.bytes - x.bytes)
    .slice(0, top)
    .map((s) => ({
      source: s.line.key,
      shortSource: shortSource(s.line),
      function: s.line.name,
      kind: s.line.kind,
      category: [...s.cat].sort((x, y) => y[1] - x[1])[0]![0],
      bytes: s.bytes,
      allocations: s.allocations,
    }));
  return { entryIndex: index, timeUs, bytes, byCategory: [...byCat.values()].filter((c) => c.allocations > 0).sort((x, y) => y.bytes - x.bytes), bySource };
}

/** At most `points` samples; each keeps the maximum of its bucket so peaks survive downsampling. */
function timeline(r: Replay, points: number, peakAt: number): Timeline {
  const t = r.trace;
  const n = t.length;
  const out: Timeline = { tUs: [], allocatedBytes: [], reservedBytes: [], peakPoint: 0 };
  if (n === 0) return out;
  const t0 = t.timeUs(0);
  const hasTime = Number.isFinite(t0) && Number.isFinite(t.timeUs(n - 1));
  const tOf = (i: number): number => (hasTime ? t.timeUs(i) - t0 : i);
  const span = Math.max(tOf(n - 1), 1);
  const buckets = Math.max(2, points);
  let cur = -1;
  for (let i = 0; i < n; i++) {
    const b = Math.min(buckets - 1, Math.floor((tOf(i) / span) * (buckets - 1)));
    const al = r.allocatedBytes[i]!;
    const rs = r.reservedBytes[i]!;
    if (b !== cur) {
      cur = b;
      out.tUs.push(tOf(i));
      out.allocatedBytes.push(al);
      out.reservedBytes.push(rs);
    } else {
      const k = out.tUs.length - 1;
      if (al > out.allocatedBytes[k]!) out.allocatedBytes[k] = al;
      if (rs > out.reservedBytes[k]!) out.reservedBytes[k] = rs;
    }
    if (i === peakAt) out.peakPoint = out.tUs.length - 1;
  }
  return out;
}
