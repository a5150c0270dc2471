/**
 * The WebAssembly event scanner's host side: runs the scanner (wasm/scanner.as.ts) over a segment's bytes and replays
 * its records into the sink, event by event, exactly as TraceJsonParser would have called it.
 *
 * Why: parsing is most of an analysis, and the parser spends it turning bytes into a string and walking it a
 * character at a time. The scanner walks the bytes themselves and hands over only what the sink reads (names
 * interned once, numbers decoded), which takes the 211 MB benchmark trace's parse from about 1.9 to 0.8 s on one
 * thread. The parser stays the reference: the scanner passes it any event it cannot decode exactly (its byte range
 * is read by TraceJsonParser.parseEventText) and declines any segment the parser would reject or repair, so the
 * sink sees the same calls, and the report the same figures, either way (test/trace/eventScanner.test.ts).
 *
 * Only the middle of traceEvents goes through it (a segment of `, {event}` items, see segments.ts), and only ASCII
 * text (the caller checks): the top level, the first and last segments and non-ASCII text stay with the parser.
 */
import { type EventArgs, type RawEvent, type TraceSink, emptyArgs, resetArgs } from './event.js';
import { ARG_KEYS, CATS_WITH_ARGS, CPU_OP_WITH_ARGS, KNOWN_CATS, TraceFormatError, type TraceJsonParser } from './parser.js';
import { SCANNER_WASM_BASE64 } from './wasm/scannerBinary.js';

/** What scanSegment did: `declined` means nothing reached the sink, so the parser can read the segment instead. */
export type ScanOutcome = { kind: 'done' } | { kind: 'declined' } | { kind: 'failed'; reason: string };

interface ScannerExports {
  memory: WebAssembly.Memory;
  init(): number;
  setDictionary(cats: number, args: number, cpuOpCat: number, catsWithArgs: number, originUs: number): number;
  reserveInput(len: number): number;
  scan(from: number, to: number): number;
  outAddress(): number;
  outSlots(): number;
  resumePosition(): number;
}

// Record layout (keep in step with scanner.as.ts).
const KIND_SKIP = 1;
const KIND_FALLBACK = 2;
const KIND_EVENT = 3;
const HAS_ARGS = 1 << 14;
const ARGS_READ = 1 << 15;
const NAME_CPU_OP_WITH_ARGS = 1;
const ARG_NUMBER = 1;
const ARG_STRING = 2;
const ARG_ID = 3;
const ARG_VALUE = 4;
const EVENT_SLOTS = 7;
const DONE = 0;
const PAUSED = 1;

/** Where each args field sits in a record (after its 7 event slots), and how the scanner reads it. */
const ARG_FIELDS: Record<keyof EventArgs, readonly [slot: number, kind: number]> = {
  correlation: [0, ARG_NUMBER],
  externalId: [1, ARG_NUMBER],
  bytes: [2, ARG_NUMBER],
  device: [3, ARG_NUMBER],
  blocksPerSm: [4, ARG_NUMBER],
  collectiveName: [5, ARG_STRING],
  inMsgNelems: [6, ARG_NUMBER],
  outMsgNelems: [7, ARG_NUMBER],
  groupSize: [8, ARG_NUMBER],
  dtype: [9, ARG_STRING],
  processGroupName: [10, ARG_STRING],
  processGroupDesc: [11, ARG_STRING],
  seq: [12, ARG_ID],
  inputDims: [0, ARG_VALUE],
  inputType: [0, ARG_VALUE],
  concreteInputs: [0, ARG_VALUE],
  totalAllocated: [13, ARG_NUMBER],
  totalReserved: [14, ARG_NUMBER],
  deviceType: [15, ARG_NUMBER],
  deviceId: [16, ARG_NUMBER],
};

let compiled: WebAssembly.Module | null | undefined;

