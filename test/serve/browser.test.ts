/**
 * The pages in a real browser (Debian's chromium through puppeteer-core) against a server on fixtures: each page's
 * content, that its uPlot charts drew (a canvas with the points), that no request leaves the server (offline, no
 * CDN), and no script error. GPUWISE_SCREENSHOTS=DIR saves a screenshot of each page there.
 */
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { Browser, HTTPRequest, Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DoctorReport } from '../../src/doctor/reportTypes.js';
import { loadRun } from '../../src/io/runStore.js';
import { parseProbeLines } from '../../src/run/records.js';
import { inlineAssets } from '../../src/serve/assets.js';
import { renderDoctorHtml } from '../../src/serve/pages/runs.js';
import { diffSnapshots } from '../../src/memory/diff.js';
import type { PlanJson } from '../../src/planner/report.js';
import type { AnalyzeReport } from '../../src/report/analyzeReport.js';
import { renderAnalyzeHtml } from '../../src/serve/pages/analyze.js';
import { renderMemoryDiffHtml, renderMemoryHtml } from '../../src/serve/pages/memory.js';
import { renderPlanHtml } from '../../src/serve/pages/plan.js';
import { renderSmiHtml } from '../../src/serve/pages/smi.js';
import { renderTuneHtml } from '../../src/serve/pages/tune.js';
import { readSmiFiles } from '../../src/io/readSmiFile.js';
import { tuneFixture } from '../tune/simulate.js';
import { runCli } from '../helpers/cli.js';
import { analyzeFixture } from '../memory/helpers.js';
import { onGpu, reportOf } from '../history/reports.js';
import { OOM_SNAPSHOT, ROOT, RUNS, TRACES, makeRecording, makeRunStore } from './fixtures.js';
import { browserMissing, launchBrowser } from './browser.js';
import { type Served, fakeNvml, scratch, serveOn } from './helpers.js';

const missing = browserMissing();
if (missing) console.warn(`gpuwise serve browser tests: ${missing}`);
const SHOTS = process.env.GPUWISE_SCREENSHOTS;

