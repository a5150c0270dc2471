/**
 * analyze's report as a page (pure): the trace page of serve's Reports and, standalone, `gpuwise analyze --html`,
 * one design. Verdict first, the findings ranked (evidence, estimate, fix), the step split by cause per rank, then
 * each rank's figures: where a step goes (a uPlot bar per step), GPU busy over time (uPlot), kernel time by kind,
 * matmul precision, launches, copies, communication, memory, the top kernels and GEMM shapes.
 */
import { CATEGORY_NAMES } from '../../trace/kernelClass.js';
import { IDLE_CAUSES, type TraceMetrics } from '../../trace/metrics/types.js';
import type { AnalyzeReport } from '../../report/analyzeReport.js';
import { IDLE_LABELS } from '../../report/terminal.js';
import { fmtInt, fmtBytes, fmtGpuMemory, fmtMs, fmtPct, fmtWindow } from '../../util/format.js';
import { type InlineAssets, enc, esc, noscriptTable, page, scrollBox, spread, table } from './layout.js';
import { flopsLeftOut, flopsSplit, mfuText } from '../../report/flopsText.js';
import { findingHtml, verdictGainText } from './runs.js';
import { paceHtml, planFirstHtml } from './pace.js';


/** Busy first, then the idle causes, in one fixed order and colour everywhere on the page. */
const PARTS = ['busy', ...IDLE_CAUSES] as const;
const PART_COLORS: Record<(typeof PARTS)[number], string> = {
  busy: '#2e7d32',
  dataloader: '#e53935',
  hostSync: '#8e24aa',
  h2dCopy: '#fb8c00',
  communication: '#00897b',
  launch: '#1e88e5',
  other: '#9e9e9e',
};
const partLabel = (k: (typeof PARTS)[number]) => (k === 'busy' ? 'GPU busy' : `idle: ${IDLE_LABELS[k]}`);
const CAT_COLORS = ['#1565c0', '#6a1b9a', '#283593', '#00897b', '#558b2f', '#ef6c00', '#1e88e5', '#f9a825', '#bdbdbd', '#757575'];

/** At most this many steps per rank go to the browser (evenly spread; the tables give the means). */
const MAX_STEPS = 2000;

/** What the page script draws, per rank: each step split busy/idle by cause (ms), and GPU busy over time. */
export interface AnalyzeChartData {
  parts: { label: string; color: string }[];
  ranks: { rank: number; step: number[]; ms: number[][]; busyTMs: number[]; busyPct: number[] }[];
}

export function analyzeChartData(r: AnalyzeReport): AnalyzeChartData {
  return {
    parts: PARTS.map((k) => ({ label: partLabel(k), color: PART_COLORS[k] })),
    ranks: r.metrics.ranks.map((m) => {
      const steps = spread(m.steps.length, MAX_STEPS).map((i) => m.steps[i]!);
      // One GPU's view of a step: the mean over the devices of this rank that ran work, as the report's perStep.
      const ms = PARTS.map((k) =>
        steps.map((s) => {
          const n = Math.max(1, s.devices.length);
          const ns = s.devices.reduce((a, d) => a + (k === 'busy' ? d.busyNs : d.idleByCauseNs[k]), 0) / n;
          return Math.round(ns / 1e3) / 1e3;
        }),
      );
      return {
        rank: m.rank,
        step: steps.map((s) => s.step),
        ms,
        busyTMs: m.timeline.map((b) => Math.round((b.startNs - (m.timeline[0]?.startNs ?? 0)) / 1e3) / 1e3),
        busyPct: m.timeline.map((b) => Math.round(b.busyShare * 1000) / 10),
      };
    }),
  };
}

export const ANALYZE_PAGE_JS = `
(function () {
  var d = JSON.parse(document.getElementById('gw-data').textContent);
  d.ranks.forEach(function (r) {
    var el = document.getElementById('chart-steps-' + r.rank);
    if (el && r.step.length) gw.chart(el, { xLabel: 'step', yLabel: 'per step', bars: true, stacked: true, yFmt: gw.fmt.ms,
      series: d.parts.map(function (p) { return { label: p.label, color: p.color }; }), data: [r.step].concat(r.ms), height: 220 });
    var b = document.getElementById('chart-busy-' + r.rank);
    if (b && r.busyTMs.length > 1) gw.chart(b, { xLabel: 'ms since the first step', xName: 'ms', yLabel: 'GPU busy', yRange: [0, 100], yFmt: gw.fmt.pct,
      series: [{ label: 'GPU busy', color: '${PART_COLORS.busy}', fill: 'rgba(46,125,50,.25)' }], data: [r.busyTMs, r.busyPct], height: 140 });
  });
})();
`;

