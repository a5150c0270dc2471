/**
 * Streaming parser for Kineto Chrome-trace JSON (torch.profiler output).
 *
 * Why hand-written: the trace must be read in bounded memory whatever its
 * size, with exact nanosecond timestamps and exact 64-bit ids. JSON.parse
 * needs the whole text, rounds integers above 2^53 and turns "123.456" µs into
 * a double whose ns value can be off by one. Generic streaming JSON libraries
 * allocate a token object per value and ran an order of magnitude slower in
 * our measurements (see docs/design.md). This parser knows the shape of a
 * trace: it walks the top-level object, hands every element of `traceEvents`
 * to a sink through one reused event object, and parses only the `args` keys
 * that gpuwise reads, skipping the rest without building values.
 *
 * It takes text chunks (the shell decodes bytes), so it imports nothing.
 * An item (one event, or one top-level key and value) that is cut by a chunk
 * boundary is re-read from its start when the next chunk arrives.
 */
import { ATTENTION_OP_PATTERN } from './attentionOps.js';
import { type EventArgs, type Id, type RawEvent, type TraceSink, emptyArgs, resetArgs } from './event.js';

/** Thrown for text that is not a trace at all (before any event was read). */
export class TraceFormatError extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
    this.name = 'TraceFormatError';
  }
}

export interface ParseSummary {
  /** Events handed to the sink. */
  events: number;
  /** The input ended before the closing brace of the trace object. */
  truncated: boolean;
  /** A syntax error stopped reading after some events had been read. */
  stoppedAt: string | null;
  /** Human-readable notes about input that was repaired or dropped. */
  warnings: string[];
  /** Integer microseconds subtracted from every timestamp. */
  originUs: number;
  /** Whether a `traceEvents` array (or the bare-array form) was found at all. */
  sawTraceEvents: boolean;
}

/** Why a parse ended before the trace did (for `TraceModel.endedEarly`), or null when it read to the end. */
export function endedEarly(summary: ParseSummary): string | null {
  if (summary.stoppedAt !== null) return `a syntax error (${summary.stoppedAt})`;
  return summary.truncated ? 'the input ends before the trace does (cut or damaged file)' : null;
}

const NEED_MORE = Symbol('need-more');
/** Largest single item (an event, or a top-level metadata value) held while waiting for its end. */
const MAX_ITEM_CHARS = 64 * 1024 * 1024;
/** Deeper nesting than any trace has: refuse instead of overflowing the stack. */
const MAX_DEPTH = 64;

const enum St {
  Start = 0,
  ObjectFirstKey = 1,
  ObjectNextKey = 2,
  EventsFirst = 3,
  EventsNext = 4,
  Done = 5,
}

const enum Ch {
  Tab = 9,
  Nl = 10,
  Cr = 13,
  Space = 32,
  Quote = 34,
  Plus = 43,
  Comma = 44,
  Minus = 45,
  Dot = 46,
  D0 = 48,
  D9 = 57,
  Colon = 58,
  E = 69,
  LBracket = 91,
  Backslash = 92,
  RBracket = 93,
  LowerE = 101,
  LBrace = 123,
  RBrace = 125,
  Bom = 0xfeff,
}

/** args keys gpuwise reads, with a small code for the switch in parseArgs and the field it fills. */
export const ARG_KEYS: ReadonlyArray<readonly [key: string, code: number, field: keyof EventArgs]> = [
  ['correlation', 1, 'correlation'],
  ['External id', 2, 'externalId'],
  ['bytes', 3, 'bytes'],
  ['device', 5, 'device'],
  ['blocks per SM', 9, 'blocksPerSm'],
  ['Collective name', 11, 'collectiveName'],
  ['In msg nelems', 12, 'inMsgNelems'],
  ['Out msg nelems', 13, 'outMsgNelems'],
  ['Group size', 14, 'groupSize'],
  ['dtype', 15, 'dtype'],
  ['Process Group Name', 16, 'processGroupName'],
  ['Process Group Description', 17, 'processGroupDesc'],
  ['Seq', 18, 'seq'],
  ['Input Dims', 19, 'inputDims'],
  ['Input type', 20, 'inputType'],
  ['Total Allocated', 21, 'totalAllocated'],
  ['Total Reserved', 22, 'totalReserved'],
  ['Device Type', 23, 'deviceType'],
  ['Device Id', 24, 'deviceId'],
  ['Concrete Inputs', 25, 'concreteInputs'],
];
/** ARG_KEYS grouped by key length, so a key is matched in place without slicing it out. */
const ARG_KEYS_BY_LEN: Array<Array<(typeof ARG_KEYS)[number]>> = [];
for (const entry of ARG_KEYS) (ARG_KEYS_BY_LEN[entry[0].length] ??= []).push(entry);

/** Interned category names, so the common ones are not sliced out of the buffer per event. */
export const KNOWN_CATS = [
  'cpu_op',
  'kernel',
  'cpu_instant_event',
  'ac2g',
  'cuda_runtime',
  'fwdbwd',
  'gpu_memset',
  'gpu_memcpy',
  'cuda_driver',
  'overhead',
  'user_annotation',
  'gpu_user_annotation',
  'python_function',
  'cuda_sync',
  'Trace',
];
const PHASES: string[] = [];
for (const ph of 'XiIMCsfBEbentPOND') PHASES[ph.charCodeAt(0)] = ph;
const CATS_BY_LEN: string[][] = [];
for (const c of KNOWN_CATS) (CATS_BY_LEN[c.length] ??= []).push(c);

