// Installs gpuwise as a user would and runs it from there (CI: .ci/run; by hand after `npm run wheel` / `npm pack`):
//
//   node scripts/checkInstalled.mjs wheel dist/gpuwise-VERSION-py3-none-manylinux_2_28_x86_64.whl
//   node scripts/checkInstalled.mjs npm gpuwise-VERSION.tgz
//
// wheel: a fresh `python3 -m venv --system-site-packages` (to see Debian's CPU PyTorch) holding only the wheel;
//        the command runs with PATH = the venv's bin/ alone, so no Node can be reached.
// npm:   a fresh folder with only the tarball installed (`npm install FILE.tgz`), run through `npx gpuwise`.
// Then: --version; `analyze`, `memory` and `plan` with --json, each equal to what the clone's dist/gpuwise.mjs
// prints (besides findings that must be there); `doctor -- python3 -c ...` with CPU PyTorch and its report.json;
// the version everywhere equal to package.json's. Exits 1 at the first difference, naming it.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const VERSION = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version;
const PYTHON = process.env.PYTHON || '/usr/bin/python3';
const [kind, artefact] = process.argv.slice(2);
if (!['wheel', 'npm'].includes(kind) || !artefact || !existsSync(artefact)) {
  console.error('usage: node scripts/checkInstalled.mjs wheel FILE.whl | npm FILE.tgz');
  process.exit(2);
}

const place = mkdtempSync(join(tmpdir(), `gpuwise-installed-${kind}-`));
let failed = false;
const fail = (what) => {
  console.error(`FAIL ${kind}: ${what}`);
  failed = true;
};
const ok = (what) => console.log(`ok   ${kind}: ${what}`);
const check = (cond, what) => (cond ? ok(what) : fail(what));

/** The installed command: [program, ...leading args] and its environment. */
let gpuwise;
let env;
const t0 = Date.now();
if (kind === 'wheel') {
  const venv = join(place, 'venv');
  execFileSync(PYTHON, ['-m', 'venv', '--system-site-packages', venv], { stdio: 'inherit' });
  execFileSync(join(venv, 'bin', 'python'), ['-m', 'pip', 'install', '--no-index', '--no-deps', '--quiet', resolve(artefact)], {
    stdio: 'inherit',
  });
  gpuwise = [join(venv, 'bin', 'gpuwise')];
  env = { HOME: place, PATH: join(venv, 'bin'), GPUWISE_STORE: join(place, 'store'), LANG: 'C.UTF-8' };
  const nodeOnPath = spawnSync('/bin/sh', ['-c', 'command -v node'], { env }).status === 0;
  check(!nodeOnPath, 'no node on the PATH the command runs with');
} else {
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--no-save', '--prefix', place, resolve(artefact)], { stdio: 'inherit' });
  gpuwise = ['npx', '--no-install', 'gpuwise'];
  // python3 for doctor: the one with torch first on PATH.
  env = { ...process.env, PATH: `${dirname(PYTHON)}:${process.env.PATH}`, GPUWISE_STORE: join(place, 'store') };
}
ok(`installed into ${place} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

const run = (args) => {
  const [cmd, ...lead] = gpuwise;
  const r = spawnSync(cmd, [...lead, ...args], { cwd: place, env, encoding: 'utf8', timeout: 300_000 });
  return { code: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? String(r.error ?? '') };
};
const reference = (args) => execFileSync(process.execPath, [join(ROOT, 'dist', 'gpuwise.mjs'), ...args], { cwd: place, encoding: 'utf8' });

const v = run(['--version']);
check(v.code === 0 && v.stdout.trim() === VERSION, `gpuwise --version prints ${VERSION} (got ${JSON.stringify(v.stdout.trim())})`);

const trace = join(ROOT, 'examples', 'traces', 'resnet_starved.trace.json.gz');
const snapshot = join(ROOT, 'test', 'fixtures', 'memory', 'gpu', 'memory_oom_activations.pickle.gz');
const model = join(ROOT, 'test', 'fixtures', 'planner', 'configs', 'gpt2', 'config.json');
const cases = [
  {
    name: 'analyze',
    args: ['analyze', '--json', trace],
    expect: (j) => j.version === VERSION && j.findings[0]?.id === 'dataloader-bound' && j.findings[0]?.severity === 'high',
  },
  { name: 'memory', args: ['memory', '--json', snapshot], expect: (j) => j.oom !== null && j.totals.peakAllocatedBytes > 0 },
  { name: 'plan', args: ['plan', '--json', '--model', model, '--gpu', 'h200', '--batch', '8', '--seq', '1024'], expect: (j) => j.fits === true },
];
for (const c of cases) {
  const r = run(c.args);
  if (r.code !== 0) {
    fail(`${c.name}: exit ${r.code}: ${r.stderr.trim()}`);
    continue;
  }
  let json;
  try {
    json = JSON.parse(r.stdout);
  } catch {
    fail(`${c.name}: stdout is not JSON: ${r.stdout.slice(0, 200)}`);
    continue;
  }
  check(c.expect(json), `${c.name} --json: the expected report`);
  check(r.stdout === reference(c.args), `${c.name} --json: identical to the clone's node dist/gpuwise.mjs`);
}

