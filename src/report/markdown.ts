/** Renders the analyze report as Markdown for pull-request comments (pure). */
import { fmtBytes, fmtMs, fmtPct } from '../util/format.js';
import { IDLE_CAUSES } from '../trace/metrics/types.js';
import type { AnalyzeReport } from './analyzeReport.js';
import { findingMarkdown } from './findingText.js';
import { inPlanText, planFirstMarkdown } from './planFirst.js';
import { IDLE_LABELS } from './terminal.js';
import { paceHeadline, paceRows } from '../pace/report.js';

function cell(s: string): string {
  return s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

export function renderMarkdown(r: AnalyzeReport): string {
  const out: string[] = [];
  out.push(`## gpuwise analyze: ${r.inputs.map((i) => `\`${i.path.split('/').pop()}\``).join(', ')}`, '');
  if (r.pace) out.push(...planFirstMarkdown({ plan: r.pace.plan, findings: r.findings }), '');
  if (r.findings.length === 0) out.push('No findings.', '');
  r.findings.forEach((f, i) => {
    out.push(...findingMarkdown(f, i, '###', inPlanText(r.pace?.plan, f)));
  });
  const warnings = r.inputs.flatMap((i) => i.warnings.map((w) => `> ⚠️ \`${i.path.split('/').pop()}\`: ${w}`));
  if (warnings.length) out.push(...warnings, '');
  out.push('| rank | GPU | steps | median step | GPU busy | top idle cause |', '|---|---|---|---|---|---|');
  for (const m of r.metrics.ranks) {
    const top = IDLE_CAUSES.map((c) => [c, m.perStep.idleByCauseNs[c]] as const).sort((a, b) => b[1] - a[1])[0];
    const topText = top && top[1] > 0 ? `${IDLE_LABELS[top[0]]} (${fmtMs(top[1])}/step)` : 'none';
    out.push(`| ${m.rank} | ${cell(m.devices[0]?.name ?? '?')} | ${m.steps.length} | ${fmtMs(m.stepTime.medianNs)} | ${fmtPct(m.gpuBusyShare)} | ${cell(topText)} |`);
  }
  out.push('');
  const mem = r.metrics.ranks.flatMap((m) => m.memory);
  if (mem.length) {
    out.push('<details><summary>Memory</summary>', '');
    for (const x of mem) out.push(`- GPU ${x.device}: peak allocated ${fmtBytes(x.peakAllocatedBytes)}, reserved ${fmtBytes(x.peakReservedBytes)}`);
    out.push('', '</details>', '');
  }
  if (r.pace) {
    out.push('### What sets the pace', '', paceHeadline(r.pace, r.metrics.ranks.length), '', '| stage | per step | how | evidence |', '|---|---|---|---|');
    for (const row of paceRows(r.pace)) out.push(`| ${row.map(cell).join(' | ')} |`);
    out.push('');
  }
  out.push(`<sub>gpuwise ${r.version}, report schema ${r.schemaVersion}</sub>`);
  return `${out.join('\n')}\n`;
}
