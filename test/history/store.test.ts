/** The run history in SQLite (src/io/runStore.ts): round trip, run references, locks, damaged files. */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProbeRecord } from '../../src/run/records.js';
import type { DoctorReport } from '../../src/doctor/reportTypes.js';
import { InputError } from '../../src/io/inputError.js';
import { loadRunRef } from '../../src/cli/runRef.js';
import { listRuns, loadRun, newRunId, resolveRunRef, resolveRunRefNoted, saveRun, storePath } from '../../src/io/runStore.js';
import { SKIP_PYTHON } from '../doctor/helpers.js';
import { GiB, onGpu, probeRecords, reportOf } from './reports.js';

const tmp = mkdtempSync(join(tmpdir(), 'gpuwise-store-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
let n = 0;
const freshStore = () => join(tmp, `store${n++}`);
const ctx = { cwd: '/work/project', hostname: 'testhost' };

async function problemOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(InputError);
    return (e as Error).message;
  }
  throw new Error('expected an InputError');
}

describe.skipIf(SKIP_PYTHON)('run history on real doctor reports', () => {
  let records: ProbeRecord[];
  let reports: DoctorReport[];
  beforeAll(async () => {
    records = await probeRecords(['--steps', '8', '--loader-delay-ms', '2']);
    const g = onGpu(records, 12);
    const base = reportOf(g.records, { gpuSamples: g.samples, gpuUnavailableReason: null });
    // Three runs a minute apart, the second one crashed.
    reports = [0, 1, 2].map((i) => {
      const r = JSON.parse(JSON.stringify(base)) as DoctorReport;
      r.run.startedAtMs = Date.UTC(2026, 10, 21, 7, i, 0);
      r.run.command = ['python', 'train.py', '--run', String(i)];
      if (i === 1) Object.assign(r.run, { outcome: 'crashed', exitCode: 1 });
      return r;
    });
  }, 120_000);

  it('saves runs and lists them newest first with their key figures; the report comes back unchanged', async () => {
    const dir = freshStore();
    const ids: string[] = [];
    for (const r of reports) ids.push(await saveRun(dir, r, ctx));
    expect(new Set(ids).size).toBe(3);
    expect([...ids].sort()).toEqual(ids); // ids sort by start time
    for (const id of ids) expect(id).toMatch(/^261121-070[0-2]00-[0-9a-z]{3}$/);
    const runs = await listRuns(dir, null);
    expect(runs.map((r) => r.id)).toEqual([...ids].reverse());
    const newest = runs[0];
    const s = reports[2]?.ranks[0]?.steps;
    expect(newest).toMatchObject({
      command: ['python', 'train.py', '--run', '2'],
      cwd: '/work/project',
      outcome: 'completed',
      exitCode: 0,
      medianStepS: s?.medianS,
      samplesPerS: s?.samplesPerS,
      peakReservedBytes: 12 * GiB,
      maxProcessNvmlBytes: Math.round(12.5 * GiB),
      gpuNames: ['NVIDIA H200'],
    });
    expect((newest?.findings.high ?? 0) + (newest?.findings.medium ?? 0)).toBe(reports[2]?.findings.length);
    expect(runs[1]?.outcome).toBe('crashed');
    expect((await listRuns(dir, 2)).map((r) => r.id)).toEqual([ids[2], ids[1]]);
    const back = await loadRun(dir, ids[0] as string);
    expect(back.report).toEqual(reports[0]);
    // WAL mode on disk (header bytes 18-19 = 2), and the WAL checkpointed away at close.
    const head = readFileSync(storePath(dir));
    expect([head[18], head[19]]).toEqual([2, 2]);
    expect(existsSync(`${storePath(dir)}-wal`)).toBe(false);
    expect(existsSync(`${storePath(dir)}.lock`)).toBe(false);
  });

  it('plain SQL reads the columns and the schema version table', async () => {
    const dir = freshStore();
    await saveRun(dir, reports[0] as DoctorReport, ctx);
    const { Database } = createRequire(import.meta.url)('node-sqlite3-wasm');
    const db = new Database(storePath(dir), { readOnly: true });
    db.exec('PRAGMA locking_mode=EXCLUSIVE');
    expect(db.all('SELECT version FROM schema_version')).toEqual([{ version: 1 }, { version: 2 }]);
    expect(db.get('SELECT outcome, command_line, findings_high FROM run')).toEqual({
      outcome: 'completed',
      command_line: 'python train.py --run 0',
      findings_high: reports[0]?.findings.filter((f) => f.severity === 'high').length,
    });
    db.close();
  });

  it('RUN references: last, last~N, an id, a unique prefix; unknown and ambiguous ones are one clear line', async () => {
    const dir = freshStore();
    const ids: string[] = [];
    for (const r of reports) ids.push(await saveRun(dir, r, ctx));
    expect(await resolveRunRef(dir, 'last')).toBe(ids[2]);
    expect(await resolveRunRef(dir, 'last~2')).toBe(ids[0]);
    expect(await resolveRunRef(dir, ids[1] as string)).toBe(ids[1]);
    expect(await resolveRunRef(dir, (ids[1] as string).slice(0, 13))).toBe(ids[1]); // 261121-070100
    expect(await problemOf(resolveRunRef(dir, '261121'))).toMatch(/^261121: matches 3 runs \(.+\): give more of the id$/);
    expect(await problemOf(resolveRunRef(dir, 'last~3'))).toBe('last~3: the history holds 3 run(s): last~3 goes past the oldest');
    expect(await problemOf(resolveRunRef(dir, 'zzz'))).toBe(`zzz: unknown run: not an id in ${storePath(dir)}, nor a run directory or report.json`);
    expect(await problemOf(resolveRunRef(freshStore(), 'last'))).toMatch(/^last: no runs in .+runs\.sqlite yet$/);
  });

  it('last skips a run that measured no step, and says so; its id still reaches it (issue 16)', async () => {
    const dir = freshStore();
    const ids: string[] = [];
    for (const r of reports) ids.push(await saveRun(dir, r, ctx));
    // A fourth run that failed before its first step: nothing to compare.
    const failed = reportOf(records.filter((r) => r.type !== 'step'));
    failed.run.startedAtMs = Date.UTC(2026, 10, 21, 7, 3, 0);
    Object.assign(failed.run, { outcome: 'failed', exitCode: 1 });
    const failedId = await saveRun(dir, failed, ctx);
    expect((await listRuns(dir, null))[0]!.medianStepS).toBeNull();
    const measured = { measuredOnly: true };
    expect((await resolveRunRefNoted(dir, 'last', measured)).id).toBe(ids[2]);
    expect((await resolveRunRefNoted(dir, 'last~1', measured)).id).toBe(ids[1]);
    expect(await resolveRunRef(dir, 'last')).toBe(failedId); // runs show: the newest, whatever it did
    const loaded = await loadRunRef('last', dir, measured);
    expect(loaded.id).toBe(ids[2]);
    expect(loaded.note).toBe(`last is ${ids[2]}: skipped 1 newer run(s) that measured no step (${failedId} failed); name one by its id to use it`);
    expect((await loadRunRef(failedId, dir)).id).toBe(failedId);
    expect(await problemOf(resolveRunRefNoted(dir, 'last~3', measured))).toMatch(/holds 3 run\(s\) that measured steps: last~3 goes past the oldest \(runs that measured none are not counted: .* failed\)/);
  });

  it('a run directory or report.json works without any store; a foreign JSON file is refused', async () => {
    const runDir = join(tmp, 'rundir');
    mkdirSync(runDir);
    writeFileSync(join(runDir, 'report.json'), JSON.stringify(reports[0]));
    const byDir = await loadRunRef(runDir, freshStore());
    expect(byDir).toMatchObject({ id: null, label: runDir, source: join(runDir, 'report.json') });
    expect(byDir.report).toEqual(reports[0]);
    const analyze = join(tmp, 'analyze.json');
    writeFileSync(analyze, JSON.stringify({ schemaVersion: 1, tool: 'gpuwise', command: 'analyze' }));
    expect(await problemOf(loadRunRef(analyze, freshStore()))).toBe(`${analyze}: is a gpuwise analyze report, not a doctor report`);
    writeFileSync(analyze, '{"schemaVersion": 1, "tool": "gpuwise", "command": "doctor", "run": {}}');
    expect(await problemOf(loadRunRef(analyze, freshStore()))).toBe(`${analyze}: is a damaged gpuwise doctor report (no run section)`);
    writeFileSync(analyze, 'not json');
    expect(await problemOf(loadRunRef(analyze, freshStore()))).toMatch(/is not JSON/);
    expect(await problemOf(loadRunRef(join(tmp, 'nowhere', 'report.json'), freshStore()))).toMatch(/no such file or directory$/);
  });

  it('waits for a lock held by another process, and clears the lock of one that died holding it', async () => {
    const dir = freshStore();
    await saveRun(dir, reports[0] as DoctorReport, ctx);
    const lock = `${storePath(dir)}.lock`;
    mkdirSync(lock); // held right now by someone else
    const t0 = Date.now();
    expect(await problemOf(saveRun(dir, reports[1] as DoctorReport, ctx, { lockWaitMs: 300 }))).toMatch(/is locked by another gpuwise/);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(300);
    // Released while the second save waits: it goes through.
    setTimeout(() => rmSync(lock, { recursive: true }), 150);
    await saveRun(dir, reports[1] as DoctorReport, ctx, { lockWaitMs: 5000 });
    // A lock older than any use of the store: a process killed while saving. Cleared, and the save goes through.
    mkdirSync(lock);
    const old = new Date(Date.now() - 120_000);
    utimesSync(lock, old, old);
    await saveRun(dir, reports[2] as DoctorReport, ctx, { lockWaitMs: 300 });
    expect(existsSync(lock)).toBe(false);
    expect(await listRuns(dir, null)).toHaveLength(3);
  });

  it('damaged, foreign and newer stores: one clear line, never a stack', async () => {
    const garbage = freshStore();
    mkdirSync(garbage);
    writeFileSync(storePath(garbage), 'this is not a database at all, just text that is long enough');
    expect(await problemOf(listRuns(garbage, null))).toMatch(/runs\.sqlite: is not a SQLite file \(damaged run history\?/);
    expect(await problemOf(saveRun(garbage, reports[0] as DoctorReport, ctx))).toMatch(/is not a SQLite file/);

    const { Database } = createRequire(import.meta.url)('node-sqlite3-wasm');
    const foreign = freshStore();
    mkdirSync(foreign);
    const db = new Database(storePath(foreign));
    db.exec('CREATE TABLE sample (id INTEGER)');
    db.close();
    expect(await problemOf(listRuns(foreign, null))).toMatch(/is a SQLite file but not a gpuwise run history/);

    const newer = freshStore();
    await saveRun(newer, reports[0] as DoctorReport, ctx);
    const db2 = new Database(storePath(newer));
    db2.exec('PRAGMA locking_mode=EXCLUSIVE');
    db2.run('INSERT INTO schema_version VALUES (3, 0)');
    db2.close();
    expect(await problemOf(listRuns(newer, null))).toMatch(/was written by a newer gpuwise \(run history schema 3; this one knows 2\)/);

    // Pages overwritten in the middle of the file (a disk error, a bad copy).
    const torn = freshStore();
    for (const r of reports) await saveRun(torn, r, ctx);
    const bytes = readFileSync(storePath(torn));
    bytes.fill(0xa5, 4096, bytes.length);
    writeFileSync(storePath(torn), bytes);
    expect(await problemOf(listRuns(torn, null))).toMatch(/runs\.sqlite: damaged run history/);
  });

  it('reading an absent store creates nothing', async () => {
    const dir = freshStore();
    expect(await listRuns(dir, null)).toEqual([]);
    expect(existsSync(dir)).toBe(false);
  });
});

describe('run ids', () => {
  it('UTC date and time then three base-36 characters: short, sorted by start', () => {
    const t = Date.UTC(2026, 0, 2, 3, 4, 5);
    expect(newRunId(t, () => 0)).toBe('260102-030405-000');
    expect(newRunId(t, () => 0.999)).toBe('260102-030405-zzz');
    expect(newRunId(t + 1000, () => 0) > newRunId(t, () => 0.999)).toBe(true);
  });
});
