/**
 * Replays one device's allocator history: memory over time and the lifetime
 * of every allocation the history mentions.
 *
 * The history keeps only the last `max_entries` events, so the state before
 * the first event is rebuilt backwards from the final segment state: an
 * allocation freed in the history without its `alloc` was live from the start,
 * and so was an allocated block of the final state that the history never
 * allocated. Reserved bytes at the start are the final reserved bytes minus
 * every segment change in the history.
 */
import type { Allocation } from './allocation.js';
import { type BlockSizeCheck, roundedBlockBytes, simulateBlockSizes } from './blocks.js';
import { type Address, type Frame, type Snapshot, Trace, addrKey } from './snapshot.js';

export type { Allocation } from './allocation.js';

export interface Replay {
  device: number;
  trace: Trace;
  /** Per entry, after it: bytes in allocated blocks (rounded block sizes). */
  allocatedBytes: Float64Array;
  /** Per entry, after it: bytes requested by live allocations. */
  requestedBytes: Float64Array;
  /** Per entry, after it: bytes reserved in segments. */
  reservedBytes: Float64Array;
  initial: { allocatedBytes: number; requestedBytes: number; reservedBytes: number };
  allocations: Allocation[];
  /** Entries whose action is `oom`. */
  oomIndexes: number[];
  /** How block sizes were obtained (blocks.ts). */
  blockSizes: BlockSizeCheck;
  warnings: string[];
}


/** The device whose history (or, without history, whose segments) is largest. */
export function busiestDevice(snap: Snapshot): number {
  let best = 0;
  let bestScore = -1;
  const devices = new Set<number>(snap.segments.map((s) => s.device));
  snap.deviceTraces.forEach((t, d) => {
    if (t.length > 0) devices.add(d);
  });
  for (const d of devices) {
    const score = (snap.deviceTraces[d]?.length ?? 0) * 1e15 + snap.segments.filter((s) => s.device === d).reduce((a, s) => a + s.totalBytes, 0);
    if (score > bestScore) {
      best = d;
      bestScore = score;
    }
  }
  return best;
}

