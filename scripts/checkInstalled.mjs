// Installs gpuwise as a user would and runs every output of every command from there (CI: .ci/run; by hand after
// `npm run wheel` / `npm pack`):
//
//   node scripts/checkInstalled.mjs wheel dist/gpuwise-VERSION-py3-none-manylinux_2_28_x86_64.whl
//   node scripts/checkInstalled.mjs npm gpuwise-VERSION.tgz
//
// wheel: a fresh `python3 -m venv --system-site-packages` (to see Debian's CPU PyTorch) holding only the wheel;
//        the command runs with PATH = the venv's bin/ alone, so no Node can be reached.
// npm:   a fresh folder with only the tarball installed (`npm install FILE.tgz`), run through `npx gpuwise`.
//
// What runs, on the files shipped with the clone (no GPU needed):
//   --version, -v, help; analyze, memory, memory diff, plan, smi --from, select --from and doctor --from, each as
//   terminal text, --json, --md and --html FILE: every output equal to what the clone's dist/gpuwise.mjs prints or
//   writes, every page a whole HTML file, uPlot inline in those with charts; smi and monitor on the live GPUs (a GPU,
//   or the one-line no-GPU hint: NVML loaded through koffi); live doctor runs with CPU PyTorch (report.json,
//   report.md, report.html in the run directory; the version; gpuwise.step(); a user's own gpuwise.py); runs and
//   compare (the SQLite history); tune with --html; serve started on a loopback port, its pages and uPlot fetched
//   over HTTP while a doctor run streams to it, then stopped.
// Every failure is one line naming the command; exit 1 after all checks ran if any failed.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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
let failures = 0;
const fail = (what) => {
  console.error(`FAIL ${kind}: ${what}`);
  failures++;
};
const ok = (what) => console.log(`ok   ${kind}: ${what}`);
/** `detail` (what went wrong) is printed only when the check fails. */
const check = (cond, what, detail = '') => (cond ? ok(what) : fail(detail ? `${what}: ${detail}` : what));

