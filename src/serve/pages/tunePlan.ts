/**
 * `gpuwise tune --plan --html`: the verified plan as a page in the design of the other reports (pure). The answer
 * first (the verified best configuration, its step against the script as it is, the change to make it permanent),
 * then each plan step predicted against measured (a chart and the table), every trial, the time it all took.
 */
import { frameworkTitle, ms, planStepVerdict, ratio, settingsText, trialLine } from '../../tune/planReport.js';
import type { PlanTuneReport } from '../../tune/planTrials.js';
import { fmtMs } from '../../util/format.js';
import { type InlineAssets, esc, noscriptTable, page, table } from './layout.js';


/** The chart's data: each plan step's predicted and measured step (ms; null where one is missing). */
export interface PlanTuneChartData {
  labels: string[];
  predictedMs: (number | null)[];
  measuredMs: (number | null)[];
}

export function planTuneChartData(r: PlanTuneReport): PlanTuneChartData {
  const toMs = (ns: number | null) => (ns === null ? null : ns / 1e6);
  return {
    labels: ['as run', ...r.steps.map((s, i) => `${i + 1}. ${s.label}`)],
    predictedMs: [toMs(r.diagnosis.stepNs), ...r.steps.map((s) => toMs(s.predictedStepNs))],
    measuredMs: [toMs(r.baseline?.measure?.meanNs ?? null), ...r.steps.map((s) => toMs(s.measuredStepNs))],
  };
}

const PLAN_TUNE_PAGE_JS = `
(function () {
  var d = JSON.parse(document.getElementById('gw-data').textContent);
  var el = document.getElementById('chart-plan-steps');
  if (!el || d.labels.length < 2) return;
  var x = d.labels.map(function (_, i) { return i; });
  gw.chart(el, { xLabel: 'plan step (0: as run)', xName: 'step', xInt: true, yLabel: 'step time', yFmt: gw.fmt.ms, height: 240,
    series: [{ label: 'predicted', color: '#2f6fde', points: true, dash: true, spanGaps: true },
             { label: 'measured by a trial', color: '#e4572e', points: true, spanGaps: true }],
    data: [x, d.predictedMs, d.measuredMs] });
})();
`;

function answerCard(r: PlanTuneReport): string {
  const b = r.best;
  const verdict =
    b.names.length === 0
      ? '<div class="verdict" id="verdict">Verified best: the script as it is (no fix measured better beyond the spread)</div>'
      : `<div class="verdict ok" id="verdict">Verified best: ${esc(settingsText(b.settings))}: ${esc(ms(b.stepNs))} ± ${esc(ms(b.spreadNs))} a step against ${esc(ms(b.baselineStepNs))} as the script is${b.speedup !== null ? ` (${b.speedup.toFixed(2)}x)` : ''}</div>`;
  const permanent = r.permanent
    .map((p) => `<h3>${esc(frameworkTitle(p.framework, true))}</h3><pre><code>${esc(p.lines.join('\n'))}</code></pre>`)
    .join('');
  return `<div class="card">${verdict}${permanent ? `<div>To make it permanent:</div>${permanent}` : ''}</div>`;
}

export function renderPlanTuneHtml(r: PlanTuneReport, assets: InlineAssets): string {
  const d = r.diagnosis;
  const data = planTuneChartData(r);
  const steps = table(
    ['#', 'plan step', 'predicted', 'ratio', 'measured', 'ratio', 'verdict'],
    r.steps.map((s, i) => [
      String(i + 1),
      `${s.label} [${s.stepId}]`,
      s.predictedStepNs !== null ? `${ms(s.fromStepNs)} → ${ms(s.predictedStepNs)}` : '-',
      ratio(s.predictedRatio),
      s.measuredStepNs !== null ? `${ms(s.measuredFromStepNs)} → ${ms(s.measuredStepNs)}` : '-',
      ratio(s.measuredRatio),
      planStepVerdict(s),
    ]),
    'plan-steps',
    ['num', 'text', 'num', 'num', 'num', 'num', 'text'],
  );
  const chart =
    r.steps.length > 0
      ? `<div id="chart-plan-steps" class="chart"></div>${noscriptTable(
          'the step after each plan step, predicted and measured (the chart needs JavaScript)',
          ['plan step', 'predicted', 'measured'],
          data.labels.map((l, i) => {
            const v = (x: number | null | undefined) => (x === null || x === undefined ? '-' : fmtMs(x * 1e6));
            return [l, v(data.predictedMs[i]), v(data.measuredMs[i])];
          }),
        )}`
      : '<p class="dim">the plan has no step to try</p>';
  const trials = [r.baseline, ...r.trials.filter((t) => t.index !== r.baseline?.index)].filter((t) => t !== null);
  const body = `<h1>gpuwise tune --plan: ${esc(r.cmd.join(' '))}</h1>
${answerCard(r)}
<div class="card"><div>Diagnosis: ${esc(ms(d.stepNs))} a step${d.bound ? `, bound by ${esc(d.bound)}` : ''}; the plan expects ${esc(ms(d.planExpectedStepNs))}</div>
<div class="dim">${r.trials.length} trial(s) of ${r.stepsPerTrial} steps · ${esc(`${r.totalS.toFixed(0)} s in all (diagnosis ${d.wallS.toFixed(0)} s, trials ${r.trialsS.toFixed(0)} s${r.warmupCostS > 0.5 ? `, of it ${r.warmupCostS.toFixed(0)} s of warm-up` : ''})`)}</div>
<div class="dim">runs: <code>${esc(r.outDir)}</code></div></div>
<h2>Each plan step, predicted and measured</h2><div class="card">${chart}</div>
${steps}
<h2>Trials</h2><ul id="trials">${trials.map((t) => `<li>${esc(trialLine(t))}</li>`).join('')}</ul>
${r.notes.length ? `<h2>Notes</h2><ul id="notes">${r.notes.map((n) => `<li class="dim">${esc(n)}</li>`).join('')}</ul>` : ''}
<p class="dim">tune --plan schema ${r.schemaVersion}</p>`;
  return page({ title: 'tune --plan', section: null, body, data, scripts: [PLAN_TUNE_PAGE_JS], standalone: { assets, what: 'tune --plan' } });
}
