/**
 * The doctor report as one self-contained HTML page (pure): inline CSS and inline SVG line charts,
 * no script, no network, so it opens offline from a CI artifact or a copied run directory.
 * Charts: step time per step (per rank, with the DataLoader wait), GPU memory used over time (per
 * GPU, per rank's process as NVML saw it, the allocator's peaks as levels), GPU utilisation over time.
 */
import { esc } from '../report/html.js';
import { fmtBytes, fmtMs, fmtPct } from '../util/format.js';
import {
  durationText,
  distributedTable,
  environmentRows,
  hangLines,
  expectedGainText,
  fmtBytesOr,
  fmtRate,
  fmtStepS,
  modelLine,
  nvmlBesideAllocator,
  planModelLine,
  rankLabel,
  rankShort,
  findingKindLabel,
  setupFacts,
  setupGuesses,
  stepSourceNote,
} from './renderParts.js';
import type { DoctorReport } from './report.js';
import { whatIfsOf } from './reportCheck.js';

const PALETTE = ['#4e79a7', '#f28e2b', '#59a14f', '#e15759', '#76b7b2', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac'];
const color = (i: number) => PALETTE[i % PALETTE.length] as string;
/** More points than pixels only make the file bigger: each series is cut to this many buckets (the maximum of each). */
const MAX_POINTS = 900;

export interface ChartSeries {
  label: string;
  color: string;
  xs: number[];
  ys: (number | null)[];
  dashed?: boolean;
}

export interface ChartLevel {
  y: number;
  label: string;
  color: string;
}

export interface LineChart {
  aria: string;
  series: ChartSeries[];
  levels?: ChartLevel[];
  xLabel: string;
  xFmt: (x: number) => string;
  yFmt: (y: number) => string;
  /** The y axis reaches at least this (a GPU's total memory, 100%). */
  yMax?: number;
  /** Ticks fall on round multiples of this unit (1024^3 for GiB); default 1. */
  yUnit?: number;
}

/** A round step (1, 2, 2.5 or 5 times a power of ten) giving about `count` intervals over `span`. */
export function niceStep(span: number, count: number): number {
  const raw = span / count;
  if (!(raw > 0) || !Number.isFinite(raw)) return 1;
  const p = 10 ** Math.floor(Math.log10(raw));
  const m = raw / p;
  return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 2.5 ? 2.5 : m <= 5 ? 5 : 10) * p;
}

/** KiB, MiB, GiB or TiB: the binary unit of the largest value, so memory ticks read 20 GiB, 40 GiB. */
export function byteUnit(maxBytes: number): number {
  let u = 1;
  while (maxBytes / u >= 1024 && u < 1024 ** 4) u *= 1024;
  return u;
}

/** Buckets of consecutive points reduced to their maximum (spikes stay visible); nulls break the line. */
export function thin(xs: number[], ys: (number | null)[], max = MAX_POINTS): { xs: number[]; ys: (number | null)[] } {
  const n = Math.min(xs.length, ys.length);
  if (n <= max) return { xs: xs.slice(0, n), ys: ys.slice(0, n) };
  const ox: number[] = [];
  const oy: (number | null)[] = [];
  for (let b = 0; b < max; b++) {
    const from = Math.floor((b * n) / max);
    const to = Math.max(from + 1, Math.floor(((b + 1) * n) / max));
    let m: number | null = null;
    for (let i = from; i < to; i++) {
      const v = ys[i];
      if (v !== null && v !== undefined && Number.isFinite(v)) m = Math.max(m ?? v, v);
    }
    ox.push(xs[from] as number);
    oy.push(m);
  }
  return { xs: ox, ys: oy };
}