/** The installed command: [program, ...leading args] and its environment. */
let gpuwise;
/** The installed executable itself (npx does not pass Ctrl-C on to serve). */
let executable;
let env;
const t0 = Date.now();
const store = join(place, 'store');
if (kind === 'wheel') {
  const venv = join(place, 'venv');
  execFileSync(PYTHON, ['-m', 'venv', '--system-site-packages', venv], { stdio: 'inherit' });
  execFileSync(join(venv, 'bin', 'python'), ['-m', 'pip', 'install', '--no-index', '--no-deps', '--quiet', resolve(artefact)], {
    stdio: 'inherit',
  });
  gpuwise = [join(venv, 'bin', 'gpuwise')];
  executable = gpuwise[0];
  env = { HOME: place, PATH: join(venv, 'bin'), GPUWISE_STORE: store, LANG: 'C.UTF-8' };
  const nodeOnPath = spawnSync('/bin/sh', ['-c', 'command -v node'], { env }).status === 0;
  check(!nodeOnPath, 'no node on the PATH the command runs with');
} else {
  execFileSync('npm', ['install', '--no-audit', '--no-fund', '--no-save', '--prefix', place, resolve(artefact)], { stdio: 'inherit' });
  gpuwise = ['npx', '--no-install', 'gpuwise'];
  executable = join(place, 'node_modules', '.bin', 'gpuwise');
  // python3 for doctor: the one with torch first on PATH.
  env = { ...process.env, PATH: `${dirname(PYTHON)}:${process.env.PATH}`, GPUWISE_STORE: store };
}
ok(`installed into ${place} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

/** `gpuwise ARGS` as the user types it: the name every failure carries. */
const shown = (args) => `gpuwise ${args.map((a) => a.replace(`${ROOT}/`, '').replace(`${place}/`, '')).join(' ')}`;
const tail = (text, n = 400) => text.trim().slice(-n);
const run = (args, cwd = place) => {
  const [cmd, ...lead] = gpuwise;
  const r = spawnSync(cmd, [...lead, ...args], { cwd, env, encoding: 'utf8', timeout: 300_000 });
  return { code: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? String(r.error ?? '') };
};
/** The clone's own bundle, for what the installed command must equal (pages go to a folder of the clone's). */
const cloneDir = join(place, 'clone');
mkdirSync(cloneDir);
const reference = (args) =>
  spawnSync(process.execPath, [join(ROOT, 'dist', 'gpuwise.mjs'), ...args], {
    cwd: cloneDir,
    env: { ...process.env, GPUWISE_STORE: join(place, 'clone-store') },
    encoding: 'utf8',
  });

const UPLOT = 'uPlot=function';
/** Problems of a page written by `--html`: missing, not a whole HTML page, or uPlot missing where it draws charts. */
function pageProblems(path, charts) {
  if (!existsSync(path)) return 'wrote no page';
  const page = readFileSync(path, 'utf8');
  if (!/^<!doctype html>/i.test(page) || !page.trimEnd().endsWith('</html>')) return 'the page is not a whole HTML file';
  if (charts && !page.includes(UPLOT)) return 'the page has no uPlot inline';
  return null;
}

/**
 * One command with its four outputs: the terminal text, --json, --md and --html FILE (where the command has them),
 * each equal to the clone's; `expect(json)` names what the JSON must hold; `charts` whether its page draws charts.
 */
function outputs(name, args, { json: expectJson, charts, formats = ['text', 'json', 'md', 'html'], code = 0 }) {
  for (const format of formats) {
    const page = `${name.replace(/\W+/g, '-')}.html`;
    const flagged = format === 'text' ? args : format === 'html' ? [...args, '--html', page] : [...args, `--${format}`];
    const what = shown(flagged);
    const r = run(flagged);
    if (r.code !== code) {
      fail(`${what}: exit ${r.code} (expected ${code}): ${tail(r.stderr)}`);
      continue;
    }
    const ref = reference(flagged.map((a) => (a === page ? join(cloneDir, page) : a)));
    if (format === 'json') {
      let json;
      try {
        json = JSON.parse(r.stdout);
      } catch {
        fail(`${what}: stdout is not JSON: ${r.stdout.slice(0, 200)}`);
        continue;
      }
      if (json.version !== undefined) check(json.version === VERSION, `${what}: version ${json.version}`);
      if (expectJson) check(expectJson(json), `${what}: the expected report`);
    }
    if (format === 'html') {
      const problem = pageProblems(join(place, page), charts);
      if (problem) {
        fail(`${what}: ${problem}`);
        continue;
      }
      check(readFileSync(join(place, page), 'utf8') === readFileSync(join(cloneDir, page), 'utf8'), `${what}: the page equals the clone's`);
    } else {
      check(r.stdout.length > 0 && r.stdout === ref.stdout, `${what}: ${format} output equals the clone's`);
    }
  }
}

// 1. The command itself.
const v = run(['--version']);
check(v.code === 0 && v.stdout.trim() === VERSION, `gpuwise --version prints ${VERSION} (got ${JSON.stringify(v.stdout.trim())})`);
const short = run(['-v']);
check(short.code === 0 && short.stdout.trim() === VERSION, `gpuwise -v prints ${VERSION} (got ${JSON.stringify(short.stdout.trim())})`);
const h = run(['help', 'analyze']);
check(h.code === 0 && h.stdout === run(['analyze', '--help']).stdout, 'gpuwise help analyze: the help of analyze');

// 2. The file commands, every output, on files shipped with the clone.
const trace = join(ROOT, 'examples', 'traces', 'resnet_starved.trace.json.gz');
const snapshot = join(ROOT, 'test', 'fixtures', 'memory', 'gpu', 'memory_oom_activations.pickle.gz');
const leakA = join(ROOT, 'test', 'fixtures', 'memory', 'gpu', 'memory_leak_step2.pickle.gz');
const leakB = join(ROOT, 'test', 'fixtures', 'memory', 'gpu', 'memory_leak_step6.pickle.gz');
const model = join(ROOT, 'test', 'fixtures', 'planner', 'configs', 'gpt2', 'config.json');
const smiXml = join(ROOT, 'test', 'fixtures', 'telemetry', 'nvidia-smi-q.busy.xml.gz');
const recorded = join(ROOT, 'examples', 'doctor', 'runs', 'h200', 'starved_dataloader');
outputs('analyze', ['analyze', trace], {
  json: (j) => j.findings[0]?.id === 'dataloader-bound' && j.findings[0]?.severity === 'high',
  charts: true,
});
outputs('memory', ['memory', snapshot], { json: (j) => j.oom !== null && j.totals.peakAllocatedBytes > 0, charts: true });
outputs('memory diff', ['memory', 'diff', leakA, leakB], { json: (j) => j.schemaVersion === 1, charts: false });
outputs('plan', ['plan', '--model', model, '--gpu', 'h200', '--batch', '8', '--seq', '1024'], { json: (j) => j.fits === true, charts: false });
outputs('smi --from', ['smi', '--from', smiXml], { json: (j) => j.gpus?.length > 0, charts: false });
outputs('select --from', ['select', '-n', '1', '--max-util', '100', '--from', smiXml], { formats: ['text'] });
outputs('doctor --from', ['doctor', '--from', recorded], {
  json: (j) => j.findings?.some((f) => f.id === 'dataloader-bound'),
  charts: true,
});