export function replay(snap: Snapshot, device: number): Replay {
  const trace = snap.deviceTraces[device] ?? new Trace(0);
  const n = trace.length;
  const warnings: string[] = [];
  const segments = snap.segments.filter((s) => s.device === device);

  // Final state: allocated blocks by address.
  const finalBlocks = new Map<number | string, { sizeBytes: number; requestedBytes: number; frames: readonly Frame[]; addr: Address }>();
  let finalReserved = 0;
  for (const s of segments) {
    finalReserved += s.totalBytes;
    for (const b of s.blocks) {
      if (b.state === 'active_allocated') finalBlocks.set(addrKey(b.address), { sizeBytes: b.sizeBytes, requestedBytes: b.requestedBytes, frames: b.frames, addr: b.address });
    }
  }

  const allocations: Allocation[] = [];
  const open = new Map<number | string, Allocation>();
  const oomIndexes: number[] = [];
  let segmentDelta = 0;
  let unmatchedFrees = 0;
  for (let i = 0; i < n; i++) {
    switch (trace.action(i)) {
      case 'alloc': {
        const addr = trace.addr(i);
        const size = trace.sizeBytes(i);
        const key = addrKey(addr);
        const a: Allocation = {
          addr,
          requestedBytes: size,
          blockBytes: roundedBlockBytes(size),
          allocIndex: i,
          freeIndex: n,
          frames: trace.frames[i]!,
          freeFrames: [],
          producerCategory: trace.category(i),
          category: 'other',
        };
        const prev = open.get(key);
        // Two allocs at one address without a free between: the history lost the free; close the older one here.
        if (prev) prev.freeIndex = i;
        open.set(key, a);
        allocations.push(a);
        break;
      }
      case 'free_requested': {
        const addr = trace.addr(i);
        const key = addrKey(addr);
        const a = open.get(key);
        if (a) {
          a.freeIndex = i;
          a.freeFrames = trace.frames[i]!;
          open.delete(key);
        } else {
          // Allocated before the history starts.
          unmatchedFrees++;
          allocations.push({
            addr,
            requestedBytes: trace.sizeBytes(i),
            blockBytes: roundedBlockBytes(trace.sizeBytes(i)),
            allocIndex: -1,
            freeIndex: i,
            frames: [],
            freeFrames: trace.frames[i]!,
            producerCategory: trace.category(i),
            category: 'other',
          });
        }
        break;
      }
      case 'segment_alloc':
      case 'segment_map':
        segmentDelta += trace.sizeBytes(i);
        break;
      case 'segment_free':
      case 'segment_unmap':
        segmentDelta -= trace.sizeBytes(i);
        break;
      case 'oom':
        oomIndexes.push(i);
        break;
      default:
        break;
    }
  }
  // Allocations still open must be the final allocated blocks; take their exact block size from there.
  let missingAtEnd = 0;
  for (const [key, a] of open) {
    const b = finalBlocks.get(key);
    if (b) {
      a.blockBytes = b.sizeBytes;
      if (a.frames.length === 0) a.frames = b.frames;
      finalBlocks.delete(key);
    } else missingAtEnd++;
  }
  // Final blocks the history never allocated were live throughout.
  for (const b of finalBlocks.values()) {
    allocations.push({ addr: b.addr, requestedBytes: b.requestedBytes, blockBytes: b.sizeBytes, allocIndex: -1, freeIndex: n, frames: b.frames, freeFrames: [], producerCategory: null, category: 'other' });
  }
  if (missingAtEnd > 0) warnings.push(`${missingAtEnd} allocations left open by the history are not in the final segment state (the snapshot and its history disagree)`);
  if (unmatchedFrees > 0 && n > 0) warnings.push(`the history starts after ${unmatchedFrees} of its freed blocks were allocated (max_entries reached): their stacks are unknown`);

  const maxSplit = snap.allocatorSettings?.max_split_size;
  const blockSizes = simulateBlockSizes(
    trace,
    allocations,
    segments,
    typeof maxSplit === 'number' && maxSplit > 0 && maxSplit < Number.MAX_SAFE_INTEGER ? maxSplit : 0,
  );

  let initAlloc = 0;
  let initReq = 0;
  for (const a of allocations) {
    if (a.allocIndex < 0) {
      initAlloc += a.blockBytes;
      initReq += a.requestedBytes;
    }
  }
  let initReserved = finalReserved - segmentDelta;
  if (initReserved < 0) {
    warnings.push('segment events in the history exceed the final reserved bytes; reserved-at-start clamped to 0');
    initReserved = 0;
  }

  // Per-entry deltas, then running sums.
  const allocated = new Float64Array(n);
  const requested = new Float64Array(n);
  const reserved = new Float64Array(n);
  for (const a of allocations) {
    if (a.allocIndex >= 0) {
      allocated[a.allocIndex]! += a.blockBytes;
      requested[a.allocIndex]! += a.requestedBytes;
    }
    if (a.freeIndex < n) {
      allocated[a.freeIndex]! -= a.blockBytes;
      requested[a.freeIndex]! -= a.requestedBytes;
    }
  }
  let al = initAlloc;
  let rq = initReq;
  let rs = initReserved;
  for (let i = 0; i < n; i++) {
    const act = trace.action(i);
    if (act === 'segment_alloc' || act === 'segment_map') rs += trace.sizeBytes(i);
    else if (act === 'segment_free' || act === 'segment_unmap') rs -= trace.sizeBytes(i);
    al += allocated[i]!;
    rq += requested[i]!;
    allocated[i] = al;
    requested[i] = rq;
    reserved[i] = rs;
  }
  return {
    device,
    trace,
    allocatedBytes: allocated,
    requestedBytes: requested,
    reservedBytes: reserved,
    initial: { allocatedBytes: initAlloc, requestedBytes: initReq, reservedBytes: initReserved },
    allocations,
    oomIndexes,
    blockSizes,
    warnings,
  };
}

/** Allocations live right after entry `index` (-1: before the first entry). */
export function liveAt(r: Replay, index: number): Allocation[] {
  return r.allocations.filter((a) => a.allocIndex <= index && a.freeIndex > index);
}

/** Index of the largest value (first one on ties); -1 for an empty array. */
export function argMax(values: Float64Array): number {
  let best = -1;
  let bestV = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < values.length; i++) {
    if (values[i]! > bestV) {
      bestV = values[i]!;
      best = i;
    }
  }
  return best;
}