export function lineChartSvg(c: LineChart): string {
  const W = 900;
  const H = 240;
  const L = 76;
  const R = 12;
  const T = 10;
  const B = 34;
  const series = c.series.map((s) => ({ ...s, ...thin(s.xs, s.ys) }));
  const allX = series.flatMap((s) => s.xs);
  const allY = series.flatMap((s) => s.ys.filter((v): v is number => v !== null && Number.isFinite(v)));
  if (allX.length === 0 || allY.length === 0) return '<p class="dim">nothing to draw</p>';
  const x0 = Math.min(...allX);
  const x1 = Math.max(x0 + 1e-9, ...allX);
  const unit = c.yUnit ?? 1;
  const yMaxData = Math.max(c.yMax ?? 0, ...allY, ...(c.levels ?? []).map((l) => l.y), 1e-12);
  const yStep = niceStep(yMaxData / unit, 4) * unit;
  const yTop = Math.ceil(yMaxData / yStep - 1e-9) * yStep;
  const x = (v: number) => L + ((v - x0) / (x1 - x0)) * (W - L - R);
  const y = (v: number) => H - B - (v / yTop) * (H - B - T);
  const grid: string[] = [];
  for (let v = 0; v <= yTop + yStep / 2; v += yStep)
    grid.push(
      `<line x1="${L}" x2="${W - R}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}" stroke="#eee"/><text x="${L - 6}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end" class="lbl">${esc(v === 0 ? '0' : c.yFmt(v).replace(/\.0+ /, ' '))}</text>`,
    );
  const xStep = niceStep(x1 - x0, 5);
  for (let t = Math.ceil(x0 / xStep - 1e-9) * xStep; t <= x1 + 1e-9; t += xStep)
    grid.push(`<text x="${x(t).toFixed(1)}" y="${H - B + 16}" text-anchor="middle" class="lbl">${esc(c.xFmt(t))}</text>`);
  grid.push(`<text x="${W - R}" y="${H - 2}" text-anchor="end" class="lbl">${esc(c.xLabel)}</text>`);
  // Level labels are written on the chart only where they do not overlap a label above (the legend has them all).
  let lastLabelY = Number.NEGATIVE_INFINITY;
  const levels = [...(c.levels ?? [])]
    .sort((a, b) => b.y - a.y)
    .map((l) => {
      const ly = y(l.y);
      const label = ly - lastLabelY >= 12 ? `<text x="${W - R - 2}" y="${(ly - 3).toFixed(1)}" text-anchor="end" class="lbl" fill="${l.color}">${esc(`${l.label} ${c.yFmt(l.y)}`)}</text>` : '';
      if (label) lastLabelY = ly;
      return `<line x1="${L}" x2="${W - R}" y1="${ly.toFixed(1)}" y2="${ly.toFixed(1)}" stroke="${l.color}" stroke-dasharray="2 4" stroke-width="1.2"><title>${esc(`${l.label}: ${c.yFmt(l.y)}`)}</title></line>${label}`;
    });
  const paths = series.map((s) => {
    let d = '';
    let pen = false;
    s.ys.forEach((v, i) => {
      if (v === null || !Number.isFinite(v)) {
        pen = false;
        return;
      }
      d += `${pen ? 'L' : 'M'}${x(s.xs[i] as number).toFixed(1)},${y(v).toFixed(1)}`;
      pen = true;
    });
    // A single point draws nothing as a path: mark it.
    const single = s.ys.filter((v) => v !== null).length === 1 ? s.ys.findIndex((v) => v !== null) : -1;
    const dot = single >= 0 ? `<circle cx="${x(s.xs[single] as number).toFixed(1)}" cy="${y(s.ys[single] as number).toFixed(1)}" r="3" fill="${s.color}"/>` : '';
    return `<path d="${d}" fill="none" stroke="${s.color}" stroke-width="1.6"${s.dashed ? ' stroke-dasharray="5 3"' : ''}><title>${esc(s.label)}</title></path>${dot}`;
  });
  const legend = [
    ...series.map((s) => `<span><i style="border-top:2px ${s.dashed ? 'dashed' : 'solid'} ${s.color}"></i>${esc(s.label)}</span>`),
    ...(c.levels ?? []).map((l) => `<span><i style="border-top:2px dotted ${l.color}"></i>${esc(l.label)}</span>`),
  ];
  return `<svg viewBox="0 0 ${W} ${H}" width="100%" role="img" aria-label="${esc(c.aria)}">${grid.join('')}${levels.join('')}${paths.join('')}</svg>
<p class="legend">${legend.join(' ')}</p>`;
}

