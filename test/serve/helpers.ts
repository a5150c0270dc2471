/** Starting a server on fixtures for the serve tests (loopback only, port 0). */
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LiveHub, type LiveHubOptions } from '../../src/serve/liveHub.js';
import { LiveRuns } from '../../src/serve/liveRuns.js';
import { type RunningServer, startServer } from '../../src/serve/server.js';
import { ROOT } from './fixtures.js';

/** Builds the fake libnvidia-ml the telemetry tests use (2 fake H200s); null without a C compiler. */
export function fakeNvml(dir: string): string | null {
  const out = join(dir, 'libfake-nvml.so');
  try {
    execFileSync('cc', ['-shared', '-fPIC', '-o', out, join(ROOT, 'test', 'fixtures', 'telemetry', 'fake-nvml.c')], { stdio: 'pipe' });
    return out;
  } catch {
    return null;
  }
}

export interface Served extends RunningServer {
  store: string;
  live: LiveHub;
  liveRuns: LiveRuns;
}

export async function serveOn(store: string, hub: Partial<LiveHubOptions> = {}, o: { host?: string; maxUploadBytes?: number; token?: string } = {}): Promise<Served> {
  const live = new LiveHub({ intervalMs: 200, telemetryDir: join(store, 'telemetry'), procfs: false, ...hub });
  const liveRuns = new LiveRuns(store, live);
  const s = await startServer({ host: o.host ?? '127.0.0.1', port: 0, storeDir: store, maxUploadBytes: o.maxUploadBytes ?? 64 << 20, live, liveRuns, token: o.token });
  await live.start();
  return { ...s, store, live, liveRuns };
}

export function scratch(name: string): string {
  return mkdtempSync(join(tmpdir(), `gpuwise-serve-${name}-`));
}

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** One HTTP request with full control of the headers (fetch will not send a forged Host). */
export function http(url: string, opts: { method?: string; headers?: Record<string, string>; body?: string | Buffer } = {}): Promise<Reply> {
  return new Promise((ok, no) => {
    const req = request(url, { method: opts.method ?? 'GET', headers: opts.headers }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c) => parts.push(c));
      res.on('end', () => ok({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts).toString('utf8') }));
      res.on('error', no);
    });
    req.on('error', no);
    req.end(opts.body);
  });
}

/** Reads Server-Sent Events from `url` until `want` events of type `type` (default message) arrived. */
export function sseEvents(url: string, want: number, type = 'message', timeoutMs = 10_000): Promise<unknown[]> {
  return new Promise((ok, no) => {
    const got: unknown[] = [];
    let buf = '';
    const timer = setTimeout(() => {
      req.destroy();
      no(new Error(`only ${got.length} of ${want} '${type}' events in ${timeoutMs} ms`));
    }, timeoutMs);
    const req = request(url, (res) => {
      if (res.statusCode !== 200) {
        clearTimeout(timer);
        no(new Error(`HTTP ${res.statusCode}`));
        return;
      }
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        buf += c;
        let i = buf.indexOf('\n\n');
        while (i >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          i = buf.indexOf('\n\n');
          let ev = 'message';
          const data: string[] = [];
          for (const line of block.split('\n')) {
            if (line.startsWith('event: ')) ev = line.slice(7);
            else if (line.startsWith('data: ')) data.push(line.slice(6));
          }
          if (ev === type && data.length) got.push(JSON.parse(data.join('\n')));
          if (got.length >= want) {
            clearTimeout(timer);
            req.destroy();
            ok(got);
            return;
          }
        }
      });
    });
    req.on('error', (e) => {
      if (got.length < want) no(e);
    });
    req.end();
  });
}
