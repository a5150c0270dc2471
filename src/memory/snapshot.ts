/**
 * The memory snapshot model: what `torch.cuda.memory._snapshot()` holds,
 * checked and typed. `readSnapshot` turns an unpickled value into it.
 *
 * Accepted forms (see docs/memory.md for sources):
 * - the dict `{segments, device_traces, allocator_settings?, ...}`;
 * - the legacy bare list of segments, whose blocks may carry `history:[{real_size, frames}]`.
 * Unknown keys are ignored; both spellings of the pending-free state are accepted.
 * Frame lists are kept as the very arrays the pickle shared (never copied).
 */
import { type PickleDict, type PickleValue, isPickleDict } from './pickle.js';

/** A device address: a number when exact, a BigInt above 2^53. */
export type Address = number | bigint;

export interface Frame {
  filename: string;
  line: number;
  name: string;
}

export type BlockState = 'active_allocated' | 'active_pending_free' | 'inactive';

export interface Block {
  address: Address;
  /** Bytes the allocator reserved for the block (rounded). */
  sizeBytes: number;
  /** Bytes the caller asked for. */
  requestedBytes: number;
  state: BlockState;
  /** Stack of the allocation that made this block (innermost first); empty when not recorded. */
  frames: readonly Frame[];
}

export interface Segment {
  device: number;
  address: Address;
  totalBytes: number;
  stream: number;
  /** 'small' (2 MiB segments for requests up to 1 MiB) or 'large'. */
  segmentType: string;
  isExpandable: boolean;
  blocks: Block[];
}

export const TRACE_ACTIONS = [
  'alloc',
  'free_requested',
  'free_completed',
  'segment_alloc',
  'segment_free',
  'segment_map',
  'segment_unmap',
  'snapshot',
  'oom',
] as const;
export type TraceAction = (typeof TRACE_ACTIONS)[number];
const ACTION_CODE = new Map<string, number>(TRACE_ACTIONS.map((a, i) => [a, i]));

/**
 * One device's allocator history, stored by column: a history has hundreds of
 * thousands of entries, and one object per entry cost more memory and garbage
 * collection than the rest of the analysis.
 */
export class Trace {
  readonly length: number;
  private readonly actions: Uint8Array;
  private readonly addrs: Float64Array;
  /** Addresses above 2^53, by entry (their `addrs` slot is NaN). */
  private readonly bigAddrs = new Map<number, bigint>();
  private readonly sizes: Float64Array;
  private readonly times: Float64Array;
  /** Stack of each entry (innermost first), the very arrays the pickle shared. */
  readonly frames: (readonly Frame[])[];
  private readonly categories = new Map<number, string>();
  private readonly deviceFree = new Map<number, number>();

  constructor(capacity: number) {
    this.length = 0;
    this.actions = new Uint8Array(capacity);
    this.addrs = new Float64Array(capacity);
    this.sizes = new Float64Array(capacity);
    this.times = new Float64Array(capacity);
    this.frames = new Array(capacity);
  }

  /** Appends an entry (used while building). */
  push(action: TraceAction, addr: Address, sizeBytes: number, timeUs: number, frames: readonly Frame[], category: string | null, deviceFreeBytes: number | null): void {
    const i = this.length;
    this.actions[i] = ACTION_CODE.get(action)!;
    if (typeof addr === 'bigint') {
      this.addrs[i] = Number.NaN;
      this.bigAddrs.set(i, addr);
    } else this.addrs[i] = addr;
    this.sizes[i] = sizeBytes;
    this.times[i] = timeUs;
    this.frames[i] = frames;
    if (category !== null) this.categories.set(i, category);
    if (deviceFreeBytes !== null) this.deviceFree.set(i, deviceFreeBytes);
    (this as { length: number }).length = i + 1;
  }

  action(i: number): TraceAction {
    return TRACE_ACTIONS[this.actions[i]!]!;
  }

  /** Address; 0 for `oom` and `snapshot`. */
  addr(i: number): Address {
    const a = this.addrs[i]!;
    return Number.isNaN(a) ? this.bigAddrs.get(i)! : a;
  }

  /** Whether every address is below 2^53 (exact as a number). */
  get addressesExact(): boolean {
    return this.bigAddrs.size === 0;
  }

