/**
 * The Runs pages (pure): the history list, one run verdict first, and the compare of two runs. They take the
 * history's rows and doctor reports (the same JSON `gpuwise runs --json` and `runs show --json` print) and
 * return HTML. A run's page is also doctor's `--html` file (renderDoctorHtml: the same page with uPlot inlined), so
 * one design serves both.
 */
import { findingParts, type ShownFinding } from '../../report/findingText.js';
import type { DoctorReport } from '../../doctor/reportTypes.js';
import type { EstimatedGain } from '../../findings/finding.js';
import { PER_RUN_BATCH } from '../../pace/gain.js';
import { RUN_STEP_NAME } from '../../report/planFirst.js';
import type { RunComparison } from '../../history/compare.js';
import { type ComparedFigure, findingsText, headlineLines, memoryFigures, type RunRow, shortCommand, stepFigures, throughputText, whenText } from '../../history/render.js';
import { fmtBytes, fmtGpuMemory, fmtMs, fmtPct, fmtRate } from '../../util/format.js';
import { distributedTable, durationText, environmentRows, fmtBytesOr, GPU_PROCESS_COLUMNS, hangLines, GPU_PROCESS_NOTE, gpuProcessRows, fmtStepS, modelLine, nvmlBesideAllocator, planModelLine, rankLabel, rankShort, setupFacts, setupGuesses, stepSourceNote, hostCpuNote, decodeText, stallNote } from '../../doctor/renderParts.js';
import { whatIfsOf } from '../../doctor/reportCheck.js';
import { paceHtml, planFirstHtml } from './pace.js';
import { type ColumnKind, type InlineAssets, enc, esc, noscriptTable, page, scrollBox, spread, table } from './layout.js';

/** The history's rows as the list shows them (a StoredRun has these fields). */
export interface RunListRow extends RunRow {
  durationS: number | null;
}


function stepText(s: number | null): string {
  return s === null ? 'n/a' : fmtMs(s * 1e9);
}

function peakText(r: RunRow): string {
  const b = r.peakReservedBytes ?? r.maxProcessNvmlBytes;
  return b === null ? 'n/a' : fmtBytes(b);
}

function outcomeClass(outcome: string): string {
  return outcome === 'completed' || outcome === 'stopped-after-steps' ? 'ok' : outcome === 'interrupted' ? 'warn' : 'bad';
}

export function runsListPage(rows: RunListRow[], store: string, live: { id: string; command: string[]; client?: string; steps?: number }[] = []): string {
  const liveRows = live.length
    ? `<div class="card" id="in-progress"><b>In progress</b><ul>${live.map((l) => `<li><a href="run?id=${enc(l.id)}">${esc(shortCommand(l.command, 80))}</a> <span class="dim">(live${l.client ? `, ${esc(l.client)}` : ''}${l.steps !== undefined ? `, ${l.steps} steps` : ''})</span></li>`).join('')}</ul></div>`
    : '';
  const body =
    rows.length === 0
      ? `<p class="dim">No runs in ${esc(store)} yet. <code>gpuwise doctor -- python train.py</code> saves each run here.</p>`
      : `<form method="get" action="compare" id="compare-form">
<div class="tw"><table id="runs"><thead><tr><th>A</th><th>B</th><th>run</th><th>started</th><th>outcome</th><th>command</th><th class="num">median step</th><th class="num">throughput</th><th class="num">peak memory</th><th>findings</th></tr></thead><tbody>
${rows
  .map(
    (r, i) =>
      `<tr><td><input type="radio" name="a" value="${esc(r.id)}"${i === 1 ? ' checked' : ''}></td><td><input type="radio" name="b" value="${esc(r.id)}"${i === 0 ? ' checked' : ''}></td><td><a href="run?id=${enc(r.id)}">${esc(r.id)}</a></td><td>${esc(whenText(r.startedAtMs))}</td><td class="${outcomeClass(r.outcome)}">${esc(r.outcome)}</td><td class="long"><code>${esc(shortCommand(r.command, 60))}</code></td><td class="num">${esc(stepText(r.medianStepS))}</td><td class="num">${esc(throughputText(r))}</td><td class="num">${esc(peakText(r))}</td><td>${esc(findingsText(r.findings))}</td></tr>`,
  )
  .join('\n')}
</tbody></table></div>
<p><button type="submit"${rows.length < 2 ? ' disabled' : ''}>Compare A → B</button> <span class="dim">${rows.length} run(s) in ${esc(store)}</span></p></form>`;
  return page({ title: 'Runs', section: 'runs', body: `<h1>Runs</h1>${liveRows}${body}` });
}

