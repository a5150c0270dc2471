/**
 * memory's reports as pages (pure): a snapshot's report (serve's Reports page for a snapshot and, standalone,
 * `gpuwise memory --html`) and `memory diff --html`, one design with the other pages. The snapshot page: verdict,
 * the findings, the out-of-memory explanation with what was live at the failure, the totals, memory over time
 * (uPlot, the peak and the OOM marked), what was live at the allocated peak by category and by source line.
 */
import type { LiveDiff, MemoryDiff } from '../../memory/diff.js';
import { SOURCE_LINE_WORDS } from '../../memory/frames.js';
import type { LiveSet, MemoryReport } from '../../memory/report.js';
import { fmtInt, fmtBytes, fmtPct, fmtSignedBytes, fmtUs } from '../../util/format.js';
import { type InlineAssets, enc, esc, noscriptTable, page, scrollBox, spread, table } from './layout.js';
import { findingHtml } from './runs.js';


const COLORS: Record<string, string> = {
  parameters: '#4e79a7',
  gradients: '#f28e2b',
  optimizer_state: '#e15759',
  activations: '#76b7b2',
  autograd_temporaries: '#59a14f',
  other: '#bab0ac',
};
const color = (c: string) => COLORS[c] ?? '#999';
const catLabel = (c: string) => c.replace('_', ' ');

/** At most this many points go to the browser (the snapshot's own timeline can hold every allocation). */
const MEMORY_CHART_POINTS = 4000;

export interface MemoryChartData {
  xLabel: string;
  xName: string;
  t: number[];
  allocGiB: number[];
  resGiB: number[];
  marks: { x: number; label: string }[];
}

/** The timeline thinned to buckets of equal count, each keeping its maximum (no peak is lost), in ms or s. */
export function memoryChartData(r: MemoryReport): MemoryChartData {
  const tl = r.timeline;
  const n = tl.tUs.length;
  const per = Math.max(1, Math.ceil(n / MEMORY_CHART_POINTS));
  // Snapshots span milliseconds to hours: the axis in ms below 10 s.
  const scale = (tl.tUs[n - 1] ?? 0) < 10e6 ? 1e3 : 1e6;
  const t: number[] = [];
  const allocGiB: number[] = [];
  const resGiB: number[] = [];
  for (let i = 0; i < n; i += per) {
    let a = 0;
    let res = 0;
    for (let j = i; j < Math.min(n, i + per); j++) {
      a = Math.max(a, tl.allocatedBytes[j]!);
      res = Math.max(res, tl.reservedBytes[j]!);
    }
    t.push(tl.tUs[i]! / scale);
    allocGiB.push(a / 1024 ** 3);
    resGiB.push(res / 1024 ** 3);
  }
  const marks: MemoryChartData['marks'] = [];
  if (n > 0) marks.push({ x: (tl.tUs[tl.peakPoint] ?? 0) / scale, label: `peak ${fmtBytes(r.totals.peakAllocatedBytes)}` });
  if (r.oom && r.oom.timeUs !== null && r.history.firstUs !== null) marks.push({ x: (r.oom.timeUs - r.history.firstUs) / scale, label: 'OOM' });
  const unit = scale === 1e3 ? 'ms' : 's';
  return { xLabel: `${unit} since the first entry`, xName: unit, t, allocGiB, resGiB, marks };
}

export const MEMORY_PAGE_JS = `
(function () {
  var d = JSON.parse(document.getElementById('gw-data').textContent);
  var el = document.getElementById('chart-memory');
  if (el && d.t.length > 1) gw.chart(el, { xLabel: d.xLabel, xName: d.xName, yLabel: 'GPU memory', marks: d.marks, height: 240,
    series: [{ label: 'allocated', color: '#4e79a7' }, { label: 'reserved', color: '#e15759', dash: true }], data: [d.t, d.allocGiB, d.resGiB], yFmt: gw.fmt.gib });
})();
`;

