/**
 * Renders the analyze report as one self-contained HTML page: inline CSS and
 * SVG charts, no script, no network (it must open offline, from a CI artifact).
 */
import { fmtBytes, fmtMs, fmtPct } from '../util/format.js';
import { CATEGORY_NAMES } from '../trace/kernelClass.js';
import { IDLE_CAUSES, type TraceMetrics } from '../trace/metrics/types.js';
import type { AnalyzeReport } from './analyzeReport.js';
import { escapeHtml } from '../util/html.js';
import { IDLE_LABELS } from './terminal.js';

/** The one HTML escaping (util/html.ts), under the short name the page builders use. */
export const esc = escapeHtml;

const COLORS: Record<string, string> = {
  busy: '#2e7d32',
  dataloader: '#e53935',
  hostSync: '#8e24aa',
  h2dCopy: '#fb8c00',
  communication: '#1e88e5',
  launch: '#fdd835',
  other: '#9e9e9e',
};
const CAT_COLORS = ['#1565c0', '#6a1b9a', '#283593', '#00897b', '#558b2f', '#ef6c00', '#1e88e5', '#f9a825', '#bdbdbd', '#757575'];

/** Stacked bars, one per step: busy then idle causes. */
function stepChart(m: TraceMetrics): string {
  const W = 720;
  const rowH = 18;
  const left = 90;
  const steps = m.steps.slice(0, 60);
  const max = Math.max(1, ...steps.map((s) => s.durNs));
  const rows = steps.map((s, i) => {
    const y = i * (rowH + 4);
    const parts: [string, number][] = [['busy', 0], ...IDLE_CAUSES.map((c) => [c, 0] as [string, number])];
    for (const d of s.devices) {
      parts[0]![1] += d.busyNs / Math.max(1, s.devices.length);
      IDLE_CAUSES.forEach((c, k) => {
        parts[k + 1]![1] += d.idleByCauseNs[c] / Math.max(1, s.devices.length);
      });
    }
    let x = left;
    const rects = parts
      .filter(([, v]) => v > 0)
      .map(([k, v]) => {
        const w = ((W - left - 10) * v) / max;
        const r = `<rect x="${x.toFixed(1)}" y="${y}" width="${w.toFixed(1)}" height="${rowH}" fill="${COLORS[k]}"><title>${esc(k === 'busy' ? 'GPU busy' : `idle: ${IDLE_LABELS[k as keyof typeof IDLE_LABELS]}`)} ${fmtMs(v)}</title></rect>`;
        x += w;
        return r;
      })
      .join('');
    return `<text x="0" y="${y + 13}" class="lbl">step ${s.step} · ${esc(fmtMs(s.durNs))}</text>${rects}`;
  });
  const h = steps.length * (rowH + 4);
  return `<svg viewBox="0 0 ${W} ${h}" width="${W}" height="${h}" role="img" aria-label="step time breakdown">${rows.join('')}</svg>`;
}

function legend(): string {
  return `<div class="legend">${['busy', ...IDLE_CAUSES].map((k) => `<span><i style="background:${COLORS[k]}"></i>${esc(k === 'busy' ? 'GPU busy' : `idle: ${IDLE_LABELS[k as keyof typeof IDLE_LABELS]}`)}</span>`).join('')}</div>`;
}

/** GPU busy share over time (first device), as columns. */
function timelineChart(m: TraceMetrics): string {
  const t = m.timeline;
  if (t.length === 0) return '<p class="dim">no timeline</p>';
  const W = 720;
  const H = 80;
  const w = W / t.length;
  const cols = t.map((b, i) => {
    const h = b.busyShare * H;
    return `<rect x="${(i * w).toFixed(2)}" y="${(H - h).toFixed(2)}" width="${Math.max(w - 0.3, 0.5).toFixed(2)}" height="${h.toFixed(2)}" fill="${COLORS.busy}"><title>${fmtPct(b.busyShare)} busy at ${(b.startNs / 1e6).toFixed(1)} ms</title></rect>`;
  });
  return `<svg viewBox="0 0 ${W} ${H + 14}" width="${W}" height="${H + 14}" role="img" aria-label="GPU busy over time"><rect x="0" y="0" width="${W}" height="${H}" fill="#fbe9e7"/>${cols.join('')}<text x="0" y="${H + 12}" class="lbl">${(t[0]!.startNs / 1e6).toFixed(0)} ms</text><text x="${W}" y="${H + 12}" class="lbl" text-anchor="end">${((t[t.length - 1]!.startNs + (t[1] ? t[1].startNs - t[0]!.startNs : 0)) / 1e6).toFixed(0)} ms</text></svg>`;
}

