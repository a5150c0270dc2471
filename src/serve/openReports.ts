/**
 * Traces and memory snapshots opened from the Reports page (shell): a path on this machine or an upload, read by
 * the same bounded, non-executing readers as the CLI (the streaming trace parser; the pickle reader that never
 * imports or calls), one analysis at a time, the reports kept in a small most-recently-used list. Uploads are
 * written only under the store's `uploads/` folder, never past the size limit, and removed when their report
 * leaves the list or the server stops.
 */
import { createWriteStream, existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import { basename, join } from 'node:path';
import { collectTraceFiles } from '../io/traceFiles.js';
import { VERSION } from '../util/version.js';
import { InputError } from '../io/inputError.js';
import { loadTrace } from '../io/loadTrace.js';
import { fileHead } from '../io/otherInput.js';
import { readSnapshotFile } from '../io/readSnapshot.js';
import { describeFsError } from '../io/readTrace.js';
import { type MemoryReport, analyze as analyzeSnapshot } from '../memory/report.js';
import { inputKindOf } from '../util/inputKind.js';
import { type AnalyzeReport, type InputSummary, buildAnalyzeReport } from '../report/analyzeReport.js';
import { type CollectiveTimings, type TraceMetrics, analyzeTrace, collectiveTimings } from '../trace/metrics/index.js';
import type { OpenedKind, OpenedReportRow } from './pages/reports.js';
import { RefusedError } from './requestBody.js';

export type OpenedReport = OpenedReportRow & ({ kind: 'trace'; report: AnalyzeReport; files: string[] } | { kind: 'snapshot'; report: MemoryReport; files: string[] });

const TRACE_NAME = /\.json(\.gz)?$/i;
const SNAPSHOT_NAME = /\.(pickle|pkl)(\.gz)?$/i;

/** Trace or snapshot, from the name, else from the first bytes (gzip looked into: io/otherInput.ts). */
export function detectKind(path: string): OpenedKind {
  if (TRACE_NAME.test(path)) return 'trace';
  if (SNAPSHOT_NAME.test(path)) return 'snapshot';
  const head = fileHead(path);
  if (head === null) throw new InputError(path, 'cannot be read, or a gzip file whose start cannot be decompressed');
  if (inputKindOf(head) === 'snapshot') return 'snapshot';
  const text = Buffer.from(head.subarray(0, 64)).toString('latin1').trimStart();
  if (text.startsWith('{') || text.startsWith('[')) return 'trace';
  throw new InputError(path, 'neither a torch.profiler trace (JSON) nor a CUDA memory snapshot (pickle)');
}

async function analyseTraces(files: string[]): Promise<AnalyzeReport> {
  // The same steps as `gpuwise analyze` (src/cli/analyze.ts), without its terminal output.
  const inputs: InputSummary[] = [];
  const ranks: TraceMetrics[] = [];
  const collectives: CollectiveTimings[] = [];
  const seen = new Set<number>();
  for (const file of files) {
    const model = await loadTrace(file);
    const metrics = analyzeTrace(model);
    const warnings = [...model.warnings];
    if (seen.has(metrics.rank)) {
      const rank = Math.max(...seen) + 1;
      warnings.push(`rank ${metrics.rank} already taken by another input: shown as rank ${rank}`);
      metrics.rank = rank;
    }
    seen.add(metrics.rank);
    if (model.gpu.count === 0) warnings.push('no GPU activity (kernels, memcpy) in this trace: was the profiler run with ProfilerActivity.CUDA?');
    inputs.push({ path: file, rank: metrics.rank, events: Object.values(model.eventCounts).reduce((a, b) => a + b, 0), warnings });
    ranks.push(metrics);
    collectives.push(collectiveTimings(model, metrics.steps));
  }
  const order = ranks.map((_, i) => i).sort((a, b) => ranks[a]!.rank - ranks[b]!.rank);
  return buildAnalyzeReport(
    VERSION,
    order.map((i) => inputs[i]!),
    order.map((i) => ranks[i]!),
    order.map((i) => collectives[i]!),
  );
}

export interface OpenReportsOptions {
  uploadsDir: string;
  maxUploadBytes: number;
  /** Reports kept (default 16); the oldest leaves first. */
  keep?: number;
  /** Analyses waiting behind the running one before a request is refused (default 4). */
  maxQueued?: number;
}

export class OpenReports {
  private readonly items: OpenedReport[] = [];
  private chain: Promise<unknown> = Promise.resolve();
  private queued = 0;
  private seq = 0;
  private readonly uploads = new Set<string>();

  constructor(private readonly o: OpenReportsOptions) {
    // The uploads folder is the server's own scratch space: what an earlier server left there is removed.
    if (existsSync(o.uploadsDir)) for (const f of readdirSync(o.uploadsDir)) rmSync(join(o.uploadsDir, f), { force: true, recursive: true });
  }

  list(): OpenedReportRow[] {
    return this.items.map(({ id, kind, label, openedAtMs, headline }) => ({ id, kind, label, openedAtMs, headline }));
  }

  get(id: string): OpenedReport | null {
    return this.items.find((x) => x.id === id) ?? null;
  }

  private newId(): string {
    return `${Date.now().toString(36)}${(this.seq++).toString(36)}${Math.floor(Math.random() * 36 ** 4).toString(36)}`;
  }

  /** Runs `job` after the analyses before it: one parse at a time keeps the server's memory that of one analysis. */
  private serial<T>(job: () => Promise<T>): Promise<T> {
    if (this.queued >= (this.o.maxQueued ?? 4)) throw new RefusedError(503, 'busy: too many analyses waiting; try again shortly');
    this.queued++;
    const run = this.chain.then(job, job);
    this.chain = run.catch(() => undefined);
    return run.finally(() => this.queued--);
  }

  /** Opens a trace (file or folder of rank traces) or a snapshot on this machine. */
  async openPath(path: string, label = path, uploaded = false): Promise<OpenedReport> {
    return this.serial(async () => {
      let st: ReturnType<typeof statSync>;
      try {
        st = statSync(path);
      } catch (e) {
        throw new InputError(path, describeFsError(e));
      }
      // A FIFO or a device would block the server's one thread on a read: only files and folders are opened.
      if (!st.isDirectory() && !st.isFile()) throw new InputError(path, 'is not a regular file or a folder');
      const kind: OpenedKind = st.isDirectory() ? 'trace' : detectKind(path);
      const id = this.newId();
      let item: OpenedReport;
      if (kind === 'trace') {
        const files = await collectTraceFiles([path]);
        const report = await analyseTraces(files);
        const top = report.findings[0];
        item = { id, kind, label, openedAtMs: Date.now(), headline: top ? top.title : 'no findings', report, files };
      } else {
        const { snapshot } = await readSnapshotFile(path);
        const report = analyzeSnapshot(snapshot, { path: label }).report;
        const top = report.findings[0];
        item = { id, kind, label, openedAtMs: Date.now(), headline: report.oom ? 'out of memory' : top ? top.title : 'no findings', report, files: [path] };
      }
      if (uploaded) this.uploads.add(path);
      this.items.unshift(item);
      while (this.items.length > (this.o.keep ?? 16)) this.forget(this.items.pop()!);
      return item;
    });
  }

  private forget(item: OpenedReport): void {
    for (const f of item.files)
      if (this.uploads.delete(f)) rmSync(f, { force: true });
  }

  /** Streams a request body into the uploads folder (refused past the limit), then opens it. */
  async upload(req: IncomingMessage, name: string): Promise<OpenedReport> {
    const declared = Number(req.headers['content-length'] ?? Number.NaN);
    if (Number.isFinite(declared) && declared > this.o.maxUploadBytes) throw new RefusedError(413, `upload of ${declared} bytes is over the limit of ${this.o.maxUploadBytes} bytes (serve --max-upload)`);
    const safe = basename(name).replace(/[^A-Za-z0-9._-]/g, '_').slice(-100) || 'upload';
    mkdirSync(this.o.uploadsDir, { recursive: true });
    const path = join(this.o.uploadsDir, `${this.newId()}-${safe}`);
    let bytes = 0;
    await new Promise<void>((ok, fail) => {
      const out = createWriteStream(path, { flags: 'wx' });
      const stop = (e: Error) => {
        req.unpipe(out);
        out.destroy();
        req.resume(); // drain what the client still sends, so it reads the refusal
        rmSync(path, { force: true });
        fail(e);
      };
      req.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes > this.o.maxUploadBytes) stop(new RefusedError(413, `upload is over the limit of ${this.o.maxUploadBytes} bytes (serve --max-upload)`));
      });
      req.on('aborted', () => stop(new RefusedError(400, 'upload aborted')));
      out.on('error', (e) => stop(e));
      out.on('finish', () => ok());
      req.pipe(out);
    });
    if (bytes === 0) {
      rmSync(path, { force: true });
      throw new InputError(safe, 'is empty');
    }
    try {
      return await this.openPath(path, safe, true);
    } catch (e) {
      rmSync(path, { force: true });
      // The path in the message is the server's scratch file: name the upload instead.
      if (e instanceof InputError) throw new InputError(safe, e.problem);
      throw e;
    }
  }

  close(): void {
    for (const f of this.uploads) rmSync(f, { force: true });
    this.uploads.clear();
  }
}