/**
 * A finding's card: the parts of report/findingText.ts (the one format of a finding) in its order: severity and
 * title with the tag, what the fix gives, how, the evidence, the fix and its code.
 */
export function findingHtml(f: ShownFinding, i: number): string {
  const p = findingParts(f);
  return `<div class="card finding" data-id="${esc(p.id)}"><div><span class="sev sev-${p.severity}">${p.severity.toUpperCase()}</span> <b>${i + 1}. ${esc(p.title)}</b> <span class="dim">[${esc([p.id, ...p.tags].join(', '))}]</span></div>
${p.gain ? `<div><b>${p.gain.label}:</b> ${esc(p.gain.text)}</div>` : ''}${p.how ? `<div class="dim">how: ${esc(p.how)}</div>` : ''}
<ul>${p.evidence.map((e) => `<li>${esc(e)}</li>`).join('')}</ul>
<div><b>fix:</b> ${esc(p.fix)}</div>${p.code ? `<pre><code>${esc(p.code)}</code></pre>` : ''}</div>`;
}

/**
 * What fixing the top finding gives, as a verdict says it: the step before and after. A share saved rounds to
 * "−100%" when the step is nearly all waiting, which reads as a step of no time; the expected step cannot.
 */
export function verdictGainText(g: EstimatedGain): string {
  return `fixing it: ${fmtMs(g.stepTimeNs)} → ${fmtMs(g.expectedStepTimeNs)} ${g.batchScale ? PER_RUN_BATCH : 'per step'}`;
}

/** The one line a person reads first: how the run ended and what limits it most. */
export function verdictText(r: DoctorReport): string {
  const top = r.findings[0];
  if (r.run.outcome === 'out-of-memory' || r.run.outcome === 'crashed' || r.run.outcome === 'failed' || r.run.outcome === 'hung') return r.run.outcomeText;
  if (!top) return `${r.run.outcomeText} Nothing to fix was found.`;
  return `${top.title}${top.estimatedGain ? ` (${verdictGainText(top.estimatedGain)})` : ''}`;
}

/** Chart data the run page draws with uPlot: step time per step (per process) and GPU memory/utilisation over time. */
export interface RunChartData {
  steps: { label: string; step: number[]; stepMs: (number | null)[]; waitMs: number[] }[];
  gpus: { label: string; tS: number[]; usedGiB: (number | null)[]; util: (number | null)[] }[];
}

export function runChartData(r: DoctorReport): RunChartData {
  return {
    steps: r.ranks
      .filter((x) => x.stepTimeline && x.stepTimeline.step.length > 1)
      .map((x) => {
        const tl = x.stepTimeline!;
        // The first step is warm-up (allocation, autotuning): left out, as the report's own chart does.
        return {
          label: x.rankFromEnv ? `rank ${x.rank}` : `pid ${x.pid}`,
          step: tl.step.slice(1),
          stepMs: tl.stepTimeS.slice(1).map((v) => (v === null ? null : v * 1e3)),
          waitMs: tl.dataWaitS.slice(1).map((v) => v * 1e3),
        };
      }),
    gpus: (r.gpus ?? []).map((g) => ({
      label: `GPU ${g.index}`,
      tS: g.timeline.tS,
      usedGiB: g.timeline.usedBytes.map((v) => (v === null ? null : v / 1024 ** 3)),
      util: g.timeline.utilizationPercent,
    })),
  };
}

