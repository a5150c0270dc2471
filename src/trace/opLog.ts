/**
 * The GPU op log: the kernels, memcpys and memsets of one device, each with
 * the runtime call that launched it, as variable-length records in the order
 * they were written.
 *
 * Why not rows: typed rows of ops plus rows of runtime calls cost about 80
 * bytes a kernel, and a trace's memory grew with them (60-74 MB per GB). A
 * record here stores integer nanoseconds as LEB128 differences that stay
 * small: an op's start from the end of its lane's previous op (kernels of a
 * stream run back to back), its launch from the end of the lane's previous
 * launch (a thread launches back to back), and occupancy as an index in a
 * per-log table (it takes few values: blocks / SMs). A kernel with its launch
 * costs about 15 bytes. Records are read in order only:
 * every analysis is a pass (`forEachOp`), and the time-ordered analyses merge
 * the log's ordered runs (`runs`) instead of sorting.
 *
 * Lanes: each record names its lane, the (stream, launching thread) pair it
 * came from. Kineto's records of one lane arrive in time order, but lanes
 * interleave finely (a DDP trace's optimizer kernels every eighth record, 5 ms
 * behind the rest), so runs are tracked per lane: a handful per device, where
 * runs of the whole log would number one per 60 KB of trace.
 *
 * Plain data (no classes) so a log crosses worker threads by structured clone.
 *
 * Bounded memory: given a `ChunkStore` (the shell's is a temporary file), full
 * chunks beyond the store's memory budget leave the heap and are fetched back
 * when read, so a trace of any size keeps a fixed amount of its ops in memory.
 */
export const OpKind = { kernel: 0, memcpy: 1, memset: 2 } as const;
export type OpKind = (typeof OpKind)[keyof typeof OpKind];

/** How an op knows its launch: not at all, inline in its record, or by correlation id looked up when read. */
const LINK_NONE = 0;
const LINK_INLINE = 1;
const LINK_BY_CORRELATION = 2;

const SM_ABSENT = 0;
const SM_FULL = 1;
/** An index in the log's `smShares` table. */
const SM_TABLE = 2;
/** The float32 itself (the table is full: a trace with unusually many distinct values). */
const SM_INLINE = 3;
/** Distinct occupancy values a log's table holds (a device has at most a few hundred SMs). */
const SM_TABLE_MAX = 4096;

/** The CUDA runtime or driver call that launched an op. */
export interface LaunchCall {
  startNs: number;
  durNs: number;
  /** RuntimeKind of the call (launch, memcpy, memset or sync). */
  kind: number;
  externalId: number;
}

/** Where a run starts: enough decoder state to read from there. */
export interface RunStart {
  lane: number;
  /** Index in the log of the run's first record. */
  firstIndex: number;
  chunk: number;
  offset: number;
  prevEndNs: number;
  prevLaunchEndNs: number;
  prevExternalId: number;
  prevCorrelation: number;
  /** Records of the lane in the run. */
  count: number;
  /** Start of the run's first record (a time-ordered merge opens the run only when it is due). */
  firstStartNs: number;
}

/**
 * Where full chunks can go instead of the heap. The store decides: it declines
 * chunks while its memory budget lasts (they stay in the log) and takes the rest.
 */
export interface ChunkStore {
  /** The size of the logs' chunks (the unit the store takes). */
  readonly chunkBytes: number;
  /** Takes the first `length` bytes of a full chunk and returns a handle, or returns -1 (the log keeps it). */
  offer(bytes: Uint8Array, length: number): number;
  /** Copies the chunk with this handle into `into` (at least `length` long). */
  read(handle: number, length: number, into: Uint8Array): void;
}