// doctor with CPU PyTorch: 8 optimizer steps; the probe comes from the installed package. The training's own
// `import gpuwise` gives the wheel's package in the venv, the probe doctor loaded beside the npm package.
const loop = [
  'import torch',
  'net = torch.nn.Linear(8, 2)',
  'opt = torch.optim.SGD(net.parameters(), lr=0.1)',
  'for _ in range(8):',
  '    opt.zero_grad()',
  '    net(torch.randn(4, 8)).sum().backward()',
  '    opt.step()',
];
const script = [...loop, 'import gpuwise', 'print("trained with gpuwise", gpuwise.__version__)'].join('\n');
const out = join(place, 'run');
const d = run(['doctor', '--out', out, '--profile-steps', '0', '--', 'python3', '-c', script]);
check(d.code === 0, `doctor exit 0 (got ${d.code}${d.code ? `: ${d.stderr.trim().slice(-400)}` : ''})`);
check(d.stdout.includes(`trained with gpuwise ${VERSION}`), 'doctor: the training ran and imported gpuwise of the same version');
if (existsSync(join(out, 'report.json'))) {
  const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'));
  check(report.version === VERSION, `doctor report.json: version ${report.version}`);
  check(report.run.outcome === 'completed', `doctor report.json: outcome ${report.run.outcome}`);
  check(report.ranks[0]?.steps.steps === 8, `doctor report.json: the probe saw ${report.ranks[0]?.steps.steps} of 8 steps`);
  check(typeof report.environment.torch === 'string', `doctor report.json: torch ${report.environment.torch}`);
} else fail('doctor wrote no report.json');

// A gpuwise.py of the user's next to the script is what the script imports, the installed package beside it.
const mine = join(place, 'mine');
mkdirSync(mine);
writeFileSync(join(mine, 'gpuwise.py'), 'WHOSE = "the user\'s own gpuwise.py"\n');
writeFileSync(join(mine, 'train.py'), ['import gpuwise', 'print(gpuwise.WHOSE)', ...loop].join('\n'));
const u = run(['doctor', '--out', join(place, 'run-mine'), '--profile-steps', '0', '--', 'python3', join(mine, 'train.py')]);
check(u.code === 0 && u.stdout.includes("the user's own gpuwise.py"), `doctor beside the user's own gpuwise.py: exit ${u.code}${u.code ? `: ${u.stderr.trim().slice(-300)}` : ''}`);

// gpuwise.step() from the script's own `import gpuwise` (the wheel's package in the venv) reaches doctor's probe:
// a loop without an optimizer, 6 marks, 5 timed steps.
const marks = ['import time, torch, gpuwise', 'net = torch.nn.Linear(8, 2)', 'for _ in range(6):'];
marks.push('    net(torch.randn(4, 8)).sum().backward()', '    time.sleep(0.005)', '    gpuwise.step()');
const markOut = join(place, 'run-marks');
const k = run(['doctor', '--out', markOut, '--profile-steps', '0', '--', 'python3', '-c', marks.join('\n')]);
const markSteps = existsSync(join(markOut, 'report.json')) ? JSON.parse(readFileSync(join(markOut, 'report.json'), 'utf8')).ranks[0]?.steps : null;
check(k.code === 0 && markSteps?.steps === 5 && markSteps?.stepSource === 'marker', `doctor counts gpuwise.step() marks: ${JSON.stringify(markSteps?.steps)} steps from ${markSteps?.stepSource}`);

if (kind === 'wheel') {
  const py = join(dirname(gpuwise[0]), 'python');
  const m = spawnSync(py, ['-m', 'gpuwise', '--version'], { env, encoding: 'utf8' });
  check(m.status === 0 && m.stdout.trim() === VERSION, `python -m gpuwise --version prints ${VERSION} (got ${JSON.stringify(m.stdout.trim())})`);
  const meta = spawnSync(py, ['-c', 'import importlib.metadata as m, gpuwise; print(m.version("gpuwise"), gpuwise.__version__); gpuwise.step()'], {
    env,
    encoding: 'utf8',
  });
  check(meta.stdout.trim() === `${VERSION} ${VERSION}`, `wheel metadata and gpuwise.__version__: ${meta.stdout.trim()}${meta.stderr}`);
}

if (failed) {
  console.error(`FAIL ${kind}: left ${place} for a look`);
  process.exit(1);
}
rmSync(place, { recursive: true, force: true });
console.log(`ok   ${kind}: all checks passed in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