/**
 * CPU ops whose args matter: matrix multiplies and the convolution ops whose kernels cuDNN runs (shapes, dtypes,
 * a convolution's stride and padding), the fused attention ops (shapes, is_causal: attentionOps.ts) and collectives.
 */
export const CPU_OP_WITH_ARGS = new RegExp(
  `^(aten::(mm|addmm|bmm|baddbmm|matmul|linear|_scaled_mm|addbmm|_addmm_activation|cudnn_convolution|cudnn_convolution_transpose|convolution_backward|${ATTENTION_OP_PATTERN})$|record_param_comms|c10d::|nccl:)`,
);

/** The opening of a CPU op up to its name's quote, as torch and as JSON.stringify write it. */
const CPU_OP_KINETO = '"ph": "X", "cat": "cpu_op", "name": "';
const CPU_OP_COMPACT = '"ph":"X","cat":"cpu_op","name":"';

/** Categories whose args are always read. */
export const CATS_WITH_ARGS = new Set([
  'kernel',
  'gpu_memcpy',
  'gpu_memset',
  'cuda_runtime',
  'cuda_driver',
  'cuda_sync',
  'cpu_instant_event',
  'user_annotation',
  'gpu_user_annotation',
]);

/**
 * The rest of an object (after its opening brace) up to and including its closing brace,
 * for objects nested at most three deep: strings (escapes honoured) are opaque and braces
 * are counted. Brackets need no tracking, since valid JSON closes them before the brace
 * that ends the object. Each alternative starts with a different character, so a failed
 * match backtracks in linear time.
 */
const JSON_STRING = '"[^"\\\\]*(?:\\\\[^][^"\\\\]*)*"';
const objectBody = (inner: string) => `[^"{}]*(?:(?:${JSON_STRING}|\\{${inner}\\})[^"{}]*)*`;
const REST_OF_OBJECT = new RegExp(`${objectBody(objectBody(objectBody(`[^"{}]*(?:${JSON_STRING}[^"{}]*)*`)))}\\}`, 'y');

export class TraceJsonParser {
  private s = '';
  private p = 0;
  /** Characters dropped from the front of the buffer so far (for error offsets). */
  private consumed = 0;
  private state: St = St.Start;
  private topIsArray = false;
  private originUs: number | null = null;
  private readonly ev: RawEvent;
  private readonly notes = new Map<string, number>();
  private count = 0;
  private stopped: string | null = null;
  private sawEvents = false;
  /** The sink's early filter, bound once (not per event). */
  private readonly wants: TraceSink['wants'];
  private readonly skipped: TraceSink['onSkipped'];
  private retryAtLength = 0;
  /** Where the item being parsed began: an item cut by the end of the buffer is re-read from here. */
  private itemStart = 0;
  /** Chunks received while an item cut by a chunk boundary waits for more text. */
  private waiting: string[] = [];
  private waitingChars = 0;

  /**
   * `originUs` fixes the time origin up front (parallel parsing: every segment of a
   * file must share it). `startInEvents` starts inside the traceEvents array, for a
   * segment that begins with the ',' after an event (see segments.ts).
   */
  constructor(
    private readonly sink: TraceSink,
    options: { originUs?: number; startInEvents?: boolean } = {},
  ) {
    this.wants = sink.wants?.bind(sink);
    this.skipped = sink.onSkipped?.bind(sink);
    if (options.originUs !== undefined) this.originUs = options.originUs;
    if (options.startInEvents) {
      // The segment starts at the ',' that follows the previous segment's last event.
      this.state = St.EventsNext;
      this.sawEvents = true;
    }
    this.ev = {
      ph: '',
      cat: '',
      name: '',
      pid: 0,
      tid: 0,
      tsNs: Number.NaN,
      durNs: Number.NaN,
      id: null,
      args: emptyArgs(),
      hasArgs: false,
    };
  }

  /** Feeds the next chunk of text. */
  push(chunk: string): void {
    if (this.stopped !== null || this.state === St.Done) return;
    this.waiting.push(chunk);
    this.waitingChars += chunk.length;
    // An item cut by the chunk boundary is re-read from its start once enough text
    // has arrived (see run), so a huge item costs O(n log n), not O(n^2).
    if (this.s.length - this.p + this.waitingChars < this.retryAtLength) return;
    this.gather();
    this.run();
  }

  /**
   * Joins the unread rest of the buffer and the waiting chunks into one flat string.
   * `a + b` would make a cons string, on which every charCodeAt and indexOf goes
   * through an indirection (measured 1.8x slower); join copies once into a flat one.
   */
  private gather(): void {
    if (this.waiting.length === 0) return;
    const rest = this.p < this.s.length ? this.s.slice(this.p) : '';
    this.consumed += this.p;
    this.p = 0;
    if (rest === '' && this.waiting.length === 1) this.s = this.waiting[0]!;
    else {
      if (rest !== '') this.waiting.unshift(rest);
      this.s = this.waiting.join('');
    }
    this.waiting = [];
    this.waitingChars = 0;
  }

  /**
   * Fixes the time origin before any timestamp is parsed. Readers pass the first
   * `"ts"` of the text (segments.ts firstTimestampUs), so one parser and several
   * parallel ones agree even though skipped events never have their ts read.
   */
  setOriginUs(us: number): void {
    if (this.originUs === null) this.originUs = us;
  }

