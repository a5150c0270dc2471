/**
 * Shell: reads a trace in segments. The bytes are cut at event boundaries (trace/segments.ts); the main thread parses
 * them (their middles through the event scanner, trace/eventScanner.ts), a gzip file being decompressed by an inflate
 * worker meanwhile (inflateWorker.ts); with parse workers (GPUWISE_THREADS) segments go round-robin to workers that
 * build partial models, which are merged (trace/merge.ts). A segment moves to a worker as bytes whose buffer is
 * transferred, not as a string copied into its heap. Anything unexpected (a cut inside a string, a syntax error,
 * damaged gzip, a worker that cannot start) returns null, and the caller reads the file again with the parser alone,
 * which gives the exact sequential semantics, warnings and errors included.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { setFlagsFromString } from 'node:v8';
import { Worker } from 'node:worker_threads';
import { mergeModels } from '../trace/merge.js';
import type { TraceModel } from '../trace/model.js';
import type { ChunkStore } from '../trace/opLog.js';
import { SegmentCutter, firstTimestampUs } from '../trace/segments.js';
import { TraceModelBuilder } from '../trace/builder.js';
import { type FromInflater, INFLATE_WORKER_FLAG, type InflaterOptions, type ToInflater } from './inflateWorker.js';
import type { FromWorker, ToWorker } from './parseWorker.js';
import { PARSE_WORKER_FLAG, SegmentParser } from './parseWorker.js';
import { type ReadProgress, type TraceSource, openTraceSource } from './readTrace.js';

const SEGMENT_BYTES = 4 * 1024 * 1024;
/**
 * One thread: segments only need to be large enough for the scanner's calls to be few. Smaller ones keep the
 * scanner's input buffer and the first and last segments' text small (with 4 MB the peak of a 2 GB DDP trace was
 * 20 MB higher).
 */
const ONE_THREAD_SEGMENT_BYTES = 1024 * 1024;
/** No boundary within this much text: not a Kineto event list; give up on parallel. */
const MAX_PENDING_BYTES = 64 * 1024 * 1024;
/** Segments queued per worker before reading pauses (bounds memory). */
const IN_FLIGHT_PER_WORKER = 2;
/** Segments the inflate worker may be ahead of the parser. */
const INFLATE_IN_FLIGHT = 4;

class WorkerHandle {
  inFlight = 0;
  failed: string | null = null;
  /** Set before we stop the worker ourselves: its exit (1 if it had to be terminated) is then not a failure. */
  private closing = false;
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
      if (code !== 0 && !this.closing) this.fail(`worker exited with ${code}`);
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
    if (msg.type === 'segment') {
      this.inFlight++;
      this.worker.postMessage(msg, [msg.bytes.buffer as ArrayBuffer]);
    } else this.worker.postMessage(msg);
  }
  /** Resolves when fewer than `limit` segments are queued (or the worker failed). */
  async room(limit: number): Promise<void> {
    while (this.inFlight >= limit && this.failed === null) await new Promise<void>((r) => this.waiters.push(r));
  }
  /** Ends the worker (its heap is garbage once its model arrived, or on failure). */
  async close(): Promise<void> {
    this.closing = true;
    await stopWorker(this.worker);
  }
  async finish(): Promise<TraceModel | null> {
    await this.room(1);
    if (this.failed !== null) return null;
    this.send({ type: 'finish' });
    return Promise.race([this.model, new Promise<null>((r) => this.waiters.push(() => this.failed !== null && r(null)))]);
  }
}

/**
 * Asks a worker to stop and waits for it to exit. Not `terminate()`: Node 20 can abort the whole process when a
 * worker is terminated while V8 still optimizes its code on a background thread (`NodePlatform::ForIsolate`
 * assertion; seen when a parse failed and the busy worker was terminated). A worker that has not left within
 * STOP_WAIT_MS (stuck) is terminated after all.
 */
