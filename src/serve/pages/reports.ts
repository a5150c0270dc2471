/**
 * The Reports pages (pure): the form that opens a trace or a memory snapshot (a path on the server's machine, or
 * an upload), and the report pages built from analyze's and memory's report JSON. The full report under each is
 * the command's own `--html` page, embedded; the trace page adds the step breakdown per rank and a button that
 * opens the trace in Perfetto's UI by postMessage (the browser hands the bytes over; nothing is uploaded).
 */
import type { MemoryReport } from '../../memory/report.js';
import type { AnalyzeReport } from '../../report/analyzeReport.js';
import { fmtBytes, fmtMs, fmtPct } from '../../util/format.js';
import { esc, page } from './layout.js';
import { findingHtml } from './runs.js';

export type OpenedKind = 'trace' | 'snapshot';

/** A report the server holds (most recent first on the index page). */
export interface OpenedReportRow {
  id: string;
  kind: OpenedKind;
  /** What the user gave: a path, or an upload's file name. */
  label: string;
  openedAtMs: number;
  headline: string;
}

const enc = encodeURIComponent;

export const REPORTS_INDEX_JS = `
(function () {
  var form = document.getElementById('upload-form'), input = document.getElementById('upload-file'), out = document.getElementById('upload-status');
  form.addEventListener('submit', function (ev) {
    ev.preventDefault();
    var f = input.files[0];
    if (!f) { out.textContent = 'choose a file first'; return; }
    out.textContent = 'uploading ' + f.name + ' (' + gw.fmt.bytes(f.size) + ') and analysing...';
    fetch('api/reports/upload?name=' + encodeURIComponent(f.name), { method: 'POST', body: f, headers: { 'content-type': 'application/octet-stream' } })
      .then(function (r) { return r.json().then(function (j) { return { ok: r.ok, j: j }; }); })
      .then(function (x) { if (x.ok) location.href = 'report?id=' + encodeURIComponent(x.j.id); else out.textContent = x.j.error; })
      .catch(function (e) { out.textContent = String(e); });
  });
})();
`

export function reportsIndexPage(rows: OpenedReportRow[], maxUploadBytes: number, error: string | null = null): string {
  const list = rows.length
    ? `<table id="opened"><thead><tr><th>opened</th><th>kind</th><th>file</th><th>headline</th></tr></thead><tbody>${rows
        .map(
          (r) =>
            `<tr><td>${esc(new Date(r.openedAtMs).toISOString().slice(11, 19))}</td><td>${r.kind}</td><td><a href="report?id=${enc(r.id)}">${esc(r.label)}</a></td><td>${esc(r.headline)}</td></tr>`,
        )
        .join('')}</tbody></table>`
    : '<p class="dim">nothing opened yet</p>';
  const body = `<h1>Reports</h1>${error ? `<p class="bad" id="open-error">${esc(error)}</p>` : ''}
<div class="card"><b>Open a file on this machine</b>: a torch.profiler trace (<code>.json</code>, <code>.json.gz</code>), a folder of rank traces, or a CUDA memory snapshot (<code>.pickle</code>, <code>.pickle.gz</code>)
<form class="inline" method="post" action="open" style="margin-top:8px"><input type="text" name="path" id="open-path" placeholder="/path/to/trace.json.gz"><button type="submit">Open</button></form></div>
<div class="card"><b>Upload</b> (up to ${esc(fmtBytes(maxUploadBytes))}; read by the same bounded readers as the CLI, never executed)
<form class="inline" id="upload-form" style="margin-top:8px"><input type="file" id="upload-file"><button type="submit">Upload and analyse</button><span id="upload-status" class="dim"></span></form></div>
<h2>Opened in this session</h2>${list}`;
  return page({ title: 'Reports', section: 'reports', body, scripts: [REPORTS_INDEX_JS] });
}

const CAUSE_COLORS: Record<string, string> = {
  busy: '#2e7d32',
  dataloader: '#e53935',
  hostSync: '#8e24aa',
  h2dCopy: '#fb8c00',
  launch: '#1e88e5',
  communication: '#00897b',
  other: '#9e9e9e',
};