/** One device's op log. */
export interface OpLog {
  device: number;
  count: number;
  /** Chunks in memory; null where the chunk is in the store (`stored`). */
  chunks: (Uint8Array | null)[];
  chunkLengths: number[];
  /** Per chunk, its handle in `store`, or -1. */
  stored: number[];
  /** Set when some chunks are in it (never on a log that crossed threads: workers get no store). */
  store?: ChunkStore;
  /** Per lane, maximal stretches of its records in non-decreasing start order. */
  runs: RunStart[];
  /** What each lane is (`stream|thread`), so logs built apart can be joined lane by lane. */
  laneKeys: string[];
  /** The distinct occupancy values (smShare) records refer to. */
  smShares: number[];
  /**
   * Set on a log kept from one part of a parallel parse: its records' name ids
   * are indices here, giving the merged model's ids (the merge renumbers names
   * without re-encoding the records).
   */
  nameIds?: Int32Array;
}

/** An op as written and as read back (one object is reused while reading: copy what you keep). */
export interface GpuOp {
  kind: OpKind;
  /** KernelCategory. */
  category: number;
  /** CopyKind (memcpy) or 0. */
  copyKind: number;
  startNs: number;
  durNs: number;
  nameId: number;
  /** Bytes moved (memcpy/memset), -1 when absent. */
  bytes: number;
  /** min(1, blocks per SM) as Kineto's float32, or -1 when absent. */
  smShare: number;
  /** Launch: startNs is NaN when the op has none. */
  launch: LaunchCall;
  /** Whether this op carries its launch call's own accounting (the call was consumed by the link; at most one op per call). */
  ownsLaunch: boolean;
  /** Correlation id when the launch was not known at write time, else -1. */
  correlation: number;
  /** Index in the log's laneKeys. */
  lane: number;
}

export function emptyGpuOp(): GpuOp {
  return {
    kind: OpKind.kernel,
    category: 0,
    copyKind: 0,
    startNs: 0,
    durNs: 0,
    nameId: 0,
    bytes: -1,
    smShare: -1,
    launch: { startNs: Number.NaN, durNs: 0, kind: 0, externalId: -1 },
    ownsLaunch: false,
    correlation: -1,
    lane: 0,
  };
}

export function copyGpuOp(to: GpuOp, from: GpuOp): void {
  to.kind = from.kind;
  to.category = from.category;
  to.copyKind = from.copyKind;
  to.startNs = from.startNs;
  to.durNs = from.durNs;
  to.nameId = from.nameId;
  to.bytes = from.bytes;
  to.smShare = from.smShare;
  to.launch.startNs = from.launch.startNs;
  to.launch.durNs = from.launch.durNs;
  to.launch.kind = from.launch.kind;
  to.launch.externalId = from.launch.externalId;
  to.ownsLaunch = from.ownsLaunch;
  to.correlation = from.correlation;
  to.lane = from.lane;
}

/** Chunk size of a log without a store (and the file store's). */
export const CHUNK_BYTES = 256 * 1024;
/** The largest record: its length byte, 2 bytes of flags, 9 numbers of at most 10 bytes, a float32 (under 256). */
const MAX_OP_RECORD_BYTES = 3 + 9 * 10 + 4;

const scratchF64 = new Float64Array(1);
const scratchF64Bytes = new Uint8Array(scratchF64.buffer);
const scratchF32 = new Float32Array(1);
const scratchF32Bytes = new Uint8Array(scratchF32.buffer);

/** Appends ops to an OpLog. */
export class OpLogWriter {
  private readonly log: OpLog;
  private buf: Uint8Array;
  private pos = 0;
  /** Per lane: the last op's end, launch end, External id and correlation id written (deltas are taken within a lane). */
  private readonly prevEnd: number[] = [];
  private readonly prevLaunchEnd: number[] = [];
  private readonly prevExt: number[] = [];
  private readonly prevCorr: number[] = [];
  /** Per lane: its open run (index in runs) and the start of its last record. */
  private readonly laneRun: number[] = [];
  private readonly laneLastStart: number[] = [];
  private readonly laneIds = new Map<string, number>();
  private readonly smIds = new Map<number, number>();
  private readonly chunkBytes: number;