async function stopWorker(worker: Worker): Promise<void> {
  if (exited.has(worker)) return;
  const gone = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  worker.postMessage({ type: 'stop' });
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), STOP_WAIT_MS);
  });
  if ((await Promise.race([gone, late])) === 'late') {
    if (process.env.GPUWISE_DEBUG) process.stderr.write(`worker ${worker.threadId} did not stop: terminated\n`);
    // terminate() waits for the thread as well: never longer than this, and a stuck thread then holds nothing up.
    const given = new Promise<void>((resolve) => setTimeout(resolve, STOP_WAIT_MS).unref());
    await Promise.race([worker.terminate(), given]);
    worker.unref();
  }
  clearTimeout(timer);
}
/** Workers whose 'exit' was seen (a stop message would go nowhere). */
const exited = new WeakSet<Worker>();
const STOP_WAIT_MS = 10_000;
/**
 * Workers' isolates optimise their code on the calling thread, not on V8's background threads. With concurrent
 * recompilation a worker that ran out of work could end (its event loop empty: Node waits in DrainTasks for the
 * isolate's background tasks) while a background optimising job of its isolate waited for that same thread to
 * collect garbage (CollectionBarrier::AwaitCollectionBackground): neither ever moved, `terminate()` hung as well,
 * and GPUWISE_THREADS >= 3 hung under CPU contention (gdb showed exactly these two stacks). V8 reads the flag
 * when an isolate is created, so the main thread keeps its concurrent compiler; set once, before any worker.
 */
let workerIsolatesSynchronous = false;
function newWorker(url: URL, workerData: Record<string, unknown>): Worker {
  if (!workerIsolatesSynchronous) {
    setFlagsFromString('--no-concurrent-recompilation');
    workerIsolatesSynchronous = true;
  }
  return watchExit(new Worker(url, { workerData }));
}
function watchExit(worker: Worker): Worker {
  worker.once('exit', () => exited.add(worker));
  return worker;
}

/**
 * The main thread as one of the parsers: it parses the segments it keeps between reads, while the workers parse
 * theirs. With 2 cores this is the only split that does not oversubscribe them (a reader plus 2 workers was slower
 * than one thread).
 */
class LocalParser {
  inFlight = 0;
  failed: string | null = null;
  private readonly parser: SegmentParser;
  constructor(
    path: string,
    originUs: number,
    private readonly onFail: (reason: string) => void,
    chunkStore: ChunkStore | null,
  ) {
    this.parser = new SegmentParser(new TraceModelBuilder(path, chunkStore), originUs);
  }
  send(msg: ToWorker): void {
    if (msg.type !== 'segment' || this.failed !== null) return;
    const failed = this.parser.parse(msg);
    if (failed !== null) {
      this.failed = failed;
      this.onFail(failed);
    }
  }
  async room(_limit: number): Promise<void> {}
  async finish(): Promise<TraceModel | null> {
    return this.failed === null ? this.parser.finish() : null;
  }
}

/**
 * A segment of the file, owning its buffer (it may be transferred) unless the reader was told to reuse it; null: no
 * event boundary where one must be.
 */
type Segment = { bytes: Uint8Array; last: boolean } | null;

/**
 * A plain file's segments, read straight into the cutter's buffer with synchronous reads: nothing is copied but the
 * partial event after a cut, and no read waits on a round trip through libuv's thread pool (with the event scanner,
 * those waits left the main thread idle for a fifth of a 200 MB load). With `reuse` (nothing transferred) one buffer
 * serves every segment: a new 4 MB buffer per segment grew the peak RSS by 18 MB per GB (malloc keeps what it was
 * given back).
 */
