/**
 * `gpuwise plan --html`: the plan as a page in the design of the other reports (pure). Verdict first (fits, or
 * why not and what would), memory per GPU by component against the budget (a stacked bar and its table), step
 * time by term, the memory savers, the layouts a search found. No time series, so no chart script: the bars are
 * plain HTML and the page reads the same with JavaScript off.
 */
import { hardwareText, headroomText, layoutText, modelSourceText, runText, searchChoiceText, searchOrderText } from '../../planner/render.js';
import { fmtInt, fmtGiB } from '../../util/format.js';
import type { PlanJson } from '../../planner/report.js';
import { type InlineAssets, esc, page, scrollBox, table } from './layout.js';

const COLORS = ['#1565c0', '#6a1b9a', '#00897b', '#ef6c00', '#558b2f', '#8e44ad', '#f9a825', '#757575', '#283593', '#e53935'];
const colorOf = (i: number) => COLORS[i % COLORS.length]!;

/** The components side by side in one bar, scaled to the larger of the budget and the peak, the budget marked. */
function memoryBar(j: PlanJson): string {
  const m = j.memory;
  const sum = m.components.reduce((a, c) => a + c.bytes, 0);
  const scale = Math.max(m.budgetBytes, m.peakReservedBytes, sum, 1);
  const parts = m.components.map((c, i) => `<i title="${esc(c.label)}: ${esc(fmtGiB(c.bytes, 2))}" style="width:${((100 * c.bytes) / scale).toFixed(2)}%;background:${colorOf(i)}"></i>`).join('');
  const budgetPct = ((100 * m.budgetBytes) / scale).toFixed(2);
  return `<div style="position:relative"><div class="stack" style="height:28px">${parts}</div><div title="budget ${esc(fmtGiB(m.budgetBytes, 2))}" style="position:absolute;top:-3px;bottom:-3px;left:${budgetPct}%;border-left:2px solid #000"></div></div>
<div class="dim" style="font-size:12px">${m.components.map((c, i) => `<span class="sw" style="background:${colorOf(i)}"></span>${esc(c.label)} ${esc(fmtGiB(c.bytes, 2))}`).join(' &nbsp; ')} &nbsp; │ budget ${esc(fmtGiB(m.budgetBytes, 2))}</div>`;
}

function timeTable(j: PlanJson): string {
  const t = j.time;
  const terms: [string, number][] = [
    ['compute', t.computeMs],
    ['memory-bound kernels', t.memoryBoundMs],
    ['CPU floor', t.cpuFloorMs],
    [`communication, exposed (of ${t.commMs.toFixed(1)} ms)`, t.exposedCommMs],
    ['pipeline bubble', t.bubbleMs],
  ];
  const max = Math.max(1e-9, ...terms.map(([, v]) => v));
  return `${scrollBox(`<table id="time"><thead><tr><th>term</th><th class="num">ms</th><th></th></tr></thead><tbody>${terms
    .map(([k, v]) => `<tr><td>${esc(k)}</td><td class="num">${v.toFixed(1)}</td><td class="bar-cell"><div class="hb" style="width:${((100 * v) / max).toFixed(1)}%"></div></td></tr>`)
    .join('')}</tbody></table>`)}<p class="dim">overlap: ${esc(t.overlap)}</p>`;
}