function figuresHtml(r: DoctorReport): string {
  const figs: [string, string][] = [];
  for (const x of r.ranks.slice(0, 4)) {
    const who = r.ranks.length > 1 ? ` (${x.rankFromEnv ? `rank ${x.rank}` : `pid ${x.pid}`})` : '';
    figs.push([`median step${who}`, stepText(x.steps.medianS)]);
    const decode = x.steps.decode;
    if (decode?.tokensPerS) figs.push([`tokens generated/s${who}`, fmtRate(decode.tokensPerS)]);
    else if (x.steps.samplesPerS !== null) figs.push([`samples/s${who}`, x.steps.samplesPerS.toFixed(x.steps.samplesPerS < 100 ? 1 : 0)]);
    if (decode?.decodeStepS) figs.push([`decode step${who}`, stepText(decode.decodeStepS)]);
    if (x.steps.dataWaitShare !== null) figs.push([`DataLoader wait${who}`, fmtPct(x.steps.dataWaitShare)]);
    if (x.allocator) figs.push([`peak reserved${who}`, fmtBytes(x.allocator.peakReservedBytes)]);
  }
  figs.push(['duration', `${r.run.durationS.toFixed(1)} s`]);
  return figs.map(([k, v]) => `<span class="fig"><span class="dim">${esc(k)}</span><b>${esc(v)}</b></span>`).join('');
}

export const RUN_PAGE_JS = `
(function () {
  var d = JSON.parse(document.getElementById('gw-data').textContent);
  var c = d.charts;
  if (c.steps.length) {
    var xs = c.steps[0].step, data = [xs], series = [];
    c.steps.forEach(function (s, i) {
      if (s.step.length !== xs.length) return;
      data.push(s.stepMs); series.push({ label: s.label + ' step', color: gw.color(i) });
      if (s.waitMs.some(function (v) { return v > 0; })) { data.push(s.waitMs); series.push({ label: s.label + ' DataLoader wait', color: gw.color(i), dash: true }); }
    });
    gw.chart(document.getElementById('chart-steps'), { xLabel: 'step (the first, warm-up, left out)', yLabel: 'step time', series: series, data: data, yFmt: gw.fmt.ms });
  }
  c.gpus.forEach(function (g, i) {
    var el = document.createElement('div'); el.className = 'chart gpu-chart';
    document.getElementById('chart-gpus').appendChild(el);
    gw.chart(el, { xLabel: 's since start', xName: 's', yLabel: g.label, series: [{ label: 'memory used (GiB)' }, { label: 'utilisation %', dash: true }],
      data: [g.tS, g.usedGiB, g.util], height: 160 });
  });
})();
`

/** The planner's what-ifs calibrated on the run, one row each, with what the run's setup showed and suggests. */
function whatIfsHtml(r: DoctorReport): string {
  // A saved report is read back loosely: only the entries with a title and a text (whatIfsOf), the rest optional.
  const w = whatIfsOf(r) as (ReturnType<typeof whatIfsOf>[number] & Partial<NonNullable<DoctorReport['whatIfs']>[number]>)[];
  const setup = [...setupFacts(r), ...setupGuesses(r)];
  if (w.length === 0) return r.whatIfProblem ? `<h2>What if</h2><p class="dim">${esc(r.whatIfProblem)}</p>` : '';
  return `<h2>What if <span class="dim">(the planner, calibrated on this run)</span></h2>${scrollBox(`<table id="what-ifs"><thead><tr><th>change</th><th>fits</th><th class="num">throughput</th><th>what it gives</th><th>fix</th></tr></thead><tbody>${w
    .map(
      (x) =>
        `<tr><td>${esc(x.title)}</td><td class="${x.fits === false ? 'bad' : 'ok'}">${x.fits === false ? 'no' : x.fits ? 'yes' : 'n/a'}</td><td class="num">${typeof x.throughputFactor === 'number' ? `${x.throughputFactor.toFixed(2)}x` : 'n/a'}</td><td>${esc(x.text)}</td><td>${esc(typeof x.recommendation?.summary === 'string' ? x.recommendation.summary : '')}</td></tr>`,
    )
    .join('')}</tbody></table>`)}${setup.length ? `<ul class="dim">${setup.map((l) => `<li>${esc(l)}</li>`).join('')}</ul>` : ''}`;
}