  constructor(
    device: number,
    private readonly store: ChunkStore | null = null,
  ) {
    this.chunkBytes = store?.chunkBytes ?? CHUNK_BYTES;
    if (!(this.chunkBytes >= 2 * MAX_OP_RECORD_BYTES)) throw new Error(`op log: chunks of ${this.chunkBytes} bytes cannot hold records`);
    this.buf = new Uint8Array(this.chunkBytes);
    this.log = { device, count: 0, chunks: [this.buf], chunkLengths: [0], stored: [-1], runs: [], laneKeys: [], smShares: [] };
  }

  /** The lane id for a key (`stream|thread`), made on first use. */
  lane(key: string): number {
    let id = this.laneIds.get(key);
    if (id === undefined) {
      id = this.log.laneKeys.length;
      this.log.laneKeys.push(key);
      this.laneIds.set(key, id);
      this.prevEnd.push(0);
      this.prevLaunchEnd.push(0);
      this.prevExt.push(-1);
      this.prevCorr.push(0);
    }
    return id;
  }

  /** Encodes an op (the object is not kept). */
  append(op: GpuOp): void {
    if (this.pos + MAX_OP_RECORD_BYTES > this.buf.length) {
      const full = this.log.chunks.length - 1;
      this.log.chunkLengths[full] = this.pos;
      const handle = this.store === null ? -1 : this.store.offer(this.buf, this.pos);
      if (handle >= 0) {
        // The store has it: the buffer is reused for the next chunk.
        this.log.chunks[full] = null;
        this.log.stored[full] = handle;
        this.log.store = this.store!;
      } else this.buf = new Uint8Array(this.chunkBytes);
      this.log.chunks.push(this.buf);
      this.log.chunkLengths.push(0);
      this.log.stored.push(-1);
      this.pos = 0;
    }
    const lane = op.lane;
    if (!(lane < this.log.laneKeys.length)) throw new Error(`op log: lane ${lane} was not made by lane()`);
    // A record that starts before its lane's previous one opens a new run of the lane, with the state to decode from it.
    const last = this.laneLastStart[lane];
    if (last === undefined || op.startNs < last) {
      this.laneRun[lane] = this.log.runs.length;
      this.log.runs.push({
        lane,
        firstIndex: this.log.count,
        chunk: this.log.chunks.length - 1,
        offset: this.pos,
        prevEndNs: this.prevEnd[lane]!,
        prevLaunchEndNs: this.prevLaunchEnd[lane]!,
        prevExternalId: this.prevExt[lane]!,
        prevCorrelation: this.prevCorr[lane]!,
        count: 0,
        firstStartNs: op.startNs,
      });
    }
    this.log.runs[this.laneRun[lane]!]!.count++;
    this.laneLastStart[lane] = op.startNs;
    const launched = !Number.isNaN(op.launch.startNs);
    const link = launched ? LINK_INLINE : op.correlation >= 0 ? LINK_BY_CORRELATION : LINK_NONE;
    let sm: number = op.smShare < 0 ? SM_ABSENT : op.smShare >= 1 ? SM_FULL : SM_TABLE;
    let smId = -1;
    if (sm === SM_TABLE) {
      smId = this.smIds.get(op.smShare) ?? -1;
      if (smId < 0 && this.log.smShares.length < SM_TABLE_MAX) {
        smId = this.log.smShares.length;
        this.log.smShares.push(op.smShare);
        this.smIds.set(op.smShare, smId);
      }
      if (smId < 0) sm = SM_INLINE;
    }
    const b = this.buf;
    // Layout: length, lane, flags, class, then the numbers. The length and lane lead so a reader of
    // one lane steps over the others' records without decoding them.
    const at = this.pos++;
    this.writeUint(lane);
    b[this.pos++] = op.kind | (link << 2) | (op.ownsLaunch ? 16 : 0) | (sm << 5);
    b[this.pos++] = (op.kind === OpKind.memcpy ? op.copyKind : op.category) | ((launched ? op.launch.kind : 0) << 4);
    this.writeDelta(op.startNs, this.prevEnd[lane]!);
    this.prevEnd[lane] = op.startNs + op.durNs;
    this.writeDuration(op.durNs);
    this.writeUint(op.nameId);
    if (link === LINK_INLINE) {
      this.writeDelta(op.launch.startNs, this.prevLaunchEnd[lane]!);
      this.prevLaunchEnd[lane] = op.launch.startNs + op.launch.durNs;
      this.writeDuration(op.launch.durNs);
      this.writeDelta(op.launch.externalId, this.prevExt[lane]!);
      this.prevExt[lane] = op.launch.externalId;
    } else if (link === LINK_BY_CORRELATION) {
      this.writeDelta(op.correlation, this.prevCorr[lane]!);
      this.prevCorr[lane] = op.correlation;
    }
    if (op.kind !== OpKind.kernel) this.writeNum(op.bytes);
    if (sm === SM_TABLE) this.writeUint(smId);
    else if (sm === SM_INLINE) {
      scratchF32[0] = op.smShare;
      b.set(scratchF32Bytes, this.pos);
      this.pos += 4;
    }
    b[at] = this.pos - at;
    this.log.count++;
  }

