/**
 * The ordinary ways to launch training, under doctor (issue 43): `env PYTHONPATH=...`, a shell script that exports its
 * own PYTHONPATH, make, `bash -c "cd sub && PYTHONPATH=. python ..."`, `python -I`, `-E`, `-P`. With the site hook
 * (a venv holding what the wheel installs) every one is probed; without it (a clone: the boot folder on PYTHONPATH)
 * those that keep PYTHONPATH are probed and those that drop it are named with the reason, never "nothing trained".
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DoctorReport } from '../../src/doctor/reportTypes.js';
import { buildBundle } from '../cliBundle.js';
import { PYTHON, SKIP_PYTHON, hookedPython, pyEnv, runProcess } from './helpers.js';

const TRAIN = [
  'import os, sys, time',
  'import helper  # found through the PYTHONPATH the launcher set',
  'import torch',
  'net = torch.nn.Linear(8, 2)',
  'opt = torch.optim.SGD(net.parameters(), lr=0.1)',
  'for _ in range(12):',
  '    net(torch.randn(4, 8)).sum().backward()',
  '    opt.step()',
  '    opt.zero_grad()',
  '    time.sleep(0.1)  # long enough for doctor to see the process in /proc',
  'print("PYTHONPATH", os.environ.get("PYTHONPATH"), sorted(k for k in os.environ if k.startswith("GPUWISE_") and k != "GPUWISE_STORE"))',
].join('\n');

/** Each launcher: the command (PY is the interpreter), and whether it keeps the PYTHONPATH it was given. */
const LAUNCHERS: { name: string; cmd: (py: string) => string[]; keepsPath: boolean }[] = [
  { name: 'env PYTHONPATH=pkg', cmd: (py) => ['env', 'PYTHONPATH=pkg', py, 'train.py'], keepsPath: false },
  { name: 'a shell script exporting PYTHONPATH', cmd: () => ['bash', 'train.sh'], keepsPath: false },
  { name: 'a shell script extending PYTHONPATH', cmd: () => ['bash', 'extend.sh'], keepsPath: true },
  { name: 'make', cmd: () => ['make', '-s', 'train'], keepsPath: false },
  { name: 'bash -c "cd sub && PYTHONPATH=.. python"', cmd: (py) => ['bash', '-c', `cd sub && PYTHONPATH=../pkg ${py} ../train.py`], keepsPath: false },
  { name: 'python -I', cmd: (py) => ['env', 'PYTHONPATH=pkg', py, '-I', 'isolated.py'], keepsPath: false },
  { name: 'python -E', cmd: (py) => ['env', 'PYTHONPATH=pkg', py, '-E', 'isolated.py'], keepsPath: false },
  { name: 'python -P', cmd: (py) => ['env', `PYTHONPATH=pkg`, py, '-P', 'train.py'], keepsPath: false },
];

describe.skipIf(SKIP_PYTHON)('launchers under doctor', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'gpuwise-launchers-'));
  const work = join(tmp, 'work');
  let bundle: string;
  let venvPython: string;

  beforeAll(async () => {
    bundle = await buildBundle('gpuwise-launchers-test');
    mkdirSync(join(work, 'pkg'), { recursive: true });
    mkdirSync(join(work, 'sub'));
    writeFileSync(join(work, 'pkg', 'helper.py'), 'VALUE = 1\n');
    writeFileSync(join(work, 'train.py'), `${TRAIN}\n`);
    // -I and -E ignore PYTHONPATH: the script finds its helper by its own sys.path edit, as such scripts do.
    writeFileSync(join(work, 'isolated.py'), `import sys, os\nsys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "pkg"))\n${TRAIN}\n`);
    // The venv: Debian's CPU torch through the system site packages, and what the wheel installs.
    venvPython = hookedPython(tmp);
  }, 120_000);
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  /** The launcher's files for interpreter `py`, then doctor on the command; the report and the script's output. */
  async function doctor(py: string, cmd: string[], out: string): Promise<{ report: DoctorReport; stdout: string; stderr: string }> {
    writeFileSync(join(work, 'train.sh'), `export PYTHONPATH="$(pwd)/pkg"\nexec ${py} train.py\n`);
    writeFileSync(join(work, 'extend.sh'), `export PYTHONPATH="$PYTHONPATH:$(pwd)/pkg"\nexec ${py} train.py\n`);
    writeFileSync(join(work, 'Makefile'), `train:\n\tPYTHONPATH=pkg ${py} train.py\n`);
    const runDir = join(tmp, out);
    const env = pyEnv({ GPUWISE_STORE: join(tmp, 'store'), PYTHONPATH: undefined });
    const r = await runProcess('sh', ['-c', 'cd "$0" && exec "$@"', work, process.execPath, bundle, 'doctor', '--no-serve', '--profile-steps', '0', '--out', runDir, '--', ...cmd], env);
    expect(existsSync(join(runDir, 'report.json')), r.stderr).toBe(true);
    return { report: JSON.parse(readFileSync(join(runDir, 'report.json'), 'utf8')) as DoctorReport, stdout: r.stdout, stderr: r.stderr };
  }

  it.each(LAUNCHERS)('with the site hook, $name: every step probed, the script sees its own environment', async ({ cmd, name }) => {
    const { report, stdout, stderr } = await doctor(venvPython, cmd(venvPython), `site-${name.replace(/\W+/g, '-')}`);
    expect(report.ranks[0]?.steps.steps, stderr).toBe(12);
    expect(report.environment.unprobed ?? []).toEqual([]);
    expect(stdout).toMatch(/^PYTHONPATH \S+ \[\]$/m); // no GPUWISE_* variable, no boot folder
    expect(stdout).not.toContain('gpuwise/boot');
  });

  it.each(LAUNCHERS)('without the site hook, $name: probed where PYTHONPATH is kept, else the process is named with why', async ({ cmd, name, keepsPath }) => {
    const { report, stderr } = await doctor(PYTHON, cmd(PYTHON), `path-${name.replace(/\W+/g, '-')}`);
    if (keepsPath) {
      expect(report.ranks[0]?.steps.steps, stderr).toBe(12);
      return;
    }
    expect(report.ranks).toEqual([]);
    const unprobed = report.environment.unprobed ?? [];
    expect(unprobed.length, JSON.stringify(report.environment)).toBe(1);
    expect(unprobed[0]?.command).toMatch(/train\.py|isolated\.py/);
    expect(unprobed[0]?.reason).toMatch(/PYTHONPATH|python -[IE]/);
    expect(report.notes.join('\n')).toContain(`pid ${unprobed[0]?.pid}`);
    expect(report.notes.join('\n')).not.toMatch(/the probe sent nothing/);
  });
});
