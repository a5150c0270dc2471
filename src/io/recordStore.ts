/**
 * Recording files (shell): SQLite through node-sqlite3-wasm (SQLite compiled to WebAssembly with a
 * VFS on node:fs; nothing native, nothing downloaded at install time).
 *
 * Durability: the writer uses WAL with `locking_mode=EXCLUSIVE` (the wasm VFS has no shared memory,
 * and SQLite allows WAL without it only in exclusive mode) and `synchronous=NORMAL`; each sample is one
 * transaction, so a sample is either wholly in the file or not at all. After kill -9 the committed
 * transactions are in FILE-wal and SQLite replays them on the next open. The VFS locks by creating the
 * directory FILE.lock, which a killed writer leaves behind; the writer also keeps FILE.recorder (its
 * pid), so a reader can tell a live recording (refuse, clearly) from a crashed one (remove the stale
 * lock and read). Readers open read-only and never modify the file.
 */
import { existsSync, readdirSync, readFileSync, rmdirSync, rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { InputError } from './inputError.js';
import { type Database, type Statement, sqlite } from './sqlite.js';
import type { Snapshot } from '../telemetry/sample.js';

export const RECORD_SCHEMA_VERSION = 1;


const SCHEMA = `
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE sample (id INTEGER PRIMARY KEY, t_ms INTEGER NOT NULL, snapshot_deflate BLOB NOT NULL);
CREATE TABLE gpu (
  sample_id INTEGER NOT NULL, t_ms INTEGER NOT NULL, gpu INTEGER NOT NULL, uuid TEXT NOT NULL, lost INTEGER NOT NULL,
  memory_total_bytes INTEGER, memory_used_bytes INTEGER, utilization_gpu_percent REAL, utilization_memory_percent REAL,
  power_watts REAL, temperature_c REAL, sm_clock_mhz REAL, PRIMARY KEY (sample_id, gpu));
CREATE TABLE process (
  sample_id INTEGER NOT NULL, t_ms INTEGER NOT NULL, gpu INTEGER NOT NULL, pid INTEGER NOT NULL,
  used_memory_bytes INTEGER, sm_util_percent REAL, cpu_percent REAL, rss_bytes INTEGER);
CREATE TABLE command (pid INTEGER PRIMARY KEY, first_t_ms INTEGER NOT NULL, user TEXT, command TEXT);
`;

function sidecar(path: string): string {
  return `${path}.recorder`;
}

export class RecordWriter {
  private readonly db: Database;
  private readonly insSample: Statement;
  private readonly insGpu: Statement;
  private readonly insProc: Statement;
  private readonly insCommand: Statement;
  private readonly commandsSeen = new Set<number>();
  private nextId = 1;
  private closed = false;
  samplesWritten = 0;

  constructor(
    readonly path: string,
    meta: Record<string, string>,
  ) {
    if (existsSync(path)) throw new InputError(path, 'already exists; gpuwise never overwrites a file (choose a new --out)');
    const Database = sqlite();
    try {
      this.db = new Database(path);
    } catch (e) {
      throw new InputError(path, `cannot create: ${(e as Error).message}`);
    }
    writeFileSync(sidecar(path), JSON.stringify({ pid: process.pid, host: hostname(), startedMs: Date.now() }));
    const db = this.db;
    try {
      db.exec('PRAGMA locking_mode=EXCLUSIVE');
      const mode = db.all('PRAGMA journal_mode=WAL')[0]?.journal_mode;
      if (mode !== 'wal') throw new Error(`SQLite refused WAL mode (got ${String(mode)})`);
      db.exec('PRAGMA synchronous=NORMAL');
      db.exec(SCHEMA);
      const insMeta = db.prepare('INSERT INTO meta (key, value) VALUES (?, ?)');
      for (const [k, v] of Object.entries({ schemaVersion: String(RECORD_SCHEMA_VERSION), hostname: hostname(), ...meta })) insMeta.run([k, v]);
      insMeta.finalize();
      this.insSample = db.prepare('INSERT INTO sample (id, t_ms, snapshot_deflate) VALUES (?, ?, ?)');
      this.insCommand = db.prepare('INSERT OR IGNORE INTO command VALUES (?, ?, ?, ?)');
      this.insGpu = db.prepare('INSERT INTO gpu VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)');
      this.insProc = db.prepare('INSERT INTO process VALUES (?, ?, ?, ?, ?, ?, ?, ?)');
    } catch (e) {
      // Nothing was recorded yet: remove what this run created, so no half-made file or stale lock stays.
      try {
        db.close();
      } catch {
        // already broken
      }
      for (const f of [path, `${path}-wal`, `${path}-journal`, sidecar(path)]) rmSync(f, { force: true });
      throw e;
    }
  }

  /** Writes one snapshot as one transaction. */
  write(s: Snapshot): void {
    const id = this.nextId++;
    const t = s.timestampMs ?? Date.now();
    const newPids: number[] = [];
    this.db.exec('BEGIN');
    try {
      // Snapshot JSON deflated: about 5x smaller, so hours at 10 Hz stay small (docs/telemetry.md).
      this.insSample.run([id, t, deflateRawSync(JSON.stringify(s))]);
      for (const g of s.gpus) {
        this.insGpu.run([
          id,
          t,
          g.index,
          g.uuid,
          g.lost ? 1 : 0,
          g.memoryTotalBytes,
          g.memoryUsedBytes,
          g.utilizationGpuPercent,
          g.utilizationMemoryPercent,
          g.powerWatts,
          g.temperatureC,
          g.smClockMhz,
        ]);
        for (const p of g.processes) {
          this.insProc.run([id, t, g.index, p.pid, p.usedMemoryBytes, p.smUtilPercent, p.cpuPercent, p.rssBytes]);
          if (!this.commandsSeen.has(p.pid) && !newPids.includes(p.pid)) {
            newPids.push(p.pid);
            this.insCommand.run([p.pid, t, p.user, p.command ?? p.name]);
          }
        }
      }
      this.db.exec('COMMIT');
      for (const pid of newPids) this.commandsSeen.add(pid);
      this.samplesWritten++;
    } catch (e) {
      this.db.exec('ROLLBACK');
      throw e;
    }
  }

  /** Checkpoints the WAL into the main file and releases the lock. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.insSample.finalize();
    this.insGpu.finalize();
    this.insProc.finalize();
    this.insCommand.finalize();
    this.db.close();
    rmSync(sidecar(this.path), { force: true });
  }
}

export interface Recording {
  meta: Record<string, string>;
  /** Snapshots in time order. */
  snapshots: Snapshot[];
  /** Set when a stale lock of a killed recorder was removed to read the file. */
  recoveredFromCrash: boolean;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Clears the lock directory of a recorder that died (kill -9); refuses while the recorder lives. */
function clearStaleLock(path: string): boolean {
  const lock = `${path}.lock`;
  if (!existsSync(lock)) return false;
  let owner: { pid?: number; host?: string } | null = null;
  try {
    owner = JSON.parse(readFileSync(sidecar(path), 'utf8'));
  } catch {
    owner = null;
  }
  if (owner === null || typeof owner.pid !== 'number')
    throw new InputError(
      path,
      `is locked (${lock} exists) by a program other than gpuwise record; if nothing is writing it, remove ${lock}`,
    );
  if (owner.host === hostname() && isAlive(owner.pid))
    throw new InputError(path, `is being recorded right now by gpuwise record (pid ${owner.pid}); stop it (Ctrl-C) to read the file`);
  if (owner.host !== hostname())
    throw new InputError(path, `is locked by gpuwise record on host ${owner.host} (pid ${owner.pid}); if it has stopped, remove ${lock}`);
  if (readdirSync(lock).length > 0) throw new InputError(path, `${lock} is not an empty lock directory; not touching it`);
  rmdirSync(lock);
  rmSync(sidecar(path), { force: true });
  return true;
}

/** Reads a recording. Bad, locked or foreign files raise InputError with one clear line. */
export function readRecording(path: string): Recording {
  if (!existsSync(path)) throw new InputError(path, 'no such file');
  const head = readFileSync(path).subarray(0, 16).toString('latin1');
  if (!head.startsWith('SQLite format 3')) throw new InputError(path, 'not a SQLite file (gpuwise record writes SQLite)');
  const recovered = clearStaleLock(path);
  const Database = sqlite();
  let db: Database;
  try {
    db = new Database(path, { readOnly: true, fileMustExist: true });
  } catch (e) {
    throw new InputError(path, `cannot open: ${(e as Error).message}`);
  }
  try {
    db.exec('PRAGMA locking_mode=EXCLUSIVE'); // WAL without shared memory, as the writer did
    const meta: Record<string, string> = {};
    for (const r of db.all('SELECT key, value FROM meta')) meta[String(r.key)] = String(r.value);
    if (meta.schemaVersion === undefined) throw new InputError(path, 'a SQLite file, but not a gpuwise recording (no meta table entries)');
    const snapshots = db
      .all('SELECT snapshot_deflate FROM sample ORDER BY id')
      .map((r) => JSON.parse(inflateRawSync(r.snapshot_deflate as Uint8Array).toString('utf8')) as Snapshot);
    for (const s of snapshots) s.source = 'replay';
    return { meta, snapshots, recoveredFromCrash: recovered };
  } catch (e) {
    if (e instanceof InputError) throw e;
    const msg = (e as Error).message;
    throw new InputError(path, /no such table/.test(msg) ? 'a SQLite file, but not a gpuwise recording' : `unreadable recording: ${msg}`);
  } finally {
    try {
      db.close();
    } catch {
      // closing a file that failed to read must not hide the first error
    }
  }
}
