// Start time of the gpuwise command as each package runs it: `node dist/gpuwise.mjs` (npm), the standalone
// executable of the wheel, and the wheel's console command (Python entry point that execs the executable).
// Needs `npm run wheel` first; installs the wheel into .bench/packaging/venv once.
//   node bench/packaging/startup.mjs [RUNS]   (default 30 runs of each, after 3 warm-up runs)
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..', '..');
const runs = Number(process.argv[2] ?? 30);
const wheel = readdirSync(join(ROOT, 'dist')).find((f) => f.endsWith('.whl'));
if (!wheel) throw new Error('no wheel in dist/: run `npm run wheel` first');
const venv = join(ROOT, '.bench', 'packaging', 'venv');
if (!existsSync(join(venv, 'bin', 'gpuwise'))) {
  execFileSync('/usr/bin/python3', ['-m', 'venv', venv]);
  execFileSync(join(venv, 'bin', 'pip'), ['install', '--no-index', '--no-deps', '--quiet', '--force-reinstall', join(ROOT, 'dist', wheel)]);
}
const site = execFileSync(join(venv, 'bin', 'python'), ['-c', 'import gpuwise, os; print(os.path.dirname(gpuwise.__file__))'], {
  encoding: 'utf8',
}).trim();
const trace = join(ROOT, 'examples', 'traces', 'resnet_starved.trace.json.gz');
const variants = [
  ['node dist/gpuwise.mjs', [process.execPath, join(ROOT, 'dist', 'gpuwise.mjs')]],
  ['wheel: gpuwise/_cli/gpuwise (SEA)', [join(site, '_cli', 'gpuwise')]],
  ['wheel: venv/bin/gpuwise (console script)', [join(venv, 'bin', 'gpuwise')]],
];
const mib = (b) => `${(b / 2 ** 20).toFixed(1)} MiB`;
console.log(`wheel ${wheel}: ${mib(statSync(join(ROOT, 'dist', wheel)).size)}; executable ${mib(statSync(join(site, '_cli', 'gpuwise')).size)}`);
for (const [label, args] of [
  ['--version', ['--version']],
  ['analyze resnet_starved (575 KB .gz)', ['analyze', trace]],
]) {
  for (const [name, cmd] of variants) {
    const times = [];
    for (let i = 0; i < runs + 3; i++) {
      const t = process.hrtime.bigint();
      execFileSync(cmd[0], [...cmd.slice(1), ...args], { stdio: 'ignore' });
      if (i >= 3) times.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
    times.sort((a, b) => a - b);
    const med = times[Math.floor(times.length / 2)];
    console.log(`${label.padEnd(36)} ${name.padEnd(42)} median ${med.toFixed(1)} ms  min ${times[0].toFixed(1)}  p90 ${times[Math.floor(times.length * 0.9)].toFixed(1)}`);
  }
}
