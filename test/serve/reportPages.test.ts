/**
 * analyze's, memory's and plan's pages (src/serve/pages/analyze.ts, memory.ts, plan.ts) on the real fixtures: the
 * serve page and the `--html` file are one design (the same sections), the charts' data is the report's own
 * figures, every chart has a <noscript> table, a standalone file needs nothing from outside, and user text
 * (paths, kernel and source names, model names) is escaped.
 */
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { diffSnapshots } from '../../src/memory/diff.js';
import type { MemoryReport } from '../../src/memory/report.js';
import type { PlanJson } from '../../src/planner/report.js';
import type { AnalyzeReport } from '../../src/report/analyzeReport.js';
import { type AnalyzeChartData, analyzePage, renderAnalyzeHtml } from '../../src/serve/pages/analyze.js';
import { type MemoryChartData, memoryPage, renderMemoryDiffHtml, renderMemoryHtml } from '../../src/serve/pages/memory.js';
import { renderPlanHtml } from '../../src/serve/pages/plan.js';
import { IDLE_LABELS } from '../../src/report/terminal.js';
import { IDLE_CAUSES } from '../../src/trace/metrics/types.js';
import { escapeHtml } from '../../src/util/html.js';
import { runCli } from '../helpers/cli.js';
import { TRACES } from '../helpers/fixtures.js';
import { analyzeFixture } from '../memory/helpers.js';
import { assets, dataOf, expectStandalone, noscripts } from './pageParts.js';

/** The markup from `id="…"` to the end of its element's first closing tag run: what must be equal served and in the file. */
const part = (h: string, id: string) => {
  const i = h.indexOf(`id="${id}"`);
  expect(i).toBeGreaterThan(0);
  return h.slice(i, h.indexOf('</table>', i) > 0 ? h.indexOf('</table>', i) : i + 400);
};
const json = async <T>(argv: string[], code = 0) => {
  const r = await runCli(argv);
  expect(r.code).toBe(code);
  return JSON.parse(r.stdout) as T;
};