const fmtSeconds = (s: number) => (s >= 120 ? `${+(s / 60).toFixed(1)} min` : `${+s.toFixed(1)} s`);

function stepChart(r: DoctorReport): string {
  const series: ChartSeries[] = [];
  r.ranks.forEach((x, i) => {
    const tl = x.stepTimeline;
    if (!tl || tl.step.length < 2) return;
    // Step 1 is warm-up (allocation, cuDNN autotuning): it would flatten every other step.
    const xs = tl.step.slice(1);
    series.push({ label: `${rankShort(x)} step time`, color: color(i), xs, ys: tl.stepTimeS.slice(1).map((v) => (v === null ? null : v * 1e3)) });
    if (tl.dataWaitS.slice(1).some((v) => v > 0))
      series.push({ label: `${rankShort(x)} DataLoader wait`, color: color(i), xs, ys: tl.dataWaitS.slice(1).map((v) => v * 1e3), dashed: true });
  });
  if (series.length === 0) return '<p class="dim">no per-step timeline (fewer than two steps, or a report from an older gpuwise)</p>';
  return lineChartSvg({
    aria: 'step time per step',
    series,
    xLabel: 'step (the first, warm-up, left out)',
    xFmt: (v) => String(Math.round(v)),
    yFmt: (v) => fmtMs(v * 1e6),
  });
}

/** The largest of the values that are known. */
function maxKnown(values: (number | null | undefined)[]): number {
  let m = 0;
  for (const v of values) if (typeof v === 'number' && Number.isFinite(v) && v > m) m = v;
  return m;
}

function memoryChart(r: DoctorReport): string {
  const series: ChartSeries[] = [];
  const levels: ChartLevel[] = [];
  (r.gpus ?? []).forEach((g, i) => {
    series.push({ label: `GPU ${g.index} used (NVML)`, color: color(i), xs: g.timeline?.tS ?? [], ys: g.timeline?.usedBytes ?? [] });
  });
  const offset = (r.gpus ?? []).length;
  r.ranks.forEach((x, i) => {
    const c = color(offset + i);
    if ((x.nvmlTimeline?.usedBytes.length ?? 0) > 0)
      series.push({ label: `${rankShort(x)} process (NVML)`, color: c, xs: x.nvmlTimeline.tS, ys: x.nvmlTimeline.usedBytes, dashed: true });
    if (x.allocator) {
      levels.push({ y: x.allocator.peakReservedBytes, label: `${rankShort(x)} peak reserved`, color: c });
      levels.push({ y: x.allocator.peakAllocatedBytes, label: `${rankShort(x)} peak allocated`, color: '#999' });
    }
  });
  if (series.every((s) => s.ys.length === 0)) return '<p class="dim">no GPU memory samples</p>';
  const total = Math.max(0, ...(r.gpus ?? []).map((g) => g.totalBytes ?? 0));
  if (total > 0) levels.push({ y: total, label: 'GPU total', color: '#555' });
  const top = Math.max(total, maxKnown(series.flatMap((s) => s.ys)), maxKnown(levels.map((l) => l.y)));
  return lineChartSvg({
    aria: 'GPU memory used over time',
    series,
    levels,
    xLabel: 'time since the first sample',
    xFmt: fmtSeconds,
    yFmt: (v) => fmtBytes(v),
    yUnit: byteUnit(top),
  });
}

function utilChart(r: DoctorReport): string {
  const series = (r.gpus ?? []).map((g, i) => ({
    label: `GPU ${g.index} utilisation`,
    color: color(i),
    xs: g.timeline?.tS ?? [],
    ys: g.timeline?.utilizationPercent ?? [],
  }));
  if (series.every((s) => s.ys.every((v) => v === null))) return '<p class="dim">no utilisation samples</p>';
  return lineChartSvg({ aria: 'GPU utilisation over time', series, xLabel: 'time since the first sample', xFmt: fmtSeconds, yFmt: (v) => `${v.toFixed(0)}%`, yMax: 100 });
}