  finish(): OpLog {
    const last = this.log.chunks.length - 1;
    // The last chunk keeps only what it holds.
    this.log.chunks[last] = this.buf.slice(0, this.pos);
    this.log.chunkLengths[last] = this.pos;
    return this.log;
  }

  private writeUint(v: number): void {
    const b = this.buf;
    let p = this.pos;
    if (v < 0x80000000) {
      // int32 arithmetic for the common case
      while (v >= 128) {
        b[p++] = (v & 127) | 128;
        v >>>= 7;
      }
    } else {
      while (v >= 128) {
        b[p++] = (v % 128) | 128;
        v = Math.floor(v / 128);
      }
    }
    b[p++] = v;
    this.pos = p;
  }

  /** A number: zigzag-encoded integers tagged even; anything else (fractions, huge values) tag 1 and its float64. */
  private writeNum(x: number): void {
    if (Number.isSafeInteger(x) && Math.abs(x) < 2 ** 50) {
      this.writeUint((x >= 0 ? x * 2 : -x * 2 - 1) * 2);
      return;
    }
    this.writeUint(1);
    scratchF64[0] = x;
    this.buf.set(scratchF64Bytes, this.pos);
    this.pos += 8;
  }

  /** A duration: a non-negative integer below 2^50 doubled (tag bit 0); anything else tag 1 and its float64. */
  private writeDuration(x: number): void {
    if (x >= 0 && x < 2 ** 50 && Number.isSafeInteger(x)) {
      this.writeUint(x * 2);
      return;
    }
    this.writeUint(1);
    scratchF64[0] = x;
    this.buf.set(scratchF64Bytes, this.pos);
    this.pos += 8;
  }

  /** x as a difference from prev when both are exact integers, else as itself (tag 1). */
  private writeDelta(x: number, prev: number): void {
    const d = x - prev;
    if (Number.isSafeInteger(x) && Number.isSafeInteger(prev) && Math.abs(d) < 2 ** 50) this.writeUint((d >= 0 ? d * 2 : -d * 2 - 1) * 2);
    else {
      this.writeUint(1);
      scratchF64[0] = x;
      this.buf.set(scratchF64Bytes, this.pos);
      this.pos += 8;
    }
  }
}

/**
 * Reads a log's records from a run start (or the beginning), resolving launches
 * written by correlation through `launches` (runtime calls that were not consumed
 * by a link while parsing).
 */
export class OpReader {
  readonly op: GpuOp = emptyGpuOp();
  private chunk: number;
  private buf: Uint8Array;
  private len: number;
  private pos: number;
  /** Per lane, as in the writer. */
  private readonly prevEnd: number[];
  private readonly prevLaunchEnd: number[];
  private readonly prevExt: number[];
  private readonly prevCorr: number[];
  private left: number;
  /** Only this lane's records (-1: all). */
  private readonly laneFilter: number;
  /** Index in the log of the record in `op` (its place in arrival order). */
  index: number;
  /** The log's place among the logs a merge reads (equal starts keep the order of logs, then of records). */
  order = 0;
  private readonly nameIds: Int32Array | undefined;

