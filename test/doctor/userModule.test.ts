/**
 * A module of the user's named `gpuwise` (issue 20, item 9): under doctor the probe is loaded as `_gpuwise_probe`,
 * so the user's gpuwise.py or gpuwise/ next to their script is what `import gpuwise` gives, and the probe still
 * sees the training. Without one, `doctor --importable` makes `import gpuwise; gpuwise.step()` reach the running probe
 * (by default the import fails as it does without doctor: test/equivalence, env_import_gpuwise). Real doctor runs
 * with Debian's CPU PyTorch.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DoctorReport } from '../../src/doctor/reportTypes.js';
import { buildBundle } from '../cliBundle.js';
import { PROBE_ROOT, PYTHON, SKIP_PYTHON, pyEnv, runProcess } from './helpers.js';

const tmp = mkdtempSync(join(tmpdir(), 'gpuwise-usermod-'));
let bundle = '';
beforeAll(async () => {
  bundle = await buildBundle('gpuwise-usermod-test');
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** A training loop of 6 optimizer steps that first uses `gpuwise` as the user's module or as gpuwise's own. */
const train = (useOfGpuwise: string) =>
  [
    'import gpuwise',
    useOfGpuwise,
    'import torch',
    'net = torch.nn.Linear(8, 2)',
    'opt = torch.optim.SGD(net.parameters(), lr=0.1)',
    'for _ in range(6):',
    '    opt.zero_grad()',
    '    net(torch.randn(4, 8)).sum().backward()',
    '    opt.step()',
    'print("trained")',
  ].join('\n');

async function doctorIn(dir: string, script: string, flags: string[] = []) {
  const out = join(dir, 'run');
  const r = await runProcess(
    process.execPath,
    [bundle, 'doctor', '--out', out, '--profile-steps', '0', ...flags, '--', PYTHON, script],
    // GPUWISE_PROBE_DIR: this checkout's probe (node_modules may be a link to another checkout's, where the bundle lives).
    pyEnv({ GPUWISE_STORE: join(dir, 'store'), GPUWISE_PROBE_DIR: PROBE_ROOT }),
  );
  const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8')) as DoctorReport;
  return { ...r, report };
}

const stepsSeen = (report: DoctorReport) => report.ranks.reduce((n, rank) => n + rank.steps.steps, 0);

describe.skipIf(SKIP_PYTHON)('doctor beside a module of the user named gpuwise (CPU torch)', () => {
  it('a gpuwise.py next to the script wins, and the probe still sees every step', async () => {
    const dir = join(tmp, 'file');
    mkdirSync(dir);
    writeFileSync(join(dir, 'gpuwise.py'), 'def whose():\n    return "the user\'s gpuwise.py"\n');
    writeFileSync(join(dir, 'train.py'), train('print(gpuwise.whose())'));
    const r = await doctorIn(dir, join(dir, 'train.py'));
    expect(r.stdout).toContain("the user's gpuwise.py\ntrained\n");
    expect(r.stderr).not.toContain('Error');
    expect(r.code).toBe(0);
    expect(r.report.run.exitCode).toBe(0);
    expect(stepsSeen(r.report)).toBe(6);
  });

  it('so does a gpuwise/ package next to the script', async () => {
    const dir = join(tmp, 'package');
    mkdirSync(join(dir, 'gpuwise'), { recursive: true });
    writeFileSync(join(dir, 'gpuwise', '__init__.py'), 'from .util import whose\n');
    writeFileSync(join(dir, 'gpuwise', 'util.py'), 'def whose():\n    return "the user\'s gpuwise package"\n');
    writeFileSync(join(dir, 'train.py'), train('print(gpuwise.whose())'));
    const r = await doctorIn(dir, join(dir, 'train.py'));
    expect(r.stdout).toContain("the user's gpuwise package\ntrained\n");
    expect(r.code).toBe(0);
    expect(stepsSeen(r.report)).toBe(6);
  });

  it('without one, --importable makes import gpuwise the running probe: gpuwise.step() marks steps', async () => {
    const dir = join(tmp, 'none');
    mkdirSync(dir);
    // No optimizer: only the script's own marks make steps.
    const script = [
      'import time, torch, gpuwise',
      'net = torch.nn.Linear(8, 2)',
      'for _ in range(6):',
      '    net(torch.randn(4, 8)).sum().backward()',
      '    time.sleep(0.005)',
      '    gpuwise.step()',
      'print("marked", gpuwise.__version__)',
    ].join('\n');
    writeFileSync(join(dir, 'infer.py'), script);
    const r = await doctorIn(dir, join(dir, 'infer.py'), ['--importable']);
    expect(r.stdout).toMatch(/marked \d+\.\d+\.\d+/);
    expect(r.code).toBe(0);
    // The first mark starts the clock: 5 timed steps, all from the marks.
    expect(stepsSeen(r.report)).toBe(5);
    expect(r.report.ranks[0]?.steps.stepSource).toBe('marker');
  });
});