/** The compiled module, once per thread; null where WebAssembly is missing or refuses it. */
function scannerModule(): WebAssembly.Module | null {
  if (compiled === undefined) {
    try {
      const bytes = Uint8Array.from(atob(SCANNER_WASM_BASE64), (c) => c.charCodeAt(0));
      compiled = new WebAssembly.Module(bytes);
    } catch {
      compiled = null;
    }
  }
  return compiled;
}

const ascii = new TextDecoder('utf-8');
const phases: string[] = [''];
const phaseOf = (code: number): string => (phases[code] ??= String.fromCharCode(code));
const catOf = (code: number): string => (code === 0 ? '' : KNOWN_CATS[code - 1]!);

export class EventScanner {
  private readonly x: ScannerExports;
  /** Strings by scanner id (names and string args); id 0 is "". */
  private readonly names: string[] = [''];
  private readonly ev: RawEvent;
  /** Events handed to the sink or skipped by the scanner itself (the parser counts those it reads). */
  events = 0;
  /** Skipped events of the records being replayed, by phase (low 7 bits) and category code. */
  private readonly skipped = new Int32Array(4096);

  /** Whether this runtime can run the scanner (WebAssembly with SIMD). */
  static available(): boolean {
    return scannerModule() !== null;
  }

  /** A scanner for `sink` (which must have `wants`); null where WebAssembly is unavailable. */
  static create(sink: TraceSink, originUs: number): EventScanner | null {
    const module = scannerModule();
    if (module === null || sink.wants === undefined) return null;
    try {
      return new EventScanner(module, sink, originUs);
    } catch {
      return null;
    }
  }

  private constructor(
    module: WebAssembly.Module,
    private readonly sink: TraceSink,
    originUs: number,
  ) {
    const wants = sink.wants!.bind(sink);
    const imports = {
      env: {
        wants: (ph: number, cat: number, name: number) => (wants(phaseOf(ph), catOf(cat), this.names[name]!) ? 1 : 0),
        newName: (ptr: number, len: number) => {
          const name = ascii.decode(new Uint8Array(this.x.memory.buffer, ptr, len));
          this.names.push(name);
          // Kept per name by the scanner: whether the parser reads the args of a CPU op of this name.
          return CPU_OP_WITH_ARGS.test(name) ? NAME_CPU_OP_WITH_ARGS : 0;
        },
        abort: () => {
          throw new Error('event scanner aborted');
        },
      },
    };
    this.x = new WebAssembly.Instance(module, imports).exports as unknown as ScannerExports;
    this.writeDictionary(originUs);
    this.ev = { ph: '', cat: '', name: '', pid: 0, tid: 0, tsNs: Number.NaN, durNs: Number.NaN, id: null, args: emptyArgs(), hasArgs: false };
  }

  /** Tells the scanner the categories and args keys the parser knows (parser.ts stays their one list). */
  private writeDictionary(originUs: number): void {
    const at = this.x.init();
    const out = new Uint8Array(this.x.memory.buffer, at, 4096);
    let o = 0;
    let withArgs = 0;
    KNOWN_CATS.forEach((cat, i) => {
      out[o++] = i + 1;
      out[o++] = cat.length;
      for (let k = 0; k < cat.length; k++) out[o++] = cat.charCodeAt(k);
      if (CATS_WITH_ARGS.has(cat)) withArgs |= 1 << (i + 1);
    });
    for (const [key, code, field] of ARG_KEYS) {
      const [slot, kind] = ARG_FIELDS[field];
      out[o++] = code;
      out[o++] = slot;
      out[o++] = kind;
      out[o++] = key.length;
      for (let k = 0; k < key.length; k++) out[o++] = key.charCodeAt(k);
    }
    if (!this.x.setDictionary(KNOWN_CATS.length, ARG_KEYS.length, KNOWN_CATS.indexOf('cpu_op') + 1, withArgs, originUs)) {
      throw new Error('the event scanner cannot index these args keys');
    }
  }

