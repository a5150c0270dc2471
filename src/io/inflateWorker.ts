/**
 * Shell: a worker thread that decompresses a gzip trace and cuts it into segments at event boundaries, for the main
 * thread to parse. Why a thread of its own: zlib's asynchronous inflate needs the main thread's event loop between
 * its steps, so while the main thread parses, decompression stands still (the 211 MB benchmark: 0.75 s of inflate and
 * 1.1 s of parse added up to about 2 s on one thread). Here it runs ahead, a few segments at most; it holds no model,
 * so it costs little memory. Runs inside the bundled CLI file (bin.ts dispatches here).
 */
import { createReadStream } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import { createGunzip } from 'node:zlib';
import { SegmentCutter } from '../trace/segments.js';

export const INFLATE_WORKER_FLAG = 'gpuwiseInflateWorker';

/** From the worker: a segment (its buffer transferred), or why it stopped. */
export type FromInflater =
  | { type: 'segment'; bytes: Uint8Array; last: boolean; compressedBytesRead: number }
  | { type: 'failed'; reason: string }
  | { type: 'no-boundary' };
/** To the worker: a segment was parsed (flow control), or leave (the thread ends once its port is closed). */
export type ToInflater = { type: 'done-segment' } | { type: 'stop' };

export interface InflaterOptions {
  path: string;
  segmentBytes: number;
  /** Segments sent and not yet parsed before decompression pauses. */
  inFlight: number;
  /** No event boundary within this many bytes: not an event list. */
  maxPendingBytes: number;
}

export function isInflateWorker(): boolean {
  return parentPort !== null && (workerData as Record<string, unknown> | null)?.[INFLATE_WORKER_FLAG] === true;
}

export function runInflateWorker(): void {
  const port = parentPort!;
  const { path, segmentBytes, inFlight, maxPendingBytes } = workerData as InflaterOptions;
  let compressed = 0;
  const file = createReadStream(path, { highWaterMark: 1024 * 1024 });
  file.on('data', (b) => {
    compressed += b.length;
  });
  const gunzip = file.pipe(createGunzip({ chunkSize: 1024 * 1024 }));
  const cutter = new SegmentCutter(segmentBytes, maxPendingBytes);
  let unparsed = 0;
  let stopped = false;
  const send = (msg: FromInflater) => {
    if (msg.type === 'segment') {
      unparsed++;
      port.postMessage(msg, [msg.bytes.buffer as ArrayBuffer]);
    } else port.postMessage(msg);
  };
  const halt = () => {
    stopped = true;
    file.destroy();
    gunzip.destroy();
  };
  /** Sends the last message; the thread stays until the main thread says stop. */
  const stop = (msg: FromInflater) => {
    send(msg);
    halt();
  };
  port.on('message', (msg: ToInflater) => {
    if (msg.type === 'stop') {
      halt();
      port.close();
    } else if (--unparsed < inFlight && !stopped) gunzip.resume();
  });
  gunzip.on('data', (chunk: Buffer) => {
    if (stopped) return;
    cutter.append(chunk);
    for (;;) {
      const bytes = cutter.next(false);
      if (bytes === null) break;
      if (bytes === 'no-boundary') return stop({ type: 'no-boundary' });
      send({ type: 'segment', bytes, last: false, compressedBytesRead: compressed });
    }
    if (unparsed >= inFlight) gunzip.pause();
  });
  gunzip.on('end', () => {
    if (!stopped) stop({ type: 'segment', bytes: cutter.rest(false), last: true, compressedBytesRead: compressed });
  });
  const failed = (e: Error) => {
    if (!stopped) stop({ type: 'failed', reason: e.message });
  };
  gunzip.on('error', failed);
  file.on('error', failed);
}