function table(head: string[] | null, rows: string[][]): string {
  return `<table>${head ? `<tr>${head.map((h) => `<th>${esc(h)}</th>`).join('')}</tr>` : ''}${rows.map((r) => `<tr>${r.map((c) => `<td>${esc(c)}</td>`).join('')}</tr>`).join('')}</table>`;
}

function findingsHtml(r: DoctorReport): string {
  if (r.findings.length === 0) return '<p>No findings.</p>';
  return r.findings
    .map((f, i) => {
      const gain = expectedGainText(f);
      return `<section class="f ${esc(f.severity)}"><h3>${i + 1}. <span class="sev">${esc(f.severity)}</span> ${esc(f.title)} <code>${esc(f.id)}</code> <span class="dim">from the ${esc(f.source ?? '?')}${esc(findingKindLabel(f))}${f.ranks?.length ? ` · rank${f.ranks.length > 1 ? 's' : ''} ${esc(f.ranks.join(', '))}` : ''}</span></h3>
${gain ? `<p class="gain">${esc(gain)}${f.estimatedGain ? `<br><span class="dim">${esc(f.estimatedGain.arithmetic)}</span>` : ''}</p>` : ''}
<ul>${f.evidence.map((e) => `<li>${esc(e)}</li>`).join('')}</ul>
<p>${esc(f.recommendation.summary)}</p>${f.recommendation.code ? `<pre>${esc(f.recommendation.code)}</pre>` : ''}</section>`;
    })
    .join('\n');
}

