/**
 * Runs in progress (shell): a client that runs the probe itself (the notebook's `%%gpuwise doctor`) hands its
 * probe records to the server as they come; viewers of the run's page follow its steps over Server-Sent Events;
 * when the client ends the run, the server builds the doctor report exactly as `gpuwise doctor` does (the same
 * builder, the profiler window and snapshots read by the same readers), saves it in the history and answers
 * with the report.
 *
 * Endpoints (POST, JSON or NDJSON bodies): `start` {command, runDir, pid?, client?} -> {id}; `records?id=` probe
 * records as JSON lines; `end?id=` {exitCode, signal?, notes?} -> {runId, report, html, text}. A client that builds
 * and saves the report itself (`gpuwise doctor`, through runFeed.ts) ends with {exitCode, savedRunId}: the server
 * then builds nothing and points the run's viewers at the saved run. An ended run's id keeps leading to its saved
 * run (`run?id=`, `api/run?id=`) for the last ENDED_KEPT runs.
 * Bounded: at most MAX_RUNS runs in progress, MAX_RECORDS records each (step records past it are thinned by the
 * report's own timeline rule), and a run nobody fed for ABANDON_MS is dropped.
 */
import { hostname } from 'node:os';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { VERSION } from '../util/version.js';
import { inlineAssets } from './assets.js';
import { renderDoctorHtml } from './pages/runs.js';
import { analysedWindowEnds, type ProbeRecord, type StepRecord, parseProbeLines, rankOf } from '../run/records.js';
import { renderDoctorText } from '../doctor/render.js';
import type { DoctorReport, SnapshotInput, TraceInput } from '../doctor/reportTypes.js';
import { buildDoctorReport } from '../doctor/report.js';
import { loadTrace } from '../io/loadTrace.js';
import { readSnapshotFile } from '../io/readSnapshot.js';
import { saveRun } from '../io/runStore.js';
import { analyze as analyzeSnapshot } from '../memory/report.js';
import type { Snapshot } from '../telemetry/sample.js';
import { analyzeTrace, collectiveTimings } from '../trace/metrics/index.js';
import type { LiveFrame } from './liveFrame.js';
import type { LiveHub } from './liveHub.js';
import { type LiveStep, runInProgressPage } from './pages/runs.js';
import { RefusedError, readBody } from './requestBody.js';

export const MAX_RUNS = 8;
export const MAX_RECORDS = 200_000;
export const ABANDON_MS = 3_600_000;
const ENDED_KEPT = 64;
/** GPU samples kept per run in progress (an hour at 1 Hz; the report's charts thin them anyway). */
const MAX_GPU_SAMPLES = 3_600;

export interface LiveRun {
  id: string;
  command: string[];
  runDir: string;
  startedAtMs: number;
  /** Who feeds it: 'notebook' (the default) or 'doctor' (a CLI run that saves its own report). */
  client: string;
  pid: number | null;
  lastFedMs: number;
  steps: number;
  lastStep: number | null;
  records: ProbeRecord[];
  skippedLines: number;
  gpuSamples: Snapshot[];
  viewers: Set<ServerResponse>;
  stopSampling: () => void;
}

/** What a viewer of a run in progress receives for each step (a LiveStep). */
function stepEvent(r: StepRecord): string {
  return JSON.stringify({ step: r.step, stepTimeS: r.stepTimeS, dataWaitS: r.dataWaitS, pid: r.pid, rank: r.rank, reservedBytes: r.memory?.reservedBytes ?? null, allocatedBytes: r.memory?.allocatedBytes ?? null });
}

