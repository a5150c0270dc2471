/**
 * Parsing segments (segmentedLoad.ts): `SegmentParser` parses the segments one
 * thread is given into one TraceModelBuilder, on the main thread or in a parse
 * worker (`runParseWorker`, which returns its model). The worker runs inside
 * the bundled CLI file (bin.ts dispatches here when started as a parse worker).
 */
import { isAscii } from 'node:buffer';
import { parentPort, workerData } from 'node:worker_threads';
import { TraceModelBuilder } from '../trace/builder.js';
import { EventScanner } from '../trace/eventScanner.js';
import type { TraceModel } from '../trace/model.js';
import { TraceFormatError, TraceJsonParser, endedEarly } from '../trace/parser.js';

export interface SegmentMessage {
  type: 'segment';
  /** The segment's UTF-8 bytes (transferred, not copied; each parser decodes its own segments). */
  bytes: Uint8Array;
  first: boolean;
  last: boolean;
}
/** `stop`: leave (the thread ends once its port is closed). */
export type ToWorker = SegmentMessage | { type: 'finish' } | { type: 'stop' };
export type FromWorker = { type: 'done-segment' } | { type: 'failed'; reason: string } | { type: 'model'; model: unknown };

export const PARSE_WORKER_FLAG = 'gpuwiseParseWorker';

export function isParseWorker(): boolean {
  return parentPort !== null && (workerData as Record<string, unknown> | null)?.[PARSE_WORKER_FLAG] === true;
}

export function runParseWorker(): void {
  const port = parentPort!;
  const { originUs, source } = workerData as { originUs: number; source: string };
  const parser = new SegmentParser(new TraceModelBuilder(source), originUs);
  port.on('message', (msg: ToWorker) => {
    if (msg.type === 'stop') {
      port.close();
      return;
    }
    if (msg.type === 'finish') {
      const model = parser.finish();
      // Hand the op logs over instead of copying them: the main thread would otherwise hold a third copy while merging.
      const buffers = new Set<ArrayBuffer>();
      for (const log of model.gpu.logs) for (const c of log.chunks) if (c !== null) buffers.add(c.buffer as ArrayBuffer);
      for (const v of Object.values(model.gpu.syncCalls)) if (ArrayBuffer.isView(v)) buffers.add(v.buffer as ArrayBuffer);
      port.postMessage({ type: 'model', model } satisfies FromWorker, [...buffers]);
      return;
    }
    const failed = parser.parse(msg);
    port.postMessage((failed === null ? { type: 'done-segment' } : { type: 'failed', reason: failed }) satisfies FromWorker);
  });
}

/**
 * Parses the segments one thread is given into one builder: the workers and, with 2 threads, the main thread. Middle
 * segments of ASCII text go through the WebAssembly event scanner (trace/eventScanner.ts) unless GPUWISE_NO_WASM is
 * set; the rest, and whatever the scanner declines, through the parser.
 */
export class SegmentParser {
  private readonly warnings: string[] = [];
  private endedEarly: string | null = null;
  private readonly scanner: EventScanner | null;
  private segments = 0;
  private scanned = 0;
  constructor(
    private readonly builder: TraceModelBuilder,
    private readonly originUs: number,
  ) {
    this.scanner = process.env.GPUWISE_NO_WASM ? null : EventScanner.create(builder, originUs);
  }

  /** Parses one segment; returns why the parallel path must give up, or null. */
  parse(msg: SegmentMessage): string | null {
    this.segments++;
    const buf = Buffer.from(msg.bytes.buffer, msg.bytes.byteOffset, msg.bytes.byteLength);
    const ascii = isAscii(buf);
    if (this.scanner !== null && ascii && !msg.first && !msg.last) {
      const parser = new TraceJsonParser(this.builder, { originUs: this.originUs, startInEvents: true });
      const outcome = this.scanner.scanSegment(buf, parser);
      if (outcome.kind === 'failed') return outcome.reason;
      if (outcome.kind === 'done') {
        this.scanned++;
        this.warnings.push(...parser.notesSoFar());
        return null;
      }
    }
    // Invalid UTF-8: the sequential reader replaces it and says where.
    const text = ascii ? buf.toString('latin1') : decodeUtf8(buf);
    if (text === null) return 'invalid UTF-8: read sequentially for exact warnings';
    const parser = new TraceJsonParser(this.builder, { originUs: this.originUs, startInEvents: !msg.first });
    try {
      parser.push(text);
      if (!msg.last) {
        // A middle segment must end exactly between two events, or the cut was wrong.
        if (!parser.endsBetweenEvents()) return 'segment did not end between events';
        this.warnings.push(...parser.notesSoFar());
      } else {
        const summary = parser.end();
        if (summary.stoppedAt !== null) return summary.stoppedAt;
        this.warnings.push(...summary.warnings);
        this.endedEarly = endedEarly(summary);
      }
      return null;
    } catch (e) {
      return e instanceof TraceFormatError ? e.message : String(e);
    }
  }

  finish(): TraceModel {
    if (process.env.GPUWISE_DEBUG) process.stderr.write(`parse thread: ${this.segments} segments, ${this.scanned} by the event scanner\n`);
    return this.builder.finish(this.originUs, [...new Set(this.warnings)], this.endedEarly);
  }
}

// ignoreBOM: a byte-order mark stays in the text, as the sequential reader's decoder leaves it.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Non-ASCII text as one flat string; null when it is not valid UTF-8. */
function decodeUtf8(buf: Buffer): string | null {
  try {
    return utf8.decode(buf);
  } catch {
    return null;
  }
}
