// Benchmark: `gpuwise plan --search` over >= 10,000 candidate plans must take under 1 s.
// Bundles the pure planner with esbuild (a devDependency) and times searchPlans on Llama-2-7B over
// 8 nodes x 8 H100 with no global batch constraint and with one, plus a single-GPU max-batch query.
import { readFileSync, mkdirSync } from 'node:fs';
import { build } from 'esbuild';

const root = new URL('../../', import.meta.url);
const out = new URL('.bench/planner.mjs', root);
mkdirSync(new URL('.bench/', root), { recursive: true });
await build({
  stdin: {
    contents: `export * from './src/planner/plan.js'; export * from './src/planner/hfConfig.js'; export * from './src/planner/gpus.js';`,
    resolveDir: root.pathname,
    loader: 'ts',
  },
  bundle: true,
  format: 'esm',
  platform: 'neutral',
  outfile: out.pathname,
  logLevel: 'error',
});
const P = await import(out.href);
const cfg = JSON.parse(readFileSync(new URL('test/fixtures/planner/configs/llama-2-7b/config.json', root), 'utf8'));
const model = P.describeHfConfig(cfg);
const gpu = P.gpuById('h100-sxm');
const req = (nodes) => ({
  model,
  setup: { microBatch: 1, seq: 4096, precision: 'amp-bf16', optimizer: 'adamw', checkpointing: 'none', gradAccum: 1, mode: 'train' },
  parallelism: { dp: 'none', dpSize: 1, tp: 1, pp: 1, reshardAfterForward: true, cpuOffload: false },
  hardware: { gpu, gpusPerNode: 8, nodes, intraNodeBandwidth: gpu.intraNodeBandwidth, interNodeBandwidth: 25e9, hostBandwidth: 25e9 },
});

function time(label, fn, reps = 5) {
  fn(); // warm-up (JIT)
  const ts = [];
  let r;
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    r = fn();
    ts.push(performance.now() - t0);
  }
  ts.sort((a, b) => a - b);
  return { label, medianMs: ts[Math.floor(ts.length / 2)], result: r };
}

const rows = [];
const a = time('search 64 GPUs, every micro-batch 1..64', () => P.searchPlans(req(8), { maxMicroBatch: 64, everyMicroBatch: true }));
rows.push([a.label, a.result.candidates, a.result.feasible, a.medianMs]);
const b = time('search 64 GPUs, global batch 1024', () => P.searchPlans(req(8), { globalBatch: 1024, maxMicroBatch: 1024 }));
rows.push([b.label, b.result.candidates, b.result.feasible, b.medianMs]);
const c = time('max-batch, Llama-2-7B bf16 full checkpointing, 1 H100', () =>
  P.maxMicroBatch({
    ...req(1),
    hardware: { ...req(1).hardware, gpusPerNode: 1 },
    parallelism: { ...req(1).parallelism, dp: 'none' },
    setup: { ...req(1).setup, checkpointing: 'full', precision: 'bf16' },
  }),
);
rows.push([c.label, '-', c.result.microBatch, c.medianMs]);
console.log('benchmark | candidates | feasible / result | median ms');
for (const r of rows) console.log(`${r[0]} | ${r[1]} | ${r[2]} | ${r[3].toFixed(1)}`);
const per = a.medianMs / a.result.candidates;
console.log(`per candidate: ${(per * 1000).toFixed(2)} us; 10,000 candidates: ${(per * 10000).toFixed(0)} ms (target < 1000 ms)`);
if (a.result.candidates < 10000) console.log('WARNING: fewer than 10,000 candidates enumerated');
process.exitCode = per * 10000 < 1000 ? 0 : 1;