  /** Bytes requested (for `alloc`/`free_*` the caller's size; for segments the segment size). */
  sizeBytes(i: number): number {
    return this.sizes[i]!;
  }

  /** Microseconds since the epoch; NaN when the entry has no time. */
  timeUs(i: number): number {
    return this.times[i]!;
  }

  /** The producer's own category (PyTorch's profiler-to-snapshot conversion adds one), else null. */
  category(i: number): string | null {
    return this.categories.get(i) ?? null;
  }

  /** For `oom`: free device memory the driver reported when the allocation failed. */
  deviceFreeBytes(i: number): number | null {
    return this.deviceFree.get(i) ?? null;
  }
}

export interface Snapshot {
  segments: Segment[];
  /** One history per device index (empty for devices without history). */
  deviceTraces: Trace[];
  /** `allocator_settings` as written (null in older snapshots). */
  allocatorSettings: Record<string, PickleValue> | null;
  /** True for the legacy bare-list form. */
  legacy: boolean;
  /** Notes about things that were tolerated (unknown states, dropped entries). */
  warnings: string[];
}

/** The input parsed as a pickle but is not a memory snapshot. */
export class SnapshotShapeError extends Error {
  override name = 'SnapshotShapeError';
}

const NO_FRAMES: readonly Frame[] = Object.freeze([]);

/**
 * Builds the model from an unpickled value; throws SnapshotShapeError when it is not a snapshot.
 * Consumes the value: trace entries are dropped from it as they are converted, so the raw
 * and the typed history are never both whole in memory.
 */
export function toSnapshot(value: PickleValue): Snapshot {
  const warnings: string[] = [];
  const frames = new FrameCache();
  if (Array.isArray(value)) {
    if (value.length > 0 && !value.every(isSegmentLike)) throw new SnapshotShapeError('a list, but not a list of memory segments');
    return { segments: value.map((s, i) => toSegment(s as PickleDict, i, frames, warnings)), deviceTraces: [], allocatorSettings: null, legacy: true, warnings };
  }
  if (!isPickleDict(value)) throw new SnapshotShapeError(`a pickled ${describe(value)}`);
  const segs = value.segments;
  if (!Array.isArray(segs)) throw new SnapshotShapeError("a pickled dict without 'segments'");
  const traces = value.device_traces;
  if (traces !== undefined && !Array.isArray(traces)) throw new SnapshotShapeError("'device_traces' is not a list");
  const segments = segs.map((s, i) => {
    if (!isPickleDict(s)) throw new SnapshotShapeError(`segment ${i} is not a dict`);
    return toSegment(s, i, frames, warnings);
  });
  const deviceTraces = (traces ?? []).map((t, d) => {
    if (!Array.isArray(t)) throw new SnapshotShapeError(`device_traces[${d}] is not a list`);
    return toTrace(t, d, frames, warnings);
  });
  const settings = value.allocator_settings;
  return { segments, deviceTraces, allocatorSettings: isPickleDict(settings) ? settings : null, legacy: false, warnings };
}

function isSegmentLike(v: PickleValue): boolean {
  return isPickleDict(v) && 'total_size' in v && Array.isArray(v.blocks);
}

function toSegment(s: PickleDict, i: number, frames: FrameCache, warnings: string[]): Segment {
  const where = `segment ${i}`;
  const blocksRaw = s.blocks;
  if (!Array.isArray(blocksRaw)) throw new SnapshotShapeError(`${where} has no 'blocks' list`);
  const address = addr(s.address, `${where} address`);
  const blocks: Block[] = [];
  for (let j = 0; j < blocksRaw.length; j++) {
    const b = blocksRaw[j];
    if (!isPickleDict(b)) throw new SnapshotShapeError(`${where} block ${j} is not a dict`);
    blocks.push(toBlock(b, `${where} block ${j}`, frames, warnings));
  }
  return {
    device: int(s.device, 0),
    address,
    totalBytes: size(s.total_size, `${where} total_size`),
    stream: int(s.stream, 0),
    segmentType: typeof s.segment_type === 'string' ? s.segment_type : 'large',
    isExpandable: s.is_expandable === true,
    blocks,
  };
}