function shareBar(share: number, color: string): string {
  return `<div class="hb" style="width:${Math.max(0, Math.min(100, share * 100)).toFixed(1)}%;background:${color}"></div>`;
}

/** Step time per rank split by cause: busy, then each idle cause (one stacked bar per rank, no script needed). */
export function stepBreakdownHtml(r: AnalyzeReport): string {
  const rows = r.metrics.ranks.map((m) => {
    const total = Math.max(1, m.perStep.durNs);
    const parts = PARTS.map((k) => [k, k === 'busy' ? m.perStep.busyNs : m.perStep.idleByCauseNs[k]] as const).filter(([, v]) => v > 0);
    const bar = parts.map(([k, v]) => `<i title="${esc(partLabel(k))} ${esc(fmtMs(v))}" style="width:${((100 * v) / total).toFixed(2)}%;background:${PART_COLORS[k]}"></i>`).join('');
    const legend = parts
      .filter(([, v]) => v / total >= 0.005)
      .map(([k, v]) => `<span class="sw" style="background:${PART_COLORS[k]}"></span>${esc(partLabel(k))} ${esc(fmtMs(v))} (${esc(fmtPct(v / total))})`)
      .join(' &nbsp; ');
    return `<tr class="rank-row"><td><a href="#rank-${m.rank}">rank ${m.rank}</a></td><td class="num">${m.steps.length}</td><td class="num">${esc(fmtMs(m.stepTime.medianNs))}</td><td class="num">${esc(fmtPct(m.gpuBusyShare))}</td><td style="width:55%"><div class="stack">${bar}</div><div class="dim" style="font-size:12px">${legend}</div></td></tr>`;
  });
  return scrollBox(`<table id="step-breakdown"><thead><tr><th>rank</th><th class="num">steps</th><th class="num">median step</th><th class="num">GPU busy</th><th>mean step split by cause</th></tr></thead><tbody>${rows.join('')}</tbody></table>`);
}

function whereAStepGoes(m: TraceMetrics): string {
  const total = m.perStep.busyNs + m.perStep.idleNs || 1;
  const rows = PARTS.map((k) => [k, k === 'busy' ? m.perStep.busyNs : m.perStep.idleByCauseNs[k]] as const)
    .filter(([k, v]) => v > 0 || k === 'busy')
    .map(([k, v]) => `<tr><td class="key"><span class="sw" style="background:${PART_COLORS[k]}"></span>${esc(partLabel(k))}</td><td class="num">${esc(fmtMs(v))}</td><td class="num">${esc(fmtPct(v / total))}</td><td class="bar-cell">${shareBar(v / total, PART_COLORS[k])}</td></tr>`);
  return scrollBox(`<table class="parts"><thead><tr><th>mean per step</th><th class="num">time</th><th class="num">share</th><th></th></tr></thead><tbody>${rows.join('')}</tbody></table>`);
}

function kindsTable(m: TraceMetrics): string {
  const cats = CATEGORY_NAMES.map((c, i) => ({ c, v: m.perStep.kernelNsByCategory[c], color: CAT_COLORS[i]! }))
    .filter((x) => x.v > 0)
    .sort((a, b) => b.v - a.v);
  if (cats.length === 0) return '<p class="dim">no kernels in the analysed steps</p>';
  const total = cats.reduce((a, x) => a + x.v, 0) || 1;
  return scrollBox(`<table class="kinds"><thead><tr><th>kind</th><th class="num">per step</th><th class="num">share</th><th></th></tr></thead><tbody>${cats
    .map((x) => `<tr><td class="key"><span class="sw" style="background:${x.color}"></span>${esc(x.c)}</td><td class="num">${esc(fmtMs(x.v))}</td><td class="num">${esc(fmtPct(x.v / total))}</td><td class="bar-cell">${shareBar(x.v / total, x.color)}</td></tr>`)
    .join('')}</tbody></table>`);
}

