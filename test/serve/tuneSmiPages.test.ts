/**
 * tune's and smi's `--html` pages (src/serve/pages/tune.ts, smi.ts), in the design of the other reports: tune on a
 * search run over trials simulated from the H200 measurements of test/tune (a GPT-2 curve on an 80 GB card, plus
 * `--curve` points), smi on the real nvidia-smi fixtures. The charts' data is the report's own figures, every
 * chart has a <noscript> table, the file needs nothing from outside, user text is escaped.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readSmiFiles } from '../../src/io/readSmiFile.js';
import { renderSmiHtml } from '../../src/serve/pages/smi.js';
import { type TuneChartData, renderTuneHtml } from '../../src/serve/pages/tune.js';
import { processRows, smiGpuTable } from '../../src/telemetry/render.js';
import { tuneAnswer } from '../../src/tune/markdown.js';
import { fmtBytes } from '../../src/util/format.js';
import { escapeHtml } from '../../src/util/html.js';
import { REPO } from '../doctor/helpers.js';
import { tuneFixture } from '../tune/simulate.js';
import { assets, dataOf, expectStandalone, noscripts } from './pageParts.js';

const rowsOf = (html: string, id: string) => {
  const i = html.indexOf(`<table id="${id}">`);
  expect(i).toBeGreaterThanOrEqual(0);
  const t = html.slice(i, html.indexOf('</table>', i));
  return [...t.matchAll(/<tr[^>]*>([\s\S]*?)<\/tr>/g)].slice(1).map((m) => [...(m[1] ?? '').matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)].map((c) => c[1] ?? ''));
};

describe('tune --html: the design of the other reports', () => {
  const rep = tuneFixture();
  const html = renderTuneHtml(rep, assets);

  it('the answer first, the memory line and its budget, every trial; standalone with uPlot inline', () => {
    expectStandalone(html, true);
    expect(html).toContain('<nav><b>gpuwise</b><span>tune</span></nav>');
    const verdict = /<div class="verdict (\w+)" id="verdict">([^<]*)<\/div>/.exec(html);
    expect(verdict?.[1]).toBe('ok');
    expect(verdict?.[2]).toBe(escapeHtml(tuneAnswer(rep)[0]!));
    for (const l of tuneAnswer(rep)) expect(html).toContain(escapeHtml(l));
    expect(html.indexOf('id="verdict"')).toBeLessThan(html.indexOf('id="trials"'));
    const line = rep.result.line!;
    expect(html).toContain(`${fmtBytes(line.fixedBytes)} + ${fmtBytes(line.perValueBytes)} × batch_size`);
    expect(html).toContain(`= ${fmtBytes(rep.result.budget!.allocatorLimitBytes)} allocated`);
    const rows = rowsOf(html, 'trials');
    expect(rows.map((r) => r[0])).toEqual(rep.trials.map((t) => `${t.index}${t.kind === 'curve' ? 'c' : ''}`));
    expect(rows.map((r) => Number(r[1]))).toEqual(rep.trials.map((t) => t.value));
    expect(rows.filter((r) => r[2] === 'out of memory').length).toBe(rep.trials.filter((t) => t.outcome === 'oom').length);
    expect(rows.map((r) => r[3])).toEqual(rep.trials.map((t) => (t.peakAllocatedBytes === null ? '-' : fmtBytes(t.peakAllocatedBytes))));
  });

  it('peak memory against the value: measured peaks, the line, the budget, the predicted largest and each OOM marked', () => {
    const d = dataOf<TuneChartData>(html);
    const res = rep.result;
    expect(res.predictedLargest).not.toBeNull();
    const m = d.memory;
    expect(m.x).toEqual([...new Set([...rep.trials.map((t) => t.value), res.predictedLargest!])].sort((a, b) => a - b));
    for (const t of rep.trials) {
      const i = m.x.indexOf(t.value);
      expect(m.allocated[i]).toBe(t.outcome === 'ok' ? t.peakAllocatedBytes! / 1024 ** 3 : null);
    }
    // The line through its own trials meets their peaks; at the predicted largest it is under the budget.
    for (const v of res.line!.values) expect(m.line![m.x.indexOf(v)]).toBeCloseTo(m.allocated[m.x.indexOf(v)]!, 9);
    expect(m.line![m.x.indexOf(res.predictedLargest!)]!).toBeLessThanOrEqual(m.budget!);
    expect(m.budget).toBe(res.budget!.allocatorLimitBytes / 1024 ** 3);
    const ooms = [...new Set(rep.trials.filter((t) => t.outcome === 'oom').map((t) => t.value))];
    expect(ooms.length).toBeGreaterThan(0);
    expect(m.marks).toEqual([{ x: res.predictedLargest, label: `predicted largest ${res.predictedLargest}` }, ...ooms.map((v) => ({ x: v, label: `OOM at ${v}` }))]);
  });

  it('throughput against the value: the trials that ran, Goldilocks marked; each chart has a <noscript> table', () => {
    const t = dataOf<TuneChartData>(html).throughput!;
    const ran = rep.trials.filter((x) => x.outcome === 'ok').sort((a, b) => a.value - b.value);
    expect(rep.throughputUnit).toBe('samples/s');
    expect(t.x).toEqual(ran.map((x) => x.value));
    expect(t.y).toEqual(ran.map((x) => x.samplesPerS));
    expect(t.marks).toEqual([{ x: rep.result.goldilocks, label: `Goldilocks ${rep.result.goldilocks}` }]);
    expect(html).toContain('id="chart-tune-memory"');
    expect(html).toContain('id="chart-tune-throughput"');
    const ns = noscripts(html);
    expect(ns).toHaveLength(2);
    expect(ns[1]).toContain(`<td>${ran.at(-1)!.value}</td><td>${Math.round(ran.at(-1)!.samplesPerS!).toLocaleString('en-US')}</td>`);
  });

  it('without throughput or memory figures it says so instead of drawing', () => {
    // One trial on a machine without CUDA: no memory figures, no throughput (what tune reports there).
    const bare = tuneFixture((ts) => ts.slice(0, 1).map((t) => ({ ...t, samplesPerS: null, tokensPerS: null, peakAllocatedBytes: null, peakReservedBytes: null, deviceTotalBytes: null })));
    expect(bare.memoryFigures).toBe(false);
    const h = renderTuneHtml(bare, assets);
    expect(h).not.toContain('id="chart-tune-throughput"');
    expect(h).toContain('no throughput measured');
    expect(h).not.toContain('id="chart-tune-memory"');
    expect(h).toContain('no GPU memory figures');
  });

  it('escapes what came from the user: the parameter, the command, the run directory, the trial details', () => {
    const evil = '<img src=x onerror=alert(1)>';
    const r = tuneFixture((ts) => ts.map((t) => ({ ...t, detail: `ran ${evil}`, reason: `because ${evil}` })), `bs${evil}`);
    r.outDir = `/tmp/${evil}`;
    r.notes.push(`note ${evil}`);
    if (r.device) r.device.name = `GPU ${evil}`;
    const h = renderTuneHtml(r, assets);
    expect(h).not.toContain(evil);
    expect(h).toContain(escapeHtml(evil));
    // In the chart data too (the parameter names the axis): JSON with '<' escaped, read back intact.
    expect(dataOf<TuneChartData>(h).name).toBe(`bs${evil}`);
  });
});

describe('smi --html: the design of the other reports, the tables as `gpuwise smi` shows them', () => {
  const fix = (n: string) => join(REPO, 'test', 'fixtures', 'telemetry', n);

  it('the GPUs and their processes of the real H200 fixtures, no chart and no script', () => {
    for (const files of [[fix('nvidia-smi.busy.txt')], [fix('nvidia-smi-q.busy.xml.gz')], [fix('nvidia-smi.t4x2.418.txt')]]) {
      const s = readSmiFiles(files);
      const html = renderSmiHtml(s, assets);
      expectStandalone(html, false);
      expect(html).toContain('<nav><b>gpuwise</b><span>smi snapshot</span></nav>');
      const { rows } = smiGpuTable(s);
      expect(rowsOf(html, 'gpus')).toEqual(rows.slice(1).map((r) => r.map(escapeHtml)));
      const procs = s.gpus.flatMap((g) => g.processes);
      if (procs.length) expect(rowsOf(html, 'processes')).toEqual(processRows(procs).slice(1).map((r) => r.map(escapeHtml)));
      else expect(html).toMatch(/<h2>Processes<\/h2><p class="dim">none<\/p>/);
      expect(html).toContain(`${s.gpus.length} GPU`);
      for (const n of s.notes) expect(html).toContain(escapeHtml(n));
    }
  });

  it('under CUDA_VISIBLE_DEVICES a live snapshot shows the CUDA ordinal beside the index, as the terminal does', () => {
    const s = readSmiFiles([fix('nvidia-smi-q.busy.xml.gz')]);
    s.source = 'nvml';
    s.gpus[0]!.cudaIndex = null;
    s.gpus[1]!.cudaIndex = 0;
    const html = renderSmiHtml(s, assets);
    expect(html).toMatch(/<thead><tr><th class="num">GPU<\/th><th class="num">CUDA<\/th><th>Name<\/th>/);
    expect(rowsOf(html, 'gpus').map((r) => r.slice(0, 3))).toEqual([
      ['0', 'hidden', 'NVIDIA H200'],
      ['1', '0', 'NVIDIA H200'],
    ]);
  });

  it('escapes the host, the commands and the notes', () => {
    const evil = '<script>alert(1)</script>';
    const s = readSmiFiles([fix('nvidia-smi-q.busy.xml.gz')]);
    s.hostname = `node${evil}`;
    s.gpus[0]!.processes[0]!.command = `python train.py --tag "${evil}" & echo`;
    s.notes.push(`odd ${evil}`);
    const html = renderSmiHtml(s, assets);
    expect(html).not.toContain(evil);
    expect(html).not.toContain('<script');
    expect(html).toContain(`python train.py --tag &quot;${escapeHtml(evil)}&quot; &amp; echo`);
    expect(html).toContain(`host node${escapeHtml(evil)}`);
  });
});