function since(r: MemoryReport, us: number | null): string {
  return us === null || r.history.firstUs === null ? '' : ` at t=${fmtUs(us - r.history.firstUs)}`;
}

/** A live set: one stacked bar by category, the categories, and the source lines holding most. */
function liveHtml(live: LiveSet, id: string): string {
  if (live.bytes === 0) return '<p class="dim">nothing live</p>';
  const share = (b: number) => b / live.bytes;
  const bar = live.byCategory.map((c) => `<i title="${esc(catLabel(c.category))} ${esc(fmtBytes(c.bytes))}" style="width:${(share(c.bytes) * 100).toFixed(2)}%;background:${color(c.category)}"></i>`).join('');
  const cats = scrollBox(`<table class="categories"><thead><tr><th>category</th><th class="num">bytes</th><th class="num">share</th><th class="num">allocations</th></tr></thead><tbody>${live.byCategory
    .map((c) => `<tr><td class="key"><span class="sw" style="background:${color(c.category)}"></span>${esc(catLabel(c.category))}</td><td class="num">${esc(fmtBytes(c.bytes))}</td><td class="num">${esc(fmtPct(share(c.bytes)))}</td><td class="num">${c.allocations}</td></tr>`)
    .join('')}</tbody></table>`);
  const max = Math.max(1, ...live.bySource.map((s) => s.bytes));
  const sources = live.bySource.length
    ? `<h3>Largest sources <span class="dim">(${esc(SOURCE_LINE_WORDS)})</span></h3>${scrollBox(`<table class="sources"><thead><tr><th>source line</th><th>function</th><th>category</th><th class="num">bytes</th><th class="num">allocations</th><th></th></tr></thead><tbody>${live.bySource
        .map(
          (s) =>
            `<tr><td class="long" title="${esc(s.source)}"><code>${esc(s.shortSource)}</code></td><td><code>${esc(s.function)}</code></td><td class="key"><span class="sw" style="background:${color(s.category)}"></span>${esc(catLabel(s.category))}</td><td class="num">${esc(fmtBytes(s.bytes))}</td><td class="num">${s.allocations}</td><td class="bar-cell"><div class="hb" style="width:${((100 * s.bytes) / max).toFixed(1)}%;background:${color(s.category)}"></div></td></tr>`,
        )
        .join('')}</tbody></table>`)}`
    : '';
  return `<div id="${id}"><div class="stack" style="height:24px">${bar}</div>${cats}${sources}</div>`;
}

export interface MemoryPageOptions {
  /** The report's id on the server (JSON link); null for the `--html` file. */
  id: string | null;
  label: string;
  standalone?: InlineAssets;
}

export function memoryVerdict(r: MemoryReport): string {
  const top = r.findings[0];
  if (r.oom) return `Out of memory: asked ${fmtBytes(r.oom.requestedBytes)} with ${fmtBytes(r.oom.reservedUnallocatedBytes)} cached free (${r.oom.phase})`;
  return top ? top.title : `peak ${fmtBytes(r.totals.peakAllocatedBytes)} allocated`;
}

