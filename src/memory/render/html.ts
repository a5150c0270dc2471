/**
 * One self-contained offline HTML page for a memory report: memory over time
 * (allocated and reserved against time, the peak marked), the live set at the
 * peak as stacked bars by category with the top source lines, and the OOM
 * panel. Charts are inline SVG built here: no script, no CDN.
 */
import { escapeHtml } from '../../util/html.js';
import type { LiveSet, MemoryReport } from '../report.js';
import { fmtBytes, fmtPct, fmtUs } from '../../util/format.js';

const COLORS: Record<string, string> = {
  parameters: '#4e79a7',
  gradients: '#f28e2b',
  optimizer_state: '#e15759',
  activations: '#76b7b2',
  autograd_temporaries: '#59a14f',
  other: '#bab0ac',
};

const esc = escapeHtml;

function timelineSvg(r: MemoryReport): string {
  const tl = r.timeline;
  if (tl.tUs.length === 0) return '<p>No allocator history in this snapshot: only the final state is known.</p>';
  const W = 900;
  const H = 260;
  const L = 70;
  const B = 30;
  const maxT = Math.max(tl.tUs[tl.tUs.length - 1]!, 1);
  const maxY = Math.max(...tl.reservedBytes, ...tl.allocatedBytes, 1);
  const x = (t: number): number => L + (t / maxT) * (W - L - 10);
  const y = (v: number): number => H - B - (v / maxY) * (H - B - 10);
  const path = (vals: number[]): string => vals.map((v, i) => `${i === 0 ? 'M' : 'L'}${x(tl.tUs[i]!).toFixed(1)},${y(v).toFixed(1)}`).join('');
  const ticks: string[] = [];
  for (let k = 0; k <= 4; k++) {
    const v = (maxY * k) / 4;
    ticks.push(`<line x1="${L}" x2="${W - 10}" y1="${y(v)}" y2="${y(v)}" stroke="#eee"/><text x="${L - 6}" y="${y(v) + 4}" text-anchor="end">${esc(fmtBytes(v))}</text>`);
    const t = (maxT * k) / 4;
    ticks.push(`<text x="${x(t)}" y="${H - 10}" text-anchor="middle">${esc(fmtUs(t))}</text>`);
  }
  const pi = tl.peakPoint;
  const px = x(tl.tUs[pi] ?? 0);
  const py = y(tl.allocatedBytes[pi] ?? 0);
  return `<svg viewBox="0 0 ${W} ${H}" width="100%" role="img" aria-label="memory over time">
${ticks.join('\n')}
<path d="${path(tl.reservedBytes)}" fill="none" stroke="#e15759" stroke-width="1.5"/>
<path d="${path(tl.allocatedBytes)}" fill="none" stroke="#4e79a7" stroke-width="1.5"/>
<circle cx="${px}" cy="${py}" r="4" fill="#000"/><text x="${px + 6}" y="${py - 6}">peak ${esc(fmtBytes(r.totals.peakAllocatedBytes))}</text>
${r.oom ? oomMarker(r, x, y) : ''}
</svg>
<p class="legend"><span style="color:#4e79a7">&#9644; allocated</span> <span style="color:#e15759">&#9644; reserved</span> (time since the first history entry; each point is the maximum of its interval)</p>`;
}

function oomMarker(r: MemoryReport, x: (t: number) => number, _y: (v: number) => number): string {
  const o = r.oom!;
  if (o.timeUs === null || r.history.firstUs === null) return '';
  const ox = x(o.timeUs - r.history.firstUs);
  return `<line x1="${ox}" x2="${ox}" y1="10" y2="230" stroke="#b00" stroke-dasharray="4 3"/><text x="${ox - 4}" y="20" text-anchor="end" fill="#b00">OOM</text>`;
}

function liveBars(live: LiveSet): string {
  if (live.bytes === 0) return '<p>Nothing live.</p>';
  const segs = live.byCategory
    .map((c) => {
      const share = c.bytes / live.bytes;
      return `<div class="seg" style="width:${(share * 100).toFixed(2)}%;background:${COLORS[c.category] ?? '#999'}" title="${esc(c.category)} ${esc(fmtBytes(c.bytes))}"></div>`;
    })
    .join('');
  const legend = live.byCategory
    .map((c) => `<li><span class="sw" style="background:${COLORS[c.category] ?? '#999'}"></span>${esc(c.category.replace('_', ' '))}: ${esc(fmtBytes(c.bytes))} (${esc(fmtPct(c.bytes / live.bytes))}, ${c.allocations} allocations)</li>`)
    .join('');
  const rows = live.bySource
    .map(
      (s) =>
        `<tr><td title="${esc(s.source)}"><code>${esc(s.shortSource)}</code></td><td><code>${esc(s.function)}</code></td><td><span class="sw" style="background:${COLORS[s.category] ?? '#999'}"></span>${esc(s.category.replace('_', ' '))}</td><td class="n">${esc(fmtBytes(s.bytes))}</td><td class="n">${s.allocations}</td><td><div class="hb" style="width:${((s.bytes / live.bytes) * 200).toFixed(0)}px"></div></td></tr>`,
    )
    .join('\n');
  return `<div class="stack">${segs}</div><ul class="lg">${legend}</ul>
<table><tr><th>Source line</th><th>Function</th><th>Category</th><th>Bytes</th><th>Allocations</th><th></th></tr>${rows}</table>`;
}

