/** Shell: file -> TraceModel (parse + build), on several threads when the file is large. */
import { availableParallelism } from 'node:os';
import { TraceModelBuilder } from '../trace/builder.js';
import { EventScanner } from '../trace/eventScanner.js';
import { TempFileChunkStore } from './chunkFile.js';
import { collectGarbage } from './collectGarbage.js';
import type { TraceModel } from '../trace/model.js';
import { loadTraceParallel } from './parallelLoad.js';
import { type ReadProgress, openTraceSource, readTraceFile } from './readTrace.js';

/** Below this (compressed) size one thread is fast enough; above it, worker start-up pays for itself. */
const PARALLEL_MIN_BYTES = 48 * 1024 * 1024;
const PARALLEL_MIN_GZIP_BYTES = 6 * 1024 * 1024;
const MAX_THREADS = 4;
/**
 * Above this, one thread: each worker adds its own heap (about +60 MB at 2 GB),
 * and memory, not time, is what breaks on multi-GB traces (HTA and the
 * TensorBoard plugin run out of it there).
 */
const PARALLEL_MAX_BYTES = 512 * 1024 * 1024;
const PARALLEL_MAX_GZIP_BYTES = 64 * 1024 * 1024;

/**
 * Op-log bytes one trace keeps in memory; the rest goes to a temporary file.
 * One thread parses files over 512 MB (fewer cores: any file), whose op logs
 * pass 2 MB (GPT-2 steps: 5.4 MB a GB), so the budget only spares small
 * traces the file. Reading chunks back costs no measurable time (2 GB: 17.3
 * s with a 2 MB budget, 17.2 s with 8 MB; the peak is 5-10 MB lower).
 */
const OP_LOG_MEMORY_BYTES = 2 * 1024 * 1024;

/**
 * From this size one thread reads the file in segments (the event scanner reads their middles): below it, few
 * segments would have a middle, and the parser is as fast.
 */
const SEGMENTED_MIN_BYTES = 16 * 1024 * 1024;

/** About 70 MB of trace: from here a forced collection after building pays for itself in peak memory. */
const LARGE_TRACE_EVENTS = 250_000;

export interface LoadOptions {
  /**
   * Threads that parse; default: GPUWISE_THREADS, else for large files 2 on a 2-core machine and one per core but one
   * (at most 4) from 3 cores, else 1. See `parsePlan` for who parses.
   */
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

export async function loadTrace(path: string, onProgress?: ReadProgress, options: LoadOptions = {}): Promise<TraceModel> {
  const fromEnv = Number(process.env.GPUWISE_THREADS);
  const threads = options.threads ?? (fromEnv >= 1 ? Math.floor(fromEnv) : await defaultThreads(path));
  // Workers run the bundled CLI file; from TypeScript sources (tests) there is nothing to start.
  const parallel = threads > 1 && import.meta.url.endsWith('.mjs');
  if (parallel) {
    const plan = parsePlan(threads);
    const model = await loadTraceParallel(path, plan.workers, new URL(import.meta.url), onProgress, plan.mainParses);
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
  const segmented = !parallel && !process.env.GPUWISE_NO_WASM && EventScanner.available() && (await segmentSize(path)) >= SEGMENTED_MIN_BYTES;
  let model = segmented ? await loadTraceParallel(path, 0, null, onProgress, true, store) : null;
  let events = model?.eventCounts ? Object.values(model.eventCounts).reduce((a, b) => a + b, 0) : 0;
  if (model === null) {
    const builder = new TraceModelBuilder(path, store);
    const summary = await readTraceFile(path, builder, onProgress);
    model = builder.finish(summary.originUs, summary.warnings);
    events = summary.events;
  }
  for (const log of model.gpu.logs) if (log.store === store) store.closeWith(log);
  // The builder's grown columns are garbage now; the analysis that follows is the peak of
  // memory, so free them first (the live heap is a few MB: a full collection costs milliseconds).
  if (events > LARGE_TRACE_EVENTS) collectGarbage();
  return model;
}

/** The file's size as the segment path sees it (compressed size times a typical ratio for gzip); 0 if unreadable. */
async function segmentSize(path: string): Promise<number> {
  try {
    const source = await openTraceSource(path);
    await source.chunks.return(undefined);
    return source.gzip ? source.sizeBytes * 8 : source.sizeBytes;
  } catch {
    return 0; // the sequential reader reports the problem
  }
}

async function defaultThreads(path: string): Promise<number> {
  // 2 cores: the main thread and one worker (200 MB trace on this 2-core VM: 2.0 s against 2.4 s for one thread).
  // From 3 cores: one worker per core but one, while the main thread reads, decompresses and cuts.
  const available = availableParallelism();
  if (available < 2) return 1;
  const cores = available === 2 ? 2 : Math.min(available - 1, MAX_THREADS);
  try {
    const source = await openTraceSource(path);
    await source.chunks.return(undefined);
    const [min, max] = source.gzip ? [PARALLEL_MIN_GZIP_BYTES, PARALLEL_MAX_GZIP_BYTES] : [PARALLEL_MIN_BYTES, PARALLEL_MAX_BYTES];
    return source.sizeBytes >= min && source.sizeBytes <= max ? cores : 1;
  } catch {
    return 1; // the sequential reader reports the problem
  }
}
