#!/usr/bin/env node
// The run history's commands, timed: `runs`, `compare last~1 last` and `runs show last` on a store of N shipped doctor
// reports (bench/history/makeStore.ts writes it with the history's own writer), against `--version` (the start-up
// floor). Each command runs K times; wall time and the child's CPU (user + system, from this process's cutime and
// cstime in /proc/self/stat) are given as min and median: on a loaded machine the min and the CPU are the figures
// to compare. Needs dist/gpuwise.mjs (npm run build). Issue 47: "runs and compare take 2-5 s for five runs".
//
//   node bench/history/bench.mjs [--runs N] [--times K] [--store DIR] [--cli dist/gpuwise.mjs (another build to compare)]
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = new URL('../../', import.meta.url).pathname;
function arg(name, dflt) {
  const i = process.argv.indexOf(name);
  return i > 0 ? process.argv[i + 1] : dflt;
}
const CLI = arg('--cli', join(ROOT, 'dist', 'gpuwise.mjs'));
const N = Number(arg('--runs', '5'));
const K = Number(arg('--times', '10'));
let store = arg('--store', null);
const own = store === null;
if (own) {
  store = mkdtempSync(join(tmpdir(), 'gpuwise-history-bench-'));
  execFileSync(join(ROOT, 'node_modules', '.bin', 'vite-node'), [join(ROOT, 'bench', 'history', 'makeStore.ts'), store, String(N)], { stdio: 'inherit' });
}

const TICK_S = 0.01; // USER_HZ on Linux
function childCpuS() {
  const f = readFileSync('/proc/self/stat', 'utf8');
  const p = f.slice(f.lastIndexOf(')') + 2).split(' ');
  // after the ')': state is field 3, so cutime (16) and cstime (17) are at 13 and 14
  return (Number(p[13]) + Number(p[14])) * TICK_S;
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
const commands = [
  ['--version'],
  ['runs', '--store', store],
  ['compare', 'last~1', 'last', '--store', store],
  ['runs', 'show', 'last', '--store', store],
];
console.log(`${CLI}: ${N} runs in ${store}; each command ${K} times (node ${process.version})`);
console.log('command                          wall min  wall median   cpu min  cpu median');
for (const c of commands) {
  const wall = [];
  const cpu = [];
  for (let i = 0; i < K; i++) {
    const c0 = childCpuS();
    const t0 = performance.now();
    const r = spawnSync(process.execPath, [CLI, ...c], { stdio: ['ignore', 'ignore', 'pipe'] });
    wall.push((performance.now() - t0) / 1000);
    cpu.push(childCpuS() - c0);
    if (r.status !== 0) throw new Error(`${c.join(' ')}: exit ${r.status}: ${r.stderr}`);
  }
  const name = c.filter((x) => x !== store && x !== '--store').join(' ');
  console.log(
    `${name.padEnd(32)} ${Math.min(...wall).toFixed(3).padStart(7)} s ${median(wall).toFixed(3).padStart(9)} s ${Math.min(...cpu).toFixed(2).padStart(7)} s ${median(cpu).toFixed(2).padStart(8)} s`,
  );
}
if (own) rmSync(store, { recursive: true, force: true });