export function memoryPage(r: MemoryReport, o: MemoryPageOptions): string {
  const t = r.totals;
  const h = r.history;
  const top = r.findings[0];
  const charts = memoryChartData(r);
  const sevClass = r.oom || top?.severity === 'high' ? 'bad' : top?.severity === 'medium' ? 'warn' : 'ok';
  const totals = table(
    ['', 'peak', 'end'],
    [
      ['allocated', fmtBytes(t.peakAllocatedBytes), fmtBytes(t.finalAllocatedBytes)],
      ['requested', fmtBytes(t.peakRequestedBytes), fmtBytes(t.finalRequestedBytes)],
      ['reserved', fmtBytes(t.peakReservedBytes), fmtBytes(t.finalReservedBytes)],
      ['rounding waste', fmtBytes(t.roundingWasteAtPeakBytes), fmtBytes(t.finalRoundingWasteBytes)],
      ['reserved, not allocated', fmtBytes(t.reservedAtPeakAllocatedBytes - t.peakAllocatedBytes), fmtBytes(t.finalReservedUnallocatedBytes)],
      ['inactive split blocks', '', fmtBytes(t.finalInactiveSplitBytes)],
      ['largest free block', '', fmtBytes(t.finalLargestFreeBlockBytes)],
    ],
    'totals',
    ['text', 'num', 'num'],
  );
  const oom = r.oom
    ? `<h2>Out of memory${esc(since(r, r.oom.timeUs))}${r.oom.count > 1 ? ` (first of ${r.oom.count})` : ''}, during ${esc(r.oom.phase)}</h2>
<div class="card oom" id="oom"><p>Requested <b>${esc(fmtBytes(r.oom.requestedBytes))}</b>. Allocated ${esc(fmtBytes(r.oom.allocatedBytes))}, reserved ${esc(fmtBytes(r.oom.reservedBytes))}, cached free (reserved − allocated) ${esc(fmtBytes(r.oom.reservedUnallocatedBytes))}${r.oom.largestFreeBlockBytes !== null ? ` (largest block ${esc(fmtBytes(r.oom.largestFreeBlockBytes))})` : ''}, free on the device ${r.oom.deviceFreeBytes === null ? 'unknown' : esc(fmtBytes(r.oom.deviceFreeBytes))}.</p>
<h3>Live at the failure: ${esc(fmtBytes(r.oom.live.bytes))}</h3>${liveHtml(r.oom.live, 'live-oom')}</div>`
    : '';
  const n = charts.t.length;
  const chart =
    n > 1
      ? `<div id="chart-memory" class="chart"></div>${noscriptTable(
          `memory over time (each point the maximum of its interval; the chart needs JavaScript)`,
          [charts.xLabel, 'allocated', 'reserved'],
          spread(n, 12).map((i) => [(charts.t[i] ?? 0).toFixed(1), `${(charts.allocGiB[i] ?? 0).toFixed(2)} GiB`, `${(charts.resGiB[i] ?? 0).toFixed(2)} GiB`]),
        )}`
      : '<p class="dim">the snapshot holds no allocation history: only its final state is known</p>';
  const title = o.standalone ? 'gpuwise memory' : `Memory snapshot: ${o.label}`;
  const body = `<h1>${esc(title)}</h1>
<div class="card"><div class="verdict ${sevClass}" id="verdict">${esc(memoryVerdict(r))}</div>
<div class="dim"><code>${esc(r.input.path)}</code> · device ${r.device} · ${fmtInt(h.entries)} allocator history entries${h.durationUs !== null ? ` over ${esc(fmtUs(h.durationUs))}` : ''}${r.input.legacy ? ' · legacy segment list' : ''}</div>
<span class="fig"><span class="dim">peak allocated</span><b>${esc(fmtBytes(t.peakAllocatedBytes))}</b></span><span class="fig"><span class="dim">peak reserved</span><b>${esc(fmtBytes(t.peakReservedBytes))}</b></span><span class="fig"><span class="dim">at the end</span><b>${esc(fmtBytes(t.finalAllocatedBytes))}</b></span></div>
<h2>Findings, ranked</h2><div id="findings">${r.findings.length ? r.findings.map((f, i) => findingHtml({ ...f, source: 'memory' }, i)).join('\n') : '<p class="dim">no findings</p>'}</div>
${oom}
<h2>Memory over time</h2><div class="card">${chart}</div>
<h2>Totals</h2>${totals}
<h2>Live at the allocated peak${esc(since(r, t.peakAllocatedAtUs))}: ${esc(fmtBytes(r.peak.bytes))}</h2>${liveHtml(r.peak, 'live-peak')}
${r.warnings.length ? `<h2>Warnings</h2><ul>${r.warnings.map((w) => `<li class="warn">${esc(w)}</li>`).join('')}</ul>` : ''}
<p class="dim">memory report schema ${r.schemaVersion}${o.standalone || o.id === null ? '' : ` · <a href="report-full?id=${enc(o.id)}">this page as one file</a> · <a href="api/report?id=${enc(o.id)}">JSON</a>`}</p>`;
  return page({
    title: o.standalone ? `memory: ${r.input.path.split('/').pop()}` : `Memory ${o.label}`,
    section: 'reports',
    body,
    data: charts,
    scripts: [MEMORY_PAGE_JS],
    standalone: o.standalone ? { assets: o.standalone, what: 'memory report' } : undefined,
  });
}

