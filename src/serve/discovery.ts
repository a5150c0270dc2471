/**
 * How a `gpuwise doctor` finds the `gpuwise serve` of its store (shell): each server writes `STORE/serve-PID.json`
 * ({schemaVersion, url, token, pid, startedAtMs}, mode 0600: the token opens the server) when it starts and removes
 * it when it stops. A file whose process is gone (a server killed with SIGKILL) is ignored, and a server that does
 * not answer is dropped by the client (runFeed.ts), so a stale file costs nothing.
 */
import { mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export const DISCOVERY_SCHEMA_VERSION = 1;
/** The servers a doctor run feeds at most (several kernels of one user may each run a serve on one store). */
export const MAX_FED_SERVERS = 4;

export interface ServeDiscovery {
  schemaVersion: number;
  /** The server's root URL (loopback for a server on 0.0.0.0), ending in '/'. */
  url: string;
  token: string;
  pid: number;
  startedAtMs: number;
}

const NAME = /^serve-(\d+)\.json$/;

/** Writes this server's discovery file (atomically, 0600); returns its path. Throws on a store that cannot be written. */
export function writeDiscovery(storeDir: string, d: Omit<ServeDiscovery, 'schemaVersion'>): string {
  mkdirSync(storeDir, { recursive: true, mode: 0o700 });
  const path = join(storeDir, `serve-${d.pid}.json`);
  const tmp = `${path}.${Math.random().toString(36).slice(2, 8)}.tmp`;
  writeFileSync(tmp, `${JSON.stringify({ schemaVersion: DISCOVERY_SCHEMA_VERSION, ...d })}\n`, { mode: 0o600, flag: 'wx' });
  renameSync(tmp, path);
  return path;
}

export function removeDiscovery(path: string): void {
  rmSync(path, { force: true });
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The servers of this store whose process still lives, newest first (at most MAX_FED_SERVERS); never throws. */
export function findServers(storeDir: string): ServeDiscovery[] {
  let names: string[];
  try {
    names = readdirSync(storeDir).filter((n) => NAME.test(n));
  } catch {
    return [];
  }
  const found: ServeDiscovery[] = [];
  for (const name of names) {
    try {
      const path = join(storeDir, name);
      // A file others may write is not trusted with where our records go.
      if ((statSync(path).mode & 0o022) !== 0) continue;
      const d = JSON.parse(readFileSync(path, 'utf8')) as Partial<ServeDiscovery>;
      if (typeof d.url !== 'string' || !/^http:\/\/[^/]+\/$/.test(d.url) || typeof d.token !== 'string' || typeof d.pid !== 'number') continue;
      if (!processAlive(d.pid)) continue;
      found.push({ schemaVersion: Number(d.schemaVersion) || 1, url: d.url, token: d.token, pid: d.pid, startedAtMs: Number(d.startedAtMs) || 0 });
    } catch {
      // unreadable or half-written: not a server to feed
    }
  }
  return found.sort((a, b) => b.startedAtMs - a.startedAtMs).slice(0, MAX_FED_SERVERS);
}
