#!/usr/bin/env node
// Telemetry benchmark: gpuwise's own CPU time per sample (NVML through koffi, with and without /proc),
// next to spawning nvidia-smi in the same run; monitor's CPU use at 10 Hz; exporter scrape latency
// while it samples every 100 ms. Plain Node: needs dist/gpuwise.mjs, node_modules/koffi, nvidia-smi.
//
//   node bench/telemetry/bench.mjs OUTDIR [--no-load]
//
// Without a GPU it still runs against GPUWISE_NVML_LIB (e.g. the fake driver of the tests), and says so.
import { mkdirSync, writeFileSync } from 'node:fs';
import { request, Agent } from 'node:http';
import { join } from 'node:path';
import { childCpuSeconds, gpuCount, gpuwise, hasNvidiaSmi, percentile, run, startExporterProcess, startLoad, stopLoad } from './common.mjs';

const outDir = process.argv[2];
if (!outDir || outDir.startsWith('--')) {
  console.error('usage: node bench/telemetry/bench.mjs OUTDIR [--no-load]');
  process.exit(2);
}
mkdirSync(outDir, { recursive: true });
// Bounded: the GPU batch must end even if something hangs.
setTimeout(() => {
  console.error('bench: gave up after 200 s');
  process.exit(1);
}, 200_000).unref();
const results = { schemaVersion: 1, when: new Date().toISOString(), nvmlLib: process.env.GPUWISE_NVML_LIB ?? 'libnvidia-ml.so.1' };

function scrape(url, agent) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = request(url, { agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(performance.now() - t0));
    });
    req.on('error', reject);
    req.end();
  });
}

