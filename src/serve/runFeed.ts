/**
 * A `gpuwise doctor` run shown live by the `gpuwise serve` of its store (shell, the client side of liveRuns.ts):
 * the same endpoints the notebook uses. `start` when the run starts, the probe records as JSON lines to `records`
 * about once a second, `end` with the id the run was saved under in the history (doctor saves it itself; the
 * server builds nothing). The servers are found through their discovery files (discovery.ts).
 *
 * Fail-open: nothing here may slow or stop doctor. Records wait in a bounded queue (past it they are dropped, said
 * once); every request has a timeout; a server that refuses, times out or is gone is given up after one failure,
 * with one note on stderr. `finish` waits at most FINISH_MS in all.
 */
import { request } from 'node:http';
import type { ProbeRecord } from '../run/records.js';
import { type ServeDiscovery, findServers } from './discovery.js';

/** Records waiting for one server; past this the newest are dropped (the run's own files keep them all). */
export const MAX_QUEUED = 20_000;
const FLUSH_MS = 1000;
/** Records per request (a few MB at most: the server takes bodies up to 8 MB). */
const BATCH = 5000;
export const REQUEST_MS = 2000;
export const FINISH_MS = 2500;
/** At the end, a server that has not even answered `start` (the run may have been short) gets only this long. */
export const LATE_START_MS = 250;

export interface RunFeedStart {
  command: string[];
  runDir: string;
  startedAtMs: number;
  pid: number;
}

type Post = (path: string, body: string, type: string, timeoutMs: number) => Promise<unknown>;

function poster(d: ServeDiscovery): Post {
  return (path, body, type, timeoutMs) =>
    new Promise((ok, no) => {
      const req = request(`${d.url}${path}`, {
        method: 'POST',
        // No keep-alive: an idle socket must not hold doctor's process open at its end.
        agent: false,
        headers: { authorization: `Bearer ${d.token}`, 'content-type': type, 'content-length': String(Buffer.byteLength(body)), connection: 'close' },
        timeout: timeoutMs,
      });
      const timer = setTimeout(() => req.destroy(new Error(`no answer in ${timeoutMs} ms`)), timeoutMs);
      // Neither the socket nor the timer holds doctor's process open once its own work is done.
      timer.unref();
      req.on('socket', (s) => s.unref());
      req.on('timeout', () => req.destroy(new Error(`no answer in ${timeoutMs} ms`)));
      req.on('error', (e) => {
        clearTimeout(timer);
        no(e);
      });
      req.on('response', (res) => {
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => parts.push(c));
        res.on('error', (e) => {
          clearTimeout(timer);
          no(e);
        });
        res.on('end', () => {
          clearTimeout(timer);
          const text = Buffer.concat(parts).toString('utf8');
          let v: unknown = null;
          try {
            v = JSON.parse(text);
          } catch {
            // answered below
          }
          if ((res.statusCode ?? 0) >= 400) no(new Error((v as { error?: string } | null)?.error ?? `HTTP ${res.statusCode}`));
          else ok(v);
        });
      });
      req.end(body);
    });
}

/** One server fed with one run. */
class ServerFeed {
  private readonly post: Post;
  private runId: string | null = null;
  private readonly queue: string[] = [];
  private dropped = 0;
  private dead = false;
  private busy: Promise<void> = Promise.resolve();
  private started: Promise<void>;

  constructor(
    readonly server: ServeDiscovery,
    start: RunFeedStart,
    private readonly say: (line: string) => void,
    post?: Post,
  ) {
    this.post = post ?? poster(server);
    this.started = this.post('api/runs/live/start', JSON.stringify({ ...start, client: 'doctor' }), 'application/json', REQUEST_MS).then(
      (v) => {
        const id = (v as { id?: unknown } | null)?.id;
        if (typeof id !== 'string') throw new Error('no run id in its answer');
        this.runId = id;
      },
    );
    this.started.catch((e) => this.giveUp(e));
  }

  private giveUp(e: unknown): void {
    if (this.dead) return;
    this.dead = true;
    this.queue.length = 0;
    this.say(`gpuwise doctor: note: the gpuwise serve at ${this.server.url} does not follow this run (${(e as Error)?.message ?? String(e)}); the run goes on`);
  }

  push(line: string): void {
    if (this.dead) return;
    if (this.queue.length >= MAX_QUEUED) {
      if (this.dropped++ === 0) this.say(`gpuwise doctor: note: the gpuwise serve at ${this.server.url} is not keeping up; records past ${MAX_QUEUED} waiting are not sent to it (the run directory has them all)`);
      return;
    }
    this.queue.push(line);
  }

  /** Sends what waits, one request at a time (a flush while one is in flight joins it). */
  flush(): Promise<void> {
    this.busy = this.busy.then(async () => {
      try {
        await this.started;
      } catch {
        return;
      }
      while (!this.dead && this.queue.length > 0 && this.runId !== null) {
        const batch = this.queue.splice(0, BATCH);
        try {
          await this.post(`api/runs/live/records?id=${encodeURIComponent(this.runId)}`, `${batch.join('\n')}\n`, 'application/x-ndjson', REQUEST_MS);
        } catch (e) {
          this.giveUp(e);
        }
      }
    });
    return this.busy;
  }

  /** Sends nothing more (doctor's wait for this server is over). */
  stop(): void {
    this.dead = true;
    this.queue.length = 0;
  }

  async end(exitCode: number, signal: string | null, savedRunId: string | null): Promise<void> {
    if (this.runId === null && !this.dead) {
      let t: NodeJS.Timeout | undefined;
      await Promise.race([this.started.catch(() => undefined), new Promise<void>((ok) => (t = setTimeout(ok, LATE_START_MS)))]);
      clearTimeout(t);
    }
    if (this.runId === null) {
      this.giveUp(new Error('no answer to the start of the run'));
      return;
    }
    await this.flush();
    if (this.dead || this.runId === null) return;
    try {
      await this.post(`api/runs/live/end?id=${encodeURIComponent(this.runId)}`, JSON.stringify({ exitCode, signal, savedRunId, dropped: this.dropped }), 'application/json', REQUEST_MS);
    } catch (e) {
      this.giveUp(e);
    }
  }
}

export interface RunFeed {
  /** A record as the collector received it. */
  push(r: ProbeRecord): void;
  /** Sends the rest and ends the run on each server, pointing it at the saved run; at most FINISH_MS. */
  finish(exitCode: number, signal: string | null, savedRunId: string | null): Promise<void>;
}

/**
 * Feeds the servers running on `storeDir` with this run; null when none runs (nothing is started then).
 * `say` writes one line (stderr), `post` replaces HTTP in tests.
 */
export function startRunFeed(storeDir: string, start: RunFeedStart, say: (line: string) => void, post?: (d: ServeDiscovery) => Post): RunFeed | null {
  const servers = findServers(storeDir);
  if (servers.length === 0) return null;
  const feeds = servers.map((d) => new ServerFeed(d, start, say, post?.(d)));
  const timer = setInterval(() => {
    for (const f of feeds) void f.flush();
  }, FLUSH_MS);
  timer.unref();
  return {
    push(r) {
      const line = JSON.stringify(r);
      for (const f of feeds) f.push(line);
    },
    async finish(exitCode, signal, savedRunId) {
      clearInterval(timer);
      let cap: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all(feeds.map((f) => f.end(exitCode, signal, savedRunId))),
        new Promise<void>((ok) => {
          cap = setTimeout(ok, FINISH_MS);
        }),
      ]);
      clearTimeout(cap);
      for (const f of feeds) f.stop();
    },
  };
}
