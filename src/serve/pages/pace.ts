/** What sets the pace and the plan (src/pace/report.ts) as HTML, for the doctor and analyze pages (pure). */
import { planLines } from '../../pace/plan.js';
import { type PaceReport, paceHeadline, paceRows } from '../../pace/report.js';
import { esc, table } from './layout.js';

/** The page's last section: the pipeline's stages, what binds and the plan; empty without one. */
export function paceHtml(r: PaceReport | null | undefined, ranks: number): string {
  if (!r) return '';
  return `<h2>What sets the pace</h2><p>${esc(paceHeadline(r, ranks))}</p>${table(['stage', 'per step', 'how', 'evidence'], paceRows(r), 'pace')}
<h2>Plan <span class="dim">(each fix on top of the ones before it)</span></h2><ol id="plan">${r.plan.steps.length ? r.plan.steps.map((s) => `<li>${esc(s.text)}</li>`).join('') : `<li>${esc(planLines(r.plan)[0] ?? '')}</li>`}</ol>`;
}
