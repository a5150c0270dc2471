#!/usr/bin/env node
// `npm run bench:memory`: reads and fully analyses memory snapshots, each in a fresh
// process, and checks the targets of issue 3: under 5 s and a peak RSS under 4x the
// file size for a 100 MB snapshot. Inputs: the test fixture, ../shared's fixture when
// it is there, and synthetic snapshots of 100 MB (plain and gzip) made by makeBigSnapshot.mjs.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const dir = '.bench';
mkdirSync(dir, { recursive: true });
await build({ entryPoints: ['bench/memory/measure.ts'], bundle: true, platform: 'node', format: 'esm', target: 'node20', outfile: `${dir}/measure.mjs`, logLevel: 'warning' });

const bigMb = Number(process.env.BENCH_MEMORY_MB ?? 100);
const big = `${dir}/big-${bigMb}.pickle`;
if (!existsSync(big)) execFileSync('node', ['bench/memory/makeBigSnapshot.mjs', big, String(bigMb)], { stdio: 'inherit' });
if (!existsSync(`${big}.gz`)) writeFileSync(`${big}.gz`, gzipSync(readFileSync(big), { level: 6 }));

const inputs = ['test/fixtures/memory/memory_snapshot.pickle.gz', '../shared/fixtures/snapshots/memory_snapshot.pickle.gz', big, `${big}.gz`].filter(existsSync);
const rows = [];
for (const p of inputs) {
  const best = [];
  for (let k = 0; k < 3; k++) best.push(JSON.parse(execFileSync('node', [`${dir}/measure.mjs`, p], { encoding: 'utf8' })));
  best.sort((a, b) => a.totalMs - b.totalMs);
  rows.push(best[1]); // median of 3
}
const mb = (b) => (b / 1e6).toFixed(1);
console.log('file                                              file MB  pickle MB   entries   read ms  total ms    cpu ms  RSS MB  RSS/pickle');
let ok = true;
for (const r of rows) {
  const ratio = r.maxRssBytes / r.pickleBytes;
  console.log(
    `${r.path.padEnd(50)}${mb(r.fileBytes).padStart(7)}${mb(r.pickleBytes).padStart(11)}${String(r.entries).padStart(10)}${String(r.readMs).padStart(10)}${String(r.totalMs).padStart(10)}${String(r.cpuMs).padStart(10)}${mb(r.maxRssBytes).padStart(8)}${ratio.toFixed(2).padStart(12)}`,
  );
  if (r.pickleBytes >= 50e6) ok &&= r.totalMs < 5000 && ratio < 4;
}
const { loadavg, cpus } = await import('node:os');
console.log(`load average ${loadavg()[0].toFixed(1)} on ${cpus().length} CPUs (wall times grow with other load; cpu ms does not)`);
console.log(ok ? 'targets met: under 5 s and RSS under 4x the snapshot size for the large inputs' : 'TARGETS MISSED');
process.exitCode = ok ? 0 : 1;