  constructor(
    readonly log: OpLog,
    private readonly launches: ReadonlyMap<number, LaunchCall>,
    from: RunStart | null = null,
    private readonly chunks: LogChunks = chunksOf(log),
  ) {
    this.nameIds = log.nameIds;
    this.laneFilter = from?.lane ?? -1;
    this.index = (from?.firstIndex ?? 0) - 1;
    this.chunk = from?.chunk ?? 0;
    this.pos = from?.offset ?? 0;
    const lanes = log.laneKeys.length;
    this.prevEnd = new Array<number>(lanes).fill(0);
    this.prevLaunchEnd = new Array<number>(lanes).fill(0);
    this.prevExt = new Array<number>(lanes).fill(-1);
    this.prevCorr = new Array<number>(lanes).fill(0);
    if (from !== null) {
      this.prevEnd[from.lane] = from.prevEndNs;
      this.prevLaunchEnd[from.lane] = from.prevLaunchEndNs;
      this.prevExt[from.lane] = from.prevExternalId;
      this.prevCorr[from.lane] = from.prevCorrelation;
    }
    this.left = from?.count ?? log.count;
    this.buf = this.left > 0 ? chunks.enter(this.chunk) : new Uint8Array(0);
    this.len = this.left > 0 ? log.chunkLengths[this.chunk]! : 0;
  }

  /** Decodes the next record (of the lane, when reading a run) into `op`; false at the end. */
  next(): boolean {
    if (this.left === 0) return false;
    for (;;) {
      if (this.pos >= this.len) {
        this.chunks.leave(this.chunk);
        if (this.chunk + 1 >= this.log.chunks.length) {
          this.left = 0;
          return false;
        }
        this.chunk++;
        this.buf = this.chunks.enter(this.chunk);
        this.len = this.log.chunkLengths[this.chunk]!;
        this.pos = 0;
      }
      this.index++;
      const b = this.buf;
      if (this.laneFilter >= 0) {
        // Another lane's record: step over it.
        P = this.pos + 1;
        if (readUint(b) !== this.laneFilter) {
          this.pos += b[this.pos]!;
          continue;
        }
      }
      this.decode();
      break;
    }
    if (--this.left === 0) this.chunks.leave(this.chunk);
    return true;
  }

  private decode(): void {
    const op = this.op;
    const b = this.buf;
    P = this.pos + 1;
    const lane = readUint(b);
    const flags = b[P++]!;
    const cls = b[P++]!;
    const kind = (flags & 3) as OpKind;
    const link = (flags >> 2) & 3;
    const sm = (flags >> 5) & 3;
    op.lane = lane;
    op.kind = kind;
    op.ownsLaunch = (flags & 16) !== 0;
    op.copyKind = kind === OpKind.memcpy ? cls & 15 : 0;
    op.category = kind === OpKind.kernel ? cls & 15 : kind === OpKind.memcpy ? 7 : 8;
    const start = readDelta(b, this.prevEnd[lane]!);
    op.startNs = start;
    op.durNs = readDuration(b);
    this.prevEnd[lane] = start + op.durNs;
    const nameId = readUint(b);
    op.nameId = this.nameIds === undefined ? nameId : this.nameIds[nameId]!;
    const launch = op.launch;
    op.correlation = -1;
    if (link === LINK_INLINE) {
      launch.kind = cls >> 4;
      launch.startNs = readDelta(b, this.prevLaunchEnd[lane]!);
      launch.durNs = readDuration(b);
      this.prevLaunchEnd[lane] = launch.startNs + launch.durNs;
      launch.externalId = this.prevExt[lane] = readDelta(b, this.prevExt[lane]!);
    } else {
      launch.startNs = Number.NaN;
      launch.durNs = 0;
      launch.kind = 0;
      launch.externalId = -1;
      if (link === LINK_BY_CORRELATION) {
        op.correlation = this.prevCorr[lane] = readDelta(b, this.prevCorr[lane]!);
        const found = this.launches.get(op.correlation);
        if (found !== undefined) {
          launch.startNs = found.startNs;
          launch.durNs = found.durNs;
          launch.kind = found.kind;
          launch.externalId = found.externalId;
        }
      }
    }
    op.bytes = kind === OpKind.kernel ? -1 : readNum(b);
    if (sm === SM_TABLE) op.smShare = this.log.smShares[readUint(b)]!;
    else if (sm === SM_INLINE) {
      // Byte by byte: a subarray view per op would be an allocation per op.
      scratchF32Bytes[0] = b[P]!;
      scratchF32Bytes[1] = b[P + 1]!;
      scratchF32Bytes[2] = b[P + 2]!;
      scratchF32Bytes[3] = b[P + 3]!;
      P += 4;
      op.smShare = scratchF32[0]!;
    } else op.smShare = sm === SM_FULL ? 1 : -1;
    this.pos += b[this.pos]!;
  }
}

