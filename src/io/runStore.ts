/**
 * The local run history (shell): every doctor run in one SQLite file, DIR/runs.sqlite (default
 * ~/.gpuwise/, `--store DIR`, GPUWISE_STORE), through node-sqlite3-wasm as `record` uses it.
 *
 * Each run is one row: the key figures as columns (plain SQL works: `sqlite3 ~/.gpuwise/runs.sqlite
 * 'select id, outcome, median_step_s from run'`) and the whole doctor report, raw-deflated.
 *
 * Concurrency: the engine's VFS locks by creating the directory FILE.lock (a mutex: it has no shared
 * memory, so WAL runs in `locking_mode=EXCLUSIVE`, as in io/recordStore.ts). Every use holds
 * the file for milliseconds (open, one transaction, close, which checkpoints the WAL), so a second
 * process that finds the lock taken waits and retries for up to LOCK_WAIT_MS. A lock directory older
 * than STALE_LOCK_MS belongs to a process killed while it held the file (no use lasts that long):
 * it is removed, and SQLite replays the committed transactions from FILE-wal.
 */
import { closeSync, existsSync, mkdirSync, openSync, readSync, rmdirSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import type { DoctorReport } from '../doctor/reportTypes.js';
import { doctorReportProblem } from '../doctor/reportCheck.js';
import { type RunFigures, runFigures } from '../history/figures.js';
import { InputError } from './inputError.js';
import { type Database, sqlite } from './sqlite.js';
import { sleep } from './sleep.js';

/** Current schema of runs.sqlite; `schema_version` holds one row per migration applied. */
export const RUN_STORE_SCHEMA_VERSION = 2;
export const STORE_FILE = 'runs.sqlite';
export const LOCK_WAIT_MS = 10_000;
export const STALE_LOCK_MS = 60_000;

/** Migrations by target version; applied in order inside one transaction each. */
const MIGRATIONS: Record<number, string> = {
  1: `
CREATE TABLE run (
  id TEXT PRIMARY KEY,
  started_at_ms INTEGER NOT NULL,
  duration_s REAL,
  command_json TEXT NOT NULL,
  command_line TEXT NOT NULL,
  cwd TEXT,
  hostname TEXT,
  outcome TEXT NOT NULL,
  exit_code INTEGER,
  run_dir TEXT,
  gpuwise_version TEXT,
  median_step_s REAL,
  mean_step_s REAL,
  p90_step_s REAL,
  samples_per_s REAL,
  tokens_per_s REAL,
  data_wait_share REAL,
  peak_allocated_bytes INTEGER,
  peak_reserved_bytes INTEGER,
  max_process_nvml_bytes INTEGER,
  max_gpu_used_bytes INTEGER,
  gpu_names TEXT,
  world_size INTEGER,
  findings_high INTEGER NOT NULL,
  findings_medium INTEGER NOT NULL,
  findings_low INTEGER NOT NULL,
  findings_info INTEGER NOT NULL,
  report_schema INTEGER NOT NULL,
  report_deflate BLOB NOT NULL
);
CREATE INDEX run_by_start ON run (started_at_ms, id);
`,
  // tune --plan: each plan step's (predicted, measured) pair, for the pace model's accuracy on this machine by lever.
  2: `
CREATE TABLE lever_trial (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  run_id TEXT,
  at_ms INTEGER NOT NULL,
  hostname TEXT,
  device TEXT,
  command_line TEXT NOT NULL,
  step_id TEXT NOT NULL,
  lever TEXT,
  label TEXT NOT NULL,
  predicted_from_s REAL,
  predicted_s REAL,
  measured_from_s REAL,
  measured_s REAL,
  spread_s REAL,
  kept INTEGER NOT NULL,
  settings_json TEXT
);
CREATE INDEX lever_trial_by_host ON lever_trial (hostname, step_id);
`,
};

/** The store folder: --store, else GPUWISE_STORE, else ~/.gpuwise. */
export function storeDir(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  if (flag !== undefined && flag !== '') return resolve(flag);
  if (env.GPUWISE_STORE) return resolve(env.GPUWISE_STORE);
  return join(homedir(), '.gpuwise');
}

export function storePath(dir: string): string {
  return join(dir, STORE_FILE);
}

/** One run as listed: the columns (the key figures as `history/figures.ts` defines them), without the report. */
export interface StoredRun extends Omit<RunFigures, 'trainingRanks' | 'findingsBySeverity' | 'samplesPerStep' | 'tokensPerStep'> {
  id: string;
  startedAtMs: number;
  durationS: number | null;
  command: string[];
  cwd: string | null;
  hostname: string | null;
  outcome: string;
  exitCode: number | null;
  runDir: string | null;
  gpuwiseVersion: string | null;
  findings: { high: number; medium: number; low: number; info: number };
}


function isLocked(e: unknown): boolean {
  return /database is locked|SQLITE_BUSY/i.test((e as Error)?.message ?? '');
}

/** Removes the lock directory of a process that died holding the store (see the module comment). */
function clearStaleLock(path: string, nowMs: number): boolean {
  const lock = `${path}.lock`;
  try {
    const st = statSync(lock);
    if (!st.isDirectory() || nowMs - st.mtimeMs < STALE_LOCK_MS) return false;
    rmdirSync(lock); // fails on a non-empty directory: then it is not SQLite's lock, left alone
    return true;
  } catch {
    return false;
  }
}

function checkHeader(path: string): void {
  let head: string;
  try {
    // 16 bytes, not the file: a store path naming a huge file or a device must cost nothing.
    const fd = openSync(path, 'r');
    try {
      const buf = Buffer.alloc(16);
      head = buf.toString('latin1', 0, readSync(fd, buf, 0, 16, 0));
    } finally {
      closeSync(fd);
    }
  } catch (e) {
    throw new InputError(path, `cannot read: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  if (head.length > 0 && !head.startsWith('SQLite format 3'))
    throw new InputError(path, 'is not a SQLite file (damaged run history? move it away and gpuwise starts a new one)');
}

/** The tables of the file; a SQLite file of someone else's (tables but no schema_version) is refused, untouched. */
function tablesOf(db: Database, path: string): Set<string> {
  const tables = new Set(db.all("SELECT name FROM sqlite_master WHERE type = 'table'").map((r) => String(r.name)));
  if (!tables.has('schema_version') && tables.size > 0)
    throw new InputError(path, 'is a SQLite file but not a gpuwise run history (no schema_version table)');
  return tables;
}

/** The applied schema version, after creating or migrating the tables when `write` is set. */
function prepareSchema(db: Database, path: string, write: boolean): number {
  const tables = tablesOf(db, path);
  let version = 0;
  if (tables.has('schema_version')) version = Number(db.get('SELECT MAX(version) AS v FROM schema_version')?.v ?? 0);
  if (version > RUN_STORE_SCHEMA_VERSION)
    throw new InputError(
      path,
      `was written by a newer gpuwise (run history schema ${version}; this one knows ${RUN_STORE_SCHEMA_VERSION})`,
    );
  if (version === RUN_STORE_SCHEMA_VERSION || !write) return version;
  for (let v = version + 1; v <= RUN_STORE_SCHEMA_VERSION; v++) {
    db.exec('BEGIN IMMEDIATE');
    try {
      if (v === 1) db.exec('CREATE TABLE schema_version (version INTEGER NOT NULL, applied_at_ms INTEGER NOT NULL)');
      db.exec(MIGRATIONS[v] as string);
      db.run('INSERT INTO schema_version (version, applied_at_ms) VALUES (?, ?)', [v, Date.now()]);
      db.exec('COMMIT');
    } catch (e) {
      db.exec('ROLLBACK');
      throw e;
    }
  }
  return RUN_STORE_SCHEMA_VERSION;
}

/**
 * Opens the store, runs `fn` and closes it (checkpointing the WAL). `write` creates the folder and
 * the file; a read of a store that does not exist returns `absent` without creating anything.
 */
export interface StoreOptions {
  /** How long to wait for another process's lock (default LOCK_WAIT_MS). */
  lockWaitMs?: number;
}

async function withStore<T>(dir: string, write: boolean, absent: T, fn: (db: Database) => T, opts: StoreOptions = {}): Promise<T> {
  const lockWaitMs = opts.lockWaitMs ?? LOCK_WAIT_MS;
  const path = storePath(dir);
  if (!write && !existsSync(path)) return absent;
  if (write) {
    try {
      mkdirSync(dir, { recursive: true });
    } catch (e) {
      throw new InputError(dir, `cannot create the run history folder: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
  }
  if (existsSync(path)) checkHeader(path);
  const Database = sqlite();
  const until = Date.now() + lockWaitMs;
  let clearedStale = false;
  for (let attempt = 0; ; attempt++) {
    let db: Database;
    try {
      db = new Database(path, write ? {} : { readOnly: true, fileMustExist: true });
    } catch (e) {
      throw new InputError(path, `cannot open the run history: ${(e as Error).message}`);
    }
    try {
      db.exec('PRAGMA locking_mode=EXCLUSIVE');
      if (write) {
        // Checked before WAL mode is set: switching a foreign file to WAL changes it.
        tablesOf(db, path);
        const mode = db.all('PRAGMA journal_mode=WAL')[0]?.journal_mode;
        if (mode !== 'wal') throw new Error(`SQLite refused WAL mode (got ${String(mode)})`);
        db.exec('PRAGMA synchronous=NORMAL');
      }
      // An empty file (another gpuwise is creating it right now) holds no runs yet.
      if (prepareSchema(db, path, write) === 0) return absent;
      return fn(db);
    } catch (e) {
      if (!isLocked(e)) {
        if (e instanceof InputError) throw e;
        const msg = (e as Error).message;
        throw new InputError(path, /malformed|not a database|corrupt/i.test(msg) ? `damaged run history: ${msg}` : `run history: ${msg}`);
      }
      if (!clearedStale && clearStaleLock(path, Date.now())) {
        clearedStale = true;
        continue;
      }
      if (Date.now() >= until)
        throw new InputError(
          path,
          `is locked by another gpuwise (${path}.lock held for ${(lockWaitMs / 1000).toFixed(lockWaitMs < 1000 ? 1 : 0)} s); try again`,
        );
      await sleep(15 + Math.random() * 40 + Math.min(attempt, 10) * 5);
    } finally {
      try {
        db.close();
      } catch {
        // a close that fails must not hide the first error
      }
    }
  }
}

/** A short id that sorts by start time: UTC yymmdd-hhmmss and three random base-36 characters. */
export function newRunId(startedAtMs: number, random: () => number = Math.random): string {
  const d = new Date(startedAtMs);
  const p = (n: number) => String(n).padStart(2, '0');
  const stamp = `${p(d.getUTCFullYear() % 100)}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}-${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}`;
  let suffix = '';
  for (let i = 0; i < 3; i++) suffix += Math.floor(random() * 36).toString(36);
  return `${stamp}-${suffix}`;
}

export interface SaveContext {
  cwd: string;
  hostname: string;
}

/** Saves a finished run; returns its id. Throws InputError when the store cannot be written. */
export async function saveRun(dir: string, report: DoctorReport, ctx: SaveContext, opts: StoreOptions = {}): Promise<string> {
  const f = runFigures(report);
  const blob = deflateRawSync(JSON.stringify(report));
  return withStore(
    dir,
    true,
    '',
    (db) => {
      for (let tries = 0; ; tries++) {
        const id = newRunId(report.run.startedAtMs);
        if (db.get('SELECT 1 AS x FROM run WHERE id = ?', [id]) !== null) {
          if (tries > 20) throw new Error('could not find a free run id');
          continue;
        }
        db.run(
          `INSERT INTO run (id, started_at_ms, duration_s, command_json, command_line, cwd, hostname, outcome, exit_code, run_dir,
           gpuwise_version, median_step_s, mean_step_s, p90_step_s, samples_per_s, tokens_per_s, data_wait_share,
           peak_allocated_bytes, peak_reserved_bytes, max_process_nvml_bytes, max_gpu_used_bytes, gpu_names, world_size,
           findings_high, findings_medium, findings_low, findings_info, report_schema, report_deflate)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          [
            id,
            report.run.startedAtMs,
            report.run.durationS,
            JSON.stringify(report.run.command),
            report.run.command.join(' '),
            ctx.cwd,
            report.environment.hostname ?? ctx.hostname,
            report.run.outcome,
            report.run.exitCode,
            report.run.runDir,
            report.version,
            f.medianStepS,
            f.meanStepS,
            f.p90StepS,
            f.samplesPerS,
            f.tokensPerS,
            f.dataWaitShare,
            f.peakAllocatedBytes,
            f.peakReservedBytes,
            f.maxProcessNvmlBytes,
            f.maxGpuUsedBytes,
            f.gpuNames.join(', '),
            f.worldSize,
            f.findingsBySeverity.high,
            f.findingsBySeverity.medium,
            f.findingsBySeverity.low,
            f.findingsBySeverity.info,
            report.schemaVersion,
            blob,
          ],
        );
        return id;
      }
    },
    opts,
  );
}

const colNum = (v: unknown): number | null => (typeof v === 'number' ? v : typeof v === 'bigint' ? Number(v) : null);
const colStr = (v: unknown): string | null => (typeof v === 'string' ? v : null);

function rowToRun(r: Record<string, unknown>): StoredRun {
  let command: string[] = [];
  try {
    const c = JSON.parse(String(r.command_json));
    if (Array.isArray(c)) command = c.map(String);
  } catch {
    command = [String(r.command_line ?? '')];
  }
  return {
    id: String(r.id),
    startedAtMs: colNum(r.started_at_ms) ?? 0,
    durationS: colNum(r.duration_s),
    command,
    cwd: colStr(r.cwd),
    hostname: colStr(r.hostname),
    outcome: String(r.outcome),
    exitCode: colNum(r.exit_code),
    runDir: colStr(r.run_dir),
    gpuwiseVersion: colStr(r.gpuwise_version),
    medianStepS: colNum(r.median_step_s),
    meanStepS: colNum(r.mean_step_s),
    p90StepS: colNum(r.p90_step_s),
    samplesPerS: colNum(r.samples_per_s),
    tokensPerS: colNum(r.tokens_per_s),
    dataWaitShare: colNum(r.data_wait_share),
    peakAllocatedBytes: colNum(r.peak_allocated_bytes),
    peakReservedBytes: colNum(r.peak_reserved_bytes),
    maxProcessNvmlBytes: colNum(r.max_process_nvml_bytes),
    maxGpuUsedBytes: colNum(r.max_gpu_used_bytes),
    gpuNames: colStr(r.gpu_names) ? String(r.gpu_names).split(', ') : [],
    worldSize: colNum(r.world_size),
    findings: {
      high: colNum(r.findings_high) ?? 0,
      medium: colNum(r.findings_medium) ?? 0,
      low: colNum(r.findings_low) ?? 0,
      info: colNum(r.findings_info) ?? 0,
    },
  };
}

const LIST_COLUMNS = `id, started_at_ms, duration_s, command_json, command_line, cwd, hostname, outcome, exit_code, run_dir, gpuwise_version,
  median_step_s, mean_step_s, p90_step_s, samples_per_s, tokens_per_s, data_wait_share, peak_allocated_bytes, peak_reserved_bytes,
  max_process_nvml_bytes, max_gpu_used_bytes, gpu_names, world_size, findings_high, findings_medium, findings_low, findings_info`;

/** Runs, newest first; `limit` null for all. An absent store has none. */
export async function listRuns(dir: string, limit: number | null): Promise<StoredRun[]> {
  return withStore(dir, false, [] as StoredRun[], (db) =>
    db
      .all(
        `SELECT ${LIST_COLUMNS} FROM run ORDER BY started_at_ms DESC, id DESC${limit === null ? '' : ' LIMIT ?'}`,
        limit === null ? [] : [limit],
      )
      .map(rowToRun),
  );
}

/**
 * The id a reference names: `last` (newest), `last~N` (N runs before it), an id, or a unique id prefix.
 * Throws InputError (one line naming the reference) for an unknown or ambiguous one.
 */
export async function resolveRunRef(dir: string, ref: string): Promise<string> {
  return (await resolveRunRefNoted(dir, ref)).id;
}

/**
 * As resolveRunRef, and what the user should know about the choice. With `measuredOnly` (compare), `last` and
 * `last~N` count only runs that measured at least one step: a run that failed before its first step, or was stopped at once, has nothing to
 * compare, and silently becoming `last` would make `compare last~1 last` meaningless. The runs skipped are named
 * in `note`; an id still reaches any run.
 */
export async function resolveRunRefNoted(dir: string, ref: string, opts: { measuredOnly?: boolean } = {}): Promise<{ id: string; note: string | null }> {
  const rows = await withStore(dir, false, [] as RefRow[], (db) => refRows(db, opts));
  return resolveAmong(rows, ref, storePath(dir), opts);
}

/** A run as a reference is resolved against: its id, its outcome, whether it counts for `last` (it measured a step). */
interface RefRow {
  id: string;
  outcome: string;
  measured: boolean;
}

function refRows(db: Database, opts: { measuredOnly?: boolean }): RefRow[] {
  return db
    .all('SELECT id, outcome, median_step_s FROM run ORDER BY started_at_ms DESC, id DESC')
    .map((r) => ({ id: String(r.id), outcome: String(r.outcome), measured: !opts.measuredOnly || colNum(r.median_step_s) !== null }));
}

/** The run a reference names among the store's runs (newest first), or an InputError naming the reference. */
function resolveAmong(rows: readonly RefRow[], ref: string, path: string, opts: { measuredOnly?: boolean }): { id: string; note: string | null } {
  const ids = rows.map((r) => r.id);
  const last = /^last(?:~(\d+))?$/.exec(ref);
  if (last) {
    const back = Number(last[1] ?? 0);
    const comparable = rows.filter((r) => r.measured);
    const chosen = comparable[back];
    const skipped = rows.filter((r) => !r.measured && (chosen === undefined || rows.indexOf(r) < rows.indexOf(chosen)));
    const skippedText = skipped
      .slice(0, 3)
      .map((r) => `${r.id} ${r.outcome}`)
      .join(', ');
    if (chosen === undefined) {
      if (rows.length === 0) throw new InputError(ref, `no runs in ${path} yet`);
      throw new InputError(
        ref,
        comparable.length === 0
          ? `none of the ${rows.length} run(s) in the history measured a step (newest: ${skippedText}): name a run by its id to use it anyway`
          : `the history holds ${comparable.length} run(s)${opts.measuredOnly ? ' that measured steps' : ''}: ${ref} goes past the oldest${skipped.length ? ` (runs that measured none are not counted: ${skippedText}${skipped.length > 3 ? ', ...' : ''})` : ''}`,
      );
    }
    const note = skipped.length
      ? `${ref} is ${chosen.id}: skipped ${skipped.length} newer run(s) that measured no step (${skippedText}${skipped.length > 3 ? ', ...' : ''}); name one by its id to use it`
      : null;
    return { id: chosen.id, note };
  }
  if (ids.includes(ref)) return { id: ref, note: null };
  const matches = ids.filter((id) => id.startsWith(ref));
  if (matches.length === 1) return { id: matches[0] as string, note: null };
  if (matches.length > 1)
    throw new InputError(
      ref,
      `matches ${matches.length} runs (${matches.slice(0, 3).join(', ')}${matches.length > 3 ? ', ...' : ''}): give more of the id`,
    );
  throw new InputError(ref, `unknown run: not an id in ${path}, nor a run directory or report.json`);
}

/** The stored run and its report. */
export async function loadRun(dir: string, id: string): Promise<{ run: StoredRun; report: DoctorReport }> {
  const row = await withStore(dir, false, null as Record<string, unknown> | null, (db) => reportRow(db, id));
  return storedRunOf(row, id, storePath(dir));
}

/**
 * The run a reference names (resolveRunRefNoted) and its report, in one use of the store: each use opens the file,
 * reads its schema and checkpoints on close, and `compare` made four (bench/history/bench.mjs).
 */
export async function loadRunByRef(
  dir: string,
  ref: string,
  opts: { measuredOnly?: boolean } = {},
): Promise<{ id: string; note: string | null; run: StoredRun; report: DoctorReport }> {
  const path = storePath(dir);
  const got = await withStore(dir, false, null as { id: string; note: string | null; row: Record<string, unknown> | null } | null, (db) => {
    const named = resolveAmong(refRows(db, opts), ref, path, opts);
    return { ...named, row: reportRow(db, named.id) };
  });
  // No store, or an empty one: the reference names nothing, and resolving it among no runs says so.
  const { id, note, row } = got ?? { ...resolveAmong([], ref, path, opts), row: null };
  return { id, note, ...storedRunOf(row, id, path) };
}

function reportRow(db: Database, id: string): Record<string, unknown> | null {
  return db.get(`SELECT ${LIST_COLUMNS}, report_deflate FROM run WHERE id = ?`, [id]);
}

/** A stored row as the run and its report, checked: InputError naming the store for a damaged one. */
function storedRunOf(row: Record<string, unknown> | null, id: string, path: string): { run: StoredRun; report: DoctorReport } {
  if (row === null) throw new InputError(id, `unknown run: not an id in ${path}`);
  let report: unknown;
  try {
    report = JSON.parse(inflateRawSync(row.report_deflate as Uint8Array).toString('utf8'));
  } catch (e) {
    throw new InputError(path, `run ${id}: damaged report in the run history (${(e as Error).message})`);
  }
  const problem = doctorReportProblem(report);
  if (problem !== null) throw new InputError(path, `run ${id}: the stored report ${problem}`);
  return { run: rowToRun(row), report: report as DoctorReport };
}

/** One plan step measured by `tune --plan`: the plan's prediction and the trial's measurement. */
export interface LeverTrialRow {
  /** The diagnosis run's id in the history (null when it was not saved). */
  runId: string | null;
  atMs: number;
  hostname: string | null;
  device: string | null;
  commandLine: string;
  stepId: string;
  lever: string | null;
  label: string;
  /** The plan's step before the fix and after it, and the measured ones (the configuration tried on, then the fix), s. */
  predictedFromS: number | null;
  predictedS: number | null;
  measuredFromS: number | null;
  measuredS: number | null;
  spreadS: number | null;
  kept: boolean;
  settingsJson: string | null;
}

/** Saves tune --plan's (predicted, measured) pairs. Throws InputError when the store cannot be written. */
export async function saveLeverTrials(dir: string, rows: readonly LeverTrialRow[], opts: StoreOptions = {}): Promise<number> {
  return withStore(
    dir,
    true,
    0,
    (db) => {
      db.exec('BEGIN IMMEDIATE');
      try {
        for (const r of rows)
          db.run(
            `INSERT INTO lever_trial (run_id, at_ms, hostname, device, command_line, step_id, lever, label, predicted_from_s, predicted_s,
             measured_from_s, measured_s, spread_s, kept, settings_json) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
            [
              r.runId,
              r.atMs,
              r.hostname,
              r.device,
              r.commandLine,
              r.stepId,
              r.lever,
              r.label,
              r.predictedFromS,
              r.predictedS,
              r.measuredFromS,
              r.measuredS,
              r.spreadS,
              r.kept ? 1 : 0,
              r.settingsJson,
            ],
          );
        db.exec('COMMIT');
      } catch (e) {
        db.exec('ROLLBACK');
        throw e;
      }
      return rows.length;
    },
    opts,
  );
}

/** Every pair saved (oldest first); empty for a store without any (or written before schema 2). */
export async function listLeverTrials(dir: string): Promise<LeverTrialRow[]> {
  return withStore(dir, false, [] as LeverTrialRow[], (db) => {
    const tables = new Set(db.all("SELECT name FROM sqlite_master WHERE type = 'table'").map((r) => String(r.name)));
    if (!tables.has('lever_trial')) return [];
    return db.all('SELECT * FROM lever_trial ORDER BY at_ms, id').map((r) => ({
      runId: colStr(r.run_id),
      atMs: colNum(r.at_ms) ?? 0,
      hostname: colStr(r.hostname),
      device: colStr(r.device),
      commandLine: String(r.command_line ?? ''),
      stepId: String(r.step_id ?? ''),
      lever: colStr(r.lever),
      label: String(r.label ?? ''),
      predictedFromS: colNum(r.predicted_from_s),
      predictedS: colNum(r.predicted_s),
      measuredFromS: colNum(r.measured_from_s),
      measuredS: colNum(r.measured_s),
      spreadS: colNum(r.spread_s),
      kept: colNum(r.kept) === 1,
      settingsJson: colStr(r.settings_json),
    }));
  });
}
