/**
 * The run history end to end, as a user runs it: `gpuwise doctor` saving into a store (also two at
 * once, also into a store it cannot write), `gpuwise runs`, `runs show`, and `gpuwise compare` of a
 * starved DataLoader run against the fixed one. The CLI is bundled once and started as a process.
 */
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBundle } from '../cliBundle.js';
import type { DoctorReport } from '../../src/doctor/reportTypes.js';
import type { RunComparison } from '../../src/history/compare.js';
import type { StoredRun } from '../../src/io/runStore.js';
import { PYTHON, REPO, SKIP_PYTHON, TINY, pyEnv, runProcess } from '../doctor/helpers.js';

const tmp = mkdtempSync(join(tmpdir(), 'gpuwise-history-cli-'));
const bundle = join(REPO, 'node_modules', '.cache', 'gpuwise-history-test', 'gpuwise.mjs');
let n = 0;
const fresh = (what: string) => join(tmp, `${what}${n++}`);

beforeAll(async () => {
  await buildBundle('gpuwise-history-test');
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const gpuwise = (args: string[], store: string | undefined) => runProcess(process.execPath, [bundle, ...args], pyEnv({ GPUWISE_STORE: store }));
const reportOf = (dir: string) => JSON.parse(readFileSync(join(dir, 'report.json'), 'utf8')) as DoctorReport;
const oneLine = (s: string) => s.trim().split('\n').length === 1;

describe('run history without Python', () => {
  it('three doctor processes saving into one store at once: every run kept, distinct ids', async () => {
    const store = fresh('store');
    const outs = [fresh('run'), fresh('run'), fresh('run')];
    const rs = await Promise.all(outs.map((o, i) => gpuwise(['doctor', '--out', o, '--', 'sh', '-c', `exit ${i + 3}`], store)));
    expect(rs.map((r) => r.code)).toEqual([3, 4, 5]);
    for (const r of rs) expect(r.stderr).toMatch(/^gpuwise doctor: saved as run \d{6}-\d{6}-[0-9a-z]{3} in .+runs\.sqlite/m);
    const list = await gpuwise(['runs', '--json'], store);
    expect(list.code).toBe(0);
    const runs = JSON.parse(list.stdout).runs as StoredRun[];
    expect(runs).toHaveLength(3);
    expect(new Set(runs.map((r) => r.id)).size).toBe(3);
    expect(runs.map((r) => r.exitCode).sort()).toEqual([3, 4, 5]);
    expect(runs.every((r) => r.outcome === 'failed')).toBe(true);
  });

  it('an interrupted run is saved too, with its outcome', async () => {
    const store = fresh('store');
    const r = await runProcess(process.execPath, [bundle, 'doctor', '--out', fresh('run'), '--', 'sleep', '30'], pyEnv({ GPUWISE_STORE: store }), (pid) => {
      setTimeout(() => process.kill(pid, 'SIGTERM'), 1500);
    });
    expect([r.code, r.signal]).toEqual([null, 'SIGTERM']); // sleep died of it, and doctor after saving the run
    expect(r.stderr).toMatch(/saved as run /);
    const runs = JSON.parse((await gpuwise(['runs', '--json'], store)).stdout).runs as StoredRun[];
    expect(runs.map((x) => [x.outcome, x.exitCode, x.command])).toEqual([['interrupted', 143, ['sleep', '30']]]);
  });

  it('a store that cannot be written costs one warning line, never the exit code or the run directory', async () => {
    const notADir = fresh('file');
    writeFileSync(notADir, 'a file where the store folder should be');
    const out = fresh('run');
    const r = await gpuwise(['doctor', '--out', out, '--', 'sh', '-c', 'exit 7'], notADir);
    expect(r.code).toBe(7);
    expect(r.stderr).toMatch(/^gpuwise doctor: warning: run not saved in the history \(.+\); the run directory .+ has it all\n$/);
    expect(readdirSync(out)).toEqual(expect.arrayContaining(['report.html', 'report.json', 'report.md']));
    expect(reportOf(out).run.exitCode).toBe(7);

    const corrupt = fresh('store');
    mkdirSync(corrupt);
    writeFileSync(join(corrupt, 'runs.sqlite'), 'garbage, not SQLite, long enough to have a header');
    const out2 = fresh('run');
    const r2 = await gpuwise(['doctor', '--out', out2, '--', 'true'], corrupt);
    expect(r2.code).toBe(0);
    expect(r2.stderr).toMatch(/warning: run not saved in the history \(.+runs\.sqlite: is not a SQLite file/);
    expect(oneLine(r2.stderr)).toBe(true);
    // The damaged store is left as it was, and reading it is one line, exit 2.
    expect(readFileSync(join(corrupt, 'runs.sqlite'), 'utf8')).toBe('garbage, not SQLite, long enough to have a header');
    const ls = await gpuwise(['runs'], corrupt);
    expect(ls.code).toBe(2);
    expect(oneLine(ls.stderr)).toBe(true);
    expect(ls.stderr).toMatch(/^gpuwise runs: .+runs\.sqlite: is not a SQLite file/);
  });

  it('bad references and bad usage: one line, exit 2', async () => {
    const store = fresh('store');
    await gpuwise(['doctor', '--out', fresh('run'), '--', 'true'], store);
    for (const [args, msg] of [
      [['compare', 'nope', 'last'], /^gpuwise compare: nope: unknown run: not an id in .+runs\.sqlite, nor a run directory or report.json\n$/],
      // The only run (doctor -- true) measured no step: compare's `last` does not silently take it (issue 16).
      [['compare', 'last~1', 'last'], /^gpuwise compare: last~1: none of the 1 run\(s\) in the history measured a step \(newest: \S+ completed\): name a run by its id to use it anyway\n$/],
      [['compare', 'last'], /^gpuwise compare: give two runs/],
      [['compare', join(tmp, 'missing-dir'), 'last'], /missing-dir: no such file or directory\n$/],
      [['runs', 'show'], /^gpuwise runs: give one run/],
      [['runs', '--limit', 'x'], /--limit: 'x' is not an integer/],
      [['runs', 'show', 'last', '--html', join(REPO, 'README.md')], /README\.md: exists and is not a gpuwise report: refusing to overwrite it\n$/],
      [['doctor', '--html', join(REPO, 'package.json'), '--', 'true'], /package\.json: exists and is not a gpuwise report/],
      [['doctor', '--json', '--md', '--', 'true'], /--json and --md are exclusive/],
    ] as const) {
      const r = await gpuwise([...args], store);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(msg);
      expect(oneLine(r.stderr)).toBe(true);
    }
    expect(readFileSync(join(REPO, 'README.md'), 'utf8')).toMatch(/^# gpuwise/);
    const empty = await gpuwise(['runs'], fresh('store'));
    expect(empty).toMatchObject({ code: 0 });
    expect(empty.stdout).toMatch(/^No runs in .+ yet/);
  });
});

describe.skipIf(SKIP_PYTHON)('doctor, runs and compare on a starved DataLoader and its fix', () => {
  const store = fresh('store');
  const starved = fresh('run');
  const fixed = fresh('run');
  const html = join(tmp, 'fixed.html');
  // A model big enough that loading 16 random samples is a small part of the step, unless each sample sleeps 20 ms.
  const train = (delayMs: number) => [PYTHON, TINY, '--steps', '10', '--hidden', '4096', '--dim', '256', '--loader-delay-ms', String(delayMs)];
  let fixedRun: Awaited<ReturnType<typeof gpuwise>>;

  beforeAll(async () => {
    const a = await gpuwise(['doctor', '--out', starved, '--profile-steps', '0', '--', ...train(20)], store);
    expect(a.code).toBe(0);
    fixedRun = await gpuwise(['doctor', '--out', fixed, '--md', '--html', html, '--profile-steps', '0', '--', ...train(0)], store);
    expect(fixedRun.code).toBe(0);
  }, 180_000);

  it('doctor --md prints the Markdown report after the command output; the run directory has report.md and report.html', () => {
    const out = fixedRun.stdout;
    expect(out.indexOf('tiny_train: done after 10 steps')).toBeLessThan(out.indexOf('## gpuwise doctor: `'));
    expect(out).toContain('### Step time');
    expect(out.slice(out.indexOf('## gpuwise doctor'))).toBe(readFileSync(join(fixed, 'report.md'), 'utf8'));
    expect(readFileSync(html, 'utf8')).toBe(readFileSync(join(fixed, 'report.html'), 'utf8'));
    expect(fixedRun.stderr).toContain(`gpuwise doctor: wrote ${html}`);
    // An existing gpuwise page may be replaced by the next run.
    expect(readFileSync(html, 'utf8')).toMatch(/^<!doctype html>[\s\S]*<div id="chart-steps" class="chart"><\/div>[\s\S]*"charts":{"steps":\[{"label":"pid \d+","step":\[2,/);
  });

  it('gpuwise runs lists both, newest first', async () => {
    const r = await gpuwise(['runs'], store);
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[1]).toMatch(/completed +python3 tiny_train\.py --steps 10 --hidden 409\.\.\. +[\d.]+ ms +[\d,.]+ samples\/s +n\/a +none$/);
    expect(lines[2]).toMatch(/completed .+ 1 high$/);
    const json = JSON.parse((await gpuwise(['runs', '--json', '--limit', '1'], store)).stdout);
    expect(json).toMatchObject({ schemaVersion: 1, tool: 'gpuwise', command: 'runs' });
    expect(json.runs).toHaveLength(1);
    expect(json.runs[0].runDir).toBe(fixed);
  });

  it('runs show re-renders a stored run exactly as doctor wrote it', async () => {
    expect(JSON.parse((await gpuwise(['runs', 'show', 'last', '--json'], store)).stdout)).toEqual(reportOf(fixed));
    expect((await gpuwise(['runs', 'show', 'last~1', '--md'], store)).stdout).toBe(readFileSync(join(starved, 'report.md'), 'utf8'));
    const text = await gpuwise(['runs', 'show', starved], undefined);
    expect(text.stdout).toMatch(/^gpuwise doctor: .+tiny_train\.py/);
    expect(text.stdout).toContain('The training loop waits on the DataLoader');
  });

  it('compare shows the step time drop and the DataLoader finding gone', async () => {
    const r = await gpuwise(['compare', 'last~1', 'last'], store);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/ {2}median step [\d.]+ ms -> [\d.]+ ms \(-\d+%, [\d.]+x faster\)\n/);
    expect(r.stdout).toMatch(/ {2}gone: HIGH dataloader-bound: The training loop waits on the DataLoader \(was about \d+% of the step\)/);
    expect(r.stdout).toContain('  command: --loader-delay-ms 20 -> --loader-delay-ms 0\n');
    const c = JSON.parse((await gpuwise(['compare', 'last~1', 'last', '--json'], store)).stdout) as RunComparison;
    const before = reportOf(starved).ranks[0]?.steps;
    const after = reportOf(fixed).ranks[0]?.steps;
    expect(c.stepTime.medianS).toMatchObject({ before: before?.medianS, after: after?.medianS });
    // 16 samples x 20 ms of sleep per step, gone: far more than half the step.
    expect(c.stepTime.medianS.change).toBeLessThan(-0.5);
    expect(c.dataWaitShare.after).toBeLessThan(0.05);
    expect(c.findings).toEqual([expect.objectContaining({ id: 'dataloader-bound', status: 'gone' })]);
    // The same from the run directories, without any store.
    const byDir = JSON.parse((await gpuwise(['compare', starved, join(fixed, 'report.json'), '--json'], fresh('nostore'))).stdout) as RunComparison;
    expect(byDir.stepTime).toEqual(c.stepTime);
    expect(byDir.a).toMatchObject({ label: starved, id: null });
    const md = await gpuwise(['compare', 'last~1', 'last', '--md'], store);
    expect(md.stdout).toMatch(/^## gpuwise compare\n/);
    expect(md.stdout).toMatch(/- median step [\d.]+ ms → [\d.]+ ms \(-\d+%, [\d.]+x faster\)/);
  });

  it('a crashed run is saved with its outcome, and compare says so', async () => {
    const r = await gpuwise(['doctor', '--out', fresh('run'), '--profile-steps', '0', '--', PYTHON, TINY, '--steps', '6', '--crash-at', '4'], store);
    expect(r.code).toBe(1);
    const c = await gpuwise(['compare', 'last~1', 'last'], store);
    expect(c.stdout).toMatch(/ {2}completed -> crashed \(crashed on rank 0 in step 4: RuntimeError: tiny_train: crash requested at step 4 \(exit code 1\)\)\n/);
    const ids = JSON.parse((await gpuwise(['runs', '--json'], store)).stdout).runs.map((x: StoredRun) => x.outcome);
    expect(ids).toEqual(['crashed', 'completed', 'completed']);
  });
});