async function* plainSegments(path: string, source: TraceSource, reuse: boolean): AsyncGenerator<Segment> {
  const segmentBytes = reuse ? ONE_THREAD_SEGMENT_BYTES : SEGMENT_BYTES;
  // Filled to exactly a segment, so a segment handed out for transfer wastes no capacity.
  const cutter = new SegmentCutter(segmentBytes, MAX_PENDING_BYTES, segmentBytes);
  const fd = openSync(path, 'r');
  const read = (into: Uint8Array, at: number, length: number) => {
    const n = readSync(fd, into, at, length, null);
    source.progress.bytesRead += n;
    return n;
  };
  try {
    while (cutter.fill(read)) {
      const bytes = cutter.next(reuse);
      if (bytes === 'no-boundary') {
        yield null;
        return;
      }
      if (bytes !== null) yield { bytes, last: false };
    }
    yield { bytes: cutter.rest(reuse), last: true };
  } finally {
    closeSync(fd);
  }
}

/**
 * A gzip file's segments from an inflate worker (inflateWorker.ts), which decompresses and cuts while this thread
 * parses. A worker that fails (damaged gzip and the like) throws: the caller then reads the file with the parser,
 * which reports the problem exactly.
 */
async function* inflatedSegments(path: string, source: TraceSource, workerUrl: URL): AsyncGenerator<Segment> {
  const options: InflaterOptions = {
    path,
    segmentBytes: ONE_THREAD_SEGMENT_BYTES,
    inFlight: INFLATE_IN_FLIGHT,
    maxPendingBytes: MAX_PENDING_BYTES,
  };
  const worker = newWorker(workerUrl, { [INFLATE_WORKER_FLAG]: true, ...options });
  const inbox: FromInflater[] = [];
  let problem: string | null = null;
  let wake: (() => void) | null = null;
  const notify = () => {
    wake?.();
    wake = null;
  };
  worker.on('message', (msg: FromInflater) => {
    inbox.push(msg);
    notify();
  });
  worker.on('error', (e) => {
    problem ??= `inflate worker: ${e.message}`;
    notify();
  });
  worker.on('exit', (code) => {
    problem ??= `inflate worker exited with ${code}`;
    notify();
  });
  try {
    for (;;) {
      const msg = inbox.shift();
      if (msg === undefined) {
        if (problem !== null) throw new Error(problem);
        await new Promise<void>((r) => {
          wake = r;
        });
        continue;
      }
      if (msg.type === 'failed') throw new Error(msg.reason);
      if (msg.type === 'no-boundary') {
        yield null;
        return;
      }
      source.progress.bytesRead = msg.compressedBytesRead;
      yield { bytes: msg.bytes, last: msg.last };
      if (msg.last) return;
      worker.postMessage({ type: 'done-segment' } satisfies ToInflater);
    }
  } finally {
    await stopWorker(worker);
  }
}

/**
 * A gzip file's segments: decompressed chunks are copied into one buffer (the reader reuses its own); each segment is
 * copied out of it, since a transferred buffer must belong to the segment alone (with `reuse`, one thread, it is
 * handed out in place), and the rest moves to the front.
 */
async function* gzipSegments(source: TraceSource, reuse: boolean): AsyncGenerator<Segment> {
  const cutter = new SegmentCutter(reuse ? ONE_THREAD_SEGMENT_BYTES : SEGMENT_BYTES, MAX_PENDING_BYTES);
  for await (const chunk of source.chunks) {
    cutter.append(chunk);
    const bytes = cutter.next(reuse);
    if (bytes === 'no-boundary') {
      yield null;
      return;
    }
    if (bytes !== null) yield { bytes, last: false };
  }
  yield { bytes: cutter.rest(reuse), last: true };
}

export interface SegmentedLoadOptions {
  /** Parse workers, started from `workerUrl` (the bundled CLI file); 0: the main thread parses every segment. */
  workers: number;
  workerUrl: URL | null;
  /** With workers: the main thread parses a share of a plain file's segments too. */
  mainParses?: boolean;
  /** With no workers: where the op logs' chunks go past their budget. */
  chunkStore?: ChunkStore | null;
  /** With no workers: a gzip file is decompressed by a worker started from this URL (null: by this thread). */
  inflateWorkerUrl?: URL | null;
  onProgress?: ReadProgress;
}

