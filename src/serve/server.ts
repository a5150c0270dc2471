/**
 * `gpuwise serve`'s HTTP server (shell): Node's own http module, one process. Every request passes the access
 * rule (access.ts), then one route; pages are built by the pure modules in pages/ from what the other commands
 * compute (the run history, analyze's and memory's reports, the live sampler). Limits keep it up and bounded
 * under many tabs and bad requests: header and request timeouts, a connection cap, small bodies except uploads
 * (streamed to the store with their own cap), a viewer cap on the live streams, one analysis at a time.
 */
import { randomBytes } from 'node:crypto';
import { createReadStream, statSync } from 'node:fs';
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

import { compareRuns } from '../history/compare.js';
import { InputError } from '../io/inputError.js';
import { listRuns, loadRun, resolveRunRef, storePath } from '../io/runStore.js';
import { type AccessRequest, TOKEN_COOKIE, decideAccess, isLoopbackBind } from './access.js';
import { type Asset, inlineAssets, loadAssets } from './assets.js';
import type { LiveHub } from './liveHub.js';
import type { LiveRuns } from './liveRuns.js';
import { OpenReports } from './openReports.js';
import { errorPage } from './pages/layout.js';
import { livePage } from './pages/live.js';
import { analyzePage } from './pages/analyze.js';
import { memoryPage } from './pages/memory.js';
import { reportsIndexPage } from './pages/reports.js';
import { comparePage, renderDoctorHtml, runPage, runsListPage } from './pages/runs.js';
import { RefusedError, readBody } from './requestBody.js';

export const SERVE_SCHEMA_VERSION = 1;

export interface ServeOptions {
  host: string;
  port: number;
  /** The run history folder (runs.sqlite); uploads go to STORE/uploads, live history to STORE/telemetry. */
  storeDir: string;
  token?: string;
  maxUploadBytes: number;
  live: LiveHub;
  liveRuns: LiveRuns;
  maxConnections?: number;
}

export interface RunningServer {
  url: string;
  /** The URL with the token: the one to print and open. */
  tokenUrl: string;
  token: string;
  port: number;
  server: Server;
  close(): Promise<void>;
}

function send(res: ServerResponse, status: number, type: string, body: string | Buffer, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': type, 'content-length': String(Buffer.byteLength(body)), 'cache-control': 'no-store', ...headers });
  res.end(body);
}

function sendJson(res: ServerResponse, status: number, v: unknown): void {
  send(res, status, 'application/json; charset=utf-8', JSON.stringify(v));
}

function sendHtml(res: ServerResponse, status: number, html: string): void {
  send(res, status, 'text/html; charset=utf-8', html);
}

function wantsJson(url: URL): boolean {
  return url.pathname.startsWith('/api/');
}

function fail(res: ServerResponse, url: URL, status: number, message: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (wantsJson(url)) sendJson(res, status, { error: message });
  else sendHtml(res, status, errorPage(status, message));
}

function param(url: URL, name: string): string {
  const v = url.searchParams.get(name);
  if (v === null || v === '') throw new RefusedError(400, `missing parameter '${name}'`);
  return v;
}