export function renderDoctorHtml(r: DoctorReport): string {
  const parts: string[] = [];
  const ml = modelLine(r);
  parts.push('<h2>Environment</h2>', table(null, [...environmentRows(r), ...(ml ? [['model', ml] as [string, string]] : [])]));

  parts.push('<h2>Step time</h2>');
  if (r.ranks.length === 0) parts.push('<p class="dim">no process of the command reported a step</p>');
  else {
    parts.push(
      table(
        ['process', 'steps', 'measured', 'median', 'mean', 'p90', 'min', 'max', 'DataLoader wait', 'samples/s', 'tokens/s'],
        r.ranks.map((x) => {
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
            s.tokensPerS === null || s.tokensPerS === undefined ? 'n/a' : `${fmtRate(s.tokensPerS)} (seq ${s.seqLen ?? '?'})`,
          ];
        }),
      ),
      '<p class="dim">Statistics leave out the first step (warm-up) and the profiled steps.</p>',
    );
    for (const x of r.ranks) {
      const note = stepSourceNote(x);
      if (note) parts.push(`<p class="dim">${esc(rankShort(x))}: ${esc(note)}</p>`);
    }
    parts.push('<h3>Step time per step</h3>', stepChart(r));
  }
  const dt = distributedTable(r);
  if (dt) {
    parts.push('<h2>Ranks compared</h2>', `<p>${esc(dt.summary)}</p>`, table(dt.head, dt.rows));
    if (dt.why.length) parts.push(`<ul>${dt.why.map((w) => `<li>${esc(w)}</li>`).join('')}</ul>`);
  }
  const hl = hangLines(r);
  if (hl) parts.push(`<h2>${r.run.outcome === 'hung' ? 'Hang' : 'Stalls'}</h2>`, `<p class="bad">${esc(hl.head)}</p>`, `<ul>${hl.ranks.map((l) => `<li><code>${esc(l)}</code></li>`).join('')}</ul>`);

  parts.push('<h2>GPU memory</h2>');
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
  if (r.gpus?.length) {
    parts.push('<h3>GPU memory used over time</h3>', memoryChart(r));
    parts.push('<h2>GPU utilisation</h2>');
    parts.push(
      table(
        ['GPU', 'name', 'samples', 'memory used (max)', 'utilisation mean', 'utilisation max'],
        r.gpus.map((g) => [
          String(g.index),
          g.name,
          String(g.samples),
          `${fmtBytesOr(g.maxUsedBytes)}${g.totalBytes ? ` of ${fmtBytes(g.totalBytes)}` : ''}`,
          g.meanUtilizationPercent === null ? 'n/a' : `${g.meanUtilizationPercent.toFixed(0)}%`,
          g.maxUtilizationPercent === null ? 'n/a' : `${g.maxUtilizationPercent}%`,
        ]),
      ),
      '<h3>GPU utilisation over time</h3>',
      utilChart(r),
    );
  } else parts.push(`<p class="dim">GPUs not sampled${r.gpuUnavailableReason ? ` (${esc(r.gpuUnavailableReason)})` : ''}</p>`);

  parts.push('<h2>Findings</h2>', findingsHtml(r));
  const whatIfs = whatIfsOf(r);
  if (whatIfs.length)
    parts.push(
      '<h2>What-ifs (planner, calibrated on this run)</h2>',
      `<ul>${whatIfs.map((w) => `<li><b>${esc(w.title)}</b>: ${esc(w.text)}</li>`).join('')}${[...setupFacts(r), ...setupGuesses(r)].map((l) => `<li><i>${esc(l)}</i></li>`).join('')}</ul>`,
    );
  const pl = planModelLine(r);
  if (pl) parts.push('<h2>Model</h2>', `<p>${esc(pl.replace(/`/g, ''))}</p>`);

  parts.push('<h2>Captured window</h2><ul>');
  const traces = r.profile?.traces ?? [];
  if (traces.length === 0) parts.push('<li>no profiler trace (the run ended before the profiled steps, or profiling was off)</li>');
  for (const t of traces) parts.push(`<li>trace (rank ${t.rank}) <code>${esc(t.path)}</code>${t.error ? `: not analysed (${esc(t.error)})` : ''}</li>`);
  for (const s of r.profile?.snapshots ?? [])
    parts.push(`<li>${s.kind === 'oom' ? 'out-of-memory snapshot' : 'memory snapshot'} (rank ${s.rank}) <code>${esc(s.path)}</code>${s.error ? `: not analysed (${esc(s.error)})` : ''}</li>`);
  parts.push('</ul>');
  if (r.notes?.length) parts.push('<h2>Notes</h2>', `<ul>${r.notes.map((n) => `<li>${esc(n)}</li>`).join('')}</ul>`);

  const outcomeClass = r.run.outcome === 'completed' || r.run.outcome === 'stopped-after-steps' ? 'ok' : 'bad';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>gpuwise doctor: ${esc(r.run.command.join(' '))}</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;max-width:1000px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:22px}h2{font-size:18px;margin-top:2em;border-bottom:1px solid #ddd}h3{font-size:15px}
.lbl{font:11px system-ui,sans-serif;fill:#333}.dim{color:#777}.ok{color:#2e7d32}.bad{color:#b71c1c}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #e0e0e0;padding:3px 8px;text-align:left;font-size:13px}th{background:#f5f5f5}
.legend span{margin-right:14px;font-size:12px;white-space:nowrap}.legend i{display:inline-block;width:18px;height:0;margin-right:4px;vertical-align:middle}
.f{border-left:5px solid #999;padding:.2em 1em;margin:1em 0;background:#fafafa}
.f.high{border-color:#c62828}.f.medium{border-color:#ef6c00}.f.low{border-color:#0277bd}
.sev{text-transform:uppercase;font-size:11px;padding:2px 6px;border-radius:3px;background:#eee}
pre{background:#263238;color:#eceff1;padding:.7em;overflow:auto}code{font-size:12px;color:#555}
</style></head><body>
<h1>gpuwise doctor</h1>
<p><code>${esc(r.run.command.join(' '))}</code></p>
<p class="${outcomeClass}"><b>Outcome:</b> ${esc(r.run.outcomeText)}</p>
<p class="dim">ran ${esc(durationText(r.run.durationS))} from ${esc(new Date(r.run.startedAtMs).toISOString())} · run directory <code>${esc(r.run.runDir)}</code> · doctor report schema ${r.schemaVersion} · gpuwise ${esc(r.version)}</p>
${parts.join('\n')}
</body></html>
`;
}