/** Returns the model, or null when the segment path does not apply (the caller then reads with the parser alone). */
export async function loadTraceInSegments(path: string, options: SegmentedLoadOptions): Promise<TraceModel | null> {
  const { workers, workerUrl, mainParses = false, chunkStore = null, inflateWorkerUrl = null, onProgress } = options;
  const source = await openTraceSource(path);
  const handles: WorkerHandle[] = [];
  // Segment handlers in round-robin order: the workers, and the main thread itself when it parses.
  const parsers: (WorkerHandle | LocalParser)[] = [];
  let failure: string | null = null;
  const fail = (reason: string) => {
    failure ??= reason;
  };
  let segments = 0;
  let originUs: number | null = null;

  /** Sends a segment: `bytes` must own its buffer (it is transferred). */
  const dispatch = async (bytes: Uint8Array, last: boolean) => {
    if (originUs === null) {
      // The digits of a timestamp are ASCII: Latin-1 reads them whatever else the text holds.
      originUs = firstTimestampUs(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1'));
      if (originUs === null) return fail('no timestamp in the first segment');
      for (let i = 0; i < workers && workerUrl !== null; i++) {
        const w = newWorker(workerUrl, { [PARSE_WORKER_FLAG]: true, originUs, source: path });
        handles.push(new WorkerHandle(w, fail));
      }
      parsers.push(...handles);
      // Not for gzip: decompression (in libuv's thread pool) takes the core the main thread would parse on (211 MB on
      // 2 cores: 1.8-1.9 s with the main thread only cutting, 2.1-2.9 s with it parsing too).
      if ((mainParses && !source.gzip) || handles.length === 0) parsers.push(new LocalParser(path, originUs, fail, chunkStore));
    }
    const h = parsers[segments % parsers.length]!;
    await h.room(IN_FLIGHT_PER_WORKER);
    h.send({ type: 'segment', bytes, first: segments === 0, last });
    segments++;
  };

  try {
    // With no workers nothing is transferred: the readers may reuse their buffers (and cut smaller segments). One
    // thread on a gzip file gets an inflate worker where workers can start.
    const reuse = workers === 0;
    const segmentsOfFile = !source.gzip
      ? plainSegments(path, source, reuse)
      : reuse && inflateWorkerUrl !== null
        ? inflatedSegments(path, source, inflateWorkerUrl)
        : gzipSegments(source, reuse);
    for await (const segment of segmentsOfFile) {
      if (failure !== null) break;
      onProgress?.(source.progress.bytesRead, source.sizeBytes);
      if (segment === null) fail('no event boundary found');
      else await dispatch(segment.bytes, segment.last);
    }
    if (failure !== null) {
      if (process.env.GPUWISE_DEBUG) process.stderr.write(`segmented read fell back: ${failure}\n`);
      return null;
    }
    const parts = await Promise.all(
      parsers.map(async (h) => {
        const part = await h.finish();
        if (h instanceof WorkerHandle) await h.close(); // its heap is garbage now
        return part;
      }),
    );
    if (failure !== null || parts.some((p) => p === null)) {
      if (process.env.GPUWISE_DEBUG) process.stderr.write(`segmented read fell back: ${failure ?? 'a part failed'}\n`);
      return null;
    }
    onProgress?.(source.sizeBytes, source.sizeBytes);
    return mergeModels(parts as TraceModel[]);
  } catch (e) {
    // Damaged gzip and the like: the sequential reader reports them precisely.
    if (process.env.GPUWISE_DEBUG) process.stderr.write(`segmented read fell back: ${(e as Error).message}\n`);
    return null;
  } finally {
    await source.chunks.return(undefined);
    await Promise.all(handles.map((h) => h.close()));
  }
}
