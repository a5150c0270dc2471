/**
 * The Reports index (pure): the form that opens a trace or a memory snapshot (a path on the server's machine, or
 * an upload) and the reports opened. A report's own page is analyze.ts's or memory.ts's, the same page that
 * `analyze --html` and `memory --html` write standalone.
 */
import { fmtBytes } from '../../util/format.js';
import { enc, esc, page, scrollBox } from './layout.js';

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
    ? scrollBox(`<table id="opened"><thead><tr><th>opened</th><th>kind</th><th>file</th><th>headline</th></tr></thead><tbody>${rows
        .map(
          (r) =>
            `<tr><td>${esc(new Date(r.openedAtMs).toISOString().slice(11, 19))}</td><td>${r.kind}</td><td class="long"><a href="report?id=${enc(r.id)}">${esc(r.label)}</a></td><td>${esc(r.headline)}</td></tr>`,
        )
        .join('')}</tbody></table>`)
    : '<p class="dim">nothing opened yet</p>';
  const body = `<h1>Reports</h1>${error ? `<p class="bad" id="open-error">${esc(error)}</p>` : ''}
<div class="card"><b>Open a file on this machine</b>: a torch.profiler trace (<code>.json</code>, <code>.json.gz</code>), a folder of rank traces, or a CUDA memory snapshot (<code>.pickle</code>, <code>.pickle.gz</code>)
<form class="inline" method="post" action="open" style="margin-top:8px"><input type="text" name="path" id="open-path" placeholder="/path/to/trace.json.gz"><button type="submit">Open</button></form></div>
<div class="card"><b>Upload</b> (up to ${esc(fmtBytes(maxUploadBytes))}; read by the same bounded readers as the CLI, never executed)
<form class="inline" id="upload-form" style="margin-top:8px"><input type="file" id="upload-file"><button type="submit">Upload and analyse</button><span id="upload-status" class="dim"></span></form></div>
<h2>Opened in this session</h2>${list}`;
  return page({ title: 'Reports', section: 'reports', body, scripts: [REPORTS_INDEX_JS] });
}
