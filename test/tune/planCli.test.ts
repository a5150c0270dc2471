/**
 * `gpuwise tune --plan` end to end on CPU (Debian's torch), the CLI bundled and run as its own process, on
 * examples/pace/cpu/io_loader.py: a DataLoader whose samples wait on I/O, 2 workers, so the loop waits most of its
 * step and doctor's plan says more workers. The truth is measurable on any machine: a sleep takes about as long on a
 * loaded machine as on a quiet one (the script's docstring). Checked:
 *
 * - the diagnosis, the baseline and the plan's num_workers step measured (three counts), more workers kept;
 * - the verified best configuration's step within BOUND of the same configuration run plainly (`--workers N`, the
 *   median of REPEAT runs' means, each run --seconds long, in one process);
 * - a lever that does not help is not kept: persistent_workers (`--try`) on a loader whose epoch never ends;
 * - the (predicted, measured) pairs in the history, and `runs --accuracy` reading them;
 * - usage errors: one line, exit 2, nothing written.
 *
 * About 35-60 s on the 2-core development VM (a diagnosis of 100 steps, 5 trials of 2 s of steps, the plain runs); a
 * measurement that misses a check runs again (at most ATTEMPTS, each miss said on stderr): the machine's load moves runs.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DoctorReport } from '../../src/doctor/reportTypes.js';
import type { PlanTuneReport } from '../../src/tune/planTrials.js';
import { buildBundle } from '../cliBundle.js';
import { PYTHON, REPO, SKIP_PYTHON, pyEnv, runProcess } from '../doctor/helpers.js';

const tmp = mkdtempSync(join(tmpdir(), 'gpuwise-tune-plan-'));
const bundle = join(REPO, 'node_modules', '.cache', 'gpuwise-tune-plan-test', 'gpuwise.mjs');
const IO_LOADER = join(REPO, 'examples', 'pace', 'cpu', 'io_loader.py');
const STORE = join(tmp, 'store');
/** The verified best step against the same configuration run plainly. */
const BOUND = 0.2;
const REPEAT = 3;