function precisionTable(m: TraceMetrics): string {
  const p = m.precision;
  const rows = [
    ['tensor cores, bf16/fp16', fmtMs(p.tensorCore16Ns)],
    ['tensor cores, tf32', fmtMs(p.tensorCoreTf32Ns)],
    ['tensor cores, fp8/int8', fmtMs(p.tensorCore8Ns)],
    ['fp32 (no tensor cores)', fmtMs(p.fp32Ns)],
    ['precision unknown', fmtMs(p.unknownNs)],
    ['tensor-core share of known-precision matmul time', p.tensorCoreShare === null ? 'n/a' : fmtPct(p.tensorCoreShare)],
  ];
  const fp32 = p.topFp32Kernels.length
    ? `<p class="dim">the fp32 matmul kernels taking most time (count and total ${fmtWindow(m.steps.length)})</p>${table(['kernel', 'count', 'total', 'mean'], p.topFp32Kernels.map((k) => [k.name, String(k.count), fmtMs(k.totalNs), fmtMs(k.meanNs)]), undefined, ['long', 'num', 'num', 'num'])}`
    : '';
  return `${table([`matmul time (GEMM, convolution, attention) by precision, ${fmtWindow(m.steps.length)}`, ''], rows, undefined, ['text', 'num'])}${fp32}`;
}

function otherFigures(m: TraceMetrics): string {
  const l = m.launch;
  const win = fmtWindow(m.steps.length);
  const rows: string[][] = [
    ['launches', `${l.kernelsPerStep.toFixed(0)} kernels per step, median kernel ${fmtMs(l.medianKernelNs)}, CPU ahead by ${fmtMs(l.medianLaunchToStartNs)} (median), ${fmtPct(l.shorterThanLaunchFraction)} of kernels shorter than their launch; ${win}: CPU in launch calls ${fmtMs(l.cpuLaunchNs)} vs GPU kernels ${fmtMs(l.gpuKernelNs)}`],
  ];
  const mf = m.modelFlops;
  if (mf !== null)
    rows.push([
      'model FLOPs',
      `${mfuText(mf)} (${flopsSplit(mf)} per median step${flopsLeftOut(mf) ? `; ${flopsLeftOut(mf)}: a floor` : ''})`,
    ]);
  for (const c of m.copies) rows.push([`memcpy ${c.kind}`, `${win}: ${c.count} copies, ${fmtBytes(c.bytes)}, ${fmtMs(c.durNs)}, ${c.bandwidthGBs.toFixed(1)} GB/s`]);
  if (m.comm.collectives > 0)
    rows.push([
      'communication',
      `${m.comm.collectives} collectives ${win}, ${fmtMs(m.comm.commNsPerStep)} per step, exposed ${fmtMs(m.comm.exposedNsPerStep)} per step, overlap ${m.comm.overlapShare === null ? 'n/a' : fmtPct(m.comm.overlapShare)}, median message ${fmtBytes(m.comm.medianMessageBytes)}`,
    ]);
  if (m.crossDevice) rows.push(['devices side by side', `${m.crossDevice.devices.length} GPUs driven by this process, pipeline bubble ${fmtPct(m.crossDevice.bubbleShare)} of a step`]);
  for (const x of m.memory)
    rows.push([`memory, GPU ${x.device}`, `peak allocated ${fmtBytes(x.peakAllocatedBytes)}, peak reserved ${fmtBytes(x.peakReservedBytes)}${x.deviceTotalBytes ? ` of ${fmtGpuMemory(x.deviceTotalBytes)}` : ''}`]);
  return table(null, rows);
}