/** Step time per rank split by cause: busy, then each idle cause (one stacked bar per rank). */
export function stepBreakdownHtml(r: AnalyzeReport): string {
  const rows = r.metrics.ranks.map((m) => {
    const parts: [string, number][] = [['busy', m.perStep.busyNs], ...Object.entries(m.perStep.idleByCauseNs).map(([k, v]) => [k, v] as [string, number])];
    const total = Math.max(1, m.perStep.durNs);
    const bar = parts
      .filter(([, v]) => v > 0)
      .map(([k, v]) => `<i title="${esc(k)} ${esc(fmtMs(v))}" style="display:inline-block;height:100%;width:${((100 * v) / total).toFixed(2)}%;background:${CAUSE_COLORS[k] ?? '#777'}"></i>`)
      .join('');
    const legend = parts
      .filter(([, v]) => v / total >= 0.005)
      .map(([k, v]) => `<span style="color:${CAUSE_COLORS[k] ?? '#777'}">■</span> ${esc(k)} ${esc(fmtMs(v))} (${esc(fmtPct(v / total))})`)
      .join(' &nbsp; ');
    return `<tr class="rank-row"><td>rank ${m.rank}</td><td class="num">${m.steps.length}</td><td class="num">${esc(fmtMs(m.stepTime.medianNs))}</td><td style="width:55%"><div class="bar" style="height:14px;white-space:nowrap;font-size:0">${bar}</div><div class="dim" style="font-size:12px">${legend}</div></td></tr>`;
  });
  return `<table id="step-breakdown"><thead><tr><th>rank</th><th class="num">steps</th><th class="num">median step</th><th>mean step split by cause</th></tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

export const PERFETTO_JS = `
(function () {
  var ORIGIN = 'https://ui.perfetto.dev';
  document.querySelectorAll('button[data-perfetto]').forEach(function (b) {
    b.addEventListener('click', function () {
      // Opened inside the click so popup blockers allow it; the bytes are fetched from this server meanwhile.
      var w = window.open(ORIGIN), status = document.getElementById('perfetto-status');
      status.textContent = 'reading the trace...';
      fetch(b.getAttribute('data-perfetto')).then(function (r) { if (!r.ok) throw new Error('HTTP ' + r.status); return r.arrayBuffer(); }).then(function (buf) {
        status.textContent = 'waiting for Perfetto UI...';
        var tries = 0, timer = setInterval(function () { if (++tries > 600) { clearInterval(timer); status.textContent = 'Perfetto UI did not answer'; } else w.postMessage('PING', ORIGIN); }, 100);
        window.addEventListener('message', function onMsg(e) {
          if (e.origin !== ORIGIN || e.data !== 'PONG') return;
          clearInterval(timer); window.removeEventListener('message', onMsg);
          w.postMessage({ perfetto: { buffer: buf, title: b.getAttribute('data-title'), keepApiOpen: false } }, ORIGIN);
          status.textContent = 'opened in Perfetto UI';
        });
      }).catch(function (e) { status.textContent = String(e); });
    });
  });
})();
`

export function tracePage(id: string, label: string, r: AnalyzeReport, traceFiles: string[]): string {
  const top = r.findings[0];
  const verdict = top ? `${top.title}${top.estimatedGain ? ` (fixing it: −${fmtPct(top.estimatedGain.savedFraction)} step time)` : ''}` : 'nothing to fix was found in this trace';
  const perfetto = traceFiles
    .map((f, i) => `<button type="button" data-perfetto="api/report/trace?id=${enc(id)}&amp;file=${i}" data-title="${esc(f.split('/').pop() ?? f)}">Open ${traceFiles.length > 1 ? `rank file ${esc(f.split('/').pop() ?? f)}` : 'the timeline'} in Perfetto UI</button>`)
    .join(' ');
  const body = `<h1>Trace: ${esc(label)}</h1>
<div class="card"><div class="verdict ${top?.severity === 'high' ? 'bad' : top?.severity === 'medium' ? 'warn' : 'ok'}" id="verdict">${esc(verdict)}</div>
<div class="dim">${r.summary.ranks} rank(s), ${r.summary.stepsAnalysed} step(s) analysed, median step ${esc(fmtMs(r.summary.stepTimeMedianNs))}, GPU busy ${esc(fmtPct(r.summary.gpuBusyShare))}</div>
<div style="margin-top:8px">${perfetto} <span id="perfetto-status" class="dim"></span></div></div>
<h2>Findings, ranked</h2><div id="findings">${r.findings.length ? r.findings.map((f, i) => findingHtml({ ...f, source: 'trace' }, i)).join('') : '<p class="dim">no findings</p>'}</div>
<h2>Step breakdown per rank</h2>${stepBreakdownHtml(r)}
<h2>Full report</h2><p class="dim">analyze's own page (<a href="report-full?id=${enc(id)}">open alone</a>, <a href="api/report?id=${enc(id)}">JSON</a>)</p>
<iframe class="report" id="full" src="report-full?id=${enc(id)}" title="analyze report" onload="try{this.style.height=(this.contentDocument.documentElement.scrollHeight+20)+'px'}catch(e){}"></iframe>`;
  return page({ title: `Trace ${label}`, section: 'reports', body, scripts: [PERFETTO_JS] });
}

export const MEMORY_PAGE_JS = `
(function () {
  var d = JSON.parse(document.getElementById('gw-data').textContent);
  if (d.tS.length > 1) gw.chart(document.getElementById('chart-memory'), { xLabel: d.xLabel, xName: d.xName, yLabel: 'GiB', series: [{ label: 'allocated' }, { label: 'reserved', dash: true }], data: [d.tS, d.allocGiB, d.resGiB], yFmt: gw.fmt.gib });
})();
`

/** At most this many points go to the browser (the snapshot's own timeline can hold every allocation). */
const MEMORY_CHART_POINTS = 4000;

export function memoryPage(id: string, label: string, r: MemoryReport): string {
  const t = r.totals;
  const top = r.findings[0];
  const verdict = r.oom ? `Out of memory: asked ${fmtBytes(r.oom.requestedBytes)} with ${fmtBytes(r.oom.reservedUnallocatedBytes)} cached free (${r.oom.phase})` : top ? top.title : `peak ${fmtBytes(t.peakAllocatedBytes)} allocated`;
  const n = r.timeline.tUs.length;
  const stride = Math.max(1, Math.ceil(n / MEMORY_CHART_POINTS));
  // Snapshots span milliseconds to hours: the axis in ms below 10 s.
  const scale = (r.timeline.tUs[n - 1] ?? 0) < 10e6 ? 1e3 : 1e6;
  const tS: number[] = [];
  const allocGiB: number[] = [];
  const resGiB: number[] = [];
  for (let i = 0; i < n; i += stride) {
    tS.push(r.timeline.tUs[i]! / scale);
    allocGiB.push(r.timeline.allocatedBytes[i]! / 1024 ** 3);
    resGiB.push(r.timeline.reservedBytes[i]! / 1024 ** 3);
  }
  const body = `<h1>Memory snapshot: ${esc(label)}</h1>
<div class="card"><div class="verdict ${r.oom ? 'bad' : ''}" id="verdict">${esc(verdict)}</div>
<span class="fig"><span class="dim">peak allocated</span><b>${esc(fmtBytes(t.peakAllocatedBytes))}</b></span><span class="fig"><span class="dim">peak reserved</span><b>${esc(fmtBytes(t.peakReservedBytes))}</b></span><span class="fig"><span class="dim">at the end</span><b>${esc(fmtBytes(t.finalAllocatedBytes))}</b></span></div>
<h2>Findings</h2><div id="findings">${r.findings.length ? r.findings.map((f, i) => findingHtml({ ...f, source: 'memory' }, i)).join('') : '<p class="dim">no findings</p>'}</div>
<h2>Memory over time</h2><div class="card">${n > 1 ? '<div id="chart-memory" class="chart"></div>' : '<p class="dim">the snapshot holds no allocation history</p>'}</div>
<h2>Full report</h2><p class="dim">memory's own page (<a href="report-full?id=${enc(id)}">open alone</a>, <a href="api/report?id=${enc(id)}">JSON</a>)</p>
<iframe class="report" id="full" src="report-full?id=${enc(id)}" title="memory report" onload="try{this.style.height=(this.contentDocument.documentElement.scrollHeight+20)+'px'}catch(e){}"></iframe>`;
  return page({ title: `Memory ${label}`, section: 'reports', body, data: { tS, allocGiB, resGiB, xLabel: scale === 1e3 ? 'ms since the first entry' : 's since the first entry', xName: scale === 1e3 ? 'ms' : 's' }, scripts: [MEMORY_PAGE_JS] });
}
