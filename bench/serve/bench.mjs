#!/usr/bin/env node
// gpuwise serve benchmark: (1) the server's CPU for the Live GPUs page at 10 Hz with 8 GPUs (the fake driver of the
// tests, FAKE_NVML_GPUS=8), with 0, 1 and 10 viewers; (2) the browser with a day of 1 Hz history of 8 GPUs on the
// page (chromium through puppeteer-core): time to the first drawn charts, long tasks and timer lag while the page
// follows 10 Hz frames, its JS heap. Needs dist/gpuwise.mjs (npm run build), cc, /usr/bin/chromium.
//
//   node bench/serve/bench.mjs OUTDIR [--seconds 30] [--only server|browser]
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = new URL('../../', import.meta.url).pathname;
const out = process.argv[2];
if (!out || out.startsWith('--')) {
  console.error('usage: node bench/serve/bench.mjs OUTDIR [--seconds 30]');
  process.exit(2);
}
const secIdx = process.argv.indexOf('--seconds');
const SECONDS = secIdx > 0 ? Number(process.argv[secIdx + 1]) : 30;
const onlyIdx = process.argv.indexOf('--only');
const ONLY = onlyIdx > 0 ? process.argv[onlyIdx + 1] : null; // server | browser
mkdirSync(out, { recursive: true });
setTimeout(() => {
  console.error('bench: gave up after 15 min');
  process.exit(1);
}, 900_000).unref();

const work = mkdtempSync(join(tmpdir(), 'gpuwise-serve-bench-'));
const lib = join(work, 'libfake-nvml.so');
execFileSync('cc', ['-O2', '-shared', '-fPIC', '-o', lib, join(ROOT, 'test/fixtures/telemetry/fake-nvml.c')]);
const env = { ...process.env, GPUWISE_NVML_LIB: lib, FAKE_NVML_GPUS: '8' };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const TICK = 100; // USER_HZ on Linux

function cpuSeconds(pid) {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const parts = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return (Number(parts[11]) + Number(parts[12])) / TICK; // utime + stime
}
function rssMiB(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : null;
}

