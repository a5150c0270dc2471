/** What to do (the plan, first) and what sets the pace (last) as HTML, for the doctor and analyze pages (pure). */
import { type PaceReport, paceHeadline, paceRows } from '../../pace/report.js';
import { type PlanFirstOptions, planFirstLines, SUB_LINE, splitChange } from '../../report/planFirst.js';
import { esc, table } from './layout.js';

/**
 * The page's opening after its verdict: the plan's whole gain, then each step with the change to make (the same lines
 * as the terminal's, report/planFirst.ts); empty without a plan.
 */
export function planFirstHtml(options: Omit<PlanFirstOptions, 'plan'> & { plan: PlanFirstOptions['plan'] | null | undefined }): string {
  const { plan } = options;
  if (!plan) return '';
  const [head, ...rest] = planFirstLines({ ...options, plan });
  const items: string[] = [];
  for (const l of rest) {
    const change = /^ +change: (.*)$/.exec(l);
    if (change && items.length) {
      const [code, more] = splitChange(change[1] as string);
      items[items.length - 1] += `<div class="dim">change: <code>${esc(code)}</code>${more ? ` (${esc(more)})` : ''}</div>`;
    }
    else if (SUB_LINE.test(l) && items.length) items[items.length - 1] += `<div class="dim">${esc(l.trim())}</div>`;
    else items.push(esc(l.trim().replace(/^\d+\. /, '')));
  }
  return `<h2>What to do</h2><p id="plan-head">${esc((head ?? '').replace(/^What to do: /, ''))}</p>${items.length ? `<ol id="plan">${items.map((i) => `<li>${i}</li>`).join('')}</ol>` : ''}`;
}

/** The page's last section: the pipeline's stages and what binds; empty without one. */
export function paceHtml(r: PaceReport | null | undefined, ranks: number): string {
  if (!r) return '';
  return `<h2>What sets the pace</h2><p>${esc(paceHeadline(r, ranks))}</p>${table(['stage', 'per step', 'how', 'evidence'], paceRows(r), 'pace')}`;
}