  /** Whether the input so far ended exactly between two events (a clean segment end). */
  endsBetweenEvents(): boolean {
    if (this.stopped !== null) return false;
    this.gather();
    if (this.state !== St.EventsNext && this.state !== St.EventsFirst) return false;
    for (let i = this.p; i < this.s.length; i++) {
      const c = this.s.charCodeAt(i);
      if (c !== Ch.Space && c !== Ch.Nl && c !== Ch.Cr && c !== Ch.Tab) return false;
    }
    return true;
  }

  /** Signals the end of input and returns what was read. */
  end(): ParseSummary {
    this.gather();
    if (this.stopped === null && this.state !== St.Done && this.retryAtLength > 0) this.run();
    const truncated = this.state !== St.Done && this.stopped === null;
    if (this.state === St.Start && this.stopped === null) {
      throw new TraceFormatError(this.s.trim().length === 0 ? 'empty file' : 'not JSON', this.consumed + this.p);
    }
    if (this.state === St.Done && !this.sawEvents)
      throw new TraceFormatError('valid JSON, but not a torch.profiler trace (no traceEvents)', this.consumed + this.p);
    if (this.count === 0 && (truncated || this.stopped !== null)) {
      throw new TraceFormatError(this.stopped ?? 'truncated before any trace event was read', this.consumed + this.p);
    }
    if (truncated) this.note('input ends early (truncated file?): analysed the events read so far');
    if (this.stopped !== null) this.note(`stopped reading at a syntax error (${this.stopped}): analysed the events before it`);
    const warnings = this.notesSoFar();
    this.s = '';
    return {
      events: this.count,
      truncated,
      stoppedAt: this.stopped,
      warnings,
      originUs: this.originUs ?? 0,
      sawTraceEvents: this.sawEvents,
    };
  }

  /** The repair notes so far, for a segment that ends without end(). */
  notesSoFar(): string[] {
    return [...this.notes].map(([text, n]) => (n > 1 ? `${text} (${n} times)` : text));
  }

  /** Records a repaired or dropped piece of input; repeats are counted, not stored. */
  note(text: string): void {
    this.notes.set(text, (this.notes.get(text) ?? 0) + 1);
  }

  private run(): void {
    this.retryAtLength = 0;
    for (;;) {
      this.itemStart = this.p;
      try {
        if (!this.step()) return;
      } catch (e) {
        let err = e;
        const start = this.itemStart;
        if (err === NEED_MORE) {
          this.p = start;
          const pending = this.s.length - start;
          if (pending <= MAX_ITEM_CHARS) {
            // Retry once the unread text has doubled: a cut event waits for one more chunk,
            // a huge item is re-read O(log n) times. Buffers stay near one chunk, under the
            // size (128 KB) from which V8 puts strings in large-object space, freed only by a full GC.
            this.retryAtLength = 2 * pending;
            return;
          }
          // Bounded memory: no event is this large; an unterminated string or bracket swallowed the rest.
          err = new TraceFormatError(
            `an item of over ${MAX_ITEM_CHARS / 1e6} million characters (unterminated string or bracket?)`,
            this.consumed + start,
          );
        }
        if (err instanceof TraceFormatError) {
          if (this.count === 0) throw err;
          this.stopped = err.message;
          this.s = '';
          this.p = 0;
          return;
        }
        throw err;
      }
    }
  }

  /** Parses one item; returns false when there is nothing more to do now. */
  private step(): boolean {
    const c = this.skipWs();
    switch (this.state) {
      case St.Start: {
        if (c === Ch.LBrace) {
          this.p++;
          this.state = St.ObjectFirstKey;
        } else if (c === Ch.LBracket) {
          // The JSON array form of the Chrome trace format: a bare list of events.
          this.p++;
          this.topIsArray = true;
          this.sawEvents = true;
          this.state = St.EventsFirst;
        } else {
          throw new TraceFormatError(this.s.charCodeAt(this.p) < 32 ? 'not JSON (binary data)' : 'not JSON', this.consumed + this.p);
        }
        return true;
      }
      case St.ObjectFirstKey:
      case St.ObjectNextKey: {
        if (c === Ch.RBrace) {
          this.p++;
          this.state = St.Done;
          return false;
        }
        if (this.state === St.ObjectNextKey) {
          if (c !== Ch.Comma) this.fail("expected ',' or '}' between top-level keys");
          this.p++;
          this.skipWs();
        }
        const key = this.readString();
        this.expectColon();
        const v = this.skipWs();
        if (key === 'traceEvents') {
          if (v !== Ch.LBracket) this.fail('traceEvents is not an array');
          this.p++;
          this.sawEvents = true;
          this.state = St.EventsFirst;
          return true;
        }
        const value = this.parseValue();
        this.state = St.ObjectNextKey;
        this.sink.onMetadata(key, value);
        return true;
      }
      case St.EventsFirst:
      case St.EventsNext: {
        // Events follow each other by the hundred thousand: loop here rather than once per step.
        const s = this.s;
        for (;;) {
          this.itemStart = this.p;
          let p = this.p;
          let d = s.charCodeAt(p);
          while (isWs(d)) d = s.charCodeAt(++p);
          this.p = p;
          if (d === Ch.RBracket) {
            this.p++;
            this.state = this.topIsArray ? St.Done : St.ObjectNextKey;
            return !this.topIsArray;
          }
          if (this.state === St.EventsNext) {
            if (d !== Ch.Comma) this.fail("expected ',' or ']' between events");
            d = s.charCodeAt(++p);
            while (isWs(d)) d = s.charCodeAt(++p);
            this.p = p;
          }
          if (d !== Ch.LBrace) {
            if (p >= s.length) throw NEED_MORE;
            this.skipValue();
            this.state = St.EventsNext;
            this.note('skipped a traceEvents element that is not an object');
            return true;
          }
          this.parseEvent();
          this.state = St.EventsNext;
        }
      }
      default:
        return false;
    }
  }