function verdictClass(r: DoctorReport): string {
  const o = outcomeClass(r.run.outcome);
  if (o !== 'ok') return o;
  const sev = r.findings[0]?.severity;
  return sev === 'high' ? 'bad' : sev === 'medium' ? 'warn' : 'ok';
}

/** The ranks of a multi-rank run side by side, and the stalled ranks of a hang. */
function ranksSection(r: DoctorReport): string {
  const parts: string[] = [];
  const dt = distributedTable(r);
  if (dt) {
    parts.push('<h2>Ranks compared</h2>', `<p>${esc(dt.summary)}</p>`, table(dt.head, dt.rows, 'ranks'));
    if (dt.why.length) parts.push(`<ul>${dt.why.map((w) => `<li>${esc(w)}</li>`).join('')}</ul>`);
  }
  const hl = hangLines(r);
  if (hl) parts.push(`<h2>${r.run.outcome === 'hung' ? 'Hang' : 'Stalls'}</h2>`, `<p class="bad">${esc(hl.head)}</p>`, `<ul>${hl.ranks.map((l) => `<li><code>${esc(l)}</code></li>`).join('')}</ul>`);
  return parts.join('\n');
}

function stepsSection(r: DoctorReport, charts: RunChartData): string {
  if (r.ranks.length === 0) return '<h2>Step time</h2><p class="dim">no process of the command reported a step</p>';
  const rows = r.ranks.map((x) => {
    const s = x.steps;
    return [
      rankShort(x),
      String(s.steps),
      String(s.measuredSteps),
      fmtStepS(s.medianS),
      fmtStepS(s.meanS),
      fmtStepS(s.p90S),
      fmtStepS(s.minS),
      fmtStepS(s.maxS),
      s.dataWaitShare === null ? 'n/a' : fmtPct(s.dataWaitShare),
      fmtRate(s.samplesPerS),
      s.decode?.tokensPerS
        ? `${fmtRate(s.decode.tokensPerS)} generated`
        : s.tokensPerS === null || s.tokensPerS === undefined
          ? 'n/a'
          : `${fmtRate(s.tokensPerS)} (seq ${s.seqLen ?? '?'})`,
    ];
  });
  const notes = r.ranks.flatMap((x) => {
    const n = [decodeText(x), stepSourceNote(x), hostCpuNote(x), stallNote(x)].filter((t) => t !== null).join('; ');
    return n ? [`<p class="dim">${esc(rankShort(x))}: ${esc(n)}</p>`] : [];
  });
  const first = charts.steps[0];
  const chart = first
    ? `<div id="chart-steps" class="chart"></div>${noscriptTable(
        `step time per step (${first.label}; the chart needs JavaScript)`,
        ['step', 'step time', 'DataLoader wait'],
        spread(first.step.length, 12).map((i) => [String(first.step[i]), first.stepMs[i] == null ? 'n/a' : fmtMs((first.stepMs[i] as number) * 1e6), fmtMs((first.waitMs[i] ?? 0) * 1e6)]),
      )}`
    : '<p class="dim">no per-step timeline (fewer than two steps, or a report from an older gpuwise)</p>';
  return `<h2>Step time</h2>${table(['process', 'steps', 'measured', 'median', 'mean', 'p90', 'min', 'max', 'DataLoader wait', 'samples/s', 'tokens/s'], rows, 'steps', ['text', ...Array<ColumnKind>(10).fill('num')])}
<p class="dim">Statistics leave out the first step (warm-up) and the profiled steps.</p>${notes.join('')}
<div class="card">${chart}</div>`;
}

