/**
 * doctor leaves the program as it found it (issue 27): each script of test/fixtures/doctor/noharm/ runs plainly and
 * under the bundled CLI's doctor with Debian's CPU torch 1.13, and writes what it observed (saved and pickled model
 * bytes, hooks, TorchScript, its own profilers' events, its environment, threads, signal handlers, tracebacks, the
 * calls into its tensor subclass) to a JSON file; both runs must exit alike and observe the same. The doctor run's
 * records are checked for what the probe still had to see (its steps, batches and window).
 */
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ProbeRecord, type StepRecord, parseProbeLines } from '../../src/run/records.js';
import { buildBundle } from '../cliBundle.js';
import { PROBE_ROOT, PYTHON, REPO, SKIP_PYTHON, pyEnv, runProcess } from './helpers.js';

const FIXTURES = join(REPO, 'test', 'fixtures', 'doctor', 'noharm');
const tmp = mkdtempSync(join(tmpdir(), 'gpuwise-noharm-'));
let bundle = '';
let n = 0;

beforeAll(async () => {
  bundle = await buildBundle('gpuwise-noharm-test');
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

interface Run {
  code: number | null;
  stderr: string;
  facts: unknown;
  records: ProbeRecord[];
  runDir: string;
}

const readFacts = (path: string): unknown => (existsSync(path) ? JSON.parse(readFileSync(path, 'utf8')) : null);

/** `script` run plainly, then under doctor (with `flags`), each in a folder of its own. */
async function both(script: string, flags: string[]): Promise<{ plain: Run; doctor: Run }> {
  const path = join(FIXTURES, script);
  const plainDir = mkdtempSync(join(tmp, `plain${n}-`));
  const doctorDir = mkdtempSync(join(tmp, `doctor${n++}-`));
  const p = await runProcess(PYTHON, [path, join(plainDir, 'facts.json')], pyEnv({}));
  const runDir = join(doctorDir, 'run');
  const d = await runProcess(
    process.execPath,
    [
      bundle,
      'doctor',
      '--no-serve',
      '--store',
      join(tmp, 'store'),
      '--out',
      runDir,
      ...flags,
      '--',
      PYTHON,
      path,
      join(doctorDir, 'facts.json'),
    ],
    // GPUWISE_PROBE_DIR: this checkout's probe (node_modules may be a link to another checkout's, where the bundle lives).
    pyEnv({ GPUWISE_PROBE_DIR: PROBE_ROOT }),
  );
  const log = join(runDir, 'probe.jsonl');
  return {
    plain: { code: p.code, stderr: p.stderr, facts: readFacts(join(plainDir, 'facts.json')), records: [], runDir: plainDir },
    doctor: {
      code: d.code,
      stderr: d.stderr,
      facts: readFacts(join(doctorDir, 'facts.json')),
      records: existsSync(log) ? parseProbeLines(readFileSync(log, 'utf8')).records : [],
      runDir,
    },
  };
}

/** Both runs ended alike, observed the same, and wrote the same on stderr (doctor's own lines aside). */
function same(r: { plain: Run; doctor: Run }): void {
  expect(r.plain.code, r.plain.stderr).toBe(0);
  expect(r.doctor.code, r.doctor.stderr).toBe(0);
  expect(r.doctor.facts).toEqual(r.plain.facts);
  const script = r.doctor.stderr
    .split('\n')
    .filter((l) => !l.startsWith('gpuwise doctor: '))
    .join('\n');
  expect(script).toBe(r.plain.stderr);
}

const stepsOf = (records: ProbeRecord[]) => records.filter((x): x is StepRecord => x.type === 'step');

describe.skipIf(SKIP_PYTHON)('doctor leaves the program as it found it (CPU torch)', () => {
  it('torch.save and pickle of the model, during the window and after, give the plain bytes; deepcopy (EMA, AveragedModel), jit.script, jit.trace before the first forward, and a scripted function calling torch.autograd.backward work', async () => {
    const r = await both('save_and_copy.py', ['--profile-at', '3', '--profile-steps', '3']);
    same(r);
    // The pickling at step 5 happened inside the probe's window, with its steps all counted.
    expect(r.doctor.records.find((x) => x.type === 'profile-end')).toMatchObject({ firstStep: 3, lastStep: 5 });
    expect(stepsOf(r.doctor.records)).toHaveLength(12);
    expect(readFileSync(join(r.doctor.runDir, '..', 'model.pt'))).toEqual(readFileSync(join(r.plain.runDir, 'model.pt')));
  });

  it("the script's profilers: the window waits for one that runs, makes way for one that starts while it is open, and each records its ops", async () => {
    const r = await both('profilers.py', ['--profile-at', '3', '--profile-steps', '3']);
    same(r);
    expect(r.plain.facts).toMatchObject({ first: ['aten::addmm'], after: ['aten::addmm'], again: ['aten::addmm'] });
    // Asked for step 3, opened at the first step after the script's profiler ended, stopped when the next one started.
    expect(r.doctor.records.find((x) => x.type === 'profile-start')).toMatchObject({ step: 10 });
    expect(r.doctor.records.find((x) => x.type === 'profile-end')).toMatchObject({ firstStep: 10, lastStep: 10 });
  });

  it('an evaluator calling the model on the main thread, first, does not become the training: steps and batches are the training thread’s', async () => {
    const r = await both('evaluator_thread.py', ['--profile-steps', '0']);
    same(r);
    const steps = stepsOf(r.doctor.records);
    expect(steps).toHaveLength(20);
    for (const s of steps.slice(1)) expect([s.stepSource, s.samples, s.batchSource]).toEqual(['optimizer', 8, 'model-input']);
    expect(steps[0]?.samples === null || steps[0]?.samples === 8).toBe(true);
  });

  it('DataLoader workers (forked and spawned) and subprocess children run no probe and see the plain environment; the script too', async () => {
    const r = await both('workers.py', ['--profile-steps', '0']);
    same(r);
    expect(Object.keys((r.plain.facts as { workers: object }).workers)).toHaveLength(4);
    expect(new Set(r.doctor.records.map((x) => x.pid)).size).toBe(1);
    expect(readdirSync(r.doctor.runDir).filter((f) => /^probe-\d+\.jsonl$/.test(f))).toEqual([]);
    expect(stepsOf(r.doctor.records).map((s) => s.samples)).toEqual(Array(16).fill(4));
  });

  it('warnings as errors, and a model traced before its first forward: nothing the probe does warns', async () => {
    const r = await both('warnings_error.py', ['--profile-at', '3', '--profile-steps', '2']);
    same(r);
    expect(r.doctor.records.some((x) => x.type === 'probe-error')).toBe(false);
    const steps = stepsOf(r.doctor.records);
    expect(steps.slice(1, 11).map((s) => [s.samples, s.tokens])).toEqual(Array(10).fill([4, 24]));
  });

  it('batches of a tensor subclass with __torch_function__ are not called into (its size is left unknown)', async () => {
    const r = await both('subclass_batch.py', ['--profile-steps', '0']);
    same(r);
    expect(stepsOf(r.doctor.records).length).toBe(20);
  });

  it('torch 2: torch.compile (no global-hook warning; the compiled model copied and pickled), module.compile() and torch.export (on torch 1.x only the version is compared)', async () => {
    const r = await both('compile_export.py', ['--profile-at', '3', '--profile-steps', '2']);
    same(r);
    expect(stepsOf(r.doctor.records).length).toBe((r.plain.facts as { 'torch 2': boolean })['torch 2'] ? 12 : 0);
  });

  it('environment, sys.path, threads, signal handlers, the exception hook, global hooks and patched functions are the plain ones after training; a backward error has no probe frame', async () => {
    const r = await both('environment.py', ['--profile-at', '3', '--profile-steps', '2']);
    same(r);
    expect(r.plain.facts).toMatchObject({
      environment: [],
      threads: ['MainThread'],
      'backward traceback': ['environment.py', 'environment.py'],
      wrapped: [],
    });
  });
});