/** `gpuwise memory --html`: the Reports snapshot page as one self-contained file. */
export function renderMemoryHtml(r: MemoryReport, assets: InlineAssets): string {
  return memoryPage(r, { id: null, label: r.input.path, standalone: assets });
}

function diffSection(title: string, l: LiveDiff, id: string): string {
  const rows = [...l.byCategory.map((r) => ({ ...r, code: false })), ...l.bySource.map((r) => ({ ...r, code: true }))];
  const max = Math.max(1, ...rows.map((r) => Math.abs(r.deltaBytes)));
  return `<h2>${esc(title)}: ${esc(fmtBytes(l.totalA))} → ${esc(fmtBytes(l.totalB))} (${esc(fmtSignedBytes(l.totalB - l.totalA))})</h2>
${scrollBox(`<table id="${id}"><thead><tr><th>category or source line</th><th class="num">A</th><th class="num">B</th><th class="num">B − A</th><th></th></tr></thead><tbody>${rows
    .map(
      (r) =>
        `<tr><td${r.code ? ' class="long"' : ''}>${r.code ? `<code>${esc(r.label)}</code>` : esc(catLabel(r.label))}</td><td class="num">${esc(fmtBytes(r.aBytes))}</td><td class="num">${esc(fmtBytes(r.bBytes))}</td><td class="num ${r.deltaBytes > 0 ? 'bad' : r.deltaBytes < 0 ? 'ok' : ''}">${esc(fmtSignedBytes(r.deltaBytes))}</td><td class="bar-cell"><div class="hb ${r.deltaBytes >= 0 ? 'grow' : 'shrink'}" style="width:${((100 * Math.abs(r.deltaBytes)) / max).toFixed(1)}%"></div></td></tr>`,
    )
    .join('')}</tbody></table>`)}`;
}

/** `gpuwise memory diff A B --html`: what grew from A to B, in the same design (tables with bars, no chart to draw). */
export function renderMemoryDiffHtml(d: MemoryDiff, assets: InlineAssets): string {
  const grew = d.final.totalB - d.final.totalA;
  const body = `<h1>gpuwise memory diff</h1>
<div class="card"><div class="verdict ${grew > 0 ? 'warn' : 'ok'}" id="verdict">live at the end ${esc(fmtSignedBytes(grew))} from A to B</div>
<div class="dim">A: <code>${esc(d.a)}</code></div><div class="dim">B: <code>${esc(d.b)}</code></div></div>
${table(['', 'A', 'B', 'B − A'], d.totals.map((t) => [t.label, fmtBytes(t.aBytes), fmtBytes(t.bBytes), fmtSignedBytes(t.deltaBytes)]), 'totals', ['text', 'num', 'num', 'num'])}
${diffSection('Live at the end', d.final, 'diff-final')}
${diffSection('Live at the allocated peak', d.peak, 'diff-peak')}
<p class="dim">memory diff schema ${d.schemaVersion}</p>`;
  return page({ title: `memory diff: ${d.a.split('/').pop()} → ${d.b.split('/').pop()}`, section: 'reports', body, standalone: { assets, what: 'memory diff' } });
}
