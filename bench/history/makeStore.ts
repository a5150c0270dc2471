/**
 * A run history for the bench (bench/history/bench.mjs): shipped doctor reports (real runs' report.json) saved into a
 * store with the history's own writer, each its own run a minute apart. Usage: vite-node makeStore.ts STORE N.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { DoctorReport } from '../../src/doctor/reportTypes.js';
import { saveRun } from '../../src/io/runStore.js';

const REPO = join(import.meta.dirname, '..', '..');
const REPORTS = [
  'examples/doctor/runs/h200/starved_dataloader',
  'examples/doctor/runs/h200/accum_no_sync',
  'examples/realworld/runs/hf_trainer_gpt2',
  'examples/realworld/runs/lightning_resnet',
  'examples/doctor/runs/h100-host/fp32_b64',
];

const [store, n] = [process.argv[2], Number(process.argv[3] ?? 5)];
if (!store || !(n > 0)) {
  process.stderr.write('usage: vite-node makeStore.ts STORE N\n');
  process.exit(2);
}
for (let i = 0; i < n; i++) {
  const dir = REPORTS[i % REPORTS.length] as string;
  const r = JSON.parse(readFileSync(join(REPO, dir, 'report.json'), 'utf8')) as DoctorReport;
  r.run.startedAtMs = Date.UTC(2026, 0, 1, 8, i, 0);
  await saveRun(store, r, { cwd: REPO, hostname: 'bench' });
}
process.stdout.write(`${n} runs saved in ${store}\n`);