function memorySection(r: DoctorReport, charts: RunChartData): string {
  const parts: string[] = ['<h2>GPU memory</h2>'];
  const withMem = r.ranks.filter((x) => x.allocator || x.nvmlUsedBytes !== null);
  if (withMem.length)
    parts.push(
      table(
        ['process', 'device', 'allocated (peak)', 'reserved (peak)', 'seen by NVML', 'allocation retries', 'OOMs'],
        withMem.map((x) => {
          const a = x.allocator;
          return [
            rankShort(x),
            a ? `cuda:${a.device}` : '?',
            a ? `${fmtBytes(a.allocatedBytes)} (${fmtBytes(a.peakAllocatedBytes)})` : 'n/a',
            a ? `${fmtBytes(a.reservedBytes)} (${fmtBytes(a.peakReservedBytes)})` : 'n/a',
            fmtBytesOr(x.nvmlUsedBytes),
            a ? String(a.allocRetries) : 'n/a',
            a ? String(a.ooms) : 'n/a',
          ];
        }),
        'memory',
        ['text', 'text', 'num', 'num', 'num', 'num', 'num'],
      ),
    );
  for (const x of withMem) {
    const line = nvmlBesideAllocator(x);
    if (line) parts.push(`<p>${esc(rankShort(x))}: ${esc(line)}</p>`);
  }
  for (const x of r.ranks) {
    if (x.oom)
      parts.push(
        `<p class="bad">${esc(rankLabel(x))}: out of memory in step ${x.oom.step}: asked ${esc(fmtBytes(x.oom.allocBytes))} with ${esc(fmtBytes(x.oom.deviceFreeBytes))} free${x.oom.snapshot ? `; snapshot <code>${esc(x.oom.snapshot)}</code>` : ''}</p>`,
      );
    if (x.exception)
      parts.push(`<p class="bad">${esc(rankLabel(x))}: exception in step ${x.exception.step + 1}: <code>${esc(`${x.exception.name}: ${x.exception.message.split('\n')[0] ?? ''}`)}</code></p>`);
  }
  if (!r.gpus?.length) {
    parts.push(`<p class="dim">No GPU samples${r.gpuUnavailableReason ? ` (${esc(r.gpuUnavailableReason)})` : ''}</p>`);
    return parts.join('\n');
  }
  parts.push(
    table(
      ['GPU', 'name', 'samples', 'memory used (max)', 'utilisation mean', 'utilisation max'],
      r.gpus.map((g) => [
        String(g.index),
        g.name,
        String(g.samples),
        `${fmtBytesOr(g.maxUsedBytes)}${g.totalBytes ? ` of ${fmtGpuMemory(g.totalBytes)}` : ''}`,
        g.meanUtilizationPercent === null ? 'n/a' : `${g.meanUtilizationPercent.toFixed(0)}%`,
        g.maxUtilizationPercent === null ? 'n/a' : `${g.maxUtilizationPercent}%`,
      ]),
      'gpus',
      ['num', 'text', 'num', 'num', 'num', 'num'],
    ),
    '<h3>GPU memory and utilisation over time</h3><div class="card grid" id="chart-gpus"></div>',
    ...charts.gpus.map((g) =>
      noscriptTable(
        `${g.label} over time (the chart needs JavaScript)`,
        ['s since start', 'memory used', 'utilisation'],
        spread(g.tS.length, 12).map((i) => [String(Math.round(g.tS[i] ?? 0)), g.usedGiB[i] == null ? 'n/a' : `${(g.usedGiB[i] as number).toFixed(1)} GiB`, g.util[i] == null ? 'n/a' : `${g.util[i]}%`]),
      ),
    ),
  );
  const procRows = gpuProcessRows(r);
  if (procRows.length) parts.push('<h3>Processes on the GPUs</h3>', table(GPU_PROCESS_COLUMNS, procRows, 'gpu-processes'), `<p class="dim">${esc(GPU_PROCESS_NOTE)}</p>`);
  return parts.join('\n');
}