  /**
   * Scans a middle segment (ASCII bytes of `, {event}` items) into the sink. Events the scanner leaves to the parser
   * go to `parser` (built on the same sink and origin). `declined`: nothing reached the sink.
   */
  scanSegment(bytes: Uint8Array, parser: TraceJsonParser): ScanOutcome {
    const x = this.x;
    const base = x.reserveInput(bytes.length);
    new Uint8Array(x.memory.buffer, base, bytes.length).set(bytes);
    const end = base + bytes.length;
    let from = base;
    let replayed = false;
    for (;;) {
      const status = x.scan(from, end);
      if (status !== DONE && status !== PAUSED) {
        return replayed ? { kind: 'failed', reason: 'the event scanner stopped inside a segment' } : { kind: 'declined' };
      }
      const failed = this.replay(bytes, parser);
      if (failed !== null) return { kind: 'failed', reason: failed };
      replayed = true;
      if (status === DONE) return { kind: 'done' };
      from = x.resumePosition();
    }
  }

  /** Hands the last scan's records to the sink; returns why it could not, or null. */
  private replay(bytes: Uint8Array, parser: TraceJsonParser): string | null {
    const x = this.x;
    const n = x.outSlots();
    const r = new Float64Array(x.memory.buffer, x.outAddress(), n);
    const sink = this.sink;
    const ev = this.ev;
    const names = this.names;
    const skipped = this.skipped;
    let i = 0;
    while (i < n) {
      const head = r[i]!;
      const kind = head & 3;
      if (kind === KIND_SKIP) {
        skipped[(head >> 2) & 4095]!++;
        i += 1;
      } else if (kind === KIND_FALLBACK) {
        try {
          parser.parseEventText(ascii.decode(bytes.subarray(r[i + 1]!, r[i + 2]!)));
        } catch (e) {
          return e instanceof TraceFormatError ? e.message : String(e);
        }
        i += 3;
      } else if (kind === KIND_EVENT) {
        ev.ph = phaseOf((head >> 2) & 127);
        ev.cat = catOf((head >> 9) & 31);
        ev.name = names[r[i + 1]!]!;
        ev.pid = r[i + 2]!;
        ev.tid = r[i + 3]!;
        ev.tsNs = r[i + 4]!;
        ev.durNs = r[i + 5]!;
        const id = r[i + 6]!;
        ev.id = Number.isNaN(id) ? null : id;
        ev.hasArgs = (head & HAS_ARGS) !== 0;
        const a = ev.args;
        i += EVENT_SLOTS;
        if ((head & ARGS_READ) === 0) resetArgs(a);
        else {
          // Every field is in the record but the shapes (events with shapes go to the parser).
          a.inputDims = null;
          a.inputType = null;
          a.concreteInputs = null;
          a.correlation = r[i]!;
          a.externalId = r[i + 1]!;
          a.bytes = r[i + 2]!;
          a.device = r[i + 3]!;
          a.blocksPerSm = r[i + 4]!;
          a.collectiveName = stringArg(names, r[i + 5]!);
          a.inMsgNelems = r[i + 6]!;
          a.outMsgNelems = r[i + 7]!;
          a.groupSize = r[i + 8]!;
          a.dtype = stringArg(names, r[i + 9]!);
          a.processGroupName = stringArg(names, r[i + 10]!);
          a.processGroupDesc = stringArg(names, r[i + 11]!);
          const seq = r[i + 12]!;
          a.seq = Number.isNaN(seq) ? null : seq;
          a.totalAllocated = r[i + 13]!;
          a.totalReserved = r[i + 14]!;
          a.deviceType = r[i + 15]!;
          a.deviceId = r[i + 16]!;
          i += 17;
        }
        this.events++;
        sink.onEvent(ev);
      } else return 'the event scanner wrote an unknown record';
    }
    // Skipped events are reported per phase and category, in one call each.
    for (let k = 0; k < skipped.length; k++) {
      const count = skipped[k]!;
      if (count === 0) continue;
      skipped[k] = 0;
      this.events += count;
      sink.onSkipped?.(phaseOf(k & 127), catOf(k >> 7), count);
    }
    return null;
  }
}

function stringArg(names: string[], id: number): string | null {
  return id < 0 ? null : names[id]!;
}
