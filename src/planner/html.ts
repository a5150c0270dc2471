/**
 * `gpuwise plan --html FILE`: the plan as one self-contained page (inline CSS and SVG, no script, no network):
 * memory per GPU by component against the budget, step time by term, the savers or what would fit. Pure.
 */
import { layoutText } from './render.js';
import type { PlanJson } from './report.js';

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
const gib = (b: number) => `${(b / 1024 ** 3).toFixed(2)} GiB`;
const COLORS = ['#1565c0', '#6a1b9a', '#00897b', '#ef6c00', '#558b2f', '#8e24aa', '#f9a825', '#757575', '#283593', '#e53935'];

/** One stacked bar of the memory components, with the budget as a line. */
function memoryBar(j: PlanJson): string {
  const W = 720;
  const total = Math.max(j.memory.budgetBytes, j.memory.peakReservedBytes, ...[j.memory.components.reduce((a, c) => a + c.bytes, 0)]);
  let x = 0;
  const parts = j.memory.components.map((c, i) => {
    const w = (c.bytes / total) * W;
    const rect = `<rect x="${x.toFixed(1)}" y="0" width="${w.toFixed(1)}" height="28" fill="${COLORS[i % COLORS.length]}"><title>${esc(c.name)}: ${gib(c.bytes)}</title></rect>`;
    x += w;
    return rect;
  });
  const bx = (j.memory.budgetBytes / total) * W;
  const legend = j.memory.components.map((c, i) => `<span class="key"><i style="background:${COLORS[i % COLORS.length]}"></i>${esc(c.name)} ${gib(c.bytes)}</span>`).join(' ');
  return `<svg width="${W}" height="40" role="img" aria-label="memory per GPU">${parts.join('')}<line x1="${bx.toFixed(1)}" x2="${bx.toFixed(1)}" y1="0" y2="36" stroke="#000" stroke-width="2"/><text x="${Math.min(bx + 4, W - 90).toFixed(1)}" y="38" font-size="10">budget ${gib(j.memory.budgetBytes)}</text></svg><p>${legend}</p>`;
}

export function renderPlanHtml(j: PlanJson): string {
  const rows = j.memory.components.map((c) => `<tr><td>${esc(c.name)}</td><td class="n">${gib(c.bytes)}</td><td>${esc(c.note)}</td></tr>`).join('');
  const verdict = j.wouldFit
    ? `<p class="bad"><b>Does not fit</b>: ${esc(j.wouldFit.explanation)}</p><h2>What would fit</h2><ul>${[
        ...(j.wouldFit.maxMicroBatch > 0 ? [`<code>--batch ${j.wouldFit.maxMicroBatch}</code>`] : []),
        ...j.wouldFit.changes.map(esc),
      ]
        .map((x) => `<li>${x}</li>`)
        .join('')}</ul>`
    : `<p class="good"><b>Fits</b>: step ${j.stepTimeMs.toFixed(1)} ms (${esc(j.time.bindingTerm)}-bound), ${Math.round(j.time.tokensPerSec).toLocaleString('en-US')} tokens/s, MFU ${(j.time.mfu * 100).toFixed(0)}%${j.maxBatch ? `; largest micro-batch ${j.maxBatch.microBatch}` : ''}</p>`;
  const savers = !j.wouldFit && j.savers.length ? `<h2>Memory savers</h2><ul>${j.savers.map((s) => `<li>${esc(s.change)}: −${gib(s.savedBytes)}, step ${s.stepTimeDeltaMs >= 0 ? '+' : ''}${s.stepTimeDeltaMs.toFixed(1)} ms</li>`).join('')}</ul>` : '';
  const search = j.search?.plans.length
    ? `<h2>Layouts that fit (${j.search.feasible} of ${j.search.candidates})</h2><table><tr><th>#</th><th>tokens/s</th><th>step</th><th>peak</th><th>layout</th></tr>${j.search.plans.map((p) => `<tr><td>${p.rank}</td><td class="n">${p.tokensPerSec.toLocaleString('en-US')}</td><td class="n">${p.stepTimeMs.toFixed(1)} ms</td><td class="n">${gib(p.peakAllocatedBytes)}</td><td>${esc(layoutText(p))}, global ${p.globalBatch}</td></tr>`).join('')}</table>`
    : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>gpuwise plan: ${esc(j.model.name)}</title>
<style>body{font:14px system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}td,th{padding:2px 8px;text-align:left}.n{text-align:right}.bad{color:#b71c1c}.good{color:#1b5e20}.dim{color:#777}.key i{display:inline-block;width:10px;height:10px;margin-right:3px}.key{margin-right:10px;font-size:12px}</style></head><body>
<h1>gpuwise plan: ${esc(j.model.name)}</h1>
<p>${esc(j.model.architecture)}, ${j.model.params.toLocaleString('en-US')} parameters · ${j.hardware.nodes} x ${j.hardware.gpusPerNode} ${esc(j.hardware.gpu.name)} · ${esc(`${j.setup.mode} ${j.setup.precision}, ${j.setup.optimizer}, seq ${j.setup.seq}; ${layoutText(j)}; global batch ${j.globalBatch}`)}</p>
${j.assumed?.length ? `<p class="dim">assumed (not given): ${esc(j.assumed.join('; '))}</p>` : ''}
${verdict}
<h2>Memory per GPU (binding phase: ${esc(j.memory.bindingPhase)})</h2>
${memoryBar(j)}
<table>${rows}<tr><td><b>max_memory_allocated</b></td><td class="n"><b>${gib(j.memory.peakAllocatedBytes)}</b></td><td>forward ${gib(j.memory.phases.forwardBytes)}, backward ${gib(j.memory.phases.backwardBytes)}, optimizer ${gib(j.memory.phases.optimizerBytes)}</td></tr><tr><td>max_memory_reserved</td><td class="n">${gib(j.memory.peakReservedBytes)}</td><td></td></tr><tr><td>nvidia-smi</td><td class="n">${gib(j.memory.deviceUsedBytes)}</td><td></td></tr><tr><td>budget</td><td class="n">${gib(j.memory.budgetBytes)}</td><td></td></tr></table>
${savers}${search}
<p class="dim">plan schema ${j.schemaVersion} · gpuwise</p>
</body></html>
`;
}