  private fail(msg: string): never {
    const s = this.s;
    const p = this.p;
    if (p >= s.length) throw NEED_MORE;
    const got = s.charCodeAt(p);
    const shown = got < 32 || got > 126 ? `byte 0x${got.toString(16)}` : `'${s[p]}'`;
    throw new TraceFormatError(`${msg}, found ${shown}`, this.consumed + p);
  }

  /** Skips whitespace; returns the next char code, or throws NEED_MORE at the end. */
  private skipWs(): number {
    const s = this.s;
    let p = this.p;
    const n = s.length;
    while (p < n) {
      const c = s.charCodeAt(p);
      if (c === Ch.Space || c === Ch.Nl || c === Ch.Cr || c === Ch.Tab || c === Ch.Bom) p++;
      else {
        this.p = p;
        return c;
      }
    }
    this.p = p;
    throw NEED_MORE;
  }

  private expectColon(): void {
    if (this.skipWs() !== Ch.Colon) this.fail("expected ':'");
    this.p++;
  }

  /**
   * From p just after a key: past the ':' and whitespace to the value, which must have started
   * in the buffer. Sets this.p there and returns it (the event loops keep positions in locals).
   */
  private valueAfterColon(p: number): number {
    const s = this.s;
    let c = s.charCodeAt(p);
    while (isWs(c)) c = s.charCodeAt(++p);
    if (c !== Ch.Colon) {
      this.p = p;
      this.fail("expected ':'");
    }
    c = s.charCodeAt(++p);
    while (isWs(c)) c = s.charCodeAt(++p);
    if (p >= s.length) throw NEED_MORE;
    this.p = p;
    return p;
  }

  /** Reads a string at p (which must be a quote); returns its value. */
  private readString(): string {
    const s = this.s;
    const start = this.p;
    if (s.charCodeAt(start) !== Ch.Quote) this.fail('expected a string');
    let q = s.indexOf('"', start + 1);
    if (q < 0) throw NEED_MORE;
    const plain = s.slice(start + 1, q);
    if (!plain.includes('\\')) {
      this.p = q + 1;
      return plain;
    }
    // Escapes: the closing quote is the first one not preceded by an odd run of backslashes.
    while (isEscaped(s, q)) {
      q = s.indexOf('"', q + 1);
      if (q < 0) throw NEED_MORE;
    }
    this.p = q + 1;
    const raw = s.slice(start, q + 1);
    try {
      return JSON.parse(raw) as string;
    } catch {
      this.note('repaired a string with an invalid escape or control character');
      return raw.slice(1, -1).replace(/\\(.)/g, '$1');
    }
  }

  /** Finds the end of a bare token (number, literal or unquoted word). */
  private tokenEnd(): number {
    const s = this.s;
    let p = this.p;
    const n = s.length;
    while (p < n) {
      const c = s.charCodeAt(p);
      if (
        c === Ch.Comma ||
        c === Ch.RBrace ||
        c === Ch.RBracket ||
        c === Ch.Space ||
        c === Ch.Nl ||
        c === Ch.Cr ||
        c === Ch.Tab ||
        c === Ch.Colon
      )
        return p;
      p++;
    }
    throw NEED_MORE;
  }

  /**
   * Parses a time in µs (the Kineto unit) into integer ns. With `relative`,
   * the origin (first whole µs seen) is subtracted before scaling, which keeps
   * the result exact. Returns NaN for anything that is not a finite number.
   */
  private readTimeNs(relative: boolean): number {
    const s = this.s;
    const start = this.p;
    let i = start;
    let neg = false;
    if (s.charCodeAt(i) === Ch.Minus) {
      neg = true;
      i++;
    }
    let whole = 0;
    let digits = 0;
    let c = s.charCodeAt(i);
    while (c >= Ch.D0 && c <= Ch.D9) {
      whole = whole * 10 + (c - Ch.D0);
      digits++;
      c = s.charCodeAt(++i);
    }
    let fracNs = 0;
    if (c === Ch.Dot) {
      c = s.charCodeAt(++i);
      let scale = 100;
      let fracDigits = 0;
      while (c >= Ch.D0 && c <= Ch.D9) {
        if (scale >= 1) fracNs += (c - Ch.D0) * scale;
        else if (scale === 0.1 && c - Ch.D0 >= 5) fracNs += 1; // round half up on the first dropped digit
        scale /= 10;
        if (scale < 0.1) scale = 0; // digits past the rounding digit are ignored
        fracDigits++;
        c = s.charCodeAt(++i);
      }
      if (fracDigits === 0 && digits === 0) {
        this.p = this.tokenEnd();
        return Number.NaN;
      }
    }
    // The token ends where the digits do unless something else follows (an exponent, a word):
    // tokenEnd's rule, without a second pass over the digits in the common case.
    const end = isTokenEnd(c) ? i : this.tokenEnd();
    this.p = end;
    if (i !== end || digits === 0 || digits > 15) {
      // Exponent, stray characters, NaN, null or a huge value: take the slow path.
      const v = Number(s.slice(start, end));
      if (!Number.isFinite(v)) return Number.NaN;
      const wholeUs = Math.trunc(v);
      if (relative) {
        if (this.originUs === null) this.originUs = wholeUs;
        return Math.round((wholeUs - this.originUs) * 1000 + (v - wholeUs) * 1000);
      }
      return Math.round(v * 1000);
    }
    if (neg) {
      whole = -whole;
      fracNs = -fracNs;
    }
    if (relative) {
      if (this.originUs === null) this.originUs = whole;
      return (whole - this.originUs) * 1000 + fracNs;
    }
    return whole * 1000 + fracNs;
  }

