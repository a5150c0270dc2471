#!/usr/bin/env node
// Trace-analysis benchmark for the targets of the analyze issue. Run `npm run build` first.
//   - full analysis of a ~200 MB trace vs `python3 -c "import json; json.load(open(F))"`, same machine, same run
//   - peak RSS on ~1 GB and ~2 GB traces (steps of a real trace repeated), and the growth per GB
//   - .json.gz against its plain twin
// Traces are generated under .bench/ from the shipped GPT-2 trace (kept between runs; delete to regenerate).
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
const work = `${root}.bench/`;
mkdirSync(work, { recursive: true });
const cli = `${root}dist/gpuwise.mjs`;
if (!existsSync(cli)) {
  console.error('bench: run `npm run build` first');
  process.exit(2);
}
const source = `${root}examples/traces/gpt2_amp.trace.json.gz`;
const sizes = (process.env.GPUWISE_BENCH_SIZES_MB ?? '200,1000,2000').split(',').map(Number);

function trace(mb) {
  const p = `${work}gpt2x${mb}MB.json`;
  if (!existsSync(p)) execFileSync('node', [`${root}bench/trace/makeBigTrace.mjs`, source, p, String(mb)], { stdio: 'inherit' });
  return p;
}

function measure(cmd, args, env = {}) {
  const rssFile = `${work}rss.txt`;
  rmSync(rssFile, { force: true });
  const t0 = process.hrtime.bigint();
  const r = spawnSync(cmd, args, { env: { ...process.env, ...env, GPUWISE_RSS_OUT: rssFile }, stdio: ['ignore', 'ignore', 'pipe'], maxBuffer: 1 << 26 });
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed: ${r.stderr}`);
  const rss = existsSync(rssFile) ? Number(readFileSync(rssFile, 'utf8')) : Number.NaN;
  return { s, rssMB: rss / 1048576 };
}

const analyze = (file) => measure('node', ['-r', `${root}bench/trace/rss-report.cjs`, cli, 'analyze', '--json', '--no-progress', file]);
const pyLoad = (file) =>
  measure('python3', ['-c', 'import json,os,resource,sys; json.load(open(sys.argv[1])); open(os.environ["GPUWISE_RSS_OUT"],"w").write(str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss*1024))', file]);

const f200 = trace(sizes[0]);
const mb200 = statSync(f200).size / 1e6;
// The two are timed in turns (python, gpuwise, python, ...), GPUWISE_BENCH_REPEAT times (default 3): this VM's speed
// drifts by 20% within the hour, and a pair measured side by side drifts together. Each pair's ratio is printed, and
// the median.
const repeat = Math.max(1, Number(process.env.GPUWISE_BENCH_REPEAT ?? 3));
const hasPython = spawnSync('python3', ['--version']).status === 0;
const pairs = [];
for (let i = 0; i < repeat; i++) pairs.push({ py: hasPython ? pyLoad(f200) : null, ours: analyze(f200) });
const mid = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
const ours = pairs.find((p) => p.ours.s === mid(pairs.map((q) => q.ours.s))).ours;
console.log(`\n${mb200.toFixed(0)} MB trace: gpuwise analyze ${pairs.map((p) => p.ours.s.toFixed(2)).join(' / ')} s, ${ours.rssMB.toFixed(0)} MB peak RSS`);
const py = hasPython ? pairs.map((p) => p.py) : null;
if (py) {
  const ratios = pairs.map((p) => (p.ours.s / p.py.s) * 100);
  console.log(`  python3 json.load alone: ${py.map((p) => p.s.toFixed(2)).join(' / ')} s, ${py[0].rssMB.toFixed(0)} MB`);
  console.log(`  -> gpuwise takes ${ratios.map((r) => `${r.toFixed(0)}%`).join(' / ')} of its time, median ${mid(ratios).toFixed(0)}% (target < 25%)`);
}

const gz = `${f200}.gz`;
if (!existsSync(gz)) execFileSync('sh', ['-c', `gzip -1 -c "${f200}" > "${gz}"`]);
const gzr = analyze(gz);
console.log(`  .json.gz twin (${(statSync(gz).size / 1e6).toFixed(0)} MB): ${gzr.s.toFixed(2)} s = ${(gzr.s / ours.s).toFixed(2)}x the plain file (target <= 1.5x)`);

const big = [];
for (const mb of sizes.slice(1)) {
  const f = trace(mb);
  const r = analyze(f);
  const gb = statSync(f).size / 1e9;
  big.push({ gb, ...r });
  console.log(`${(gb * 1000).toFixed(0)} MB trace: ${r.s.toFixed(1)} s, peak RSS ${r.rssMB.toFixed(0)} MB (target < 300 MB at 2 GB)`);
}
if (big.length >= 2) {
  const [a, b] = [big[big.length - 2], big[big.length - 1]];
  console.log(`  RSS growth: ${((b.rssMB - a.rssMB) / (b.gb - a.gb)).toFixed(1)} MB per extra GB`);
}