// 3. The live GPUs: readings, or the one-line hint that there is no GPU (NVML loaded through koffi either way).
for (const args of [['smi'], ['monitor', '--json-stream', '--count', '1']]) {
  const r = run(args);
  // One line of gpuwise's (npx may add warnings of npm's own configuration).
  const lines = r.stderr.trim().split('\n').filter((l) => !l.startsWith('npm warn'));
  const noGpu = r.code === 9 && lines.length === 1 && /no NVIDIA GPU can be read here/.test(lines[0]);
  check((r.code === 0 && r.stdout.length > 0) || noGpu, `${shown(args)}: GPU readings or the no-GPU hint`, `exit ${r.code}: ${tail(r.stderr, 300)}`);
}

// 4. serve on a loopback port, on the store the doctor runs below save in (they stream to it while they run).
const serveLog = join(place, 'serve.out');
const serveErr = join(place, 'serve.err');
const [outFd, errFd] = [openSync(serveLog, 'w'), openSync(serveErr, 'w')];
const serve = spawn(executable, ['serve', '--port', '0', '--no-record'], { cwd: place, env, stdio: ['ignore', outFd, errFd] });
closeSync(outFd);
closeSync(errFd);
let serveExit = null;
serve.on('exit', (code, signal) => {
  serveExit = { code, signal };
});
let serveUrl = null;
for (let waited = 0; waited < 60_000 && serveExit === null && serveUrl === null; waited += 100) {
  await new Promise((r) => setTimeout(r, 100));
  serveUrl = readFileSync(serveLog, 'utf8').match(/^gpuwise serve: (http:\/\/127\.0\.0\.1:\d+\/)/m)?.[1] ?? null;
}
check(serveUrl !== null, `gpuwise serve --port 0: started on a loopback port (${serveUrl ?? `exit ${JSON.stringify(serveExit)}: ${tail(readFileSync(serveErr, 'utf8'))}`})`);

// 5. doctor with CPU PyTorch: the shipped tiny training loop, its run directory with every report kept.
const tinyOut = join(place, 'run-tiny');
const tinyArgs = ['doctor', '--out', tinyOut, '--', 'python3', join(ROOT, 'examples', 'doctor', 'tiny_train.py'), '--steps', '40'];
const tiny = run(tinyArgs);
check(tiny.code === 0, `${shown(tinyArgs)}: exit ${tiny.code}${tiny.code ? `: ${tail(tiny.stderr)}` : ''}`);
check(!/warning: the report was not kept/.test(tiny.stderr), `${shown(tinyArgs)}: every report kept${/not kept/.test(tiny.stderr) ? `: ${tail(tiny.stderr)}` : ''}`);
for (const file of ['report.json', 'report.md', 'report.html']) {
  const path = join(tinyOut, file);
  const problem = !existsSync(path) ? 'missing' : file === 'report.html' ? pageProblems(path, true) : null;
  check(problem === null, `${shown(tinyArgs)}: ${file} in the run directory${problem ? `: ${problem}` : ''}`);
}
if (existsSync(join(tinyOut, 'report.json'))) {
  const report = JSON.parse(readFileSync(join(tinyOut, 'report.json'), 'utf8'));
  check(report.version === VERSION && report.run.outcome === 'completed', `${shown(tinyArgs)}: report.json version ${report.version}, outcome ${report.run.outcome}`);
  check(report.ranks[0]?.steps.steps === 40, `${shown(tinyArgs)}: the probe saw ${report.ranks[0]?.steps.steps} of 40 steps`);
}