export async function startServer(o: ServeOptions): Promise<RunningServer> {
  const token = o.token ?? randomBytes(18).toString('base64url');
  const loopback = isLoopbackBind(o.host);
  const assets = loadAssets();
  const reports = new OpenReports({ uploadsDir: join(o.storeDir, 'uploads'), maxUploadBytes: o.maxUploadBytes });
  const store = o.storeDir;

  async function loadStoredRun(ref: string) {
    // A run that was followed live keeps its live id: it leads to the run it was saved as.
    const endedAs = o.liveRuns.endedAs(ref);
    if (endedAs === null) throw new RefusedError(404, 'this run ended but was not saved in the history (its client said why)');
    const id = await resolveRunRef(store, endedAs ?? ref);
    return { id, ...(await loadRun(store, id)) };
  }

  async function route(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const p = url.pathname;
    const method = req.method ?? 'GET';
    if (method === 'GET' || method === 'HEAD') {
      if (p === '/' || p === '/runs') {
        const runs = await listRuns(store, 500);
        return sendHtml(res, 200, runsListPage(runs, storePath(store), o.liveRuns.inProgress()));
      }
      if (p === '/run') {
        const id = param(url, 'id');
        const live = o.liveRuns.get(id);
        if (live) return sendHtml(res, 200, o.liveRuns.page(live));
        const r = await loadStoredRun(id);
        return sendHtml(res, 200, runPage(r.report, { id: r.id }));
      }
      if (p === '/run-report') return sendHtml(res, 200, renderDoctorHtml((await loadStoredRun(param(url, 'id'))).report, inlineAssets()));
      if (p === '/compare') {
        const [a, b] = [await loadStoredRun(param(url, 'a')), await loadStoredRun(param(url, 'b'))];
        const c = compareRuns({ label: a.id, id: a.id, report: a.report }, { label: b.id, id: b.id, report: b.report });
        return sendHtml(res, 200, comparePage(c, a.report, b.report));
      }
      if (p === '/reports') return sendHtml(res, 200, reportsIndexPage(reports.list(), o.maxUploadBytes));
      if (p === '/report' || p === '/report-full' || p === '/api/report') {
        const item = reports.get(param(url, 'id'));
        if (item === null) return fail(res, url, 404, 'no such report (the server keeps the 16 most recent; open the file again)');
        if (p === '/api/report') return sendJson(res, 200, item.report);
        // report-full: the same page as one file, what `analyze --html` / `memory --html` write.
        const standalone = p === '/report-full' ? inlineAssets() : undefined;
        if (item.kind === 'trace') return sendHtml(res, 200, analyzePage(item.report, { id: item.id, label: item.label, traceFiles: item.files, standalone }));
        return sendHtml(res, 200, memoryPage(item.report, { id: item.id, label: item.label, standalone }));
      }
      if (p === '/api/report/trace') {
        const item = reports.get(param(url, 'id'));
        const file = item?.kind === 'trace' ? item.files[Number(url.searchParams.get('file') ?? 0)] : undefined;
        if (file === undefined) return fail(res, url, 404, 'no such trace');
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(statSync(file).size), 'cache-control': 'no-store' });
        createReadStream(file).on('error', () => res.destroy()).pipe(res);
        return;
      }
      if (p === '/live' || p === '/live-panel') return sendHtml(res, 200, livePage({ bare: p === '/live-panel' }));
      if (p === '/api/live/stream') {
        if (!o.live.subscribe(res)) fail(res, url, 503, 'too many live viewers');
        return;
      }
      if (p === '/api/live/history') {
        const seconds = Math.min(86_400, Math.max(1, Number(url.searchParams.get('seconds') ?? 3600) || 3600));
        const points = Math.min(20_000, Math.max(10, Number(url.searchParams.get('points') ?? 2000) || 2000));
        return sendJson(res, 200, o.live.history(Date.now() - seconds * 1000, points));
      }
      if (p === '/api/live/status') return sendJson(res, 200, { schemaVersion: SERVE_SCHEMA_VERSION, ...o.live.status(), latest: o.live.latest() });
      if (p === '/api/runs') return sendJson(res, 200, { schemaVersion: SERVE_SCHEMA_VERSION, store: storePath(store), runs: await listRuns(store, 500), inProgress: o.liveRuns.inProgress() });
      if (p === '/api/run') {
        const live = o.liveRuns.get(param(url, 'id'));
        if (live) return sendJson(res, 200, o.liveRuns.state(live));
        return sendJson(res, 200, (await loadStoredRun(param(url, 'id'))).report);
      }
      if (p === '/api/runs/live/stream') {
        const live = o.liveRuns.get(param(url, 'id'));
        if (!live) return fail(res, url, 404, 'no run in progress with this id');
        if (!o.liveRuns.subscribe(live, res)) fail(res, url, 503, 'too many viewers of this run');
        return;
      }
      if (p.startsWith('/assets/')) {
        const a: Asset | undefined = assets.get(p.slice(8));
        if (a === undefined) return fail(res, url, 404, 'no such asset');
        return send(res, 200, a.type, a.body, { 'cache-control': 'max-age=3600' });
      }
      if (p === '/favicon.ico') return send(res, 204, 'text/plain', '');
      return fail(res, url, 404, `no page ${p}`);
    }
    if (method === 'POST') {
      if (p === '/open') {
        // A form post (urlencoded): POST so that a page of another origin cannot make the server read files (access.ts).
        const path = new URLSearchParams((await readBody(req, 64 << 10)).toString('utf8')).get('path')?.trim() ?? '';
        if (path === '') return sendHtml(res, 400, reportsIndexPage(reports.list(), o.maxUploadBytes, 'give the path of a trace, a folder of traces, or a memory snapshot'));
        try {
          const item = await reports.openPath(path);
          res.writeHead(303, { location: `report?id=${encodeURIComponent(item.id)}` });
          res.end();
        } catch (e) {
          if (!(e instanceof InputError)) throw e;
          sendHtml(res, 400, reportsIndexPage(reports.list(), o.maxUploadBytes, e.message));
        }
        return;
      }
      if (p === '/api/reports/upload') {
        const item = await reports.upload(req, url.searchParams.get('name') ?? 'upload');
        return sendJson(res, 200, { id: item.id, kind: item.kind, headline: item.headline });
      }
      if (p.startsWith('/api/runs/live/')) return await o.liveRuns.handle(p.slice('/api/runs/live/'.length), req, res, url);
      return fail(res, url, 404, `no endpoint ${p}`);
    }
    res.setHeader('allow', 'GET, HEAD, POST');
    return fail(res, url, 405, `method ${method} not allowed`);
  }

  const server = createServer({ maxHeaderSize: 16 << 10, requestTimeout: 10 * 60_000, headersTimeout: 10_000, keepAliveTimeout: 5_000 }, (req, res) => {
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://gpuwise.invalid');
    } catch {
      return send(res, 400, 'text/plain; charset=utf-8', 'bad request line');
    }
    const access: AccessRequest = {
      method: req.method ?? 'GET',
      host: req.headers.host,
      origin: req.headers.origin,
      queryToken: url.searchParams.get('token'),
      cookie: req.headers.cookie,
      authorization: req.headers.authorization,
    };
    const decision = decideAccess(token, loopback, access);
    res.setHeader('x-content-type-options', 'nosniff');
    res.setHeader('referrer-policy', 'no-referrer');
    // Pages load only this server's scripts and data; the one other origin is Perfetto's UI, reached by postMessage.
    res.setHeader('content-security-policy', "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'");
    if (!decision.ok) {
      req.resume();
      return fail(res, url, decision.status, decision.reason);
    }
    if (decision.setCookie) res.setHeader('set-cookie', `${TOKEN_COOKIE}=${token}; Path=/; HttpOnly; SameSite=Strict`);
    route(req, res, url).catch((e: unknown) => {
      if (e instanceof RefusedError) return fail(res, url, e.status, e.message);
      if (e instanceof InputError) return fail(res, url, e.problem.startsWith('unknown run') || e.problem.includes('matches') ? 404 : 400, e.message);
      // A failure of gpuwise itself: one line to the page and to stderr, the server stays up.
      process.stderr.write(`gpuwise serve: internal error on ${req.method} ${url.pathname}: ${(e as Error)?.message ?? String(e)}\n`);
      if (process.env.GPUWISE_DEBUG) process.stderr.write(`${(e as Error)?.stack}\n`);
      fail(res, url, 500, `internal error: ${(e as Error)?.message ?? String(e)}`);
    });
  });
  server.maxConnections = o.maxConnections ?? 256;
  server.maxRequestsPerSocket = 1000;
  await new Promise<void>((ok, no) => {
    server.once('error', no);
    server.listen(o.port, o.host, () => ok());
  });
  const port = (server.address() as AddressInfo).port;
  const hostForUrl = o.host.includes(':') && !o.host.startsWith('[') ? `[${o.host}]` : o.host === '0.0.0.0' ? '127.0.0.1' : o.host;
  const url = `http://${hostForUrl}:${port}/`;
  return {
    url,
    tokenUrl: `${url}?token=${token}`,
    token,
    port,
    server,
    close: async () => {
      reports.close();
      o.live.stop();
      o.liveRuns.close();
      server.closeAllConnections();
      await new Promise<void>((ok) => server.close(() => ok()));
    },
  };
}