describe.skipIf(missing !== null)('pages in chromium', () => {
  let s: Served;
  let ids: Record<string, string>;
  let browser: Browser;
  let closeBrowser: () => Promise<void>;
  let page: Page;
  const errors: string[] = [];
  const foreign: string[] = [];

  beforeAll(async () => {
    const store = scratch('browser');
    ids = await makeRunStore(store);
    makeRecording(join(store, 'telemetry'), 'earlier.sqlite', 300);
    const lib = fakeNvml(scratch('nvml'));
    s = await serveOn(store, { env: { GPUWISE_NVML_LIB: lib ?? '/nonexistent', GPUWISE_NVIDIA_SMI: '/nonexistent' } });
    ({ browser, close: closeBrowser } = await launchBrowser());
    page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 900 });
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
    page.on('request', (r) => {
      const u = r.url();
      if (!u.startsWith(s.url) && !u.startsWith('data:') && u !== 'about:blank' && !/^http:\/\/127\.0\.0\.1:\d+\/user\/me\/proxy\//.test(u)) foreign.push(u);
    });
    if (SHOTS) mkdirSync(SHOTS, { recursive: true });
  }, 120_000);
  afterAll(async () => {
    await closeBrowser?.();
    await s?.close();
  });

  /** Opens a page; a page with an open event stream (live) never goes network-idle, so it waits for load only. */
  async function visit(path: string, until: 'networkidle0' | 'load' = 'networkidle0'): Promise<void> {
    await page.goto(s.url + path, { waitUntil: until, timeout: 30_000 });
  }
  async function shoot(name: string): Promise<void> {
    if (SHOTS) await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
  }
  /** Points a uPlot chart drew in `sel` (0 when it drew nothing): charts mark themselves with data-drawn. */
  async function drawn(sel: string): Promise<number> {
    return page.$eval(sel, (el) => (el.querySelector('canvas') ? Number(el.getAttribute('data-drawn') ?? 0) : 0));
  }
  const text = (sel: string) => page.$eval(sel, (el) => el.textContent ?? '');

  it('Runs: the list, newest first, links to each run', async () => {
    await visit('runs');
    const rows = await page.$$eval('#runs tbody tr', (trs) => trs.map((tr) => tr.textContent ?? ''));
    expect(rows.length).toBe(3);
    expect(rows[0]).toContain('fp32_matmul.py');
    expect(rows[2]).toContain('starved_dataloader.py');
    await shoot('runs');
  });

  it('a run: verdict first, findings, step-time chart drawn, then the whole report: tables, environment, captures', async () => {
    await visit(`run?id=${ids.starved_dataloader}`);
    expect(await text('#verdict')).toMatch(/DataLoader/);
    expect(await page.$$eval('#findings .finding', (x) => x.length)).toBeGreaterThan(0);
    expect(await drawn('#chart-steps')).toBeGreaterThan(10);
    expect(await page.$$eval('#steps tbody tr', (x) => x.length)).toBe(1);
    expect(await text('#environment')).toMatch(/torch/);
    expect(await page.$$eval('iframe', (x) => x.length)).toBe(0);
    await shoot('run');
  });

  it("the run's --html file: the same page offline (file://, uPlot inline), its charts drawn, nothing fetched; tables without JS", async () => {
    const { report } = await loadRun(s.store, ids.starved_dataloader!);
    const r = JSON.parse(JSON.stringify(report)) as DoctorReport;
    const g = onGpu(parseProbeLines(readFileSync(join(RUNS, 'starved_dataloader', 'probe.jsonl'), 'utf8')).records, 30);
    const withGpus = reportOf(g.records, { gpuSamples: g.samples, gpuUnavailableReason: null, command: r.run.command });
    const dir = scratch('html-file');
    const file = join(dir, 'report.html');
    writeFileSync(file, renderDoctorHtml(withGpus, inlineAssets()));
    const offline = await browser.newPage();
    const fetched: string[] = [];
    const errs: string[] = [];
    offline.on('request', (q) => q.url() !== `file://${file}` && !q.url().startsWith('data:') && fetched.push(q.url()));
    offline.on('pageerror', (e) => errs.push(String(e)));
    await offline.setViewport({ width: 1280, height: 900 });
    await offline.goto(`file://${file}`, { waitUntil: 'load' });
    const drawnIn = (sel: string) => offline.$$eval(sel, (els) => els.map((el) => (el.querySelector('canvas') ? Number(el.getAttribute('data-drawn') ?? 0) : 0)));
    const steps = withGpus.ranks[0]!.stepTimeline!.step.length - 1;
    expect(await drawnIn('#chart-steps')).toEqual([steps]);
    expect(await drawnIn('#chart-gpus .chart')).toEqual([8, 8]);
    expect(await offline.$eval('#verdict', (e) => e.textContent)).toMatch(/DataLoader/);
    expect(fetched).toEqual([]);
    expect(errs).toEqual([]);
    if (SHOTS) await offline.screenshot({ path: join(SHOTS, 'doctor-html-file.png'), fullPage: true });
    // Without JavaScript: no chart, but the <noscript> tables of their figures, and every other table.
    await offline.setJavaScriptEnabled(false);
    await offline.goto(`file://${file}`, { waitUntil: 'load' });
    expect(await offline.$$eval('canvas', (x) => x.length)).toBe(0);
    expect(await offline.$$eval('noscript + *, main table', (x) => x.length)).toBeGreaterThan(4);
    const visibleRows = await offline.evaluate(() => Array.from(document.querySelectorAll('main table tr')).filter((tr) => (tr as HTMLElement).offsetHeight > 0).length);
    expect(visibleRows).toBeGreaterThan(30);
    // biome-ignore lint/performance/useDomNodeTextContent: the text as rendered, what a reader without JS sees
    expect(await offline.evaluate(() => document.body.innerText)).toContain('step time per step (pid');
    await offline.close();
  });

  it('the analyze, memory, memory diff, plan, tune and smi --html files: offline from file://, charts drawn, nothing fetched; read with JS off', async () => {
    const dir = scratch('report-files');
    const analyzed = async (args: string[], code = 0) => {
      const r = await runCli(args);
      expect(r.code).toBe(code);
      return JSON.parse(r.stdout);
    };
    const ddp = (await analyzed(['analyze', '--json', join(TRACES, 'ddp_gpt2')])) as AnalyzeReport;
    const oom = analyzeFixture('oom_activations.pickle.gz').report;
    const gpt2 = join(ROOT, 'test', 'fixtures', 'planner', 'configs', 'gpt2', 'config.json');
    const tuned = tuneFixture();
    const files: { name: string; html: string; charts: Record<string, number>; text: RegExp; rows: number }[] = [
      {
        name: 'analyze.html',
        html: renderAnalyzeHtml(ddp, inlineAssets()),
        charts: { '#chart-steps-0': ddp.metrics.ranks[0]!.steps.length, '#chart-steps-1': ddp.metrics.ranks[1]!.steps.length, '#chart-busy-0': ddp.metrics.ranks[0]!.timeline.length, '#chart-busy-1': ddp.metrics.ranks[1]!.timeline.length },
        text: /Rank 1 of 2/,
        rows: 40,
      },
      { name: 'memory.html', html: renderMemoryHtml(oom, inlineAssets()), charts: { '#chart-memory': oom.timeline.tUs.length }, text: /Live at the failure/, rows: 15 },
      { name: 'diff.html', html: renderMemoryDiffHtml(diffSnapshots(analyzeFixture('leak_step2.pickle'), analyzeFixture('leak_step6.pickle')), inlineAssets()), charts: {}, text: /train\.py:40/, rows: 10 },
      { name: 'plan.html', html: renderPlanHtml((await analyzed(['plan', '--model', gpt2, '--gpu', 'h200', '--json'])) as PlanJson, inlineAssets()), charts: {}, text: /Step time by term/, rows: 10 },
      {
        name: 'tune.html',
        html: renderTuneHtml(tuned, inlineAssets()),
        // The memory chart's x: every value tried and the predicted largest; the throughput chart's: the values that ran.
        charts: { '#chart-tune-memory': new Set([...tuned.trials.map((t) => t.value), tuned.result.predictedLargest]).size, '#chart-tune-throughput': tuned.trials.filter((t) => t.outcome === 'ok').length },
        text: /Largest that fits: batch_size=\d+/,
        rows: tuned.trials.length + 2,
      },
      { name: 'smi.html', html: renderSmiHtml(readSmiFiles([join(ROOT, 'test', 'fixtures', 'telemetry', 'nvidia-smi-q.busy.xml.gz')]), inlineAssets()), charts: {}, text: /NVIDIA H200/, rows: 4 },
    ];
    for (const f of files) {
      const file = join(dir, f.name);
      writeFileSync(file, f.html);
      const offline = await browser.newPage();
      const fetched: string[] = [];
      const errs: string[] = [];
      offline.on('request', (q) => q.url() !== `file://${file}` && !q.url().startsWith('data:') && fetched.push(q.url()));
      offline.on('pageerror', (e) => errs.push(String(e)));
      offline.on('console', (m) => m.type() === 'error' && errs.push(m.text()));
      await offline.setViewport({ width: 1280, height: 900 });
      await offline.goto(`file://${file}`, { waitUntil: 'load' });
      for (const [sel, n] of Object.entries(f.charts)) expect([f.name, sel, await offline.$eval(sel, (el) => (el.querySelector('canvas') ? Number(el.getAttribute('data-drawn') ?? 0) : 0))]).toEqual([f.name, sel, n]);
      expect(await offline.$$eval('canvas', (x) => x.length)).toBeGreaterThanOrEqual(Object.keys(f.charts).length);
      expect([f.name, fetched, errs]).toEqual([f.name, [], []]);
      if (SHOTS) await offline.screenshot({ path: join(SHOTS, f.name.replace('.html', '-file.png')), fullPage: true });
      // JavaScript off: no chart, but every figure as a table (the <noscript> ones of the charts included).
      await offline.setJavaScriptEnabled(false);
      await offline.goto(`file://${file}`, { waitUntil: 'load' });
      expect(await offline.$$eval('canvas', (x) => x.length)).toBe(0);
      const visibleRows = await offline.evaluate(() => Array.from(document.querySelectorAll('main table tr')).filter((tr) => (tr as HTMLElement).offsetHeight > 0).length);
      expect([f.name, visibleRows >= f.rows]).toEqual([f.name, true]);
      // biome-ignore lint/performance/useDomNodeTextContent: the text as rendered, what a reader without JS sees
      const shown = await offline.evaluate(() => document.body.innerText);
      expect(shown).toMatch(f.text);
      if (Object.keys(f.charts).length) expect(shown).toMatch(/the chart needs JavaScript/);
      await offline.close();
    }
  });

  it('compare: A against B, and both runs on one chart', async () => {
    await visit('runs');
    // The list's form: A = the older run (checked by default), B = the newest.
    await Promise.all([page.waitForNavigation({ waitUntil: 'networkidle0' }), page.click('#compare-form button[type=submit]')]);
    expect(page.url()).toContain(`a=${ids.host_sync}`);
    expect(await text('#compare-findings')).toMatch(/host-sync\s*gone/);
    expect(await drawn('#chart-compare')).toBeGreaterThan(10);
    await shoot('compare');
  });

  it('Reports: a trace opened by path, its findings, breakdown and the Perfetto button', async () => {
    await visit('reports');
    await page.type('#open-path', join(TRACES, 'resnet_starved.trace.json.gz'));
    await Promise.all([page.waitForNavigation({ waitUntil: 'networkidle0' }), page.click('form[action=open] button')]);
    expect(await text('#verdict')).toMatch(/DataLoader/);
    expect(await page.$$eval('#step-breakdown .rank-row', (x) => x.length)).toBe(1);
    expect(await page.$$eval('button[data-perfetto]', (x) => x.length)).toBe(1);
    // analyze's report itself, on the page (no iframe): the rank's section with its charts drawn.
    expect(await page.$$eval('iframe', (x) => x.length)).toBe(0);
    expect(await text('#rank-0 h2')).toMatch(/^Rank 0 · NVIDIA/);
    expect(await drawn('#chart-steps-0')).toBe(3);
    expect(await drawn('#chart-busy-0')).toBeGreaterThan(100);
    await shoot('report-trace');
  });

  it("Reports: the Perfetto button hands the trace's bytes to Perfetto's window by postMessage after its PONG", async () => {
    await visit('reports');
    const path = join(TRACES, 'resnet_starved.trace.json.gz');
    await page.type('#open-path', path);
    await Promise.all([page.waitForNavigation({ waitUntil: 'networkidle0' }), page.click('form[action=open] button')]);
    // Perfetto's window is stood in for (no network in tests): it records what it is sent and answers PING with
    // PONG from Perfetto's origin, as ui.perfetto.dev does.
    await page.evaluate(() => {
      const w = window as unknown as { __sent: unknown[]; open: (u: string) => unknown };
      w.__sent = [];
      w.open = (u: string) => ({
        url: u,
        postMessage(msg: unknown, origin: string) {
          w.__sent.push({ msg: msg === 'PING' ? 'PING' : { bytes: (msg as { perfetto: { buffer: ArrayBuffer } }).perfetto.buffer.byteLength, title: (msg as { perfetto: { title: string } }).perfetto.title }, origin });
          if (msg === 'PING') setTimeout(() => window.dispatchEvent(new MessageEvent('message', { data: 'PONG', origin: 'https://ui.perfetto.dev' })), 0);
        },
      });
    });
    await page.click('button[data-perfetto]');
    await page.waitForFunction(() => (document.getElementById('perfetto-status')?.textContent ?? '').includes('opened'), { timeout: 15_000 });
    const sent = (await page.evaluate(() => (window as unknown as { __sent: { msg: unknown; origin: string }[] }).__sent)) as { msg: unknown; origin: string }[];
    expect(sent.every((x) => x.origin === 'https://ui.perfetto.dev')).toBe(true);
    const trace = sent.find((x) => typeof x.msg === 'object');
    expect(trace?.msg).toEqual({ bytes: statSync(path).size, title: 'resnet_starved.trace.json.gz' });
  });

  it('works under a path prefix, as behind jupyter-server-proxy (every URL relative)', async () => {
    // A minimal reverse proxy: /user/me/proxy/PORT/... -> the server's /...
    const target = new URL(s.url);
    const prefix = `/user/me/proxy/${target.port}/`;
    const proxy = createServer((req, res) => {
      if (!req.url?.startsWith(prefix)) {
        res.writeHead(404).end();
        return;
      }
      const up = request({ host: target.hostname, port: target.port, method: req.method, path: `/${req.url.slice(prefix.length)}`, headers: req.headers }, (r) => {
        res.writeHead(r.statusCode ?? 502, r.headers);
        r.pipe(res);
      });
      req.pipe(up);
      res.on('close', () => up.destroy());
    });
    await new Promise<void>((ok) => proxy.listen(0, '127.0.0.1', () => ok()));
    const base = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}${prefix}`;
    try {
      const seen: string[] = [];
      const track = (r: HTTPRequest) => seen.push(r.url());
      page.on('request', track);
      await page.goto(`${base}live-panel`, { waitUntil: 'load' });
      await page.waitForFunction(() => ((window as unknown as { gwLive?: { frames(): number } }).gwLive?.frames() ?? 0) >= 2, { timeout: 15_000 });
      page.off('request', track);
      expect(await page.$$eval('#gpus .gpu canvas', (x) => x.length)).toBeGreaterThan(0);
      expect(await page.$('nav')).toBeNull(); // the panel a notebook embeds
      expect(seen.length).toBeGreaterThan(3);
      expect(seen.filter((u) => !u.startsWith(base))).toEqual([]);
      await page.goto(`${base}runs`, { waitUntil: 'networkidle0' });
      await Promise.all([page.waitForNavigation({ waitUntil: 'networkidle0' }), page.click('#runs tbody tr a')]);
      expect(page.url().startsWith(`${base}run?id=`)).toBe(true);
      expect(await drawn('#chart-steps')).toBeGreaterThan(10);
    } finally {
      await page.goto('about:blank');
      proxy.closeAllConnections();
      await new Promise((ok) => proxy.close(() => ok(null)));
    }
  });

  it('Reports: a snapshot uploaded from the browser, the OOM explained, the memory chart drawn', async () => {
    await visit('reports');
    const input = await page.$('#upload-file');
    await (input as unknown as { uploadFile(p: string): Promise<void> }).uploadFile(OOM_SNAPSHOT);
    await Promise.all([page.waitForNavigation({ waitUntil: 'networkidle0' }), page.click('#upload-form button')]);
    expect(await text('#verdict')).toMatch(/^Out of memory/);
    expect(await drawn('#chart-memory')).toBeGreaterThan(1);
    expect(await text('#oom')).toMatch(/Live at the failure/);
    expect(await page.$$eval('#live-peak .sources tbody tr', (x) => x.length)).toBeGreaterThan(0);
    expect(await page.$$eval('iframe', (x) => x.length)).toBe(0);
    await shoot('report-memory');
  });

  it('Live GPUs: a card per GPU with its charts drawn from history, then live frames', async () => {
    await visit('live', 'load');
    await page.waitForFunction(() => ((window as unknown as { gwLive?: { frames(): number } }).gwLive?.frames() ?? 0) >= 3, { timeout: 15_000 });
    await new Promise((r) => setTimeout(r, 400)); // one redraw period
    expect(await page.$$eval('#gpus .gpu', (x) => x.length)).toBe(2);
    expect(await drawn('#gpus .gpu[data-gpu="0"] .util')).toBeGreaterThan(300);
    expect(await page.$$eval('#procs tbody tr', (x) => x.length)).toBe(21);
    expect(await text('#live-status')).toMatch(/sampling through nvml/);
    // The GPU's memory as every report gives it: what CUDA can use (NVML's total less the driver's 616 MiB), 139.8 GiB.
    expect(await text('#gpus .gpu[data-gpu="0"] .figs')).toMatch(/memory used1000 MiB \/ 139\.8 GiB/);
    await shoot('live');
  });

  it('a run in progress: its page draws the steps as a client hands them over, then links the saved report', async () => {
    const lines = readFileSync(join(RUNS, 'starved_dataloader', 'probe.jsonl'), 'utf8').split('\n').filter(Boolean);
    const post = (path: string, body: string) => fetch(s.url + path, { method: 'POST', body }).then((r) => r.json());
    const { id } = await post('api/runs/live/start', JSON.stringify({ command: ['%%gpuwise doctor', 'starved'] }));
    await visit(`run?id=${id}`, 'load');
    const steps = lines.filter((l) => l.includes('"type":"step"'));
    await post(`api/runs/live/records?id=${id}`, `${lines.filter((l) => !l.includes('"type":"step"')).join('\n')}\n`);
    for (let i = 0; i < steps.length; i += 10) await post(`api/runs/live/records?id=${id}`, `${steps.slice(i, i + 10).join('\n')}\n`);
    // Every step with a time is a point, but the first (warm-up), as in the report's chart.
    const timed = steps.filter((l) => JSON.parse(l).stepTimeS !== null && JSON.parse(l).step > 1).length;
    await page.waitForFunction((n) => Number(document.getElementById('chart-steps')?.getAttribute('data-drawn') ?? 0) >= n, { timeout: 15_000 }, timed);
    expect(await text('#steps-seen')).toBe(String(Math.max(...steps.map((l) => JSON.parse(l).step))));
    // The allocator's memory after each step that reports it (CUDA), on its own chart.
    const withMemory = steps.filter((l) => JSON.parse(l).memory?.reservedBytes != null).length;
    expect(withMemory).toBeGreaterThan(0);
    await page.waitForFunction((n) => Number(document.getElementById('chart-memory')?.getAttribute('data-drawn') ?? 0) >= n, { timeout: 15_000 }, withMemory);
    await shoot('run-in-progress');
    const end = await post(`api/runs/live/end?id=${id}`, JSON.stringify({ exitCode: 0 }));
    await page.waitForSelector('#run-status a', { timeout: 15_000 });
    expect(await page.$eval('#run-status a', (a) => a.getAttribute('href'))).toBe(`run?id=${encodeURIComponent(end.runId)}`);
    // Then the saved report replaces the live view.
    await page.waitForFunction((runId) => location.search === `?id=${encodeURIComponent(runId)}` && document.getElementById('verdict') !== null, { timeout: 15_000 }, end.runId);
  });

  it('loaded nothing from another origin and raised no script error', () => {
    expect(foreign).toEqual([]);
    expect(errors).toEqual([]);
  });
});