function capturesSection(r: DoctorReport): string {
  const items: string[] = [];
  const traces = r.profile?.traces ?? [];
  if (traces.length === 0) items.push('<li>no profiler trace (the run ended before the profiled steps, or profiling was off)</li>');
  for (const t of traces) items.push(`<li>trace (rank ${t.rank}) <code>${esc(t.path)}</code>${t.error ? `: not analysed (${esc(t.error)})` : ''}</li>`);
  for (const x of r.profile?.snapshots ?? [])
    items.push(`<li>${x.kind === 'oom' ? 'out-of-memory snapshot' : 'memory snapshot'} (rank ${x.rank}) <code>${esc(x.path)}</code>${x.error ? `: not analysed (${esc(x.error)})` : ''}</li>`);
  return `<h2>Captured window</h2><ul>${items.join('')}</ul>`;
}

export interface RunPageOptions {
  /** The run's id in the history (links to its JSON); null for a report written to a file. */
  id: string | null;
  /** One self-contained file (`doctor --html`, `runs show --html`, the notebook's cell): everything inline. */
  standalone?: InlineAssets;
}

/**
 * A doctor report as a page: the run page of `gpuwise serve` and, standalone, the `--html` file. Verdict first,
 * then what to do (the plan), the findings ranked, the what-ifs, step time (table and chart), GPU memory and utilisation (tables and
 * charts), environment, model, the captured window, notes, and what sets the pace.
 */