  /** Reads a number, keeping integers above 2^53 exact as decimal strings. */
  private readNumber(): number | string {
    const start = this.p;
    const end = this.tokenEnd();
    this.p = end;
    const text = this.s.slice(start, end);
    const v = Number(text);
    if (Number.isNaN(v)) {
      if (text === 'null') return Number.NaN;
      if (text !== 'NaN') this.note(`read the bare word '${text.slice(0, 20)}' as no value`);
      return Number.NaN;
    }
    if (!Number.isSafeInteger(v) && /^-?\d+$/.test(text)) return text;
    return v;
  }

  private readScalarNumber(): number {
    const s = this.s;
    let i = this.p;
    let c = s.charCodeAt(i);
    // Fast path: a plain non-negative integer of at most 15 digits.
    if (c >= Ch.D0 && c <= Ch.D9) {
      let v = 0;
      const start = i;
      do {
        v = v * 10 + (c - Ch.D0);
        c = s.charCodeAt(++i);
      } while (c >= Ch.D0 && c <= Ch.D9);
      if (
        i - start <= 15 &&
        (c === Ch.Comma || c === Ch.RBrace || c === Ch.Space || c === Ch.Nl || c === Ch.Cr || c === Ch.RBracket || c === Ch.Tab)
      ) {
        this.p = i;
        return v;
      }
      if (i >= s.length) throw NEED_MORE;
    }
    c = s.charCodeAt(this.p);
    if (c === Ch.Quote) {
      const v = Number(this.readString());
      return Number.isFinite(v) ? v : -1;
    }
    if (c === Ch.LBrace || c === Ch.LBracket) {
      this.skipValue();
      return -1;
    }
    const v = this.readNumber();
    return typeof v === 'number' ? v : Number(v);
  }

  private readId(): Id | null {
    const c = this.s.charCodeAt(this.p);
    if (c >= Ch.D0 && c <= Ch.D9) {
      // Common case (pids, tids, small ids): the integer fast path of readScalarNumber.
      const start = this.p;
      const v = this.readScalarNumber();
      if (Number.isSafeInteger(v)) return v;
      this.p = start;
    }
    if (c === Ch.Quote) return this.readString();
    if (c === Ch.LBrace || c === Ch.LBracket) {
      this.skipValue();
      return null;
    }
    const v = this.readNumber();
    return typeof v === 'number' && Number.isNaN(v) ? null : v;
  }

  private readStringOrNull(): string | null {
    const c = this.s.charCodeAt(this.p);
    if (c === Ch.Quote) return this.readString();
    const v = this.parseValue();
    return v === null || v === undefined ? null : String(v);
  }

  /** Parses any JSON value (plus NaN/Infinity and bare words, which old writers emit). */
  parseValue(depth = 0): unknown {
    if (depth > MAX_DEPTH) this.fail(`nesting deeper than ${MAX_DEPTH} levels`);
    const c = this.skipWs();
    if (c === Ch.Quote) return this.readString();
    if (c === Ch.LBrace) {
      this.p++;
      const obj: Record<string, unknown> = {};
      let first = true;
      for (;;) {
        const d = this.skipWs();
        if (d === Ch.RBrace) {
          this.p++;
          return obj;
        }
        if (!first) {
          if (d !== Ch.Comma) this.fail("expected ',' or '}'");
          this.p++;
          this.skipWs();
        }
        first = false;
        const k = this.readString();
        this.expectColon();
        obj[k] = this.parseValue(depth + 1);
      }
    }
    if (c === Ch.LBracket) {
      this.p++;
      const arr: unknown[] = [];
      let first = true;
      for (;;) {
        const d = this.skipWs();
        if (d === Ch.RBracket) {
          this.p++;
          return arr;
        }
        if (!first) {
          if (d !== Ch.Comma) this.fail("expected ',' or ']'");
          this.p++;
        }
        first = false;
        arr.push(this.parseValue(depth + 1));
      }
    }
    if (c === Ch.RBrace || c === Ch.RBracket || c === Ch.Comma || c === Ch.Colon) this.fail('expected a value');
    const start = this.p;
    const end = this.tokenEnd();
    const text = this.s.slice(start, end);
    if (text === 'true') {
      this.p = end;
      return true;
    }
    if (text === 'false') {
      this.p = end;
      return false;
    }
    if (text === 'null') {
      this.p = end;
      return null;
    }
    if ((c >= Ch.D0 && c <= Ch.D9) || c === Ch.Minus || text === 'NaN' || text === 'Infinity') return this.readNumber();
    this.p = end;
    if (!/^[A-Za-z/_.]+$/.test(text)) this.fail('expected a value');
    this.note(`read the bare word '${text.slice(0, 20)}' as a string`);
    return text;
  }