async function startServe(args) {
  const p = spawn(process.execPath, [join(ROOT, 'dist/gpuwise.mjs'), 'serve', '--port', '0', ...args], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise((ok, no) => {
    let buf = '';
    p.stdout.on('data', (c) => {
      buf += c;
      const m = /gpuwise serve: (http:\/\/\S+\/)\?token=/.exec(buf);
      if (m) ok(m[1]);
    });
    p.on('exit', (code) => no(new Error(`serve exited ${code}`)));
  });
  return { p, url };
}

/** An SSE viewer that reads every frame (counts them). */
function viewer(url) {
  let frames = 0;
  const req = request(`${url}api/live/stream`, (res) => res.on('data', (c) => (frames += (String(c).match(/^data: /gm) ?? []).length)));
  req.end();
  return { frames: () => frames, close: () => req.destroy() };
}

const results = { schemaVersion: 1, when: new Date().toISOString(), node: process.version, cpus: (await import('node:os')).cpus().length, seconds: SECONDS };

// ---- (1) server CPU at 10 Hz, 8 GPUs -------------------------------------------------------------------------
if (ONLY !== 'browser') {
  const store = join(work, 'store-cpu');
  const { p, url } = await startServe(['--interval', '100ms', '--store', store]);
  await sleep(3000); // warm up: first samples, JIT
  const rows = [];
  for (const n of [0, 1, 10]) {
    const vs = Array.from({ length: n }, () => viewer(url));
    await sleep(1000);
    const c0 = cpuSeconds(p.pid);
    const t0 = performance.now();
    const f0 = vs.map((v) => v.frames());
    await sleep(SECONDS * 1000);
    const cpu = cpuSeconds(p.pid) - c0;
    const wall = (performance.now() - t0) / 1000;
    const frames = vs.map((v, i) => v.frames() - f0[i]);
    rows.push({ viewers: n, cpuPercentOfCore: +((100 * cpu) / wall).toFixed(2), framesPerViewerPerS: n ? +(frames.reduce((a, b) => a + b, 0) / n / wall).toFixed(1) : null, rssMiB: rssMiB(p.pid) });
    for (const v of vs) v.close();
    console.log(`server at 10 Hz, 8 GPUs, ${n} viewer(s): ${rows.at(-1).cpuPercentOfCore}% of a core`);
  }
  results.serverCpu = rows;
  p.kill('SIGTERM');
  await sleep(500);
}

// ---- (2) the browser with a day of 1 Hz history ----------------------------------------------------------------
if (ONLY !== 'server') {
  // A day of 1 Hz samples of 8 GPUs in the `record` schema (the sample and gpu tables the history reader reads).
  const require = createRequire(join(ROOT, 'package.json'));
  const { Database } = require('node-sqlite3-wasm');
  const file = join(work, 'day.sqlite');
  const db = new Database(file);
  db.exec(`CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE sample (id INTEGER PRIMARY KEY, t_ms INTEGER NOT NULL, snapshot_deflate BLOB NOT NULL);
CREATE TABLE gpu (sample_id INTEGER NOT NULL, t_ms INTEGER NOT NULL, gpu INTEGER NOT NULL, uuid TEXT NOT NULL, lost INTEGER NOT NULL,
  memory_total_bytes INTEGER, memory_used_bytes INTEGER, utilization_gpu_percent REAL, utilization_memory_percent REAL,
  power_watts REAL, temperature_c REAL, sm_clock_mhz REAL, PRIMARY KEY (sample_id, gpu));`);
  db.run("INSERT INTO meta VALUES ('schemaVersion', '1')");
  const end = Date.now() - 2000;
  const ins = db.prepare('INSERT INTO gpu VALUES (?, ?, ?, ?, 0, ?, ?, ?, 20, ?, 40, 1500)');
  // The snapshot blobs `record` keeps are left empty here: the history reader never reads them.
  const insSample = db.prepare("INSERT INTO sample VALUES (?, ?, x'')");
  db.exec('BEGIN');
  for (let k = 0; k < 86_400; k++) {
    const t = end - (86_399 - k) * 1000;
    insSample.run([k + 1, t]);
    for (let g = 0; g < 8; g++) {
      // A training day: utilisation and memory that move (a sine per GPU), so the charts draw real lines.
      const u = 50 + 45 * Math.sin(k / 600 + g);
      ins.run([k + 1, t, g, `GPU-fake-${g}`, 143771 * 1048576, Math.round((40 + 30 * Math.sin(k / 3000 + g)) * 1073741824), u, 300 + 3 * u]);
    }
  }
  db.exec('COMMIT');
  ins.finalize();
  insSample.finalize();
  db.close();

  const tServe = performance.now();
  const { p, url } = await startServe(['--interval', '100ms', '--store', join(work, 'store-browser'), '--history', file, '--no-record']);
  // The server reads the day's history before it samples: wait for its first live sample, so the page timings below
  // are the browser's alone.
  let statusMaxMs = 0;
  for (;;) {
    const q0 = performance.now();
    const st = await fetch(`${url}api/live/status`).then((r) => r.json());
    statusMaxMs = Math.max(statusMaxMs, performance.now() - q0);
    if (st.samples > 0) break;
    await sleep(100);
  }
  const serverHistoryLoadMs = Math.round(performance.now() - tServe);
  const serverRssAfterHistoryMiB = rssMiB(p.pid);
  const { default: puppeteer } = await import('puppeteer-core');
  const browser = await puppeteer.launch({
    executablePath: process.env.GPUWISE_CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    userDataDir: mkdtempSync(join(work, 'chromium-')),
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
  const page = await browser.newPage();
  await page.setViewport({ width: 1400, height: 1000 });
  // Long tasks and timer lag, observed from inside the page.
  await page.evaluateOnNewDocument(() => {
    window.__long = [];
    new PerformanceObserver((l) => {
      for (const e of l.getEntries()) window.__long.push(e.duration);
    }).observe({ type: 'longtask', buffered: true });
    window.__lag = [];
    let last = performance.now();
    setInterval(() => {
      const now = performance.now();
      window.__lag.push(now - last - 50);
      last = now;
    }, 50);
  });
  const t0 = Date.now();
  await page.goto(`${url}live`, { waitUntil: 'load' });
  await page.waitForFunction(() => document.querySelectorAll('#gpus .gpu canvas').length >= 16, { timeout: 60_000 });
  const firstDrawMs = Date.now() - t0;
  // The 24-hour range: the page fetches the whole day (thinned to what the charts can show) and redraws 16 charts.
  const t1 = Date.now();
  await page.select('#range', '86400');
  await page.waitForFunction(() => Number(document.querySelector('#history-points').textContent) > 1000, { timeout: 60_000 });
  await sleep(500);
  const dayDrawMs = Date.now() - t1;
  await page.evaluate(() => {
    window.__long = [];
    window.__lag = [];
  });
  const f0 = await page.evaluate(() => window.gwLive.frames());
  await sleep(SECONDS * 1000);
  const probe = await page.evaluate(() => ({ long: window.__long, lag: window.__lag, frames: window.gwLive.frames(), points: window.gwLive.points() }));
  const metrics = await page.metrics();
  const lag = probe.lag.sort((a, b) => a - b);
  const pct = (q) => +lag[Math.min(lag.length - 1, Math.floor(q * lag.length))].toFixed(1);
  await page.screenshot({ path: join(out, 'live-day.png'), fullPage: false });
  // A click while the page follows 10 Hz frames: how long until the browser handles it.
  const clickMs = await page.evaluate(
    () =>
      new Promise((ok) => {
        const b = document.getElementById('follow');
        const t = performance.now();
        b.addEventListener('click', () => ok(performance.now() - t), { once: true });
        b.click();
      }),
  );
  results.browser = {
    historySamples: 86_400,
    gpus: 8,
    serverHistoryLoadMs,
    serverRssAfterHistoryMiB,
    serverSlowestAnswerWhileLoadingMs: Math.round(statusMaxMs),
    firstDrawMs,
    dayRangeDrawMs: dayDrawMs,
    pointsPerSeriesShown: probe.points,
    framesPerS: +((probe.frames - f0) / SECONDS).toFixed(1),
    longTasks: probe.long.length,
    longTaskMaxMs: probe.long.length ? +Math.max(...probe.long).toFixed(1) : 0,
    timerLagP50Ms: pct(0.5),
    timerLagP99Ms: pct(0.99),
    timerLagMaxMs: +lag.at(-1).toFixed(1),
    clickHandledMs: +clickMs.toFixed(1),
    jsHeapUsedMiB: +(metrics.JSHeapUsedSize / 1048576).toFixed(1),
  };
  console.log('browser with a day of history:', JSON.stringify(results.browser));
  await browser.close();
  p.kill('SIGTERM');
}

writeFileSync(join(out, 'serve-bench.json'), `${JSON.stringify(results, null, 2)}\n`);
rmSync(work, { recursive: true, force: true });
console.log(`wrote ${join(out, 'serve-bench.json')}`);