export function renderPlanHtml(j: PlanJson, assets: InlineAssets): string {
  const m = j.memory;
  const source = modelSourceText(j);
  const choice = searchChoiceText(j);
  const verdict = j.wouldFit
    ? `<div class="verdict bad" id="verdict">Does not fit: ${esc(j.wouldFit.explanation)}</div>`
    : `<div class="verdict ok" id="verdict">Fits: step ${j.stepTimeMs.toFixed(1)} ms (${esc(j.time.bindingTerm)}-bound), ${fmtInt(j.time.tokensPerSec)} tokens/s, MFU ${(j.time.mfu * 100).toFixed(0)}%${j.maxBatch ? `; largest micro-batch ${j.maxBatch.microBatch}` : ''}</div>`;
  const wouldFit = j.wouldFit
    ? `<h2>What would fit</h2><ul id="would-fit">${[
        ...(j.wouldFit.maxMicroBatch > 0 ? [`<code>--batch ${j.wouldFit.maxMicroBatch}</code> (the largest micro-batch that fits this set-up)`] : []),
        ...j.wouldFit.changes.map(esc),
        ...(j.wouldFit.maxMicroBatch === 0 && j.wouldFit.changes.length === 0 ? ['nothing with these GPUs: add GPUs or use a larger card'] : []),
      ]
        .map((x) => `<li>${x}</li>`)
        .join('')}</ul>`
    : '';
  const components = table(
    ['component', 'per GPU', 'note'],
    [
      ...m.components.map((c) => [c.label, fmtGiB(c.bytes, 2), c.note]),
      ['max_memory_allocated', fmtGiB(m.peakAllocatedBytes, 2), `forward ${fmtGiB(m.phases.forwardBytes, 2)}, backward ${fmtGiB(m.phases.backwardBytes, 2)}, optimizer ${fmtGiB(m.phases.optimizerBytes, 2)}`],
      ['max_memory_reserved', fmtGiB(m.peakReservedBytes, 2), ''],
      ['nvidia-smi', fmtGiB(m.deviceUsedBytes, 2), ''],
      ['budget', fmtGiB(m.budgetBytes, 2), headroomText(m)],
    ],
    'memory',
    ['text', 'num', 'text'],
  );
  const savers =
    !j.wouldFit && j.savers.length
      ? `<h2>Memory savers</h2>${table(['change', 'saves', 'step time'], j.savers.map((s) => [s.change, `−${fmtGiB(s.savedBytes, 2)}`, `${s.stepTimeDeltaMs >= 0 ? '+' : ''}${s.stepTimeDeltaMs.toFixed(1)} ms`]), 'savers', ['text', 'num', 'num'])}`
      : '';
  const search = j.search?.plans.length
    ? `<h2>Layouts that fit (${j.search.feasible} of ${j.search.candidates})</h2>${choice === null ? '' : `<p id="search-choice">${esc(choice)}</p>`}<p class="dim" id="search-order">${esc(searchOrderText(j.search.choice?.tolerance ?? null))}</p>${table(
        ['#', 'tokens/s', 'step', 'peak', 'binds', 'layout'],
        j.search.plans.map((p) => [String(p.rank), fmtInt(p.tokensPerSec), `${p.stepTimeMs.toFixed(1)} ms`, fmtGiB(p.peakAllocatedBytes, 2), p.bindingTerm, `${layoutText(p)}, global ${p.globalBatch}`]),
        'search',
        ['num', 'num', 'num', 'num', 'text', 'text'],
      )}`
    : '';
  const body = `<h1>gpuwise plan: ${esc(j.model.name)}</h1>
<div class="card">${verdict}
<div class="dim">${esc(j.model.architecture)}, ${fmtInt(j.model.params)} parameters${source === null ? '' : ` · ${esc(source)}`} · ${esc(hardwareText(j))} · ${esc(`${runText(j)}; ${layoutText(j)}; global batch ${j.globalBatch}`)}</div>
${j.assumed?.length ? `<div class="dim">assumed (not given): ${esc(j.assumed.join('; '))}</div>` : ''}</div>
${wouldFit}
<h2>Memory per GPU <span class="dim">(binding phase: ${esc(m.bindingPhase)})</span></h2><div class="card">${memoryBar(j)}</div>
${components}
${j.wouldFit ? '' : `<h2>Step time by term <span class="dim">(${j.stepTimeMs.toFixed(1)} ms, ${esc(j.time.bindingTerm)}-bound)</span></h2>${timeTable(j)}`}
${savers}${search}
<p class="dim">plan schema ${j.schemaVersion}</p>`;
  return page({ title: `plan: ${j.model.name}`, section: null, body, standalone: { assets, what: 'plan' } });
}