export function runPage(r: DoctorReport, o: RunPageOptions): string {
  const charts = runChartData(r);
  const findings = r.findings.length ? r.findings.map(findingHtml).join('\n') : '<p class="dim">no findings</p>';
  const ml = modelLine(r);
  const pl = planModelLine(r);
  const title = o.id === null ? 'gpuwise doctor' : `Run ${o.id}`;
  const body = `<h1>${esc(title)}</h1>
<div class="card"><div class="verdict ${verdictClass(r)}" id="verdict">${esc(verdictText(r))}</div>
<div class="dim">${esc(r.run.outcomeText)} <code>${esc(r.run.command.join(' '))}</code></div><div style="margin-top:8px">${figuresHtml(r)}</div></div>
${planFirstHtml({ plan: r.pace?.plan, findings: r.findings, stepName: RUN_STEP_NAME, measuredHere: r.measuredHere, from: 'run' })}
<h2>Findings, ranked</h2><div id="findings">${findings}</div>
${whatIfsHtml(r)}
${stepsSection(r, charts)}
${ranksSection(r)}
${memorySection(r, charts)}
<h2>Environment</h2>${table(null, [...environmentRows(r), ...(ml ? [['model', ml] as [string, string]] : [])], 'environment')}
${pl ? `<h2>Model</h2><p>${esc(pl.replace(/`/g, ''))}</p>` : ''}
${capturesSection(r)}
${r.notes?.length ? `<h2>Notes</h2><ul>${r.notes.map((n) => `<li>${esc(n)}</li>`).join('')}</ul>` : ''}
${paceHtml(r.pace, r.ranks.length)}
<p class="dim">ran ${esc(durationText(r.run.durationS))} from ${esc(new Date(r.run.startedAtMs).toISOString())} · run directory <code>${esc(r.run.runDir)}</code> · doctor report schema ${r.schemaVersion} · gpuwise ${esc(r.version)}${
    o.id === null || o.standalone ? '' : ` · <a href="run-report?id=${enc(o.id)}">this page as one file</a> · <a href="api/run?id=${enc(o.id)}">JSON</a>`
  }</p>`;
  return page({
    title: o.id === null ? `doctor: ${r.run.command.join(' ')}` : title,
    section: 'runs',
    body,
    data: { charts },
    scripts: [RUN_PAGE_JS],
    standalone: o.standalone ? { assets: o.standalone, what: 'doctor report' } : undefined,
  });
}

/** The doctor report as one self-contained HTML file (doctor --html, runs show --html, the run directory's report.html). */
export function renderDoctorHtml(r: DoctorReport, assets: InlineAssets): string {
  return runPage(r, { id: null, standalone: assets });
}

/** A compared figure's row, worded as `gpuwise compare` words it (history/render.ts). */
function figureRow(f: ComparedFigure): string {
  const cls = f.better === true ? 'ok' : f.better === false ? 'bad' : 'dim';
  return `<tr><td>${esc(f.label)}${f.unit ? ` <span class="dim">(${esc(f.unit)})</span>` : ''}</td><td class="num">${esc(f.before)}</td><td class="num">${esc(f.after)}</td><td class="num ${cls}">${esc(f.change ?? '')}</td></tr>`;
}

export const COMPARE_PAGE_JS = `
(function () {
  var d = JSON.parse(document.getElementById('gw-data').textContent);
  var a = d.a.steps[0], b = d.b.steps[0];
  if (!a || !b) return;
  // Both runs on one axis of step numbers (their own steps; a missing step is a gap).
  var n = Math.max(a.step[a.step.length - 1], b.step[b.step.length - 1]), xs = [], ya = [], yb = [];
  var ma = {}, mb = {};
  a.step.forEach(function (s, i) { ma[s] = a.stepMs[i]; }); b.step.forEach(function (s, i) { mb[s] = b.stepMs[i]; });
  for (var s = 2; s <= n; s++) { xs.push(s); ya.push(s in ma ? ma[s] : null); yb.push(s in mb ? mb[s] : null); }
  gw.chart(document.getElementById('chart-compare'), { xLabel: 'step', yLabel: 'step time', series: [{ label: 'A ' + d.aLabel }, { label: 'B ' + d.bLabel }], data: [xs, ya, yb], yFmt: gw.fmt.ms });
})();
`

export function comparePage(c: RunComparison, a: DoctorReport, b: DoctorReport): string {
  const runCell = (r: RunComparison['a']) =>
    `${r.id ? `<a href="run?id=${enc(r.id)}">${esc(r.label)}</a>` : esc(r.label)} <span class="dim">${esc(whenText(r.startedAtMs))}</span> <span class="${outcomeClass(r.outcome)}">${esc(r.outcome)}</span><br><code>${esc(r.command.join(' '))}</code>`;
  const body = `<h1>Compare</h1>
<div class="card"><div><b>A</b> ${runCell(c.a)}</div><div style="margin-top:6px"><b>B</b> ${runCell(c.b)}</div></div>
${headlineLines(c).length ? `<div class="card" id="compare-headline">${headlineLines(c).map((l) => `<div>${esc(l)}</div>`).join('')}</div>` : ''}
<div class="tw"><table id="compare-figures"><thead><tr><th>figure</th><th class="num">A</th><th class="num">B</th><th class="num">change</th></tr></thead><tbody>
${[...stepFigures(c), ...memoryFigures(c)].map(figureRow).join('\n')}</tbody></table></div>
<h2>Findings</h2><div class="tw"><table id="compare-findings"><thead><tr><th>finding</th><th>status</th><th>A</th><th>B</th></tr></thead><tbody>
${c.findings
  .map(
    (f) =>
      `<tr><td>${esc(f.id)}</td><td class="${f.status === 'gone' ? 'ok' : f.status === 'new' ? 'bad' : 'dim'}">${f.status}</td><td>${f.before ? `<span class="sev sev-${f.before.severity}">${f.before.severity}</span> ${esc(f.before.title)}` : ''}</td><td>${f.after ? `<span class="sev sev-${f.after.severity}">${f.after.severity}</span> ${esc(f.after.title)}` : ''}</td></tr>`,
  )
  .join('\n')}</tbody></table></div>
${c.environment.length ? `<h2>Environment</h2>${scrollBox(`<table><tbody>${c.environment.map((e) => `<tr><td>${esc(e.field)}</td><td>${esc(e.before ?? 'n/a')}</td><td>${esc(e.after ?? 'n/a')}</td></tr>`).join('')}</tbody></table>`)}` : ''}
<h2>Step time, both runs</h2><div class="card"><div id="chart-compare" class="chart"></div></div>`;
  return page({
    title: 'Compare',
    section: 'runs',
    body,
    data: { a: runChartData(a), b: runChartData(b), aLabel: c.a.label, bLabel: c.b.label },
    scripts: [COMPARE_PAGE_JS],
  });
}

export const LIVE_RUN_JS = `
(function () {
  var d = JSON.parse(document.getElementById('gw-data').textContent);
  var xs = [], ys = [], ws = [], u = null, n = 0, status = document.getElementById('run-status');
  var mx = [], mr = [], ma = [], um = null, memEl = document.getElementById('chart-memory');
  function add(s) { n = Math.max(n, s.step);
    // The allocator's memory (CUDA only) after each step, step 1 included: it is where memory grows.
    if (s.reservedBytes != null) { mx.push(s.step); mr.push(s.reservedBytes / 1073741824); ma.push(s.allocatedBytes == null ? null : s.allocatedBytes / 1073741824); }
    if (s.stepTimeS == null || s.step <= 1) return; // step 1 is warm-up (allocation, autotuning)
    xs.push(s.step); ys.push(s.stepTimeS * 1000); ws.push(s.dataWaitS * 1000); }
  d.steps.forEach(add);
  function draw() {
    if (!u && xs.length) u = gw.chart(document.getElementById('chart-steps'), { xLabel: 'step (the first, warm-up, left out)', yLabel: 'step time', series: [{ label: 'step time' }, { label: 'DataLoader wait', dash: true }], data: [xs, ys, ws], yFmt: gw.fmt.ms });
    else if (u) { u.setData([xs, ys, ws]); document.getElementById('chart-steps').setAttribute('data-drawn', String(xs.length)); }
    if (mx.length) { memEl.parentNode.hidden = false;
      if (!um) um = gw.chart(memEl, { xLabel: 'step', yLabel: 'allocator', series: [{ label: 'reserved' }, { label: 'allocated', dash: true }], data: [mx, mr, ma], yFmt: gw.fmt.gib, height: 160 });
      else { um.setData([mx, mr, ma]); memEl.setAttribute('data-drawn', String(mx.length)); } }
    document.getElementById('steps-seen').textContent = String(n);
  }
  draw();
  var es = new EventSource('api/runs/live/stream?id=' + encodeURIComponent(d.id));
  es.addEventListener('step', function (e) { add(JSON.parse(e.data)); draw(); });
  es.addEventListener('end', function (e) {
    var x = JSON.parse(e.data); es.close();
    if (x.runId == null) { status.textContent = 'finished; the run was not saved in the history (its client says why)'; return; }
    status.innerHTML = 'finished: <a href="run?id=' + encodeURIComponent(x.runId) + '">the report</a>';
    // The report replaces the live view (a reload of this page also leads there).
    setTimeout(function () { location.replace('run?id=' + encodeURIComponent(x.runId)); }, 1500);
  });
})();
`

/** One step of a run in progress, as its page receives it. */
export interface LiveStep {
  step: number;
  stepTimeS: number | null;
  dataWaitS: number;
  pid: number;
  rank: number | null;
  reservedBytes: number | null;
  allocatedBytes: number | null;
}

/** The page of a run in progress: its steps so far, then each new one from the run's event stream. */
export function runInProgressPage(id: string, command: string[], steps: LiveStep[], client = 'notebook'): string {
  const body = `<h1>Run in progress <span class="dim">(${esc(client === 'doctor' ? 'gpuwise doctor' : 'notebook cell')})</span></h1><div class="card"><div class="verdict" id="run-status">running: <span id="steps-seen">0</span> steps so far</div><div class="dim"><code>${esc(command.join(' '))}</code></div></div>
<h2>Step time</h2><div class="card"><div id="chart-steps" class="chart"></div></div>
<div hidden><h2>Memory (the allocator's, after each step)</h2><div class="card"><div id="chart-memory" class="chart"></div></div></div>
<p class="dim">The findings come when the run ends: they need the profiler window and the whole run.</p>`;
  return page({ title: 'Run in progress', section: 'runs', body, data: { id, steps }, scripts: [LIVE_RUN_JS] });
}
