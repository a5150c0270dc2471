/**
 * Every page's tables as a reader sees them, in chromium at 1400 and 800 px wide: no word broken letter by letter
 * (`redu ctio n`, `14. 7 ms`, `y e s` once came from a table rule that let any cell shrink to one letter), and no
 * page wider than the window (a table too wide for it scrolls in its own box). A word may break only inside an
 * identifier cell (`td.long`: kernel names, source paths, commands) that keeps a readable width. Pages: every
 * `--html` file (analyze, a doctor run, memory, memory diff, plan, tune, smi), made from the shipped examples and
 * fixtures, and serve's Runs, a run, Reports (the list, a trace, a snapshot), Compare and Live GPUs.
 * GPUWISE_SCREENSHOTS=DIR saves each page at each width there (NAME-WIDTH-K.png, in tiles 1000 px tall), to look at.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { diffSnapshots } from '../../src/memory/diff.js';
import type { PlanJson } from '../../src/planner/report.js';
import type { AnalyzeReport } from '../../src/report/analyzeReport.js';
import { inlineAssets } from '../../src/serve/assets.js';
import { renderAnalyzeHtml } from '../../src/serve/pages/analyze.js';
import { renderMemoryDiffHtml, renderMemoryHtml } from '../../src/serve/pages/memory.js';
import { renderPlanHtml } from '../../src/serve/pages/plan.js';
import { renderDoctorHtml } from '../../src/serve/pages/runs.js';
import { renderSmiHtml } from '../../src/serve/pages/smi.js';
import { renderTuneHtml } from '../../src/serve/pages/tune.js';
import { readSmiFiles } from '../../src/io/readSmiFile.js';
import { rediagnosed } from '../doctor/helpers.js';
import { runCli } from '../helpers/cli.js';
import { analyzeFixture } from '../memory/helpers.js';
import { tuneFixture } from '../tune/simulate.js';
import { browserMissing, launchBrowser } from './browser.js';
import { OOM_SNAPSHOT, ROOT, RUNS, TRACES, makeRunStore } from './fixtures.js';
import { type Served, fakeNvml, scratch, serveOn } from './helpers.js';

const missing = browserMissing();
if (missing) console.warn(`gpuwise table layout tests: ${missing}`);
const SHOTS = process.env.GPUWISE_SCREENSHOTS;
const WIDTHS = [1400, 800] as const;
/** A `td.long` narrower than this many ems is squeezed: its identifiers would break every few letters. */
const LONG_MIN_EM = 14;

/** What is wrong with the tables of the page shown (runs in the page): one line per broken word, and the page width. */
function layoutProblems(longMinEm: number): string[] {
  const problems: string[] = [];
  const em = Number.parseFloat(getComputedStyle(document.body).fontSize);
  for (const cell of Array.from(document.querySelectorAll('td, th'))) {
    if (cell.getClientRects().length === 0) continue; // not shown (a <noscript> table with scripts on)
    const roomy = cell.classList.contains('long') && cell.getBoundingClientRect().width >= longMinEm * em;
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let n = walker.nextNode() as Text | null; n; n = walker.nextNode() as Text | null) {
      // A word: letters and digits with the dots, commas and % inside figures (`14.7`, `1,024`, `93%`, `1.05x`).
      for (const m of n.data.matchAll(/[\p{L}\p{N}][\p{L}\p{N}.,%]*/gu)) {
        if (m[0].length < 2) continue;
        const r = document.createRange();
        r.setStart(n, m.index ?? 0);
        r.setEnd(n, (m.index ?? 0) + m[0].length);
        const lines = new Set(
          Array.from(r.getClientRects())
            .filter((x) => x.width > 0)
            .map((x) => Math.round(x.top)),
        );
        if (lines.size > 1 && !roomy) problems.push(`"${m[0]}" broken over ${lines.size} lines in <${cell.tagName.toLowerCase()}> "${(cell.textContent ?? '').slice(0, 50)}"`);
      }
    }
  }
  const wide = document.documentElement.scrollWidth;
  if (wide > window.innerWidth) problems.push(`the page is ${wide} px wide in a ${window.innerWidth} px window`);
  return problems;
}