function rankSection(m: TraceMetrics, d: AnalyzeChartData['ranks'][number]): string {
  const dev = m.devices[0];
  const head = `Rank ${m.rank}${m.worldSize > 1 ? ` of ${m.worldSize}` : ''}${dev ? ` · ${dev.name} (sm_${dev.computeCapability.replace('.', '')}, ${fmtGpuMemory(dev.totalMemoryBytes)})` : ''}`;
  const figs: [string, string][] = [
    ['median step', fmtMs(m.stepTime.medianNs)],
    ['mean', fmtMs(m.stepTime.meanNs)],
    ['min', fmtMs(m.stepTime.minNs)],
    ['max', fmtMs(m.stepTime.maxNs)],
    ['GPU busy', fmtPct(m.gpuBusyShare)],
    ...(m.smEfficiency !== null ? [['est. SM efficiency', fmtPct(m.smEfficiency)] as [string, string]] : []),
    ...(m.modelFlops ? [['MFU (floor)', fmtPct(m.modelFlops.mfu)] as [string, string]] : []),
  ];
  const stepsChart = d.step.length
    ? `<div id="chart-steps-${m.rank}" class="chart"></div>${noscriptTable(
        'each step split by cause (the chart needs JavaScript)',
        ['step', ...PARTS.map(partLabel)],
        spread(d.step.length, 12).map((i) => [String(d.step[i]), ...d.ms.map((s) => fmtMs((s[i] ?? 0) * 1e6))]),
      )}`
    : '<p class="dim">no steps</p>';
  const busyChart =
    d.busyTMs.length > 1
      ? `<div id="chart-busy-${m.rank}" class="chart" style="min-height:140px"></div>${noscriptTable(
          'GPU busy over time (the chart needs JavaScript)',
          ['ms since the first step', 'GPU busy'],
          spread(d.busyTMs.length, 12).map((i) => [String(Math.round(d.busyTMs[i] ?? 0)), `${(d.busyPct[i] ?? 0).toFixed(0)}%`]),
        )}`
      : '<p class="dim">no timeline</p>';
  const shapes = m.gemmShapes.slice(0, 10);
  return `<section class="rank" id="rank-${m.rank}"><h2>${esc(head)}</h2>
<div class="card">${figs.map(([k, v]) => `<span class="fig"><span class="dim">${esc(k)}</span><b>${esc(v)}</b></span>`).join('')}
<div class="dim">${m.steps.length} step${m.steps.length === 1 ? '' : 's'}${m.stepsFromMarkers ? '' : ' (no ProfilerStep markers: the whole trace as one window)'}</div></div>
<h3>Where a step goes <span class="dim">(mean per step, one GPU's view)</span></h3>${whereAStepGoes(m)}
<div class="card">${stepsChart}</div>
<h3>GPU busy over time</h3><div class="card">${busyChart}</div>
<h3>GPU time by kind <span class="dim">(kernel durations per step)</span></h3>${kindsTable(m)}
<h3>Matmul precision</h3>${precisionTable(m)}
<h3>Launches, copies, communication, memory</h3>${otherFigures(m)}
${m.topKernels.length ? `<h3>Top kernels <span class="dim">(count and total ${esc(fmtWindow(m.steps.length))})</span></h3>${table(['kernel', 'kind', 'count', 'total', 'mean'], m.topKernels.map((k) => [k.name, k.category, String(k.count), fmtMs(k.totalNs), fmtMs(k.meanNs)]), undefined, ['long', 'text', 'num', 'num', 'num'])}` : ''}
${shapes.length ? `<h3>GEMM shapes <span class="dim">(calls and GPU time ${esc(fmtWindow(m.steps.length))})</span></h3>${table(['op', 'batch × M × N × K', 'dtype', 'calls', 'GPU time', 'TFLOP/s', 'misaligned'], shapes.map((g) => [g.op, `${g.batch} × ${g.m} × ${g.n} × ${g.k}`, g.dtype ?? '?', String(g.calls), fmtMs(g.gpuNs), g.tflops.toFixed(1), g.misalignedDims.join(', ')]), undefined, ['long', 'num', 'text', 'num', 'num', 'num', 'text'])}` : ''}
</section>`;
}

/** The one line a person reads first. */
export function analyzeVerdict(r: AnalyzeReport): string {
  const top = r.findings[0];
  return top ? `${top.title}${top.estimatedGain ? ` (${verdictGainText(top.estimatedGain)})` : ''}` : 'nothing to fix was found in this trace';
}

export interface AnalyzePageOptions {
  /** The report's id on the server (Perfetto buttons, JSON link); null for the `--html` file. */
  id: string | null;
  /** What the user opened (a path or an upload's name). */
  label: string;
  /** The trace files the server can hand to Perfetto's UI. */
  traceFiles?: string[];
  standalone?: InlineAssets;
}

export const PERFETTO_JS = `
(function () {
  var ORIGIN = 'https://ui.perfetto.dev';
  document.querySelectorAll('button[data-perfetto]').forEach(function (b) {
    b.addEventListener('click', function () {
      // Opened inside the click so popup blockers allow it; the bytes are fetched from this server meanwhile.
      var w = window.open(ORIGIN), status = document.getElementById('perfetto-status');
      status.textContent = 'reading the trace...';
      fetch(b.getAttribute('data-perfetto')).then(function (r) { if (!r.ok) throw new Error('HTTP ' + r.status); return r.arrayBuffer(); }).then(function (buf) {
        status.textContent = 'waiting for Perfetto UI...';
        var tries = 0, timer = setInterval(function () { if (++tries > 600) { clearInterval(timer); status.textContent = 'Perfetto UI did not answer'; } else w.postMessage('PING', ORIGIN); }, 100);
        window.addEventListener('message', function onMsg(e) {
          if (e.origin !== ORIGIN || e.data !== 'PONG') return;
          clearInterval(timer); window.removeEventListener('message', onMsg);
          w.postMessage({ perfetto: { buffer: buf, title: b.getAttribute('data-title'), keepApiOpen: false } }, ORIGIN);
          status.textContent = 'opened in Perfetto UI';
        });
      }).catch(function (e) { status.textContent = String(e); });
    });
  });
})();
`;

