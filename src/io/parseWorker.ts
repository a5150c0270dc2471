/**
 * Worker side of the parallel loader: parses the segments it is sent into one
 * TraceModelBuilder and returns the model. Runs inside the bundled CLI file
 * (bin.ts dispatches here when started as a parse worker).
 */
import { isAscii } from 'node:buffer';
import { parentPort, workerData } from 'node:worker_threads';
import { TraceModelBuilder } from '../trace/builder.js';
import { TraceFormatError, TraceJsonParser } from '../trace/parser.js';

export interface SegmentMessage {
  type: 'segment';
  /** The segment's UTF-8 bytes (transferred, not copied; each parser decodes its own segments). */
  bytes: Uint8Array;
  first: boolean;
  last: boolean;
}
export type ToWorker = SegmentMessage | { type: 'finish' };
export type FromWorker = { type: 'done-segment' } | { type: 'failed'; reason: string } | { type: 'model'; model: unknown };

export const PARSE_WORKER_FLAG = 'gpuwiseParseWorker';

export function isParseWorker(): boolean {
  return parentPort !== null && (workerData as Record<string, unknown> | null)?.[PARSE_WORKER_FLAG] === true;
}

export function runParseWorker(): void {
  const port = parentPort!;
  const { originUs, source } = workerData as { originUs: number; source: string };
  const builder = new TraceModelBuilder(source);
  const warnings: string[] = [];
  port.on('message', (msg: ToWorker) => {
    if (msg.type === 'finish') {
      const model = builder.finish(originUs, [...new Set(warnings)]);
      // Hand the op logs over instead of copying them: the main thread would otherwise hold a third copy while merging.
      const buffers = new Set<ArrayBuffer>();
      for (const log of model.gpu.logs) for (const c of log.chunks) if (c !== null) buffers.add(c.buffer as ArrayBuffer);
      for (const v of Object.values(model.gpu.syncCalls)) if (ArrayBuffer.isView(v)) buffers.add(v.buffer as ArrayBuffer);
      port.postMessage({ type: 'model', model } satisfies FromWorker, [...buffers]);
      return;
    }
    const failed = parseSegment(builder, msg, originUs, warnings);
    port.postMessage((failed === null ? { type: 'done-segment' } : { type: 'failed', reason: failed }) satisfies FromWorker);
  });
}

/**
 * Parses one segment into `builder` (adding its warnings); returns why the parallel path must give up, or null.
 * Shared by the workers and by the main thread when it parses segments itself.
 */
export function parseSegment(builder: TraceModelBuilder, msg: SegmentMessage, originUs: number, warnings: string[]): string | null {
  const text = decodeSegment(msg.bytes);
  // Invalid UTF-8: the sequential reader replaces it and says where.
  if (text === null) return 'invalid UTF-8: read sequentially for exact warnings';
  const parser = new TraceJsonParser(builder, { originUs, startInEvents: !msg.first });
  try {
    parser.push(text);
    if (!msg.last) {
      // A middle segment must end exactly between two events, or the cut was wrong.
      if (!parser.endsBetweenEvents()) return 'segment did not end between events';
      warnings.push(...parser.notesSoFar());
    } else {
      const summary = parser.end();
      if (summary.stoppedAt !== null) return summary.stoppedAt;
      warnings.push(...summary.warnings);
    }
    return null;
  } catch (e) {
    return e instanceof TraceFormatError ? e.message : String(e);
  }
}

// ignoreBOM: a byte-order mark stays in the text, as the sequential reader's decoder leaves it.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** A segment's text as one flat string (ASCII as Latin-1, the fast path); null when it is not valid UTF-8. */
function decodeSegment(bytes: Uint8Array): string | null {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (isAscii(buf)) return buf.toString('latin1');
  try {
    return utf8.decode(buf);
  } catch {
    return null;
  }
}