describe.skipIf(missing !== null)('tables at 1400 and 800 px in chromium: words whole, pages no wider than the window', () => {
  let s: Served;
  let ids: Record<string, string>;
  let browser: Browser;
  let closeBrowser: () => Promise<void>;
  let page: Page;
  const files: Record<string, string> = {};
  let reportIds: { trace: string; snapshot: string };

  beforeAll(async () => {
    const store = scratch('layout');
    ids = await makeRunStore(store);
    const lib = fakeNvml(scratch('layout-nvml'));
    s = await serveOn(store, { env: { GPUWISE_NVML_LIB: lib ?? '/nonexistent', GPUWISE_NVIDIA_SMI: '/nonexistent' } });
    const open = async (path: string) => {
      const r = await fetch(`${s.url}open`, { method: 'POST', body: new URLSearchParams({ path }), redirect: 'manual' });
      return new URL(r.headers.get('location') ?? '', s.url).searchParams.get('id') ?? '';
    };
    reportIds = { trace: await open(join(TRACES, 'resnet_starved.trace.json.gz')), snapshot: await open(OOM_SNAPSHOT) };
    // The --html files, from the shipped inputs.
    const json = async <T>(args: string[]) => {
      const r = await runCli(args);
      expect(r.code, r.stderr).toBe(0);
      return JSON.parse(r.stdout) as T;
    };
    const assets = inlineAssets();
    const dir = scratch('layout-files');
    const write = (name: string, html: string) => {
      files[name] = join(dir, `${name}.html`);
      writeFileSync(files[name]!, html);
    };
    write('analyze', renderAnalyzeHtml(await json<AnalyzeReport>(['analyze', '--json', join(TRACES, 'resnet_starved.trace.json.gz')]), assets));
    write('analyze-ddp', renderAnalyzeHtml(await json<AnalyzeReport>(['analyze', '--json', join(TRACES, 'ddp_gpt2')]), assets));
    write('doctor-hf-trainer', renderDoctorHtml(await rediagnosed(join(ROOT, 'examples', 'realworld', 'runs', 'hf_trainer_gpt2')), assets));
    write('doctor-starved', renderDoctorHtml(await rediagnosed(join(RUNS, 'starved_dataloader')), assets));
    write('memory', renderMemoryHtml(analyzeFixture('oom_activations.pickle.gz').report, assets));
    write('memory-diff', renderMemoryDiffHtml(diffSnapshots(analyzeFixture('leak_step2.pickle'), analyzeFixture('leak_step6.pickle')), assets));
    const gpt2 = join(ROOT, 'test', 'fixtures', 'planner', 'configs', 'gpt2', 'config.json');
    write('plan', renderPlanHtml(await json<PlanJson>(['plan', '--model', gpt2, '--gpu', 'h200', '--json']), assets));
    write('plan-search', renderPlanHtml(await json<PlanJson>(['plan', '--model', gpt2, '--gpu', 'h100', '--gpus', '8', '--search', '--global-batch', '256', '--json']), assets));
    write('tune', renderTuneHtml(tuneFixture(), assets));
    write('smi', renderSmiHtml(readSmiFiles([join(ROOT, 'test', 'fixtures', 'telemetry', 'nvidia-smi-q.busy.xml.gz')]), assets));
    ({ browser, close: closeBrowser } = await launchBrowser());
    page = await browser.newPage();
    if (SHOTS) mkdirSync(SHOTS, { recursive: true });
  }, 240_000);
  afterAll(async () => {
    await closeBrowser?.();
    await s?.close();
  });

  /** The page in tiles 1000 px tall (NAME-1.png, NAME-2.png...): a tall page in one image is too small to read. */
  async function shoot(name: string): Promise<void> {
    const { w, h } = await page.evaluate(() => ({ w: document.documentElement.scrollWidth, h: document.documentElement.scrollHeight }));
    for (let y = 0, k = 1; y < h; y += 1000, k++) await page.screenshot({ path: join(SHOTS!, `${name}-${k}.png`), clip: { x: 0, y, width: w, height: Math.min(1000, h - y) }, captureBeyondViewport: true });
  }

  /** Opens `url` at each width and returns the problems found at each, screenshots taken on request. */
  async function check(name: string, url: () => string, ready?: () => Promise<unknown>): Promise<string[]> {
    const found: string[] = [];
    for (const width of WIDTHS) {
      await page.setViewport({ width, height: 900 });
      await page.goto(url(), { waitUntil: ready ? 'load' : 'networkidle0', timeout: 30_000 });
      await ready?.();
      for (const p of await page.evaluate(layoutProblems, LONG_MIN_EM)) found.push(`${name} at ${width} px: ${p}`);
      if (SHOTS) await shoot(`${name}-${width}`);
    }
    return found;
  }

  it.each(['analyze', 'analyze-ddp', 'doctor-hf-trainer', 'doctor-starved', 'memory', 'memory-diff', 'plan', 'plan-search', 'tune', 'smi'])('the %s --html file', async (name) => {
    expect(await check(name, () => `file://${files[name]}`)).toEqual([]);
  });

  it("serve's Runs, a run, Compare, Reports (the list, a trace, a snapshot)", async () => {
    const found = [
      ...(await check('serve-runs', () => `${s.url}runs`)),
      ...(await check('serve-run', () => `${s.url}run?id=${ids.host_sync}`)),
      ...(await check('serve-compare', () => `${s.url}compare?a=${ids.starved_dataloader}&b=${ids.fp32_matmul}`)),
      ...(await check('serve-reports', () => `${s.url}reports`)),
      ...(await check('serve-report-trace', () => `${s.url}report?id=${reportIds.trace}`)),
      ...(await check('serve-report-snapshot', () => `${s.url}report?id=${reportIds.snapshot}`)),
    ];
    expect(found).toEqual([]);
  });

  it("serve's Live GPUs with its processes", async () => {
    const framesSeen = () => page.waitForFunction(() => ((window as unknown as { gwLive?: { frames(): number } }).gwLive?.frames() ?? 0) >= 2 && document.querySelectorAll('#procs tbody tr').length > 1, { timeout: 15_000 });
    expect(await check('serve-live', () => `${s.url}live`, framesSeen)).toEqual([]);
  });
});