// The probe comes from the installed package: 8 optimizer steps, then the training's own `import gpuwise` gives the
// wheel's package in the venv; beside the npm package (no gpuwise for Python installed) only `--importable` makes
// that import give the probe doctor loaded: without it the import fails as it does without doctor.
const importable = kind === 'npm' ? ['--importable'] : [];
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
const d = run(['doctor', '--out', out, '--profile-steps', '0', ...importable, '--', 'python3', '-c', script]);
check(d.code === 0, 'gpuwise doctor -- python3 -c SCRIPT: exit 0', `exit ${d.code}: ${tail(d.stderr)}`);
check(d.stdout.includes(`trained with gpuwise ${VERSION}`), 'gpuwise doctor -- python3 -c SCRIPT: the training ran and imported gpuwise of the same version');
if (existsSync(join(out, 'report.json'))) {
  const report = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8'));
  check(report.version === VERSION, `gpuwise doctor -- python3 -c SCRIPT: report.json version ${report.version}`);
  check(report.run.outcome === 'completed', `gpuwise doctor -- python3 -c SCRIPT: outcome ${report.run.outcome}`);
  check(report.ranks[0]?.steps.steps === 8, `gpuwise doctor -- python3 -c SCRIPT: the probe saw ${report.ranks[0]?.steps.steps} of 8 steps`);
  check(typeof report.environment.torch === 'string', `gpuwise doctor -- python3 -c SCRIPT: torch ${report.environment.torch}`);
} else fail('gpuwise doctor -- python3 -c SCRIPT: wrote no report.json');

// A gpuwise.py of the user's next to the script is what the script imports, the installed package beside it.
const mine = join(place, 'mine');
mkdirSync(mine);
writeFileSync(join(mine, 'gpuwise.py'), 'WHOSE = "the user\'s own gpuwise.py"\n');
writeFileSync(join(mine, 'train.py'), ['import gpuwise', 'print(gpuwise.WHOSE)', ...loop].join('\n'));
const u = run(['doctor', '--out', join(place, 'run-mine'), '--profile-steps', '0', '--', 'python3', join(mine, 'train.py')]);
check(u.code === 0 && u.stdout.includes("the user's own gpuwise.py"), `gpuwise doctor -- python3 train.py beside the user's own gpuwise.py: exit ${u.code}${u.code ? `: ${tail(u.stderr, 300)}` : ''}`);

// The wheel's site hook: a command that replaces PYTHONPATH and runs Python isolated (-I: no PYTHONPATH, no user
// site) is still probed, and the training sees neither doctor's variables nor its folder on PYTHONPATH.
if (kind === 'wheel') {
  const env = ['import os', 'print("env", os.environ.get("PYTHONPATH"), sorted(k for k in os.environ if k.startswith("GPUWISE_") and k != "GPUWISE_STORE"))'];
  const hookOut = join(place, 'run-hook');
  const h = run(['doctor', '--out', hookOut, '--profile-steps', '0', '--', '/usr/bin/env', 'PYTHONPATH=/nowhere', 'python3', '-I', '-c', [...env, ...loop].join('\n')]);
  const hookSteps = existsSync(join(hookOut, 'report.json')) ? JSON.parse(readFileSync(join(hookOut, 'report.json'), 'utf8')).ranks[0]?.steps.steps : null;
  check(h.code === 0 && hookSteps === 8 && h.stdout.includes('env /nowhere []'), `gpuwise doctor -- env PYTHONPATH=/nowhere python3 -I: ${hookSteps} of 8 steps probed, the script's environment its own`, tail(h.stdout, 300));
}

// gpuwise.step() from the script's own `import gpuwise` (the wheel's package in the venv; the probe itself with
// --importable beside the npm package) reaches doctor's probe: a loop without an optimizer, 6 marks, 5 timed steps.
const marks = ['import time, torch, gpuwise', 'net = torch.nn.Linear(8, 2)', 'for _ in range(6):'];
marks.push('    net(torch.randn(4, 8)).sum().backward()', '    time.sleep(0.005)', '    gpuwise.step()');
const markOut = join(place, 'run-marks');
const k = run(['doctor', '--out', markOut, '--profile-steps', '0', ...importable, '--', 'python3', '-c', marks.join('\n')]);
const markSteps = existsSync(join(markOut, 'report.json')) ? JSON.parse(readFileSync(join(markOut, 'report.json'), 'utf8')).ranks[0]?.steps : null;
check(k.code === 0 && markSteps?.steps === 5 && markSteps?.stepSource === 'marker', `gpuwise doctor counts gpuwise.step() marks: ${JSON.stringify(markSteps?.steps)} steps from ${markSteps?.stepSource}`);

