/**
 * Exact block sizes for allocations the final state no longer shows.
 *
 * The history records what the caller asked for, but `memory_allocated()`
 * counts whole blocks: the request rounded up to 512 bytes, or more when the
 * allocator hands out a free block without splitting off a remainder too
 * small to keep (under 512 bytes in the small pool, up to 1 MiB in the large
 * pool; `CUDACachingAllocator.cpp` `should_split`). The history gives every
 * block's address, and a free block always runs to the next occupied block
 * or the segment end (free neighbours merge), so replaying occupancy per
 * segment recovers each block's size.
 *
 * Skipped (rounded sizes stay) for expandable segments and BigInt addresses.
 */
import type { Allocation } from './allocation.js';
import type { Segment, Trace } from './snapshot.js';

/** The allocator's rounding: at least 512 bytes, in multiples of 512 (`kMinBlockSize`). */
export function roundedBlockBytes(requested: number): number {
  return requested < 512 ? 512 : Math.ceil(requested / 512) * 512;
}

const SMALL_REQUEST = 1 << 20; // kSmallSize: requests up to 1 MiB use the small pool
const MIN_BLOCK = 512; // kMinBlockSize

interface Seg {
  start: number;
  end: number;
  /** Starts of occupied blocks (allocated or waiting for their stream), sorted. */
  occ: number[];
}

export interface BlockSizeCheck {
  /** Whether the replay ran (false for expandable segments, BigInt addresses, or no history). */
  simulated: boolean;
  /** Allocations still live at the end whose simulated size could be compared with the final state. */
  checked: number;
  matched: number;
}

/** Sets `blockBytes` of every allocation made in the history; returns how well it agreed with the final state. */
export function simulateBlockSizes(trace: Trace, allocations: Allocation[], segments: Segment[], maxSplitBytes: number): BlockSizeCheck {
  const none: BlockSizeCheck = { simulated: false, checked: 0, matched: 0 };
  const n = trace.length;
  if (n === 0 || segments.some((s) => s.isExpandable || typeof s.address !== 'number')) return none;
  if (!trace.addressesExact) return none;
  for (let i = 0; i < n; i++) {
    const act = trace.action(i);
    if (act === 'segment_map' || act === 'segment_unmap') return none;
  }

  // Segments present before the history: the final ones, with the history's segment events undone.
  const live = new Map<number, number>();
  for (const s of segments) live.set(s.address as number, s.totalBytes);
  for (let i = n - 1; i >= 0; i--) {
    const act = trace.action(i);
    if (act === 'segment_alloc') live.delete(trace.addr(i) as number);
    else if (act === 'segment_free') live.set(trace.addr(i) as number, trace.sizeBytes(i));
  }
  const segs: Seg[] = [...live].map(([start, size]) => ({ start, end: start + size, occ: [] }));
  segs.sort((a, b) => a.start - b.start);

  const find = (addr: number): Seg | undefined => {
    let lo = 0;
    let hi = segs.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const s = segs[mid]!;
      if (addr < s.start) hi = mid - 1;
      else if (addr >= s.end) lo = mid + 1;
      else return s;
    }
    return undefined;
  };
  const occupy = (addr: number): void => {
    const s = find(addr);
    if (!s) return;
    s.occ.splice(lowerBound(s.occ, addr), 0, addr);
  };
  const release = (addr: number): void => {
    const s = find(addr);
    if (!s) return;
    const k = lowerBound(s.occ, addr);
    if (s.occ[k] === addr) s.occ.splice(k, 1);
  };

  const byIndex = new Map<number, Allocation>();
  for (const a of allocations) {
    if (a.allocIndex >= 0) byIndex.set(a.allocIndex, a);
    // Blocks allocated before the history occupy their place until freed.
    else occupy(a.addr as number);
  }
  const exactAtEnd = new Map<Allocation, number>();
  for (const a of allocations) if (a.allocIndex >= 0 && a.freeIndex >= n) exactAtEnd.set(a, a.blockBytes);

  for (let i = 0; i < n; i++) {
    const addr = trace.addr(i) as number;
    const size = trace.sizeBytes(i);
    switch (trace.action(i)) {
      case 'alloc': {
        const a = byIndex.get(i);
        if (!a) break;
        const s = find(addr);
        const rounded = roundedBlockBytes(size);
        let bytes = rounded;
        if (s) {
          const k = lowerBound(s.occ, addr + 1);
          const freeEnd = k < s.occ.length ? s.occ[k]! : s.end;
          const remaining = freeEnd - addr - rounded;
          const small = size <= SMALL_REQUEST;
          const split = small ? remaining >= MIN_BLOCK : remaining > SMALL_REQUEST && (maxSplitBytes <= 0 || rounded < maxSplitBytes);
          if (remaining >= 0 && !split) bytes = freeEnd - addr;
        }
        a.blockBytes = bytes;
        occupy(addr);
        break;
      }
      case 'free_completed':
        release(addr);
        break;
      case 'segment_alloc': {
        const seg: Seg = { start: addr, end: addr + size, occ: [] };
        segs.splice(lowerBoundSeg(segs, addr), 0, seg);
        break;
      }
      case 'segment_free': {
        const k = lowerBoundSeg(segs, addr);
        if (segs[k]?.start === addr) segs.splice(k, 1);
        break;
      }
      default:
        break;
    }
  }
  let checked = 0;
  let matched = 0;
  for (const [a, exact] of exactAtEnd) {
    checked++;
    if (a.blockBytes === exact) matched++;
    a.blockBytes = exact; // the final state is authoritative for blocks it shows
  }
  return { simulated: true, checked, matched };
}

function lowerBound(xs: number[], v: number): number {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (xs[mid]! < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function lowerBoundSeg(xs: Seg[], v: number): number {
  let lo = 0;
  let hi = xs.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (xs[mid]!.start < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