export class LiveRuns {
  private readonly runs = new Map<string, LiveRun>();
  /** Ended runs: live id -> the id the run was saved under (null: not saved). */
  private readonly ended = new Map<string, string | null>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly storeDir: string,
    private readonly hub: LiveHub | null,
  ) {
    this.sweeper = setInterval(() => this.sweep(), 60_000);
    this.sweeper.unref();
    if (hub) hub.annotate = (f) => this.annotate(f);
  }

  /** The Live GPUs page shows, beside NVML's figure, the allocator memory a run in progress reports for its process. */
  private annotate(f: LiveFrame): void {
    if (this.runs.size === 0) return;
    const byPid = new Map<number, { allocatedBytes: number; reservedBytes: number }>();
    for (const r of this.runs.values())
      for (let i = r.records.length - 1; i >= 0; i--) {
        const x = r.records[i]!;
        if (x.type !== 'step' || !x.memory) continue;
        if (!byPid.has(x.pid)) byPid.set(x.pid, { allocatedBytes: x.memory.allocatedBytes, reservedBytes: x.memory.reservedBytes });
        break;
      }
    for (const p of f.processes) {
      const m = byPid.get(p.pid);
      if (m) Object.assign(p, m);
    }
  }

  private sweep(): void {
    const now = Date.now();
    for (const r of this.runs.values()) if (now - r.lastFedMs > ABANDON_MS) this.drop(r);
  }

  private drop(r: LiveRun): void {
    r.stopSampling();
    for (const v of r.viewers) v.end();
    this.runs.delete(r.id);
  }

  get(id: string): LiveRun | null {
    return this.runs.get(id) ?? null;
  }

  /** The saved run an ended live run became: undefined when `id` is no ended run, null when it was not saved. */
  endedAs(id: string): string | null | undefined {
    return this.ended.get(id);
  }

  private markEnded(id: string, runId: string | null): void {
    this.ended.set(id, runId);
    if (this.ended.size > ENDED_KEPT) this.ended.delete(this.ended.keys().next().value as string);
  }

  inProgress(): { id: string; command: string[]; startedAtMs: number; client: string; pid: number | null; steps: number }[] {
    return [...this.runs.values()].map((r) => ({ id: r.id, command: r.command, startedAtMs: r.startedAtMs, client: r.client, pid: r.pid, steps: r.steps }));
  }

  state(r: LiveRun): unknown {
    return {
      id: r.id,
      inProgress: true,
      client: r.client,
      pid: r.pid,
      command: r.command,
      runDir: r.runDir,
      startedAtMs: r.startedAtMs,
      records: r.records.length,
      steps: r.steps,
      lastStep: r.lastStep,
    };
  }

  page(r: LiveRun): string {
    const steps = r.records.filter((x): x is StepRecord => x.type === 'step').slice(-5000);
    return runInProgressPage(r.id, r.command, steps.map((s) => JSON.parse(stepEvent(s)) as LiveStep), r.client);
  }

  subscribe(r: LiveRun, res: ServerResponse): boolean {
    if (r.viewers.size >= 32) return false;
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store' });
    res.write('retry: 3000\n\n');
    r.viewers.add(res);
    res.on('close', () => r.viewers.delete(res));
    return true;
  }

  private send(r: LiveRun, event: string, data: string): void {
    for (const v of r.viewers) if (v.writableLength < 1 << 20) v.write(`event: ${event}\ndata: ${data}\n\n`);
  }

  async handle(action: string, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const json = (status: number, v: unknown) => {
      const body = JSON.stringify(v);
      res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': String(Buffer.byteLength(body)) });
      res.end(body);
    };
    if (action === 'start') {
      if (this.runs.size >= MAX_RUNS) throw new RefusedError(503, `${MAX_RUNS} runs already in progress`);
      const body = parseJsonBody(await readBody(req, 1 << 20));
      const command = Array.isArray(body.command) ? body.command.map(String).slice(0, 200) : ['(notebook cell)'];
      const client = body.client === 'doctor' ? 'doctor' : 'notebook';
      const id = `live-${Date.now().toString(36)}${Math.floor(Math.random() * 36 ** 4).toString(36)}`;
      const run: LiveRun = {
        id,
        command,
        runDir: typeof body.runDir === 'string' ? body.runDir : '',
        startedAtMs: typeof body.startedAtMs === 'number' ? body.startedAtMs : Date.now(),
        client,
        pid: typeof body.pid === 'number' && Number.isInteger(body.pid) ? body.pid : null,
        lastFedMs: Date.now(),
        steps: 0,
        lastStep: null,
        records: [],
        skippedLines: 0,
        gpuSamples: [],
        viewers: new Set(),
        stopSampling: () => undefined,
      };
      // doctor samples the GPUs itself for its report.
      if (this.hub && client !== 'doctor') run.stopSampling = this.hub.onSample((s) => run.gpuSamples.length < MAX_GPU_SAMPLES && run.gpuSamples.push(s));
      this.runs.set(id, run);
      return json(200, { id });
    }
    const run = this.get(url.searchParams.get('id') ?? '');
    if (run === null) throw new RefusedError(400, 'no run in progress with this id (start one first)');
    run.lastFedMs = Date.now();
    if (action === 'records') {
      const { records, skippedLines } = parseProbeLines((await readBody(req)).toString('utf8'));
      run.skippedLines += skippedLines;
      for (const r of records) {
        if (run.records.length >= MAX_RECORDS && r.type === 'step') {
          run.skippedLines++;
          continue;
        }
        run.records.push(r);
        if (r.type === 'step') {
          run.steps++;
          run.lastStep = Math.max(run.lastStep ?? r.step, r.step);
          this.send(run, 'step', stepEvent(r));
        }
      }
      return json(200, { accepted: records.length, skipped: skippedLines });
    }
    if (action === 'end') {
      const body = parseJsonBody(await readBody(req, 1 << 20));
      const code = typeof body.exitCode === 'number' ? body.exitCode : 0;
      const notes = Array.isArray(body.notes) ? body.notes.map(String).slice(0, 20) : [];
      run.stopSampling();
      if ('savedRunId' in body) {
        // The client built and saved the report itself (doctor): nothing to build, the viewers go to the saved run.
        const savedRunId = typeof body.savedRunId === 'string' && /^[A-Za-z0-9._-]{1,80}$/.test(body.savedRunId) ? body.savedRunId : null;
        this.send(run, 'end', JSON.stringify({ runId: savedRunId }));
        this.drop(run);
        this.markEnded(run.id, savedRunId);
        return json(200, { runId: savedRunId });
      }
      const report = await this.report(run, code, notes);
      let runId: string | null = null;
      let saveError: string | null = null;
      try {
        runId = await saveRun(this.storeDir, report, { cwd: typeof body.cwd === 'string' ? body.cwd : process.cwd(), hostname: hostname() });
      } catch (e) {
        saveError = (e as Error).message;
      }
      this.send(run, 'end', JSON.stringify({ runId }));
      this.drop(run);
      this.markEnded(run.id, runId);
      return json(200, { runId, saveError, report, html: renderDoctorHtml(report, inlineAssets()), text: renderDoctorText(report) });
    }
    throw new RefusedError(400, `unknown action '${action}'`);
  }

  /** The doctor report of a finished run: the same inputs `gpuwise doctor` gathers (src/cli/doctor.ts). */
  private async report(run: LiveRun, exitCode: number, notes: string[]): Promise<DoctorReport> {
    const traces: TraceInput[] = [];
    const snapshots: SnapshotInput[] = [];
    const windows = new Set<ProbeRecord>(analysedWindowEnds(run.records));
    for (const r of run.records) {
      if (r.type === 'profile-end' && !windows.has(r)) continue;
      if (r.type === 'profile-end' && r.trace !== null) {
        try {
          const model = await loadTrace(r.trace);
          const metrics = analyzeTrace(model);
          traces.push({ rank: rankOf(r), path: r.trace, metrics, collectives: collectiveTimings(model, metrics.steps), error: null });
        } catch (e) {
          traces.push({ rank: rankOf(r), path: r.trace, metrics: null, collectives: null, error: (e as Error).message });
        }
      }
      const snap = r.type === 'profile-end' && r.snapshot ? { path: r.snapshot, kind: 'window' as const } : r.type === 'oom' && r.snapshot ? { path: r.snapshot, kind: 'oom' as const } : null;
      if (snap) {
        try {
          const { snapshot } = await readSnapshotFile(snap.path);
          snapshots.push({ rank: rankOf(r), ...snap, report: analyzeSnapshot(snapshot, { path: snap.path }).report, error: null });
        } catch (e) {
          snapshots.push({ rank: rankOf(r), ...snap, report: null, error: (e as Error).message });
        }
      }
    }
    // A hub without a problem took no sample during the run: the run was shorter than the sampling period (the
    // notebook's out-of-memory cell on an H100 ended within a second and read "no live sampler in this server").
    const hubProblem = this.hub
      ? (this.hub.status().problem ?? `the run ended before the first GPU sample (the GPUs are sampled every ${this.hub.status().intervalMs / 1000} s)`)
      : 'no live sampler in this server';
    return buildDoctorReport({
      version: VERSION,
      command: run.command,
      runDir: run.runDir,
      startedAtMs: run.startedAtMs,
      endedAtMs: Date.now(),
      exit: { code: exitCode, signal: null },
      forwardedSignal: null,
      records: run.records,
      skippedLines: run.skippedLines,
      traces: traces.sort((a, b) => a.rank - b.rank),
      snapshots,
      gpuSamples: run.gpuSamples.length ? run.gpuSamples : null,
      gpuUnavailableReason: run.gpuSamples.length ? null : hubProblem,
      notes,
    });
  }

  close(): void {
    clearInterval(this.sweeper);
    for (const r of [...this.runs.values()]) this.drop(r);
  }
}

function parseJsonBody(b: Buffer): Record<string, unknown> {
  if (b.length === 0) return {};
  try {
    const v = JSON.parse(b.toString('utf8'));
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    // answered below
  }
  throw new RefusedError(400, 'the body is not a JSON object');
}