/**
 * A log's chunks as its readers see them: those in memory as they are, stored
 * ones read back into buffers that are reused once no reader is on them. The
 * readers of a merge, at nearby places in the log, share what was read, and the
 * passes over a log reuse the same few buffers instead of leaving a chunk's
 * worth of garbage per read.
 */
export class LogChunks {
  private readonly slots: { chunk: number; bytes: Uint8Array; readers: number; usedAt: number }[] = [];
  private clock = 0;

  constructor(private readonly log: OpLog) {}

  /** The chunk's bytes, valid until the reader calls `leave` for it. */
  enter(chunk: number): Uint8Array {
    const inMemory = this.log.chunks[chunk];
    if (inMemory) return inMemory;
    let slot = this.slots.find((s) => s.chunk === chunk);
    if (slot === undefined) {
      // The least recently used slot no reader is on, else a new one.
      for (const s of this.slots) if (s.readers === 0 && (slot === undefined || s.usedAt < slot.usedAt)) slot = s;
      if (slot === undefined) {
        slot = { chunk, bytes: new Uint8Array(this.log.store!.chunkBytes), readers: 0, usedAt: 0 };
        this.slots.push(slot);
      }
      slot.chunk = chunk;
      this.log.store!.read(this.log.stored[chunk]!, this.log.chunkLengths[chunk]!, slot.bytes);
    }
    slot.readers++;
    slot.usedAt = this.clock++;
    return slot.bytes;
  }

  leave(chunk: number): void {
    if (this.log.chunks[chunk]) return;
    const slot = this.slots.find((s) => s.chunk === chunk);
    if (slot !== undefined) slot.readers--;
  }
}

const logChunks = new WeakMap<OpLog, LogChunks>();

/** The log's shared LogChunks (made on first use; it goes with the log). */
export function chunksOf(log: OpLog): LogChunks {
  let c = logChunks.get(log);
  if (c === undefined) logChunks.set(log, (c = new LogChunks(log)));
  return c;
}

/** The read position of the record being decoded (module state: the decoders below are hot). */
let P = 0;

function readUint(b: Uint8Array): number {
  let byte = b[P++]!;
  if (byte < 128) return byte;
  // Up to 28 bits in int32 arithmetic; wider values (rare) in floating point.
  let v = byte & 127;
  byte = b[P++]!;
  v |= (byte & 127) << 7;
  if (byte < 128) return v;
  byte = b[P++]!;
  v |= (byte & 127) << 14;
  if (byte < 128) return v;
  byte = b[P++]!;
  v |= (byte & 127) << 21;
  if (byte < 128) return v;
  let scale = 2 ** 28;
  for (;;) {
    byte = b[P++]!;
    v += (byte & 127) * scale;
    if (byte < 128) return v;
    scale *= 128;
  }
}

function readFloat64(b: Uint8Array): number {
  for (let i = 0; i < 8; i++) scratchF64Bytes[i] = b[P + i]!;
  P += 8;
  return scratchF64[0]!;
}

