/**
 * The JSON-facing types of the `gpuwise memory` report (schemaVersion 1, SCHEMA_VERSION in report.ts), apart from the
 * code that builds them so findings.ts can read a report without importing its builder. Definitions of each figure
 * are in docs/memory.md.
 */
import type { Finding } from '../findings/finding.js';
import type { Category } from './allocation.js';
import type { BlockSizeCheck } from './blocks.js';
import type { SourceLine } from './frames.js';

export interface CategoryBytes {
  category: Category;
  bytes: number;
  allocations: number;
}

export interface SourceBytes {
  /** `file:line` of the first frame of the user's code (frames.ts sourceLineOf: a notebook's cell, not IPython's run_code). */
  source: string;
  /** Shortened `dir/file.py:line` for display. */
  shortSource: string;
  function: string;
  kind: SourceLine['kind'];
  /** The category holding most of these bytes. */
  category: Category;
  bytes: number;
  allocations: number;
}

export interface LiveSet {
  /** Index of the history entry the set is taken after (-1: before the history, or no history). */
  entryIndex: number;
  /** Microseconds since the epoch (null without history). */
  timeUs: number | null;
  bytes: number;
  byCategory: CategoryBytes[];
  /** The largest sources first, at most `topSources`. */
  bySource: SourceBytes[];
}

export interface Totals {
  peakAllocatedBytes: number;
  peakRequestedBytes: number;
  peakReservedBytes: number;
  /** Time of the allocated peak (µs since the epoch), null without history. */
  peakAllocatedAtUs: number | null;
  peakReservedAtUs: number | null;
  /** Reserved bytes at the moment of the allocated peak. */
  reservedAtPeakAllocatedBytes: number;
  /** `peakAllocated - requested` at that moment: bytes lost to rounding. */
  roundingWasteAtPeakBytes: number;
  finalAllocatedBytes: number;
  finalRequestedBytes: number;
  finalReservedBytes: number;
  /** Allocated plus blocks freed but waiting for their stream's work (`active_pending_free`). */
  finalActiveBytes: number;
  /** Inactive blocks inside segments that also hold active blocks (not releasable). */
  finalInactiveSplitBytes: number;
  finalRoundingWasteBytes: number;
  /** Reserved but not allocated, at the end. */
  finalReservedUnallocatedBytes: number;
  /** Largest inactive block at the end. */
  finalLargestFreeBlockBytes: number;
}

export interface Timeline {
  /** µs since the first entry. */
  tUs: number[];
  allocatedBytes: number[];
  reservedBytes: number[];
  /** Index into tUs of the allocated peak. */
  peakPoint: number;
}

export interface Oom {
  entryIndex: number;
  timeUs: number | null;
  requestedBytes: number;
  allocatedBytes: number;
  reservedBytes: number;
  /** Reserved by the caching allocator but not allocated: cached free blocks. */
  reservedUnallocatedBytes: number;
  /** Free device memory the driver reported when the allocation failed (the cap, when one is set, can be lower). */
  deviceFreeBytes: number | null;
  /** Largest cached free block at the failure; null when the snapshot was taken later. */
  largestFreeBlockBytes: number | null;
  /** What the training loop was doing. */
  phase: string;
  live: LiveSet;
  /** Out-of-memory entries in the history (the first one is described). */
  count: number;
}

export interface MemoryReport {
  schemaVersion: number;
  input: { path: string; legacy: boolean };
  device: number;
  history: {
    entries: number;
    firstUs: number | null;
    lastUs: number | null;
    durationUs: number | null;
    /** The history starts from an empty allocator (nothing allocated or reserved before it). */
    complete: boolean;
    /** Whether block sizes were replayed exactly, and how many live-at-end blocks agreed with the final state. */
    blockSizes: BlockSizeCheck;
  };
  allocatorSettings: Record<string, unknown> | null;
  totals: Totals;
  timeline: Timeline;
  peak: LiveSet;
  final: LiveSet;
  oom: Oom | null;
  findings: Finding[];
  warnings: string[];
}