function toBlock(b: PickleDict, where: string, frames: FrameCache, warnings: string[]): Block {
  const sizeBytes = size(b.size, `${where} size`);
  let requestedBytes = typeof b.requested_size === 'number' ? b.requested_size : sizeBytes;
  let stack = frames.get(b.frames);
  // Legacy blocks keep their allocation in `history: [{real_size, frames}]`.
  if (Array.isArray(b.history) && b.history.length > 0) {
    const h = b.history[b.history.length - 1];
    if (isPickleDict(h)) {
      if (typeof h.real_size === 'number' && typeof b.requested_size !== 'number') requestedBytes = h.real_size;
      if (stack.length === 0) stack = frames.get(h.frames);
    }
  }
  return { address: addr(b.address, `${where} address`), sizeBytes, requestedBytes, state: blockState(b.state, b, warnings), frames: stack };
}

function blockState(v: PickleValue | undefined, b: PickleDict, warnings: string[]): BlockState {
  switch (v) {
    case 'active_allocated':
    case 'inactive':
      return v;
    case 'active_pending_free':
    case 'active_awaiting_free':
      return 'active_pending_free';
    case undefined:
      // Legacy blocks have no state: a history means allocated.
      return Array.isArray(b.history) && b.history.length > 0 ? 'active_allocated' : 'inactive';
    default:
      if (warnings.length < 20) warnings.push(`unknown block state '${String(v)}' read as inactive`);
      return 'inactive';
  }
}

function toTrace(raw: PickleValue[], device: number, frames: FrameCache, warnings: string[]): Trace {
  const out = new Trace(raw.length);
  let dropped = 0;
  for (let i = 0; i < raw.length; i++) {
    const e = raw[i];
    if (!isPickleDict(e) || typeof e.action !== 'string' || !ACTION_CODE.has(e.action)) {
      dropped++;
      continue;
    }
    raw[i] = null;
    const a = e.addr;
    const t = e.time_us;
    out.push(
      e.action as TraceAction,
      typeof a === 'number' || typeof a === 'bigint' ? a : 0,
      typeof e.size === 'number' ? e.size : 0,
      typeof t === 'number' ? t : typeof t === 'bigint' ? Number(t) : Number.NaN,
      frames.get(e.frames),
      typeof e.category === 'string' ? e.category : null,
      typeof e.device_free === 'number' ? e.device_free : null,
    );
  }
  if (dropped > 0) warnings.push(`device ${device}: ${dropped} trace entries with an unknown action were skipped`);
  return out;
}

/**
 * Frame lists are shared in the pickle; check each list once and hand back the
 * same array. Entries that are not frame dicts are filtered (a copy only then).
 */
class FrameCache {
  private readonly seen = new WeakMap<object, readonly Frame[]>();

  get(v: PickleValue | undefined): readonly Frame[] {
    if (!Array.isArray(v) || v.length === 0) return NO_FRAMES;
    const hit = this.seen.get(v);
    if (hit) return hit;
    let ok = true;
    for (const f of v) {
      if (!isFrame(f)) {
        ok = false;
        break;
      }
    }
    const frames = ok ? (v as unknown as Frame[]) : (v.filter(isFrame) as unknown as Frame[]);
    this.seen.set(v, frames);
    return frames;
  }
}

function isFrame(f: PickleValue): boolean {
  return isPickleDict(f) && typeof f.filename === 'string' && typeof f.name === 'string' && typeof f.line === 'number';
}

function addr(v: PickleValue | undefined, what: string): Address {
  if (typeof v === 'number' || typeof v === 'bigint') return v;
  throw new SnapshotShapeError(`${what} is missing or not an integer`);
}

function size(v: PickleValue | undefined, what: string): number {
  if (typeof v === 'number' && v >= 0) return v;
  throw new SnapshotShapeError(`${what} is missing or not a size`);
}

function int(v: PickleValue | undefined, dflt: number): number {
  return typeof v === 'number' ? v : dflt;
}

function describe(v: PickleValue): string {
  if (v === null) return 'None';
  if (Array.isArray(v)) return 'list';
  if (v instanceof Uint8Array) return 'bytes';
  if (typeof v === 'object' && 'what' in v) return `object (${String((v as { what: string }).what)})`;
  return typeof v;
}

/** A Map key for an address (BigInt addresses above 2^53 become their decimal text). */
export function addrKey(a: Address): number | string {
  return typeof a === 'bigint' ? a.toString() : a;
}
