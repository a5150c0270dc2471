/**
 * `gpuwise smi --html`: one snapshot of the GPUs as a page in the design of the other reports (pure): where it came
 * from, the GPUs and their processes as `gpuwise smi` shows them (the same rows, render.ts), the notes. One
 * snapshot has no time series, so the page draws no chart and carries no script (as plan's); the Live GPUs page is
 * the view over time.
 */
import { PROCESS_RIGHT, formatBytes, processRows, smiGpuTable } from '../../telemetry/render.js';
import { type Snapshot, usableMemoryBytes } from '../../telemetry/sample.js';
import { smiHeadText } from '../../telemetry/smiReport.js';
import { type InlineAssets, esc, page, scrollBox } from './layout.js';

/** A table whose number columns are right-aligned, as the terminal aligns them. */
function alignedTable(rows: string[][], right: readonly boolean[], id: string, rowClass: (i: number) => string = () => ''): string {
  const [head, ...body] = rows;
  if (!head) return '';
  const cls = (i: number) => (right[i] ? ' class="num"' : '');
  return scrollBox(`<table id="${id}"><thead><tr>${head.map((h, i) => `<th${cls(i)}>${esc(h)}</th>`).join('')}</tr></thead><tbody>${body
    .map((r, j) => `<tr${rowClass(j) ? ` class="${rowClass(j)}"` : ''}>${r.map((c, i) => `<td${cls(i)}>${esc(c)}</td>`).join('')}</tr>`)
    .join('')}</tbody></table>`);
}

export function renderSmiHtml(s: Snapshot, assets: InlineAssets): string {
  const procs = s.gpus.flatMap((g) => g.processes);
  const lost = s.gpus.filter((g) => g.lost).length;
  const used = s.gpus.reduce((a, g) => a + (g.memoryUsedBytes ?? 0), 0);
  const total = s.gpus.reduce((a, g) => a + (usableMemoryBytes(g) ?? 0), 0);
  const summary = s.gpus.length
    ? `${s.gpus.length} GPU${s.gpus.length > 1 ? 's' : ''}${lost ? `, ${lost} lost` : ''}, ${procs.length} process${procs.length === 1 ? '' : 'es'}${total > 0 ? `, ${formatBytes(used)} of ${formatBytes(total)} memory used` : ''}`
    : 'no GPU';
  const gpus = s.gpus.length
    ? (() => {
        const { rows, right } = smiGpuTable(s);
        return alignedTable(rows, right, 'gpus', (j) => (s.gpus[j]?.lost ? 'bad' : ''));
      })()
    : '<p class="dim">no GPU</p>';
  const when = s.timestampMs !== null ? ` · ${new Date(s.timestampMs).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC')}` : '';
  const body = `<h1>gpuwise smi</h1>
<div class="card"><div class="verdict ${lost ? 'bad' : ''}" id="verdict">${esc(summary)}</div>
<div class="dim">${esc(smiHeadText(s) + when)}</div></div>
<h2>GPUs</h2>${gpus}
<h2>Processes</h2>${procs.length ? alignedTable(processRows(procs), PROCESS_RIGHT, 'processes') : '<p class="dim">none</p>'}
${s.notes.length ? `<h2>Notes</h2><ul id="notes">${s.notes.map((n) => `<li class="dim">${esc(n)}</li>`).join('')}</ul>` : ''}
<p class="dim">snapshot schema ${s.schemaVersion}</p>`;
  return page({ title: `smi${s.hostname ? `: ${s.hostname}` : ''}`, section: null, body, standalone: { assets, what: 'smi snapshot' } });
}
