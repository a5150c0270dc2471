/**
 * `gpuwise smi --md`: the same snapshot as the terminal table, for an issue (the GPU rows and the process rows of
 * render.ts as Markdown tables). Pure. The `--html` page is serve's design: src/serve/pages/smi.ts.
 */
import { processRows, smiGpuTable } from './render.js';
import type { Snapshot } from './sample.js';

const cell = (s: string) => s.replace(/\|/g, '\\|');

/** Where the snapshot came from: source, driver, CUDA, host (the Markdown and the HTML page). */
export function smiHeadText(s: Snapshot): string {
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
  const out = ['## gpuwise smi', '', smiHeadText(s), ''];
  out.push(...(s.gpus.length ? mdTable(smiGpuTable(s).rows) : ['no GPU']), '');
  const procs = s.gpus.flatMap((g) => g.processes);
  out.push(...(procs.length ? ['Processes:', '', ...mdTable(processRows(procs))] : ['Processes: none']), '');
  for (const n of s.notes) out.push(`> note: ${n}`);
  out.push('', `<sub>gpuwise smi, snapshot schema ${s.schemaVersion}</sub>`);
  return `${out.join('\n')}\n`;
}