  /** Skips the string at p (a quote) without slicing it out. */
  private skipString(): void {
    const s = this.s;
    let q = s.indexOf('"', this.p + 1);
    while (q >= 0 && s.charCodeAt(q - 1) === Ch.Backslash && isEscaped(s, q)) q = s.indexOf('"', q + 1);
    if (q < 0) throw NEED_MORE;
    this.p = q + 1;
  }

  /** Skips any value without building it. */
  private skipValue(): void {
    const s = this.s;
    const p = this.p;
    const c = s.charCodeAt(p);
    if (c === Ch.Quote) {
      this.skipString();
      return;
    }
    if (c !== Ch.LBrace && c !== Ch.LBracket) {
      this.p = this.tokenEnd();
      return;
    }
    this.p = this.skipNested(p, 0);
  }

  /**
   * Scans from p (inside `depth` open brackets) to just past the bracket that
   * closes them, skipping strings; returns the position after it.
   */
  private skipNested(p: number, depth: number): number {
    const s = this.s;
    const n = s.length;
    while (p < n) {
      const d = s.charCodeAt(p);
      if (d === Ch.Quote) {
        // Skip the string, honouring escapes.
        let e = s.indexOf('"', p + 1);
        while (e >= 0 && isEscaped(s, e)) e = s.indexOf('"', e + 1);
        if (e < 0) throw NEED_MORE;
        p = e + 1;
        continue;
      }
      if (d === Ch.LBrace || d === Ch.LBracket) depth++;
      else if (d === Ch.RBrace || d === Ch.RBracket) {
        depth--;
        if (depth <= 0) return p + 1;
      }
      p++;
    }
    throw NEED_MORE;
  }

  /**
   * Parses one whole event object, alone in `text` (the event scanner's fallback, eventScanner.ts). Throws
   * TraceFormatError when the text is not exactly one event.
   */
  parseEventText(text: string): void {
    this.s = text;
    this.p = 0;
    try {
      if (this.skipWs() !== Ch.LBrace) this.fail('expected an event');
      this.parseEvent();
      if (this.p !== text.length) throw new TraceFormatError('an event does not end where its braces close', this.consumed + this.p);
    } catch (e) {
      if (e === NEED_MORE) throw new TraceFormatError('an event ends early', this.consumed);
      throw e;
    } finally {
      this.s = '';
      this.p = 0;
    }
  }

  private parseEvent(): void {
    const ev = this.ev;
    ev.ph = '';
    ev.cat = '';
    ev.name = '';
    ev.pid = 0;
    ev.tid = 0;
    ev.tsNs = Number.NaN;
    ev.durNs = Number.NaN;
    ev.id = null;
    ev.hasArgs = false;
    let argsReset = false;
    const s = this.s;
    const wants = this.wants;
    // Positions live in a local between keys; this.p is synced before every reader call.
    let p = this.p + 1; // '{'
    let first = true;
    // CPU ops are a third of all events and most are skipped: in the two layouts seen in
    // practice (torch's and JSON.stringify's) their first three keys are one literal.
    let c0 = s.charCodeAt(p);
    while (isWs(c0)) c0 = s.charCodeAt(++p);
    if (c0 === Ch.Quote && s.charCodeAt(p + 1) === 112 /* p */) {
      const n = s.startsWith(CPU_OP_COMPACT, p) ? CPU_OP_COMPACT.length : s.startsWith(CPU_OP_KINETO, p) ? CPU_OP_KINETO.length : 0;
      if (n > 0) {
        ev.ph = 'X';
        ev.cat = 'cpu_op';
        this.p = p + n - 1; // the name's opening quote
        ev.name = this.readString();
        if (wants !== undefined && !wants(ev.ph, ev.cat, ev.name)) {
          this.skipRestOfEvent();
          return;
        }
        p = this.p;
        first = false;
      }
    }
    for (;;) {
      let c = s.charCodeAt(p);
      while (isWs(c)) c = s.charCodeAt(++p);
      if (c === Ch.RBrace) {
        p++;
        break;
      }
      if (!first) {
        if (c !== Ch.Comma) {
          this.p = p;
          this.fail("expected ',' or '}' in an event");
        }
        c = s.charCodeAt(++p);
        while (isWs(c)) c = s.charCodeAt(++p);
      }
      first = false;
      // Keys are short ASCII: compare in place instead of slicing.
      if (c !== Ch.Quote) {
        this.p = p;
        this.fail('expected a key');
      }
      const ks = p + 1;
      const ke = keyEnd(s, ks);
      if (ke < 0) throw NEED_MORE;
      p = this.valueAfterColon(ke + 1);
      c = s.charCodeAt(p);
      const len = ke - ks;
      const k0 = s.charCodeAt(ks);
      if (len === 2 && k0 === 112 && s.charCodeAt(ks + 1) === 104) {
        ev.ph = this.readPhase();
        if (wants !== undefined && (ev.ph === 's' || ev.ph === 'f') && !wants(ev.ph, ev.cat, ev.name)) {
          this.skipRestOfEvent();
          return;
        }
      } else if (len === 3 && k0 === 99 && s.charCodeAt(ks + 1) === 97 && s.charCodeAt(ks + 2) === 116) {
        ev.cat = this.readCat();
        if (wants !== undefined && ev.name !== '' && !wants(ev.ph, ev.cat, ev.name)) {
          this.skipRestOfEvent();
          return;
        }
      } else if (len === 4 && k0 === 110 && s.charCodeAt(ks + 1) === 97 && s.charCodeAt(ks + 2) === 109 && s.charCodeAt(ks + 3) === 101) {
        ev.name = this.readStringOrNull() ?? '';
        if (wants !== undefined && ev.cat !== '' && !wants(ev.ph, ev.cat, ev.name)) {
          this.skipRestOfEvent();
          return;
        }
      } else if (len === 3 && k0 === 112 && s.charCodeAt(ks + 1) === 105 && s.charCodeAt(ks + 2) === 100) ev.pid = this.readId() ?? 0;
      else if (len === 3 && k0 === 116 && s.charCodeAt(ks + 1) === 105 && s.charCodeAt(ks + 2) === 100) ev.tid = this.readId() ?? 0;
      else if (len === 2 && k0 === 116 && s.charCodeAt(ks + 1) === 115) ev.tsNs = this.readTimeOrNaN(true);
      else if (len === 3 && k0 === 100 && s.charCodeAt(ks + 1) === 117 && s.charCodeAt(ks + 2) === 114) ev.durNs = this.readTimeOrNaN(false);
      else if (len === 2 && k0 === 105 && s.charCodeAt(ks + 1) === 100) ev.id = this.readId();
      else if (len === 4 && k0 === 97 && s.charCodeAt(ks + 1) === 114 && s.charCodeAt(ks + 2) === 103 && s.charCodeAt(ks + 3) === 115) {
        ev.hasArgs = true;
        if (c !== Ch.LBrace) this.skipValue();
        else if (this.wantsArgs(ev)) {
          // A repeated args key overwrites field by field, as before: reset once per event.
          if (!argsReset) resetArgs(ev.args);
          argsReset = true;
          this.parseArgs(ev.args);
        } else this.skipValue();
      } else this.skipValue();
      p = this.p;
    }
    this.p = p;
    if (!argsReset) resetArgs(ev.args);
    this.count++;
    this.sink.onEvent(ev);
  }