beforeAll(async () => {
  await buildBundle('gpuwise-tune-plan-test');
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

// The probe of this checkout (a node_modules linked from another checkout would make the bundle find that one's).
const gpuwise = (args: string[]) =>
  runProcess(process.execPath, [bundle, ...args], pyEnv({ GPUWISE_STORE: STORE, GPUWISE_PROBE_DIR: join(REPO, 'python') }));

describe('gpuwise tune --plan: usage', () => {
  it('bad flags: one line, exit 2, nothing written', async () => {
    const cases: [string[], RegExp][] = [
      [['--plan'], /missing the command/],
      [['--plan', '--try', 'fp8', '--', 'x'], /--try: 'fp8' is not one of/],
      [['--plan', '--try', 'workers', '--', 'x'], /workers needs a value/],
      [['--plan', '--param', 'b=1..4', '--', 'x', '--bs', '8'], /the command has no \{b\} placeholder/],
      [['--plan', '--param', 'b=1..x', '--', 'x', '{b}'], /--param: 'b=1..x' is not NAME=LO..HI/],
      [['--plan', '--param', 'b=2..4', '--start', '9', '--', 'x', '{b}'], /--start: 9 is outside 2..4/],
      [['--plan', '--start', '9', '--', 'x'], /--start needs --param/],
      [['--plan', '--json', '--md', '--', 'x'], /exclusive/],
      // A page that would overwrite the command's own script is refused before anything runs.
      [['--plan', '--html', IO_LOADER, '--', 'python3', IO_LOADER], /--html/],
    ];
    for (const [args, re] of cases) {
      const out = join(tmp, `usage-${cases.findIndex((c) => c[0] === args)}`);
      const r = await gpuwise(['tune', '--out', out, ...args]);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(re);
      expect(existsSync(out)).toBe(false);
    }
  });
});

interface Measured {
  report: PlanTuneReport;
  /** The page --html wrote. */
  html: string;
  stdout: string;
  stderr: string;
  plain: { mean_step_ms: number; runs_ms: number[] };
}

let round = 0;
/** tune --plan on io_loader with 2 workers, then the verified best configuration run plainly right after. */
async function measure(): Promise<Measured> {
  const out = join(tmp, `io-${round}`);
  const htmlPath = join(tmp, `io-${round++}.html`);
  const r = await gpuwise([
    'tune',
    '--plan',
    '--json',
    '--html',
    htmlPath,
    '--out',
    out,
    '--trial-seconds',
    '2',
    '--try',
    'persistent-workers',
    '--',
    PYTHON,
    IO_LOADER,
    '--workers',
    '2',
  ]);
  expect(r.code, r.stderr).toBe(0);
  const report = JSON.parse(r.stdout) as PlanTuneReport;
  expect(JSON.parse(readFileSync(join(out, 'tune-plan.json'), 'utf8'))).toEqual(report);
  const workers = report.best.settings.loader?.numWorkers ?? 2;
  const p = await runProcess(PYTHON, [IO_LOADER, '--workers', String(workers), '--seconds', '2', '--repeat', String(REPEAT)], pyEnv({}));
  expect(p.code, p.stderr).toBe(0);
  return {
    report,
    html: readFileSync(htmlPath, 'utf8'),
    stdout: r.stdout,
    stderr: r.stderr,
    plain: JSON.parse(p.stdout.trim().split('\n').pop() as string),
  };
}

/** Identical plain runs this far apart (slowest over fastest): the machine's load, not the tool, sets the comparison. */
const MOVED_RATIO = 1.5;
const machineMoved = (m: Measured) => Math.max(...m.plain.runs_ms) / Math.min(...m.plain.runs_ms) > MOVED_RATIO;

/**
 * The verified best step against the plain runs, as the CPU ground truth judges a held step
 * (test/pace/cpuGroundTruth.test.ts): inside the plain runs' range (off by no more than the machine moved identical
 * runs), else against their median; 0 when inside.
 */
const offOf = (m: Measured) => {
  const tuned = (m.report.best.stepNs ?? 0) / 1e6;
  if (machineMoved(m)) return 0;
  if (tuned >= Math.min(...m.plain.runs_ms) && tuned <= Math.max(...m.plain.runs_ms)) return 0;
  return Math.abs(tuned / m.plain.mean_step_ms - 1);
};
const ratioOf = (m: Measured) => m.report.steps.find((s) => s.stepId === 'dataloader-bound')?.measuredRatio ?? 1;
const keptOf = (m: Measured, id: string) => m.report.steps.find((s) => s.stepId === id)?.kept;
/** What is checked below, as one line: empty when all holds. */
function misses(m: Measured): string {
  const out: string[] = [];
  if (offOf(m) >= BOUND)
    out.push(
      `best ${((m.report.best.stepNs ?? 0) / 1e6).toFixed(2)} ms against ${m.plain.mean_step_ms} ms plainly (runs ${m.plain.runs_ms.join(', ')})`,
    );
  if (ratioOf(m) >= 0.6 || keptOf(m, 'dataloader-bound') !== true)
    out.push(`workers ratio ${ratioOf(m).toFixed(2)}, kept ${keptOf(m, 'dataloader-bound')}`);
  if (keptOf(m, 'try:persistent-workers') !== false) out.push(`persistent_workers kept ${keptOf(m, 'try:persistent-workers')}`);
  return out.join('; ');
}
/** Measurements at most: each one after the first follows a miss. */
const ATTEMPTS = 3;

describe.skipIf(SKIP_PYTHON)('gpuwise tune --plan on a loader waiting on I/O', () => {
  let m: Measured;
  let report: PlanTuneReport;
  let stdout = '';

  beforeAll(async () => {
    // A burst of load on the shared 2-core machine during the trials or the plain runs moves one against the other
    // (the MLP's 7 ms of CPU a step, not the loader's sleeps; other test files running beside this one): measured
    // again, as the CPU ground truth does, a burst during one of them being likelier than a tool that misses thrice.
    // Each miss is said on stderr.
    for (let i = 1; ; i++) {
      m = await measure();
      const miss = misses(m);
      if (miss === '' || i === ATTEMPTS) break;
      process.stderr.write(`planCli: measured again (${miss})\n`);
    }
    report = m.report;
    stdout = m.stdout;
    // The progress went to stderr: the command will run several times, and about how long the trials take.
    expect(m.stderr).toMatch(/runs the command several times/);
    expect(m.stderr).toMatch(/\d+ trial\(s\) to run, each until its step is steady \(at most \d+ steps\): about \d+ to \d+ s/);
  }, 600_000);

  it('measures the plan’s num_workers step and keeps more workers', () => {
    expect(report.schemaVersion).toBe(2);
    expect(report.trialStop).toEqual({ relSpread: 0.01, minSteps: 20, maxSeconds: 2 });
    expect(report.baseline?.outcome).toBe('ok');
    const loader = report.steps.find((s) => s.stepId === 'dataloader-bound');
    expect(loader, stdout).toBeDefined();
    const s = loader as NonNullable<typeof loader>;
    expect(s.injectable).toBe(true);
    expect(s.predictedStepNs).toBeGreaterThan(0);
    expect(s.measuredStepNs).toBeGreaterThan(0);
    expect(s.trials.length).toBeGreaterThanOrEqual(2); // the plan's count and its neighbours
    const trials = report.trials.map((t) => `#${t.index} ${t.name}: ${t.outcome} ${JSON.stringify(t.measure)}`).join('\n');
    expect(s.kept, `${JSON.stringify(s)}\n${trials}`).toBe(true);
    expect(s.applied?.loader?.numWorkers).toBeGreaterThan(2);
    expect(s.measuredRatio).toBeLessThan(0.6); // the loop waited about 80% of its step on 2 workers
    for (const t of report.trials) expect(t.settings.loader?.match ?? null).toEqual(t.index === 1 ? null : { batchSize: 8, numWorkers: 2 });
    expect(report.best.settings.loader?.numWorkers).toBe(s.applied?.loader?.numWorkers);
    expect(report.permanent[0]?.lines[0]).toMatch(new RegExp(`num_workers=${s.applied?.loader?.numWorkers}\\)`));
    expect(report.totalS).toBeGreaterThan(report.trialsS);
    // --html: the same result as a page, the verified best first.
    expect(m.html).toMatch(/<div class="verdict ok" id="verdict">Verified best: num_workers=\d+: /);
    expect(m.html).toContain('<table id="plan-steps">');
  });

  it('does not keep a lever that does not help: persistent_workers on a loader whose epoch never ends', () => {
    const p = report.steps.find((s) => s.stepId === 'try:persistent-workers');
    expect(p?.measuredStepNs, stdout).toBeGreaterThan(0);
    expect(p?.kept, JSON.stringify(p)).toBe(false);
    expect(p?.why).toMatch(/not beyond the margin|the machine's load moved/);
    expect(report.best.settings.loader?.persistentWorkers).toBeUndefined();
  });

  it('the verified best step is within 20% of the same configuration run plainly', () => {
    const workers = report.best.settings.loader?.numWorkers as number;
    const tuned = (report.best.stepNs as number) / 1e6;
    // Where three identical plain runs differ by more than half, the load decides: said, not held.
    if (machineMoved(m)) process.stderr.write(`planCli: plain runs ${m.plain.runs_ms.join(', ')} ms moved past x${MOVED_RATIO}: the comparison with ${tuned.toFixed(2)} ms is not held\n`);
    expect(
      offOf(m),
      `tune --plan ${tuned.toFixed(2)} ms with ${workers} workers; plainly ${m.plain.mean_step_ms} ms (runs ${m.plain.runs_ms.join(', ')})`,
    ).toBeLessThan(BOUND);
  });

  it('stores each measured step’s (predicted, measured) pair; runs --accuracy reads them', async () => {
    const r = await gpuwise(['runs', '--accuracy', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const acc = JSON.parse(r.stdout) as { levers: { stepId: string; pairs: number; medianMeasuredRatio: number }[] };
    expect(acc.levers.find((l) => l.stepId === 'dataloader-bound')?.pairs).toBe(round);
    const text = await gpuwise(['runs', '--accuracy']);
    expect(text.stdout).toMatch(/dataloader-bound\s+\d\s+x0\.\d\d/);
    // The diagnosis run is in the history as a doctor run.
    const runs = await gpuwise(['runs', '--json']);
    expect((JSON.parse(runs.stdout) as { runs: unknown[] }).runs).toHaveLength(round);
    // A later doctor run on this machine says, under its plan's step, what the trials measured of it.
    const d = await gpuwise(['doctor', '--json', '--no-serve', '--out', join(tmp, 'later'), '--', PYTHON, IO_LOADER, '--workers', '2', '--seconds', '2']);
    expect(d.code, d.stderr).toBe(0);
    const later = JSON.parse(d.stdout) as DoctorReport;
    const here = later.measuredHere?.find((a) => a.stepId === 'dataloader-bound');
    expect(here?.pairs, JSON.stringify(later.pace?.plan.steps.map((s) => s.id))).toBe(round);
    expect(here?.medianMeasuredRatio).toBeCloseTo(acc.levers.find((l) => l.stepId === 'dataloader-bound')?.medianMeasuredRatio ?? Number.NaN, 6);
  }, 120_000);
});

describe.skipIf(SKIP_PYTHON)('gpuwise tune --plan: the trials’ environment', () => {
  it('trials see GPUWISE_TRIAL=1 and the diagnosis does not; --try changes the training loader only', async () => {
    const out = join(tmp, 'env');
    const script = join(REPO, 'test', 'fixtures', 'tune', 'trial_probe.py');
    const r = await gpuwise([
      'tune',
      '--plan',
      '--json',
      '--out',
      out,
      '--steps',
      '6',
      '--diagnosis-steps',
      '12',
      '--try',
      'workers=1',
      '--',
      PYTHON,
      script,
    ]);
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as PlanTuneReport;
    // The script's first line: GPUWISE_TRIAL as it sees it.
    const trialEnv = (dir: string) =>
      (JSON.parse(readFileSync(join(dir, 'stdout.log'), 'utf8').split('\n')[0] as string) as { trialEnv: string | null }).trialEnv;
    expect(trialEnv(report.diagnosis.runDir)).toBeNull();
    expect(report.trials.length).toBeGreaterThanOrEqual(2);
    for (const t of report.trials) expect(trialEnv(t.runDir), t.name).toBe('1');
    const tried = report.trials.find((t) => t.name === 'num_workers=1');
    expect(tried?.settings.loader).toEqual({ numWorkers: 1, match: { batchSize: 8, numWorkers: 0 } });
    expect(tried?.applied).toEqual(['loader']);
    for (const t of report.trials) expect(readFileSync(join(t.runDir, 'stderr.log'), 'utf8')).toMatch(/stopping after 6 steps/);
  }, 120_000);
});

describe.skipIf(SKIP_PYTHON)('gpuwise tune --plan --param: the batch as one more lever', () => {
  it('tries larger batches on top of the fixes kept, compares them per sample, keeps one and names it in the command', async () => {
    const out = join(tmp, 'param');
    const toy = join(REPO, 'examples', 'doctor', 'tune_toy.py');
    // A step of 10 ms whatever the batch (a sleep): per sample, a batch of 32 is 4x faster than one of 8; above 40
    // the toy runs out of memory in its first step, as a GPU would.
    const r = await gpuwise([
      'tune',
      '--plan',
      '--json',
      '--out',
      out,
      '--diagnosis-steps',
      '20',
      '--trial-seconds',
      '1',
      '--param',
      'batch_size=8..64',
      '--',
      PYTHON,
      toy,
      '--batch-size',
      '{batch_size}',
      '--step-sleep-ms',
      '10',
      '--fits',
      '40',
    ]);
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout) as PlanTuneReport;
    expect(report.param).toEqual({ name: 'batch_size', lo: 8, hi: 64, start: 8 });
    // The diagnosis and the baseline ran at --start (LO).
    expect(readFileSync(join(report.diagnosis.runDir, 'stdout.log'), 'utf8')).toMatch(/tune_toy: rank 0 batch 8\n/);
    expect(report.baseline?.batch).toBe(8);
    const step = report.steps.find((s) => s.stepId === 'param:batch_size');
    const trials = report.trials.map((t) => `#${t.index} ${t.name}: ${t.outcome} ${t.batchStepNs} ${JSON.stringify(t.measure)}`).join('\n');
    expect(step?.source, trials).toBe('param');
    // 16 and 32 measured, 64 ran out of memory: reported, not kept.
    const at = (v: number) => report.trials.find((t) => t.batch === v && t.stepId === 'param:batch_size');
    expect(at(64)?.outcome, trials).toBe('oom');
    for (const v of [16, 32]) {
      const t = at(v);
      expect(t?.outcome, trials).toBe('ok');
      // Compared per sample: the trial's own step (about 10 ms) scaled to the diagnosis's 8 samples.
      expect((t?.measure?.meanNs as number) / (t?.batchStepNs as number)).toBeCloseTo(8 / v, 6);
      expect(readFileSync(join(t?.runDir as string, 'stdout.log'), 'utf8')).toMatch(new RegExp(`batch ${v}\\n`));
    }
    expect(step?.kept, trials).toBe(true);
    expect(step?.chosen).toBe('batch_size=32');
    expect(step?.measuredRatio as number).toBeLessThan(0.4); // about 0.25: four times the samples in the same step
    expect(report.best.settings.batch).toEqual({ name: 'batch_size', value: 32 });
    // The permanent change names the value: the command itself, and the DataLoader's batch_size.
    expect(report.permanent[0]).toEqual({ framework: 'command', lines: [`${PYTHON} ${toy} --batch-size 32 --step-sleep-ms 10 --fits 40`] });
    expect(report.permanent.find((p) => p.framework === 'pytorch')?.lines[0]).toMatch(/DataLoader\(dataset, batch_size=32\)/);
    // Each trial ran until its step was steady, or for its second of steady steps on a loaded machine (the probe's
    // clean stop), short of its cap.
    for (const t of report.trials.filter((x) => x.outcome === 'ok')) {
      expect(['steady', 'seconds'], trials).toContain(t.stopped?.why);
      expect(t.stopped?.step).toBeLessThan(report.stepsPerTrial);
    }
    // The text report says what the step times are per.
    const md = await gpuwise(['tune', '--plan', '--md', '--out', join(tmp, 'param-md'), '--diagnosis-steps', '12', '--steps', '12', '--param', 'batch_size=8..16', '--', PYTHON, toy, '--batch-size', '{batch_size}']);
    expect(md.code, md.stderr).toBe(0);
    expect(md.stdout).toMatch(/step times are per 8 samples \(batch_size=8, the diagnosis's\)/);
  }, 180_000);
});