function categoryChart(m: TraceMetrics): string {
  const cats = CATEGORY_NAMES.map((c, i) => ({ c, v: m.perStep.kernelNsByCategory[c], color: CAT_COLORS[i]! })).filter((x) => x.v > 0);
  const max = Math.max(1, ...cats.map((x) => x.v));
  const W = 720;
  const rows = cats
    .sort((a, b) => b.v - a.v)
    .map((x, i) => {
      const y = i * 22;
      const w = ((W - 230) * x.v) / max;
      return `<text x="0" y="${y + 14}" class="lbl">${esc(x.c)}</text><rect x="110" y="${y}" width="${w.toFixed(1)}" height="18" fill="${x.color}"/><text x="${(116 + w).toFixed(1)}" y="${y + 14}" class="lbl">${esc(fmtMs(x.v))}/step</text>`;
    });
  const h = cats.length * 22;
  return `<svg viewBox="0 0 ${W} ${h}" width="${W}" height="${h}" role="img" aria-label="kernel time by category">${rows.join('')}</svg>`;
}

export function renderHtml(r: AnalyzeReport): string {
  const findings = r.findings
    .map((f) => {
      const g = f.estimatedGain;
      return `<section class="f ${f.severity}"><h3><span class="sev">${f.severity}</span> ${esc(f.title)} <code>${esc(f.id)}</code></h3>
${g ? `<p class="gain">expected ${esc(fmtMs(g.stepTimeNs))} → ${esc(fmtMs(g.expectedStepTimeNs))} per step (−${esc(fmtPct(g.savedFraction))})<br><span class="dim">${esc(g.arithmetic)}</span></p>` : ''}
<ul>${f.evidence.map((e) => `<li>${esc(e)}</li>`).join('')}</ul>
<p>${esc(f.recommendation.summary)}</p><pre>${esc(f.recommendation.code)}</pre></section>`;
    })
    .join('\n');
  const ranks = r.metrics.ranks
    .map(
      (m) => `<h2>Rank ${m.rank}${m.devices[0] ? ` · ${esc(m.devices[0].name)}` : ''} · median step ${esc(fmtMs(m.stepTime.medianNs))} · GPU busy ${esc(fmtPct(m.gpuBusyShare))}</h2>
<h3>Step time breakdown</h3>${legend()}${stepChart(m)}
<h3>GPU busy over time</h3>${timelineChart(m)}
<h3>Kernel time by category</h3>${categoryChart(m)}
${m.memory.map((x) => `<p>GPU ${x.device}: peak allocated ${esc(fmtBytes(x.peakAllocatedBytes))}, peak reserved ${esc(fmtBytes(x.peakReservedBytes))}</p>`).join('')}`,
    )
    .join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>gpuwise analyze</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;max-width:980px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:22px}h2{font-size:18px;margin-top:2em;border-bottom:1px solid #ddd}h3{font-size:15px}
.lbl{font:11px system-ui,sans-serif;fill:#333}.dim{color:#777}
.legend span{margin-right:14px;font-size:12px}.legend i{display:inline-block;width:10px;height:10px;margin-right:4px}
.f{border-left:5px solid #999;padding:.2em 1em;margin:1em 0;background:#fafafa}
.warn{color:#8a4b00}.f.high{border-color:#c62828}.f.medium{border-color:#ef6c00}.f.low{border-color:#0277bd}
.sev{text-transform:uppercase;font-size:11px;padding:2px 6px;border-radius:3px;background:#eee}
pre{background:#263238;color:#eceff1;padding:.7em;overflow:auto}code{font-size:12px;color:#555}
</style></head><body>
<h1>gpuwise analyze</h1>
<p class="dim">${r.inputs.map((i) => esc(i.path)).join(', ')} · report schema ${r.schemaVersion} · gpuwise ${esc(r.version)}</p>
<h2>Findings</h2>
${findings || '<p>No findings.</p>'}
${r.inputs.flatMap((i) => i.warnings.map((w) => `<p class="warn">${esc(i.path)}: ${esc(w)}</p>`)).join('\n')}
${ranks}
</body></html>
`;
}
