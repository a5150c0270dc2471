#!/usr/bin/env node
// Doctor on a long run: STEPS synthetic step records (bench/doctor/sendRecords.mjs) over the socket, as a 10 ms step
// for 6 hours sends them (2.2 million). Prints doctor's wall time, peak RSS (VmHWM), exit status and the report's
// step count. Usage: npm run build && node bench/doctor/longRun.mjs [STEPS] [BUNDLE]
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = new URL('../../', import.meta.url).pathname;
const steps = Number(process.argv[2] ?? 2_200_000);
const bundle = process.argv[3] ?? join(root, 'dist', 'gpuwise.mjs');
const dir = mkdtempSync(join(tmpdir(), 'gpuwise-longrun-'));
const rss = join(dir, 'rss');
const t0 = performance.now();
const r = spawnSync(
  process.execPath,
  [
    '--import',
    join(root, 'test', 'helpers', 'rssOnExit.mjs'),
    bundle,
    'doctor',
    '--out',
    join(dir, 'run'),
    '--json',
    '--',
    process.execPath,
    join(root, 'bench', 'doctor', 'sendRecords.mjs'),
    '--steps',
    String(steps),
    '--exit',
    '3',
  ],
  { env: { ...process.env, GPUWISE_STORE: join(dir, 'store'), GPUWISE_TEST_RSS_FILE: rss }, encoding: 'utf8', maxBuffer: 1 << 30 },
);
const wallS = (performance.now() - t0) / 1000;
let reported = null;
try {
  reported = JSON.parse(r.stdout).ranks[0].steps.steps;
} catch {
  reported = `no report (${r.stderr.trim().split('\n').pop()})`;
}
let peak = null;
try {
  peak = Math.round(Number(readFileSync(rss, 'utf8')) / 2 ** 20);
} catch {
  peak = 'unknown (killed)';
}
console.log(
  JSON.stringify({ steps, wallS: Number(wallS.toFixed(1)), peakRssMiB: peak, exit: r.status, expectedExit: 3, reportedSteps: reported }),
);
rmSync(dir, { recursive: true, force: true });
