/**
 * `gpuwise memory diff A B --html FILE`: what grew from snapshot A to B as one self-contained page (no script, no
 * network): totals, then what was live at the end and at the allocated peak by category and by source line, with
 * a bar per row for the growth. Pure.
 */
import { fmtBytes, fmtSignedBytes } from '../../util/format.js';
import type { LiveDiff, MemoryDiff } from '../diff.js';

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

function growthBar(delta: number, max: number): string {
  const w = max > 0 ? Math.round((Math.abs(delta) / max) * 160) : 0;
  return `<svg width="164" height="12"><rect x="0" y="1" width="${w}" height="10" fill="${delta >= 0 ? '#c62828' : '#2e7d32'}"/></svg>`;
}

function section(title: string, l: LiveDiff): string {
  const rows = [...l.byCategory.map((r) => ({ ...r, code: false })), ...l.bySource.map((r) => ({ ...r, code: true }))];
  const max = Math.max(0, ...rows.map((r) => Math.abs(r.deltaBytes)));
  return `<h2>${esc(title)}: ${esc(fmtBytes(l.totalA))} → ${esc(fmtBytes(l.totalB))} (${esc(fmtSignedBytes(l.totalB - l.totalA))})</h2>
<table><tr><th>category or source line</th><th>A</th><th>B</th><th>B−A</th><th></th></tr>${rows
    .map(
      (r) =>
        `<tr><td>${r.code ? `<code>${esc(r.label)}</code>` : esc(r.label)}</td><td class="n">${esc(fmtBytes(r.aBytes))}</td><td class="n">${esc(fmtBytes(r.bBytes))}</td><td class="n">${esc(fmtSignedBytes(r.deltaBytes))}</td><td>${growthBar(r.deltaBytes, max)}</td></tr>`,
    )
    .join('')}</table>`;
}

export function renderDiffHtml(d: MemoryDiff): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>gpuwise memory diff</title>
<style>body{font:14px system-ui,sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem;color:#222}td,th{padding:2px 10px;text-align:left;border-bottom:1px solid #eee}.n{text-align:right}code{font-size:12px}.dim{color:#777}</style></head><body>
<h1>gpuwise memory diff</h1>
<p class="dim">A: <code>${esc(d.a)}</code> · B: <code>${esc(d.b)}</code></p>
<table><tr><th></th><th>A</th><th>B</th><th>B−A</th></tr>${d.totals.map((t) => `<tr><td>${esc(t.key)}</td><td class="n">${esc(fmtBytes(t.aBytes))}</td><td class="n">${esc(fmtBytes(t.bBytes))}</td><td class="n">${esc(fmtSignedBytes(t.deltaBytes))}</td></tr>`).join('')}</table>
${section('Live at the end', d.final)}
${section('Live at the allocated peak', d.peak)}
<p class="dim">memory diff schema ${d.schemaVersion} · gpuwise</p>
</body></html>
`;
}