export function analyzePage(r: AnalyzeReport, o: AnalyzePageOptions): string {
  const top = r.findings[0];
  const charts = analyzeChartData(r);
  const files = o.standalone ? [] : (o.traceFiles ?? []);
  const perfetto = files
    .map((f, i) => `<button type="button" data-perfetto="api/report/trace?id=${enc(o.id ?? '')}&amp;file=${i}" data-title="${esc(f.split('/').pop() ?? f)}">Open ${files.length > 1 ? `rank file ${esc(f.split('/').pop() ?? f)}` : 'the timeline'} in Perfetto UI</button>`)
    .join(' ');
  const warnings = r.inputs.flatMap((i) => i.warnings.map((w) => `<li class="warn">${esc(i.path.split('/').pop() ?? i.path)}: ${esc(w)}</li>`));
  const notes = (r.run?.notes ?? []).map((n) => `<li class="warn">${esc(n)}</li>`);
  const inputs = table(
    ['file', 'rank', 'events', 'steps used', 'left out'],
    r.inputs.map((i) => [i.path, String(i.rank), fmtInt(i.events), i.coverage ? String(i.coverage.stepsUsed.length) : 'n/a', i.coverage ? String(i.coverage.stepsLeftOut.length) : 'n/a']),
    'inputs',
    ['long', 'num', 'num', 'num', 'num'],
  );
  const title = o.standalone ? 'gpuwise analyze' : `Trace: ${o.label}`;
  const body = `<h1>${esc(title)}</h1>
<div class="card"><div class="verdict ${top?.severity === 'high' ? 'bad' : top?.severity === 'medium' ? 'warn' : 'ok'}" id="verdict">${esc(analyzeVerdict(r))}</div>
<div class="dim">${r.summary.ranks} rank(s)${r.run ? ` (${esc(r.run.label)})` : ''}, ${r.summary.stepsAnalysed} step(s) analysed, median step ${esc(fmtMs(r.summary.stepTimeMedianNs))}, GPU busy ${esc(fmtPct(r.summary.gpuBusyShare))}</div>
${perfetto ? `<div style="margin-top:8px">${perfetto} <span id="perfetto-status" class="dim"></span></div>` : ''}</div>
${warnings.length + notes.length ? `<ul id="warnings">${[...notes, ...warnings].join('')}</ul>` : ''}
${planFirstHtml({ plan: r.pace?.plan, findings: r.findings })}
<h2>Findings, ranked</h2><div id="findings">${r.findings.length ? r.findings.map((f, i) => findingHtml({ ...f, source: 'trace' }, i)).join('\n') : '<p class="dim">no findings: nothing in this trace points to a fix worth making</p>'}</div>
<h2>Step breakdown per rank</h2>${stepBreakdownHtml(r)}
${r.metrics.ranks.map((m, i) => rankSection(m, charts.ranks[i]!)).join('\n')}
<h2>Inputs</h2>${inputs}
${paceHtml(r.pace, r.metrics.ranks.length)}
<p class="dim">analyze report schema ${r.schemaVersion} · gpuwise ${esc(r.version)}${o.standalone || o.id === null ? '' : ` · <a href="report-full?id=${enc(o.id)}">this page as one file</a> · <a href="api/report?id=${enc(o.id)}">JSON</a>`}</p>`;
  return page({
    title: o.standalone ? `analyze: ${r.inputs.map((i) => i.path.split('/').pop()).join(', ')}` : `Trace ${o.label}`,
    section: 'reports',
    body,
    data: charts,
    scripts: perfetto ? [ANALYZE_PAGE_JS, PERFETTO_JS] : [ANALYZE_PAGE_JS],
    standalone: o.standalone ? { assets: o.standalone, what: 'analyze report' } : undefined,
  });
}

/** `gpuwise analyze --html`: the Reports trace page as one self-contained file (uPlot inline, nothing fetched). */
export function renderAnalyzeHtml(r: AnalyzeReport, assets: InlineAssets): string {
  return analyzePage(r, { id: null, label: r.inputs.map((i) => i.path).join(', '), standalone: assets });
}