export function renderHtml(r: MemoryReport): string {
  const t = r.totals;
  const first = r.history.firstUs;
  const at = (us: number | null): string => (us === null || first === null ? '' : ` at t=${fmtUs(us - first)}`);
  const totals = [
    ['Allocated', t.peakAllocatedBytes, t.finalAllocatedBytes],
    ['Requested', t.peakRequestedBytes, t.finalRequestedBytes],
    ['Reserved', t.peakReservedBytes, t.finalReservedBytes],
    ['Rounding waste', t.roundingWasteAtPeakBytes, t.finalRoundingWasteBytes],
    ['Reserved, not allocated', t.reservedAtPeakAllocatedBytes - t.peakAllocatedBytes, t.finalReservedUnallocatedBytes],
    ['Largest free block', null, t.finalLargestFreeBlockBytes],
  ]
    .map(([k, p, e]) => `<tr><td>${k}</td><td class="n">${p === null ? '' : esc(fmtBytes(p as number))}</td><td class="n">${esc(fmtBytes(e as number))}</td></tr>`)
    .join('');
  const oom = r.oom
    ? `<section class="oom"><h2>Out of memory${esc(at(r.oom.timeUs))}, during ${esc(r.oom.phase)}</h2>
<p>Requested <b>${esc(fmtBytes(r.oom.requestedBytes))}</b>. Allocated ${esc(fmtBytes(r.oom.allocatedBytes))}, reserved ${esc(fmtBytes(r.oom.reservedBytes))}, cached free ${esc(fmtBytes(r.oom.reservedUnallocatedBytes))}${r.oom.largestFreeBlockBytes !== null ? ` (largest block ${esc(fmtBytes(r.oom.largestFreeBlockBytes))})` : ''}, free on the device ${r.oom.deviceFreeBytes === null ? 'unknown' : esc(fmtBytes(r.oom.deviceFreeBytes))}.</p>
<h3>Live at the failure: ${esc(fmtBytes(r.oom.live.bytes))}</h3>${liveBars(r.oom.live)}</section>`
    : '';
  const findings =
    r.findings.length === 0
      ? '<p>None.</p>'
      : r.findings
          .map(
            (f) => `<div class="f ${f.severity}"><h3>[${f.severity}] ${esc(f.title)} <small>${esc(f.id)}</small></h3><ul>${f.evidence.map((e) => `<li>${esc(e)}</li>`).join('')}</ul>
<p><b>Do:</b> ${esc(f.recommendation.summary)}</p><pre>${esc(f.recommendation.code)}</pre></div>`,
          )
          .join('\n');
  const warnings = r.warnings.length > 0 ? `<section><h2>Warnings</h2><ul>${r.warnings.map((w) => `<li>${esc(w)}</li>`).join('')}</ul></section>` : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>gpuwise memory: ${esc(r.input.path)}</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:24px auto;max-width:960px;color:#222}
h1{font-size:20px}h2{font-size:17px;margin-top:28px}svg text{font-size:11px;fill:#444}
table{border-collapse:collapse;margin:8px 0}td,th{padding:3px 8px;border-bottom:1px solid #eee;text-align:left}.n{text-align:right}
.stack{display:flex;height:28px;border:1px solid #ccc;margin:8px 0}.seg{height:100%}
.sw{display:inline-block;width:10px;height:10px;margin-right:5px}.lg{list-style:none;padding:0;columns:2}
.hb{height:10px;background:#4e79a7}.oom{border:2px solid #b00;padding:4px 14px;border-radius:6px}
.f{border-left:4px solid #999;padding:2px 12px;margin:10px 0}.f.high{border-color:#b00}.f.medium{border-color:#e8a000}.f.low{border-color:#4e79a7}
pre{background:#f6f6f6;padding:8px;overflow:auto}.legend{color:#555;font-size:12px}small{color:#888;font-weight:normal}
</style></head><body>
<h1>gpuwise memory: <code>${esc(r.input.path)}</code></h1>
<p>Device ${r.device}; ${r.history.entries} allocator history entries${r.history.durationUs !== null ? ` over ${esc(fmtUs(r.history.durationUs))}` : ''}.</p>
<table><tr><th></th><th>Peak</th><th>End</th></tr>${totals}</table>
<h2>Memory over time</h2>
${timelineSvg(r)}
${oom}
<h2>Live at the allocated peak${esc(at(t.peakAllocatedAtUs))}: ${esc(fmtBytes(r.peak.bytes))}</h2>
${liveBars(r.peak)}
<h2>Findings</h2>
${findings}
${warnings}
</body></html>
`;
}