  /**
   * The sink does not want this event: jump past its closing brace without reading the rest.
   * A sticky regular expression runs in V8's compiled regexp code, several times faster
   * here than a loop over characters; nesting deeper than it handles (or an event not
   * yet complete in the buffer) takes the character loop.
   */
  private skipRestOfEvent(): void {
    REST_OF_OBJECT.lastIndex = this.p;
    this.p = REST_OF_OBJECT.test(this.s) ? REST_OF_OBJECT.lastIndex : this.skipNested(this.p, 1);
    this.count++;
    this.skipped?.(this.ev.ph, this.ev.cat, 1);
  }

  private readTimeOrNaN(relative: boolean): number {
    const c = this.s.charCodeAt(this.p);
    if (c === Ch.Quote) {
      // Some writers quote numbers.
      const text = this.readString();
      const v = Number(text);
      if (!Number.isFinite(v)) return Number.NaN;
      const wholeUs = Math.trunc(v);
      if (!relative) return Math.round(v * 1000);
      if (this.originUs === null) this.originUs = wholeUs;
      return Math.round((wholeUs - this.originUs) * 1000 + (v - wholeUs) * 1000);
    }
    if (c === Ch.LBrace || c === Ch.LBracket) {
      this.skipValue();
      return Number.NaN;
    }
    return this.readTimeNs(relative);
  }

  /** Reads an args key and returns its ARG_KEYS code, or 0 for keys gpuwise skips. */
  private readArgKey(): number {
    const s = this.s;
    const p = this.p;
    if (s.charCodeAt(p) !== Ch.Quote) this.fail('expected a key');
    const e = s.indexOf('"', p + 1);
    if (e < 0) throw NEED_MORE;
    if (s.charCodeAt(e - 1) === Ch.Backslash) {
      this.readString();
      return 0;
    }
    this.p = e + 1;
    const candidates = ARG_KEYS_BY_LEN[e - p - 1];
    if (candidates === undefined) return 0;
    const k0 = s.charCodeAt(p + 1);
    for (let i = 0; i < candidates.length; i++) {
      const entry = candidates[i]!;
      if (entry[0].charCodeAt(0) === k0 && s.startsWith(entry[0], p + 1)) return entry[1];
    }
    return 0;
  }

  /** Reads a one-letter phase without slicing. */
  private readPhase(): string {
    const s = this.s;
    const p = this.p;
    if (s.charCodeAt(p) === Ch.Quote && s.charCodeAt(p + 2) === Ch.Quote) {
      const c = s.charCodeAt(p + 1);
      if (c !== Ch.Backslash) {
        this.p = p + 3;
        return PHASES[c] ?? String.fromCharCode(c);
      }
    }
    return this.readStringOrNull() ?? '';
  }

  /** Reads a category, returning an interned string for the known ones. */
  private readCat(): string {
    const s = this.s;
    const p = this.p;
    if (s.charCodeAt(p) === Ch.Quote) {
      const e = s.indexOf('"', p + 1);
      if (e < 0) throw NEED_MORE;
      const candidates = CATS_BY_LEN[e - p - 1];
      if (candidates !== undefined) {
        for (const c of candidates) {
          if (s.startsWith(c, p + 1)) {
            this.p = e + 1;
            return c;
          }
        }
      }
    }
    return this.readStringOrNull() ?? '';
  }

