/**
 * Shell: parses a large trace on several threads. The main thread reads and
 * decodes (gzip too), cuts the text into multi-megabyte segments at event
 * boundaries (trace/segments.ts) and hands them round-robin to parse workers;
 * each worker builds a partial model, and the parts are merged
 * (trace/merge.ts). Anything unexpected (a cut inside a string, a syntax
 * error, damaged gzip, a worker that cannot start) returns null and the caller
 * reads the file again with one parser, which gives the exact sequential
 * semantics, warnings and errors included.
 */
import { Worker } from 'node:worker_threads';
import { mergeModels } from '../trace/merge.js';
import type { TraceModel } from '../trace/model.js';
import { findEventBoundary, firstTimestampUs } from '../trace/segments.js';
import type { FromWorker, ToWorker } from './parseWorker.js';
import { PARSE_WORKER_FLAG } from './parseWorker.js';
import { ChunkDecoder, type ReadProgress, openTraceSource } from './readTrace.js';

const SEGMENT_CHARS = 4 * 1024 * 1024;
/** No boundary within this much text: not a Kineto event list; give up on parallel. */
const MAX_PENDING_CHARS = 64 * 1024 * 1024;
/** Segments queued per worker before reading pauses (bounds memory). */
const IN_FLIGHT_PER_WORKER = 2;

class WorkerHandle {
  inFlight = 0;
  failed: string | null = null;
  private model: Promise<TraceModel>;
  private resolveModel!: (m: TraceModel) => void;
  private waiters: (() => void)[] = [];
  constructor(
    readonly worker: Worker,
    private readonly onFail: (reason: string) => void,
  ) {
    this.model = new Promise((res) => {
      this.resolveModel = res;
    });
    worker.on('message', (msg: FromWorker) => {
      if (msg.type === 'done-segment') this.inFlight--;
      else if (msg.type === 'failed') this.fail(msg.reason);
      else this.resolveModel(msg.model as TraceModel);
      this.wake();
    });
    worker.on('error', (e) => this.fail(`worker error: ${e.message}`));
    worker.on('exit', (code) => {
      if (code !== 0) this.fail(`worker exited with ${code}`);
    });
  }
  private fail(reason: string): void {
    if (this.failed === null) {
      this.failed = reason;
      this.onFail(reason);
    }
    this.wake();
  }
  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }
  send(msg: ToWorker): void {
    if (msg.type === 'segment') this.inFlight++;
    this.worker.postMessage(msg);
  }
  /** Resolves when fewer than `limit` segments are queued (or the worker failed). */
  async room(limit: number): Promise<void> {
    while (this.inFlight >= limit && this.failed === null) await new Promise<void>((r) => this.waiters.push(r));
  }
  async finish(): Promise<TraceModel | null> {
    await this.room(1);
    if (this.failed !== null) return null;
    this.send({ type: 'finish' });
    return Promise.race([this.model, new Promise<null>((r) => this.waiters.push(() => this.failed !== null && r(null)))]);
  }
}

/** Returns the model, or null when the parallel path does not apply (the caller then reads sequentially). */
export async function loadTraceParallel(path: string, workers: number, workerUrl: URL, onProgress?: ReadProgress): Promise<TraceModel | null> {
  const source = await openTraceSource(path);
  const decoder = new ChunkDecoder();
  const handles: WorkerHandle[] = [];
  let failure: string | null = null;
  const fail = (reason: string) => {
    failure ??= reason;
  };
  let pending = '';
  let segments = 0;
  let originUs: number | null = null;

  const dispatch = async (text: string, last: boolean) => {
    if (originUs === null) {
      originUs = firstTimestampUs(text);
      if (originUs === null) return fail('no timestamp in the first segment');
      for (let i = 0; i < workers; i++) {
        const w = new Worker(workerUrl, { workerData: { [PARSE_WORKER_FLAG]: true, originUs, source: path } });
        handles.push(new WorkerHandle(w, fail));
      }
    }
    const h = handles[segments % handles.length]!;
    await h.room(IN_FLIGHT_PER_WORKER);
    h.send({ type: 'segment', text, first: segments === 0, last });
    segments++;
  };

  try {
    for await (const chunk of source.chunks) {
      if (failure !== null) break;
      pending += decoder.decode(chunk);
      onProgress?.(source.progress.bytesRead, source.sizeBytes);
      if (pending.length < SEGMENT_CHARS) continue;
      const cut = findEventBoundary(pending, pending.length - 1);
      if (cut <= 0) {
        if (pending.length > MAX_PENDING_CHARS) fail('no event boundary found');
        continue;
      }
      await dispatch(pending.slice(0, cut), false);
      pending = pending.slice(cut);
    }
    if (failure === null) {
      pending += decoder.end();
      if (decoder.replaced) fail('invalid UTF-8: read sequentially for exact warnings');
      else await dispatch(pending, true);
    }
    if (failure !== null) return null;
    const parts = await Promise.all(
      handles.map(async (h) => {
        const part = await h.finish();
        await h.worker.terminate(); // its heap is garbage now
        return part;
      }),
    );
    if (failure !== null || parts.some((p) => p === null)) return null;
    onProgress?.(source.sizeBytes, source.sizeBytes);
    return mergeModels(parts as TraceModel[]);
  } catch {
    // Damaged gzip and the like: the sequential reader reports them precisely.
    return null;
  } finally {
    await source.chunks.return(undefined);
    await Promise.all(handles.map((h) => h.worker.terminate()));
  }
}