describe('analyze: the Reports trace page and analyze --html are one page', () => {
  let starved: AnalyzeReport;
  let ddp: AnalyzeReport;
  beforeAll(async () => {
    starved = await json<AnalyzeReport>(['analyze', '--json', join(TRACES, 'resnet_starved.trace.json.gz')]);
    ddp = await json<AnalyzeReport>(['analyze', '--json', join(TRACES, 'ddp_gpt2')]);
  }, 120_000);

  it('findings ranked with evidence, estimate and fix; each step split by cause drawn from the report; tables without JS', () => {
    const file = renderAnalyzeHtml(starved, assets);
    expectStandalone(file, true);
    const top = starved.findings[0]!;
    expect(file).toMatch(new RegExp(`id="verdict">${escapeHtml(top.title).replace(/[()]/g, '\\$&')}`));
    for (const f of starved.findings) {
      expect(file).toContain(`data-id="${f.id}"`);
      for (const e of f.evidence) expect(file).toContain(`<li>${escapeHtml(e)}</li>`);
      expect(file).toContain(escapeHtml(f.recommendation.summary));
      if (f.estimatedGain) expect(file).toContain(escapeHtml(f.estimatedGain.arithmetic));
    }
    // Ranked: the order of the cards is the report's.
    const order = [...file.matchAll(/class="card finding" data-id="([^"]+)"/g)].map((m) => m[1]);
    expect(order).toEqual(starved.findings.map((f) => f.id));
    const m = starved.metrics.ranks[0]!;
    const d = dataOf<AnalyzeChartData>(file);
    expect(d.parts.map((p) => p.label)).toEqual(['GPU busy', ...IDLE_CAUSES.map((c) => `idle: ${IDLE_LABELS[c]}`)]);
    expect(d.ranks[0]!.step).toEqual(m.steps.map((s) => s.step));
    // Each bar adds up to its step (busy + the idle causes = the step's duration, one GPU's view), to a microsecond.
    for (const [i, s] of m.steps.entries()) expect(d.ranks[0]!.ms.reduce((a, series) => a + series[i]!, 0)).toBeCloseTo(s.durNs / 1e6, 2);
    // The DataLoader part is the bulk of each step on this trace, as the finding says.
    const loader = d.ranks[0]!.ms[1 + IDLE_CAUSES.indexOf('dataloader')]!;
    expect(loader.every((v, i) => v / (m.steps[i]!.durNs / 1e6) > 0.8)).toBe(true);
    expect(d.ranks[0]!.busyPct).toHaveLength(m.timeline.length);
    expect(file).toContain('id="chart-steps-0"');
    expect(file).toContain('id="chart-busy-0"');
    // Without JavaScript: one table per chart.
    const ns = noscripts(file);
    expect(ns).toHaveLength(2);
    expect(ns[0]?.match(/<tr><td>\d+<\/td>/g)).toHaveLength(m.steps.length);
    expect(ns[1]?.match(/<tr><td>\d+<\/td>/g)).toHaveLength(12);
    // Kernel kinds, precision, top kernels and GEMM shapes, as tables.
    for (const k of m.topKernels.slice(0, 3)) expect(file).toContain(`<td class="long">${escapeHtml(k.name)}</td>`);
    expect(file).toContain('tensor-core share of known-precision matmul time');
    expect(file).toContain(`<td class="long">${escapeHtml(m.gemmShapes[0]!.op)}</td>`);
  });

  it('the served page has the same sections, plus what needs the server (Perfetto, JSON) and no iframe', () => {
    const file = renderAnalyzeHtml(starved, assets);
    const served = analyzePage(starved, { id: 'r1', label: 'resnet_starved.trace.json.gz', traceFiles: ['/x/resnet_starved.trace.json.gz'] });
    for (const id of ['findings', 'step-breakdown', 'inputs']) expect(part(served, id)).toBe(part(file, id));
    expect(served).toContain('<script src="assets/uplot.js">');
    expect(served).toContain('data-perfetto="api/report/trace?id=r1&amp;file=0"');
    expect(served).toContain('href="report-full?id=r1"');
    expect(served).not.toContain('<iframe');
    expect(file).not.toContain('data-perfetto');
    expect(dataOf(served)).toEqual(dataOf(file));
  });

  it('a multi-rank trace: a breakdown row and a section with its own charts per rank', () => {
    const file = renderAnalyzeHtml(ddp, assets);
    expect(ddp.metrics.ranks.map((m) => m.rank)).toEqual([0, 1]);
    expect(file.match(/<tr class="rank-row">/g)).toHaveLength(2);
    for (const r of [0, 1]) {
      expect(file).toContain(`<section class="rank" id="rank-${r}">`);
      expect(file).toContain(`id="chart-steps-${r}"`);
    }
    expect(dataOf<AnalyzeChartData>(file).ranks.map((r) => r.step)).toEqual(ddp.metrics.ranks.map((m) => m.steps.map((s) => s.step)));
    expect(noscripts(file)).toHaveLength(4);
    expect(file).toMatch(/Rank 1 of 2/);
  });

  it('escapes what came from the user or the trace', () => {
    const r = JSON.parse(JSON.stringify(starved)) as AnalyzeReport;
    r.inputs[0]!.path = '/tmp/<img src=x onerror=alert(1)>.json';
    r.findings[0]!.evidence.push('</script><script>alert(2)</script>');
    r.metrics.ranks[0]!.topKernels[0]!.name = 'kern<b onmouseover=alert(3)>';
    for (const html of [renderAnalyzeHtml(r, assets), analyzePage(r, { id: '"><x', label: '<img src=y>', traceFiles: ['/a/<b>.json'] })]) {
      expect(html).not.toMatch(/<img src|<script>alert|<b onmouseover|"><x/);
      expect(html).toContain('&lt;img src=x onerror=alert(1)&gt;');
      expect(html).toContain('&lt;/script&gt;&lt;script&gt;alert(2)&lt;/script&gt;');
      expect(html).toContain('kern&lt;b onmouseover=alert(3)&gt;');
    }
  });
});

describe('memory: the Reports snapshot page and memory --html are one page', () => {
  const oom = analyzeFixture('oom_activations.pickle.gz').report;

  it('the OOM explained, the findings, totals, memory over time (no peak lost), what was live at the peak', () => {
    const file = renderMemoryHtml(oom, assets);
    expectStandalone(file, true);
    expect(oom.oom).not.toBeNull();
    expect(file).toMatch(/id="verdict">Out of memory: asked 256 MiB/);
    expect(file).toContain('<div class="card oom" id="oom">');
    expect(file).toMatch(/id="live-oom">.*activations/s);
    for (const f of oom.findings) for (const e of f.evidence) expect(file).toContain(`<li>${escapeHtml(e)}</li>`);
    for (const s of oom.peak.bySource) expect(file).toContain(`<code>${escapeHtml(s.shortSource)}</code>`);
    const d = dataOf<MemoryChartData>(file);
    expect(d.t).toHaveLength(oom.timeline.tUs.length);
    expect(Math.max(...d.allocGiB) * 1024 ** 3).toBeCloseTo(oom.totals.peakAllocatedBytes, -3);
    expect(d.marks.map((m) => m.label)).toEqual(['peak 794 MiB', 'OOM']);
    const [table] = noscripts(file);
    expect(table?.match(/<tr><td>[\d.]+<\/td>/g)).toHaveLength(Math.min(12, oom.timeline.tUs.length));
    // The served page: the same sections, the JSON beside it, no iframe.
    const served = memoryPage(oom, { id: 'm1', label: 'oom.pickle' });
    for (const id of ['findings', 'totals']) expect(part(served, id)).toBe(part(file, id));
    expect(served).toContain('href="api/report?id=m1"');
    expect(served).not.toContain('<iframe');
  });

  it('a long history is thinned to buckets that keep their maximum', () => {
    const n = 20_000;
    const r = JSON.parse(JSON.stringify(oom)) as MemoryReport;
    r.oom = null;
    r.timeline = { tUs: [...Array(n).keys()].map((i) => i * 1000), allocatedBytes: [...Array(n).keys()].map((i) => (i === 12_345 ? 9 * 1024 ** 3 : 1024 ** 3)), reservedBytes: Array(n).fill(10 * 1024 ** 3), peakPoint: 12_345 };
    const d = dataOf<MemoryChartData>(renderMemoryHtml(r, assets));
    expect(d.t.length).toBeLessThanOrEqual(4000);
    expect(Math.max(...d.allocGiB)).toBe(9);
    expect(d.xName).toBe('s');
    expect(d.marks).toEqual([{ x: 12.345, label: expect.stringMatching(/^peak /) }]);
  });

  it('escapes the path and the source lines of the snapshot', () => {
    const r = JSON.parse(JSON.stringify(oom)) as MemoryReport;
    r.input.path = '/tmp/<script>alert(1)</script>.pickle';
    r.peak.bySource[0]!.shortSource = 'x.py:1<img src=x>';
    r.peak.bySource[0]!.function = '"><b>';
    const html = renderMemoryHtml(r, assets);
    expect(html).not.toMatch(/<script>alert|<img src=x|"><b>/);
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).toContain('x.py:1&lt;img src=x&gt;');
  });

  it('memory diff --html: what grew, in the same design, no script at all', () => {
    const a = analyzeFixture('leak_step2.pickle');
    const b = analyzeFixture('leak_step6.pickle');
    const d = diffSnapshots(a, b, 15);
    const html = renderMemoryDiffHtml(d, assets);
    expectStandalone(html, false);
    expect(html).toMatch(/id="verdict">live at the end \+128 MiB from A to B/);
    expect(html).toMatch(/<code>[^<]*train\.py:40<\/code><\/td><td class="num">64\.0 MiB<\/td><td class="num">192 MiB<\/td><td class="num bad">\+128 MiB/);
    const evil = { ...d, a: '<script>alert(1)</script>' };
    expect(renderMemoryDiffHtml(evil, assets)).toContain('<code>&lt;script&gt;alert(1)&lt;/script&gt;</code>');
  });
});

describe('plan --html', () => {
  it('fits or not, memory by component against the budget, step time by term; no script; names escaped', async () => {
    const gpt2 = join(__dirname, '..', 'fixtures', 'planner', 'configs', 'gpt2', 'config.json');
    const j = await json<PlanJson>(['plan', '--model', gpt2, '--gpu', 'h200', '--json']);
    const html = renderPlanHtml(j, assets);
    expectStandalone(html, false);
    expect(html).toMatch(/id="verdict">Fits: step \d+\.\d ms/);
    for (const c of j.memory.components) expect(html).toContain(`<td>${escapeHtml(c.label)}</td>`);
    expect(html).toContain('id="time"');
    const tooBig = await json<PlanJson>(['plan', '--model', gpt2, '--gpu', 'h200', '--batch', '4096', '--json'], 1); // exit 1: does not fit
    expect(tooBig.wouldFit).toBeTruthy();
    const no = renderPlanHtml({ ...tooBig, model: { ...tooBig.model, name: '<img src=x onerror=alert(1)>' } }, assets);
    expect(no).toMatch(/id="verdict">Does not fit: /);
    expect(no).toContain('id="would-fit"');
    expect(no).not.toContain('<img src=x');
    expect(no).toContain('gpuwise plan: &lt;img src=x onerror=alert(1)&gt;');
  });
});