  private wantsArgs(ev: RawEvent): boolean {
    const cat = ev.cat;
    if (cat === '' || ev.name === '') return true; // args before cat/name: cannot tell, read them
    if (CATS_WITH_ARGS.has(cat)) return true;
    if (ev.ph === 'M') return true;
    if (cat === 'cpu_op') return CPU_OP_WITH_ARGS.test(ev.name);
    return false;
  }

  private parseArgs(a: EventArgs): void {
    const s = this.s;
    let p = this.p + 1; // '{'
    let first = true;
    for (;;) {
      let c = s.charCodeAt(p);
      while (isWs(c)) c = s.charCodeAt(++p);
      if (c === Ch.RBrace) {
        this.p = p + 1;
        return;
      }
      if (!first) {
        if (c !== Ch.Comma) {
          this.p = p;
          this.fail("expected ',' or '}' in args");
        }
        c = s.charCodeAt(++p);
        while (isWs(c)) c = s.charCodeAt(++p);
      }
      first = false;
      this.p = p;
      const code = this.readArgKey();
      p = this.valueAfterColon(this.p);
      c = s.charCodeAt(p);
      switch (code) {
        case 1:
          a.correlation = this.readScalarNumber();
          break;
        case 2:
          a.externalId = this.readScalarNumber();
          break;
        case 3:
          a.bytes = this.readScalarNumber();
          break;
        case 5:
          a.device = this.readScalarNumber();
          break;
        case 9:
          a.blocksPerSm = this.readScalarNumber();
          break;
        case 11:
          a.collectiveName = this.readStringOrNull();
          break;
        case 12:
          a.inMsgNelems = this.readScalarNumber();
          break;
        case 13:
          a.outMsgNelems = this.readScalarNumber();
          break;
        case 14:
          a.groupSize = this.readScalarNumber();
          break;
        case 15:
          a.dtype = this.readStringOrNull();
          break;
        case 16:
          a.processGroupName = this.readStringOrNull();
          break;
        case 17:
          a.processGroupDesc = this.readStringOrNull();
          break;
        case 18:
          a.seq = this.readId();
          break;
        case 19: {
          const v = this.parseValue();
          a.inputDims = Array.isArray(v) ? v : null;
          break;
        }
        case 20: {
          const v = this.parseValue();
          a.inputType = Array.isArray(v) ? v : null;
          break;
        }
        case 21:
          a.totalAllocated = this.readScalarNumber();
          break;
        case 22:
          a.totalReserved = this.readScalarNumber();
          break;
        case 23:
          a.deviceType = this.readScalarNumber();
          break;
        case 24:
          a.deviceId = this.readScalarNumber();
          break;
        case 25: {
          const v = this.parseValue();
          a.concreteInputs = Array.isArray(v) ? v : null;
          break;
        }
        default: {
          // Most skipped args are plain integers: step over the digits in place.
          let d = c;
          while (d >= Ch.D0 && d <= Ch.D9) d = s.charCodeAt(++p);
          if (p > this.p && (d === Ch.Comma || d === Ch.RBrace)) this.p = p;
          else this.skipValue();
        }
      }
      p = this.p;
    }
  }
}

/**
 * The closing quote of the event key starting at ks. The keys every event has are
 * recognised from their characters (no search, no call); others are searched for.
 */
function keyEnd(s: string, ks: number): number {
  const k0 = s.charCodeAt(ks);
  const k1 = s.charCodeAt(ks + 1);
  if (k0 === 112 /* p */ && k1 === 104 /* h */ && s.charCodeAt(ks + 2) === Ch.Quote) return ks + 2;
  if (k0 === 116 /* t */ && k1 === 115 /* s */ && s.charCodeAt(ks + 2) === Ch.Quote) return ks + 2;
  if ((k0 === 99 /* c */ || k0 === 112 /* p */ || k0 === 116 /* t */ || k0 === 100) /* d */ && s.charCodeAt(ks + 3) === Ch.Quote) {
    const k2 = s.charCodeAt(ks + 2);
    if (k1 !== Ch.Quote && k2 !== Ch.Quote && k1 !== Ch.Backslash && k2 !== Ch.Backslash) return ks + 3;
  }
  if ((k0 === 110 /* n */ || k0 === 97) /* a */ && s.charCodeAt(ks + 4) === Ch.Quote) {
    const k2 = s.charCodeAt(ks + 2);
    const k3 = s.charCodeAt(ks + 3);
    if (k1 !== Ch.Quote && k2 !== Ch.Quote && k3 !== Ch.Quote && k1 !== Ch.Backslash && k2 !== Ch.Backslash && k3 !== Ch.Backslash) return ks + 4;
  }
  return s.indexOf('"', ks);
}

/** The characters that end a bare token (tokenEnd's set). */
function isTokenEnd(c: number): boolean {
  return c === Ch.Comma || c === Ch.RBrace || c === Ch.RBracket || c === Ch.Space || c === Ch.Nl || c === Ch.Cr || c === Ch.Tab || c === Ch.Colon;
}

/** JSON whitespace, plus the byte-order mark that some writers leave in. */
function isWs(c: number): boolean {
  return c === Ch.Space || c === Ch.Nl || c === Ch.Cr || c === Ch.Tab || c === Ch.Bom;
}

/** Whether the quote at q is escaped (preceded by an odd number of backslashes). */
function isEscaped(s: string, q: number): boolean {
  let k = q - 1;
  while (s.charCodeAt(k) === Ch.Backslash) k--;
  return ((q - 1 - k) & 1) === 1;
}
