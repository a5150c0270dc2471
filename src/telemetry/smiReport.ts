/**
 * `gpuwise smi --md` and `--html FILE`: the same snapshot as the terminal table, for an issue or a page (the GPU
 * rows and the process rows of render.ts, as Markdown tables or one self-contained HTML page). Pure.
 */
import { gpuRows, processRows } from './render.js';
import type { Snapshot } from './sample.js';

const esc = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
const cell = (s: string) => s.replace(/\|/g, '\\|');

function headText(s: Snapshot): string {
  return [`source: ${s.source}`, s.driverVersion ? `driver ${s.driverVersion}` : '', s.cudaVersion ? `CUDA ${s.cudaVersion}` : '', s.hostname ? `host ${s.hostname}` : '']
    .filter(Boolean)
    .join(' · ');
}

function mdTable(rows: string[][]): string[] {
  const [head, ...body] = rows;
  if (!head) return [];
  return [`| ${head.map(cell).join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...body.map((r) => `| ${r.map(cell).join(' | ')} |`)];
}

export function renderSmiMarkdown(s: Snapshot): string {
  const out = ['## gpuwise smi', '', headText(s), ''];
  out.push(...(s.gpus.length ? mdTable(gpuRows(s)) : ['no GPU']), '');
  const procs = s.gpus.flatMap((g) => g.processes);
  out.push(...(procs.length ? ['Processes:', '', ...mdTable(processRows(procs))] : ['Processes: none']), '');
  for (const n of s.notes) out.push(`> note: ${n}`);
  out.push('', `<sub>gpuwise smi, snapshot schema ${s.schemaVersion}</sub>`);
  return `${out.join('\n')}\n`;
}

function htmlTable(rows: string[][]): string {
  const [head, ...body] = rows;
  if (!head) return '';
  return `<table><tr>${head.map((h) => `<th>${esc(h)}</th>`).join('')}</tr>${body.map((r) => `<tr>${r.map((c) => `<td>${esc(c)}</td>`).join('')}</tr>`).join('')}</table>`;
}

export function renderSmiHtml(s: Snapshot): string {
  const procs = s.gpus.flatMap((g) => g.processes);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>gpuwise smi</title>
<style>body{font:14px system-ui,sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem;color:#222}td,th{padding:2px 10px;text-align:left;border-bottom:1px solid #eee}.dim{color:#777}</style></head><body>
<h1>gpuwise smi</h1>
<p class="dim">${esc(headText(s))}</p>
${s.gpus.length ? htmlTable(gpuRows(s)) : '<p>no GPU</p>'}
<h2>Processes</h2>
${procs.length ? htmlTable(processRows(procs)) : '<p>none</p>'}
${s.notes.map((n) => `<p class="dim">note: ${esc(n)}</p>`).join('\n')}
<p class="dim">snapshot schema ${s.schemaVersion} · gpuwise</p>
</body></html>
`;
}
