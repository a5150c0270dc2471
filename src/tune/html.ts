/**
 * `gpuwise tune --html FILE`: the result and the trials as one self-contained page (inline SVG, no script): peak
 * memory and throughput against the value tried, the GPU's memory as a line. Pure.
 */
import { fmtBytes } from '../util/format.js';
import { tuneAnswer } from './markdown.js';
import type { TuneReport } from './report.js';

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

/** Points (value, y) on a 600x160 chart; OOM trials as red crosses at the top. */
function chart(r: TuneReport, y: (t: TuneReport['trials'][number]) => number | null, label: string, limit: number | null): string {
  const W = 600;
  const H = 160;
  const pts = r.trials.map((t) => ({ x: t.value, y: y(t), oom: t.outcome === 'oom' }));
  const xs = pts.map((p) => p.x);
  const ymax = Math.max(limit ?? 0, ...pts.map((p) => p.y ?? 0)) || 1;
  const x0 = Math.min(r.param.lo, ...xs);
  const x1 = Math.max(r.param.hi, ...xs, x0 + 1);
  const px = (x: number) => 40 + ((x - x0) / (x1 - x0)) * (W - 60);
  const py = (v: number) => H - 20 - (v / ymax) * (H - 40);
  const marks = pts
    .map((p) =>
      p.oom
        ? `<text x="${px(p.x).toFixed(1)}" y="16" fill="#c62828" text-anchor="middle" font-size="12">×<title>${p.x}: out of memory</title></text>`
        : p.y === null
          ? ''
          : `<circle cx="${px(p.x).toFixed(1)}" cy="${py(p.y).toFixed(1)}" r="4" fill="#1565c0"><title>${p.x}</title></circle>`,
    )
    .join('');
  const line = limit ? `<line x1="40" x2="${W - 20}" y1="${py(limit).toFixed(1)}" y2="${py(limit).toFixed(1)}" stroke="#c62828" stroke-dasharray="4 3"/>` : '';
  return `<svg width="${W}" height="${H}" role="img" aria-label="${esc(label)}"><line x1="40" x2="${W - 20}" y1="${H - 20}" y2="${H - 20}" stroke="#999"/>${line}${marks}<text x="40" y="${H - 4}" font-size="11">${x0}</text><text x="${W - 20}" y="${H - 4}" font-size="11" text-anchor="end">${x1} (${esc(r.param.name)})</text></svg>`;
}

export function renderTuneHtml(r: TuneReport): string {
  const unit = r.throughputUnit ?? 'throughput';
  const thr = (t: TuneReport['trials'][number]) => (r.throughputUnit === 'tokens/s' ? t.tokensPerS : t.samplesPerS);
  const rows = r.trials
    .map(
      (t) =>
        `<tr><td>${t.index}${t.kind === 'curve' ? 'c' : ''}</td><td class="n">${t.value}</td><td>${esc(t.outcome)}</td><td class="n">${t.peakAllocatedBytes !== null ? esc(fmtBytes(t.peakAllocatedBytes)) : '-'}</td><td class="n">${t.stepTimeS !== null ? `${(t.stepTimeS * 1e3).toFixed(1)} ms` : '-'}</td><td class="n">${thr(t) !== null ? Math.round(thr(t)!).toLocaleString('en-US') : '-'}</td></tr>`,
    )
    .join('');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>gpuwise tune</title>
<style>body{font:14px system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}td,th{padding:2px 10px;text-align:left;border-bottom:1px solid #eee}.n{text-align:right}.dim{color:#777}</style></head><body>
<h1>gpuwise tune: ${esc(r.param.name)} in ${r.param.lo}..${r.param.hi}${r.device ? ` on ${esc(r.device.name ?? 'GPU')} (${esc(fmtBytes(r.device.totalBytes))})` : ''}</h1>
${tuneAnswer(r)
  .map((l) => `<p><b>${esc(l)}</b></p>`)
  .join('\n')}
<h2>Peak allocated memory</h2>${chart(r, (t) => t.peakAllocatedBytes, 'peak allocated memory', r.device?.totalBytes ?? null)}
<h2>${esc(unit)}</h2>${chart(r, thr, unit, null)}
<h2>Trials</h2><table><tr><th>#</th><th>${esc(r.param.name)}</th><th>outcome</th><th>peak allocated</th><th>step</th><th>${esc(unit)}</th></tr>${rows}</table>
<p class="dim">${esc(`Trials: ${r.searchTrials} of at most ${r.maxTrials}; stopped: ${r.stopReason}`)}</p>
${r.notes.map((n) => `<p class="dim">note: ${esc(n)}</p>`).join('\n')}
<p class="dim">tune schema ${r.schemaVersion} · gpuwise</p>
</body></html>
`;
}