// 6. The run history (SQLite): the list, one run shown again with every output, two runs compared.
const listed = run(['runs']);
check(listed.code === 0 && listed.stdout.includes('tiny_train.py'), 'gpuwise runs: the doctor runs listed', `exit ${listed.code}: ${tail(listed.stderr || listed.stdout, 300)}`);
const runsJson = run(['runs', '--json']);
let runIds = [];
try {
  runIds = JSON.parse(runsJson.stdout).runs.map((r) => r.id);
} catch {}
const doctorRuns = kind === 'wheel' ? 5 : 4; // the wheel's site hook had a run of its own
check(runIds.length === doctorRuns, `gpuwise runs --json: the ${doctorRuns} doctor runs`, `got ${runIds.length}: ${tail(runsJson.stderr, 300)}`);
for (const args of [['runs', 'show', 'last', '--md'], ['runs', 'show', 'last', '--html', 'runs-show.html'], ['compare', 'last~1', 'last'], ['compare', 'last~1', 'last', '--json']]) {
  const r = run(args);
  const problem = r.code !== 0 ? `exit ${r.code}: ${tail(r.stderr)}` : args.includes('--html') ? pageProblems(join(place, 'runs-show.html'), true) : r.stdout.length ? null : 'no output';
  check(problem === null, `${shown(args)}${problem ? `: ${problem}` : ''}`);
}

// 7. serve's pages over HTTP: the run list, a run's page and its standalone report, uPlot; then stopped.
if (serveUrl !== null) {
  const get = async (path) => {
    try {
      const res = await fetch(new URL(path, serveUrl), { signal: AbortSignal.timeout(30_000) });
      return { status: res.status, body: await res.text() };
    } catch (e) {
      return { status: 0, body: String(e) };
    }
  };
  const list = await get('runs');
  check(list.status === 200 && list.body.includes('tiny_train.py'), `gpuwise serve: GET /runs: status ${list.status}, the doctor runs listed`);
  for (const [path, what] of [
    ['run?id=last', 'a run'],
    ['run-report?id=last', 'a run as one file'],
    ['assets/uplot.js', 'uPlot'],
  ]) {
    const r = await get(path);
    const needs = path.startsWith('run?') ? 'assets/uplot.js' : UPLOT;
    check(r.status === 200 && r.body.includes(needs), `gpuwise serve: GET /${path} (${what}): status ${r.status}${r.body.includes(needs) ? '' : `, without ${needs}`}`);
  }
  serve.kill('SIGINT');
  for (let waited = 0; waited < 15_000 && serveExit === null; waited += 100) await new Promise((r) => setTimeout(r, 100));
  check(serveExit?.code === 0, `gpuwise serve: stopped by Ctrl-C, exit ${JSON.stringify(serveExit)}`);
}
if (serveExit === null) serve.kill('SIGKILL');

// 8. tune on the shipped CPU stand-in that runs out of memory above batch 40: its report and page.
const toy = join(ROOT, 'examples', 'doctor', 'tune_toy.py');
const tuneArgs = ['tune', '--out', join(place, 'tune'), '--html', 'tune.html', '--param', 'b=8..64', '--steps', '2', '--max-trials', '2'];
tuneArgs.push('--', 'python3', toy, '--batch-size', '{b}', '--fits', '40');
const t = run(tuneArgs);
check(t.code === 0 && /Largest (that fits|tried): b=/.test(t.stdout), `${shown(tuneArgs)}: exit ${t.code}${t.code ? `: ${tail(t.stderr)}` : ''}`);
const tunePage = pageProblems(join(place, 'tune.html'), true);
check(tunePage === null, `${shown(tuneArgs)}: tune.html${tunePage ? `: ${tunePage}` : ''}`);

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

if (failures) {
  console.error(`FAIL ${kind}: ${failures} check(s) failed; left ${place} for a look`);
  process.exit(1);
}
rmSync(place, { recursive: true, force: true });
console.log(`ok   ${kind}: all checks passed in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
