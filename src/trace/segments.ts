/**
 * Cutting a trace's text into segments that can be parsed independently (in
 * parallel): each cut falls right after an event's closing brace, before the
 * ',' and '{' that open the next event. A cut that lands inside a string or a
 * nested value is caught afterwards: the parser of the segment before it does
 * not end between two events, and the caller falls back to one parser.
 */

/**
 * Index just after a `}` that is followed by `,` and a new event object, searching backwards from `before`; -1 if
 * none. On text, or on its UTF-8 bytes (the characters looked for are ASCII, which never occurs inside a multi-byte
 * character: a cut found in the bytes never splits one).
 */
export function findEventBoundary(text: string | Uint8Array, before: number): number {
  const at = typeof text === 'string' ? (j: number) => text.charCodeAt(j) : (j: number) => text[j] ?? -1;
  const lastBrace =
    typeof text === 'string' ? (from: number) => text.lastIndexOf('}', from) : (from: number) => text.lastIndexOf(125, from);
  let i = before >= 0 ? lastBrace(before) : -1;
  while (i >= 0) {
    let j = skipWs(at, i + 1);
    if (at(j) === 44 /* , */) {
      j = skipWs(at, j + 1);
      if (at(j) === 123 /* { */) {
        j = skipWs(at, j + 1);
        if (at(j) === 34 /* " */) return i + 1;
      }
    }
    // (A negative start would count from the end of a typed array.)
    i = i > 0 ? lastBrace(i - 1) : -1;
  }
  return -1;
}

function skipWs(at: (j: number) => number, j: number): number {
  for (;;) {
    const c = at(j);
    if (c === 32 || c === 10 || c === 13 || c === 9) j++;
    else return j;
  }
}

/** The integer microsecond of the first `"ts"` in a text, the origin every segment must share; null if none. */
export function firstTimestampUs(text: string): number | null {
  const m = /"ts"\s*:\s*"?(-?\d+)/.exec(text);
  return m ? Number(m[1]) : null;
}

/**
 * Bytes arriving in chunks (a decompressor's output) or read into it (a file), handed out as segments that end at
 * event boundaries. A segment owns its buffer (it may be transferred to a worker) or, `inPlace`, is a view of the
 * cutter's buffer that stays valid until the next call.
 */
export class SegmentCutter {
  private buf: Uint8Array;
  private len = 0;
  /** Bytes handed out in place, dropped from the front at the next call. */
  private handedOut = 0;
  /**
   * After a search found no boundary, the next waits until twice as many bytes are pending: a long stretch without
   * one (megabytes of whitespace) is searched O(its length) times in all, not once per chunk (quadratic: a 60 MB gap
   * took 21 s with 3 threads, where each search skipped the whole gap again).
   */
  private nextSearchAt = 0;

  /** `capacity`: a new buffer's size (a segment read to exactly fill it wastes none of the buffer it takes along). */
  constructor(
    private readonly segmentBytes: number,
    private readonly maxPendingBytes: number,
    private readonly capacity = 2 * segmentBytes,
  ) {
    this.buf = new Uint8Array(capacity);
  }

  append(chunk: Uint8Array): void {
    this.drop();
    if (this.len + chunk.length > this.buf.length) this.grow(Math.max(2 * this.buf.length, this.len + chunk.length));
    this.buf.set(chunk, this.len);
    this.len += chunk.length;
  }

  /**
   * Reads with `read` (bytes into `into` at `at`, at most `length`; 0 at the end) until a segment's worth waits, or,
   * when a segment's worth already waits without a boundary, until the doubled buffer is full. False at the end.
   */
  fill(read: (into: Uint8Array, at: number, length: number) => number): boolean {
    this.drop();
    if (this.len === this.buf.length) this.grow(2 * this.buf.length);
    const want = this.len < this.segmentBytes ? Math.min(this.segmentBytes, this.buf.length) : this.buf.length;
    while (this.len < want) {
      const n = read(this.buf, this.len, want - this.len);
      if (n === 0) return false;
      this.len += n;
    }
    return true;
  }

  /**
   * The next segment once a full one is waiting; null while fewer bytes wait or its boundary has not come;
   * 'no-boundary' when none came within maxPendingBytes (not an event list).
   */
  next(inPlace: boolean): Uint8Array | null | 'no-boundary' {
    this.drop();
    if (this.len < this.segmentBytes || this.len < this.nextSearchAt) return null;
    const cut = findEventBoundary(this.buf.subarray(0, this.len), this.len - 1);
    if (cut <= 0) {
      if (this.len > this.maxPendingBytes) return 'no-boundary';
      this.nextSearchAt = Math.min(2 * this.len, this.maxPendingBytes + 1);
      return null;
    }
    this.nextSearchAt = 0;
    return this.take(cut, inPlace);
  }

  /** Whatever is left (the last segment). */
  rest(inPlace: boolean): Uint8Array {
    this.drop();
    return this.take(this.len, inPlace);
  }

  private take(n: number, inPlace: boolean): Uint8Array {
    if (inPlace) {
      this.handedOut = n;
      return this.buf.subarray(0, n);
    }
    // A segment that fills most of the buffer (read to fit) takes the buffer along and the tail moves to a new one;
    // otherwise (chunks gathered in a larger buffer) it is copied out, and the buffer is kept: handing over its spare
    // capacity and allocating a fresh one per segment cost the gzip path 30 MB and 0.4 s on 211 MB.
    if (4 * n < 3 * this.buf.length) {
      const out = this.buf.slice(0, n);
      this.buf.copyWithin(0, n, this.len);
      this.len -= n;
      return out;
    }
    const out = this.buf.subarray(0, n);
    const tail = this.buf.subarray(n, this.len);
    this.buf = new Uint8Array(Math.max(this.capacity, 2 * tail.length));
    this.buf.set(tail);
    this.len = tail.length;
    return out;
  }

  private grow(size: number): void {
    const bigger = new Uint8Array(size);
    bigger.set(this.buf.subarray(0, this.len));
    this.buf = bigger;
  }

  private drop(): void {
    if (this.handedOut === 0) return;
    this.buf.copyWithin(0, this.handedOut, this.len);
    this.len -= this.handedOut;
    this.handedOut = 0;
  }
}