/** A tagged zigzag value (see writeNum) without its tag bit, back to the signed integer. */
function unzigzag(t: number): number {
  if (t < 0x80000000) {
    const z = t >>> 1;
    return (z >>> 1) ^ -(z & 1);
  }
  const z = Math.floor(t / 2);
  const half = Math.floor(z / 2);
  return z - half * 2 === 0 ? half : -half - 1;
}

function readNum(b: Uint8Array): number {
  const t = readUint(b);
  return t === 1 ? readFloat64(b) : unzigzag(t);
}

function readDuration(b: Uint8Array): number {
  const t = readUint(b);
  if (t === 1) return readFloat64(b);
  return t < 0x80000000 ? t >>> 1 : t / 2;
}

function readDelta(b: Uint8Array, prev: number): number {
  const t = readUint(b);
  return t === 1 ? readFloat64(b) : prev + unzigzag(t);
}

/** Calls visit for every op of every log, in log order (one reused op object). */
export function forEachOp(logs: readonly OpLog[], launches: ReadonlyMap<number, LaunchCall>, visit: (op: GpuOp, log: OpLog) => void): void {
  for (const log of logs) {
    const r = new OpReader(log, launches);
    while (r.next()) visit(r.op, log);
  }
}

/**
 * Visits the ops of one device's logs in start order, merging their runs;
 * equal starts keep the order they were written in (logs in the order given,
 * then records: a stable sort by start, without the sort). A run is opened
 * only when the merge reaches its first start, so the readers open at once are
 * the runs that overlap in time, not all of them. Logs of several devices merge
 * the same way (`log.device` says whose op it is): the cross-device figures.
 */
export function forEachOpByStart(
  logs: readonly OpLog[],
  launches: ReadonlyMap<number, LaunchCall>,
  visit: (op: GpuOp, log: OpLog) => void,
): void {
  const due = logs.flatMap((log, order) => log.runs.map((run) => ({ log, order, run })));
  due.sort((a, b) => a.run.firstStartNs - b.run.firstStartNs || a.order - b.order || a.run.firstIndex - b.run.firstIndex);
  const open = (d: (typeof due)[number]) => {
    const r = new OpReader(d.log, launches, d.run, chunksOf(d.log));
    r.order = d.order;
    return r;
  };
  if (due.length === 1) {
    const r = open(due[0]!);
    while (r.next()) visit(r.op, r.log);
    return;
  }
  // A binary heap of readers keyed by their current op's start, then the order of their logs and their place in it.
  const heap: OpReader[] = [];
  const less = (a: OpReader, b: OpReader) =>
    a.op.startNs < b.op.startNs || (a.op.startNs === b.op.startNs && (a.order < b.order || (a.order === b.order && a.index < b.index)));
  const down = (i: number) => {
    for (;;) {
      const l = 2 * i + 1;
      const rr = l + 1;
      let m = i;
      if (l < heap.length && less(heap[l]!, heap[m]!)) m = l;
      if (rr < heap.length && less(heap[rr]!, heap[m]!)) m = rr;
      if (m === i) return;
      [heap[i], heap[m]] = [heap[m]!, heap[i]!];
      i = m;
    }
  };
  const up = (i: number) => {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!less(heap[i]!, heap[parent]!)) return;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  };
  let next = 0;
  for (;;) {
    // Open every run that may hold the next op: its first start is not after the earliest open op.
    while (next < due.length && (heap.length === 0 || due[next]!.run.firstStartNs <= heap[0]!.op.startNs)) {
      const r = open(due[next++]!);
      if (r.next()) {
        heap.push(r);
        up(heap.length - 1);
      }
    }
    if (heap.length === 0) return;
    const top = heap[0]!;
    visit(top.op, top.log);
    if (!top.next()) {
      const last = heap.pop()!;
      if (heap.length === 0) continue;
      heap[0] = last;
    }
    down(0);
  }
}
