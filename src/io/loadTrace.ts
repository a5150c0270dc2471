/** Shell: file -> TraceModel (parse + build): one parsing thread (with a decompressing one for gzip), or GPUWISE_THREADS. */
import { availableParallelism } from 'node:os';
import { TraceModelBuilder } from '../trace/builder.js';
import { EventScanner } from '../trace/eventScanner.js';
import { TempFileChunkStore } from './chunkFile.js';
import { collectGarbage } from './collectGarbage.js';
import type { TraceModel } from '../trace/model.js';
import { endedEarly } from '../trace/parser.js';
import { loadTraceInSegments } from './segmentedLoad.js';
import { type ReadProgress, openTraceSource, readTraceFile } from './readTrace.js';
import { asOtherInput } from './otherInput.js';

/**
 * Op-log bytes one trace keeps in memory; the rest goes to a temporary file.
 * One thread parses (unless GPUWISE_THREADS says otherwise); op logs pass
 * 2 MB from about 400 MB of trace (GPT-2 steps: 5.4 MB a GB), so the budget
 * only spares small traces the file. Reading chunks back costs no measurable time (2 GB: 17.3
 * s with a 2 MB budget, 17.2 s with 8 MB; the peak is 5-10 MB lower).
 */
const OP_LOG_MEMORY_BYTES = 2 * 1024 * 1024;

/**
 * From this size one thread reads the file in segments (the event scanner reads their middles): below it, few
 * segments would have a middle, and the parser is as fast. Traces compress 10-20x (the shipped ones 14-20x).
 */
const SEGMENTED_MIN_BYTES = 16 * 1024 * 1024;
const SEGMENTED_MIN_GZIP_BYTES = 1024 * 1024;

/** About 70 MB of trace: from here a forced collection after building pays for itself in peak memory. */
const LARGE_TRACE_EVENTS = 250_000;

export interface LoadOptions {
  /** Threads that parse; default: GPUWISE_THREADS, else 1 (see `loadTrace`). See `parsePlan` for who parses. */
  threads?: number;
  /**
   * Op-log bytes kept in memory before chunks go to a temporary file; default GPUWISE_OP_LOG_MEMORY_MB, else 2 MB.
   * Single-thread parsing only.
   */
  opLogMemoryBytes?: number;
}

/**
 * How many worker threads parse, and whether the main thread parses too: with 2 threads the main thread parses every
 * other segment of a plain file beside one worker (a reader plus 2 workers would oversubscribe 2 cores; a gzip file's
 * decompression takes the main thread's share); from 3, the workers parse and the main thread reads, decompresses and
 * cuts.
 */
export function parsePlan(threads: number): { workers: number; mainParses: boolean } {
  return threads === 2 ? { workers: 1, mainParses: true } : { workers: threads, mainParses: false };
}

/**
 * One thread parses by default. With the event scanner, parsing stopped being what an analysis waits for: on the
 * 2-core VM the 211 MB benchmark took 1.6-2.4 s on one thread against 2.1-2.6 s on two, and on a 16-core H200 host
 * 0.76-1.0 s on one and 0.67-0.99 s on 2-8, for 2 to 5 times the memory (80 MB on one thread, 160-430 MB on 2-8).
 * A gzip file is decompressed by a worker meanwhile (inflateWorker.ts: a 1 GB trace gzipped, 6.8-7.8 s against
 * 9.9-10.9 s, for a fixed 50 MB more). GPUWISE_THREADS=N asks for N parsing threads (parsePlan).
 */
export async function loadTrace(path: string, onProgress?: ReadProgress, options: LoadOptions = {}): Promise<TraceModel> {
  try {
    return await loadTraceFile(path, onProgress, options);
  } catch (e) {
    throw asOtherInput(e, path, 'trace'); // a snapshot, a report...: said as what it is
  }
}

async function loadTraceFile(path: string, onProgress: ReadProgress | undefined, options: LoadOptions): Promise<TraceModel> {
  const fromEnv = Number(process.env.GPUWISE_THREADS);
  const threads = options.threads ?? (fromEnv >= 1 ? Math.floor(fromEnv) : 1);
  // Workers run the bundled CLI file; from TypeScript sources (tests) there is nothing to start.
  const bundled = import.meta.url.endsWith('.mjs');
  const parallel = threads > 1 && bundled;
  if (parallel) {
    const plan = parsePlan(threads);
    const model = await loadTraceInSegments(path, { ...plan, workerUrl: new URL(import.meta.url), onProgress });
    if (model !== null) return model;
  }
  // Parallel parsing is for files under 512 MB, whose op logs fit in memory; past that, one thread and a bounded log.
  // Unset or empty means the default (Number('') would be a budget of 0).
  const budgetFromEnv = process.env.GPUWISE_OP_LOG_MEMORY_MB ? Number(process.env.GPUWISE_OP_LOG_MEMORY_MB) * 1024 * 1024 : Number.NaN;
  const store = new TempFileChunkStore(options.opLogMemoryBytes ?? (budgetFromEnv >= 0 ? budgetFromEnv : OP_LOG_MEMORY_BYTES));
  // One thread still reads a large file in segments, so that the event scanner takes their middles; anything the
  // segment path does not expect (as in parallel) sends the file to the parser below, which reports it exactly; a file
  // the parallel path gave up on goes there directly. (Without the scanner, GPUWISE_NO_WASM, the parser reads the file
  // in 64 KB chunks: less memory than segments.)
  const segmented = !parallel && !process.env.GPUWISE_NO_WASM && EventScanner.available() && (await worthSegments(path));
  // A gzip file is decompressed by a worker thread while this one parses (where workers can start: the bundle).
  const inflateUrl = bundled && availableParallelism() >= 2 ? new URL(import.meta.url) : null;
  let model = segmented
    ? await loadTraceInSegments(path, { workers: 0, workerUrl: null, chunkStore: store, inflateWorkerUrl: inflateUrl, onProgress })
    : null;
  let events = model?.eventCounts ? Object.values(model.eventCounts).reduce((a, b) => a + b, 0) : 0;
  if (model === null) {
    const builder = new TraceModelBuilder(path, store);
    const summary = await readTraceFile(path, builder, onProgress);
    model = builder.finish(summary.originUs, summary.warnings, endedEarly(summary));
    events = summary.events;
  }
  for (const log of model.gpu.logs) if (log.store === store) store.closeWith(log);
  // The builder's grown columns are garbage now; the analysis that follows is the peak of
  // memory, so free them first (the live heap is a few MB: a full collection costs milliseconds).
  if (events > LARGE_TRACE_EVENTS) collectGarbage();
  return model;
}

/** Whether the file is large enough to read in segments (false if it cannot be opened: the parser reports that). */
async function worthSegments(path: string): Promise<boolean> {
  try {
    const source = await openTraceSource(path);
    await source.chunks.return(undefined);
    return source.sizeBytes >= (source.gzip ? SEGMENTED_MIN_GZIP_BYTES : SEGMENTED_MIN_BYTES);
  } catch {
    return false;
  }
}