const smiPresent = await hasNvidiaSmi();
const n = smiPresent ? await gpuCount() : 0;
let load = { procs: [], reason: smiPresent ? 'not asked for (--no-load)' : 'no nvidia-smi' };
if (smiPresent && !process.argv.includes('--no-load')) {
  try {
    load = await startLoad(n, 120);
  } catch (e) {
    load = { procs: [], reason: e.message };
  }
}
results.load = { processes: load.procs.length, reason: load.reason };
try {
  // 1. gpuwise's own cost per sample (in-process loop, after a warm-up sample).
  for (const procfs of [true, false]) {
    const r = await gpuwise(['smi', '--bench', '5000', ...(procfs ? [] : ['--no-procfs'])]);
    if (r.code !== 0) throw new Error(`smi --bench failed: ${r.stderr.trim()}`);
    results[procfs ? 'sampleWithProcfs' : 'sampleNvmlOnly'] = JSON.parse(r.stdout);
  }
  // 2. The same question asked of nvidia-smi: one process per sample.
  if (smiPresent) {
    const fields =
      'index,uuid,name,pci.bus_id,driver_version,memory.total,memory.reserved,memory.used,memory.free,utilization.gpu,utilization.memory,power.draw,power.limit,temperature.gpu,clocks.current.sm,clocks.current.memory,clocks.max.sm,pcie.link.gen.current,pcie.link.width.current,compute_mode,mig.mode.current,ecc.errors.uncorrected.volatile.total';
    const cpu0 = childCpuSeconds();
    const walls = [];
    const N = 20;
    for (let i = 0; i < N; i++) walls.push((await run('nvidia-smi', [`--query-gpu=${fields}`, '--format=csv,noheader,nounits'])).wallMs);
    const cpu = childCpuSeconds() - cpu0;
    walls.sort((a, b) => a - b);
    results.nvidiaSmiQueryGpu = {
      calls: N,
      wallMsMedian: percentile(walls, 0.5),
      cpuMsPerCall: (cpu * 1000) / N,
      note: 'CPU of nvidia-smi processes (100 Hz tick resolution)',
    };
  }
  // 3. monitor at 10 Hz for 20 s: its own CPU clock from after the first sample to the end (GPUWISE_SELF_CPU=1,
  // microsecond resolution; differencing child CPU at the 10 ms tick was mostly noise at this size).
  const many = await gpuwise(['monitor', '--json-stream', '--interval', '100ms', '--count', '201'], { GPUWISE_SELF_CPU: '1' });
  if (many.code !== 0) throw new Error(`monitor failed: ${many.stderr}`);
  const self = JSON.parse(many.stderr.split('\n').find((l) => l.startsWith('{"selfCpu"')) ?? 'null');
  if (self === null) throw new Error('monitor printed no GPUWISE_SELF_CPU figure');
  results.monitor10Hz = {
    samples: self.samples,
    cpuSeconds: self.cpuUs / 1e6,
    wallSeconds: self.wallMs / 1000,
    percentOfOneCore: self.percentOfOneCore,
    output: 'NDJSON to a pipe',
  };
  // 4. Exporter: scrape latency while sampling every 100 ms.
  const ex = await startExporterProcess(['--interval', '100ms']);
  try {
    const agent = new Agent({ keepAlive: true, maxSockets: 20 });
    for (let i = 0; i < 20; i++) await scrape(`${ex.url}/metrics`, agent); // warm-up
    const seq = [];
    for (let i = 0; i < 1000; i++) seq.push(await scrape(`${ex.url}/metrics`, agent));
    seq.sort((a, b) => a - b);
    const conc = [];
    for (let b = 0; b < 50; b++) conc.push(...(await Promise.all(Array.from({ length: 20 }, () => scrape(`${ex.url}/metrics`, agent)))));
    conc.sort((a, b) => a - b);
    const body = await (await fetch(`${ex.url}/metrics`)).text();
    results.exporterScrape = {
      sequential: { scrapes: 1000, p50Ms: percentile(seq, 0.5), p99Ms: percentile(seq, 0.99), maxMs: seq[seq.length - 1] },
      concurrent20: { scrapes: 1000, p50Ms: percentile(conc, 0.5), p99Ms: percentile(conc, 0.99), maxMs: conc[conc.length - 1] },
      bodyBytes: body.length,
    };
    agent.destroy();
  } finally {
    ex.child.kill('SIGTERM');
  }
} finally {
  stopLoad(load.procs);
}
writeFileSync(join(outDir, 'bench.json'), `${JSON.stringify(results, null, 2)}\n`);
const s = results.sampleWithProcfs;
const f = (v, d = 1) => (v === null || v === undefined ? '-' : v.toFixed(d));
console.log(`GPUs ${s.gpus}, processes per sample ${f(s.processesPerSample, 0)} (load: ${load.procs.length > 0 ? 'on' : load.reason})`);
console.log(
  `gpuwise CPU per sample, NVML + /proc: ${f(s.cpuUsPerSample)} us (${f(s.cpuUsPerSample / Math.max(1, s.gpus))} us per GPU); NVML only: ${f(results.sampleNvmlOnly.cpuUsPerSample)} us`,
);
console.log(
  `  steady (the next 5000, code compiled): NVML + /proc ${f(s.steadyCpuUsPerSample)} us (${f(s.steadyCpuUsPerSample / Math.max(1, s.gpus))} us per GPU); NVML only: ${f(results.sampleNvmlOnly.steadyCpuUsPerSample)} us`,
);
if (results.nvidiaSmiQueryGpu)
  console.log(
    `nvidia-smi --query-gpu per call: ${f(results.nvidiaSmiQueryGpu.wallMsMedian)} ms wall, ${f(results.nvidiaSmiQueryGpu.cpuMsPerCall)} ms CPU`,
  );
console.log(`monitor at 10 Hz: ${f(results.monitor10Hz.percentOfOneCore, 2)} % of one core`);
const e = results.exporterScrape;
console.log(
  `exporter scrape (sampling every 100 ms): p50 ${f(e.sequential.p50Ms, 2)} ms, p99 ${f(e.sequential.p99Ms, 2)} ms; 20 concurrent: p99 ${f(e.concurrent20.p99Ms, 2)} ms`,
);
