/**
 * `gpuwise tune --html`: tune's result as a page in the design of the other reports (pure). The answer first
 * (largest that fits, recommended, Goldilocks), the memory line and the budget it was held against, peak memory
 * against the value tried (the measured peaks, the line, the budget, the predicted largest and the values that ran
 * out of memory marked), throughput against the value, every trial. No server page: tune runs the command itself.
 */
import { rateText, tuneAnswer } from '../../tune/markdown.js';
import { TUNE } from '../../tune/predict.js';
import type { TuneReport, TuneTrial } from '../../tune/report.js';
import { fmtBytes, fmtGpuMemory } from '../../util/format.js';
import { type InlineAssets, esc, noscriptTable, page, spread, table } from './layout.js';
import { GiB } from '../../util/units.js';

const gib = (b: number | null) => (b === null ? null : b / GiB);

export interface TuneChartData {
  name: string;
  /** Peak memory against the value: x the values (tried, and the line's predicted largest), the rest in GiB. */
  memory: {
    x: number[];
    allocated: (number | null)[];
    reserved: (number | null)[];
    /** The memory line at each x (null without a line). */
    line: (number | null)[] | null;
    /** What the allocator may hold at the peak (null without the device's total). */
    budget: number | null;
    marks: { x: number; label: string }[];
  };
  /** Throughput of the trials that ran, against the value (null when no trial measured one). */
  throughput: { unit: string; x: number[]; y: number[]; marks: { x: number; label: string }[] } | null;
}

const throughputOf = (r: TuneReport, t: TuneTrial) => (r.throughputUnit === 'tokens/s' ? t.tokensPerS : r.throughputUnit === 'samples/s' ? t.samplesPerS : null);

/** The last trial of each value (a value tried twice, by the search and for the curve, shows once). */
function byValue(trials: TuneTrial[]): Map<number, TuneTrial> {
  const m = new Map<number, TuneTrial>();
  for (const t of trials) m.set(t.value, t);
  return m;
}

export function tuneChartData(r: TuneReport): TuneChartData {
  const res = r.result;
  const trials = byValue(r.trials);
  const xs = new Set(trials.keys());
  if (res.predictedLargest !== null) xs.add(res.predictedLargest);
  const x = [...xs].sort((a, b) => a - b);
  const ooms = [...new Set(r.trials.filter((t) => t.outcome === 'oom').map((t) => t.value))].sort((a, b) => a - b);
  const marks: TuneChartData['memory']['marks'] = [];
  if (res.predictedLargest !== null) marks.push({ x: res.predictedLargest, label: `predicted largest ${res.predictedLargest}` });
  for (const v of ooms) marks.push({ x: v, label: `OOM at ${v}` });
  const ran = (v: number) => {
    const t = trials.get(v);
    return t && t.outcome === 'ok' ? t : null;
  };
  const line = res.line;
  const okThroughput = [...trials.values()].filter((t) => t.outcome === 'ok' && throughputOf(r, t) !== null).sort((a, b) => a.value - b.value);
  return {
    name: r.param.name,
    memory: {
      x,
      allocated: x.map((v) => gib(ran(v)?.peakAllocatedBytes ?? null)),
      reserved: x.map((v) => gib(ran(v)?.peakReservedBytes ?? null)),
      line: line ? x.map((v) => (line.fixedBytes + line.perValueBytes * v) / GiB) : null,
      budget: res.budget ? res.budget.allocatorLimitBytes / GiB : null,
      marks,
    },
    throughput:
      okThroughput.length && r.throughputUnit
        ? {
            unit: r.throughputUnit,
            x: okThroughput.map((t) => t.value),
            y: okThroughput.map((t) => throughputOf(r, t) as number),
            marks: res.goldilocks !== null ? [{ x: res.goldilocks, label: `Goldilocks ${res.goldilocks}` }] : [],
          }
        : null,
  };
}

export const TUNE_PAGE_JS = `
(function () {
  var d = JSON.parse(document.getElementById('gw-data').textContent);
  var m = d.memory, el = document.getElementById('chart-tune-memory');
  if (el && m.x.length > 1 && m.allocated.some(function (v) { return v !== null; })) {
    var series = [{ label: 'peak allocated', color: '#2f6fde', points: true, spanGaps: true }, { label: 'peak reserved', color: '#8e44ad', points: true, spanGaps: true, dash: true }];
    var data = [m.x, m.allocated, m.reserved];
    if (m.line) { series.push({ label: 'memory line', color: '#17a398', dash: true, points: false }); data.push(m.line); }
    if (m.budget !== null) { series.push({ label: 'budget (allocated)', color: '#c0392b', points: false }); data.push(m.x.map(function () { return m.budget; })); }
    gw.chart(el, { xLabel: d.name, xName: d.name, yLabel: 'GPU memory', yFmt: gw.fmt.gib, marks: m.marks, height: 260, series: series, data: data });
  }
  var t = d.throughput, el2 = document.getElementById('chart-tune-throughput');
  if (el2 && t && t.x.length > 1) gw.chart(el2, { xLabel: d.name, xName: d.name, yLabel: t.unit, marks: t.marks, height: 220,
    series: [{ label: t.unit, color: '#e4572e', points: true }], data: [t.x, t.y] });
})();
`;

const OUTCOME: Record<TuneTrial['outcome'], string> = { ok: 'ok', oom: 'out of memory', failed: 'failed', timeout: 'timed out', interrupted: 'stopped' };

function memoryLineText(r: TuneReport): string {
  const { line, budget } = r.result;
  if (!line || !budget) return '';
  const from = line.source === 'two-trials' ? `the trials at ${line.values.join(' and ')}` : `the trial at ${line.values[0]} (${line.source}${line.note ? `: ${line.note}` : ''})`;
  return `<div class="card" id="memory-line"><div>peak allocated = <b>${esc(fmtBytes(line.fixedBytes))} + ${esc(fmtBytes(line.perValueBytes))} × ${esc(r.param.name)}</b> <span class="dim">(from ${esc(from)})</span></div>
<div class="dim">budget: ${esc(fmtGpuMemory(budget.totalBytes))} − ${esc(fmtBytes(budget.nonAllocatorBytes))} outside the allocator (${budget.nonAllocatorSource === 'nvml' ? 'measured by NVML' : 'assumed'}), / ${TUNE.allocatorSlack} allocator slack = ${esc(fmtBytes(budget.allocatorLimitBytes))} allocated</div></div>`;
}

export function renderTuneHtml(r: TuneReport, assets: InlineAssets): string {
  const res = r.result;
  const name = r.param.name;
  const d = tuneChartData(r);
  const unit = r.throughputUnit ?? 'throughput';
  const answer = tuneAnswer(r);
  const verdict = `<div class="verdict ${res.largestOk === null ? 'bad' : 'ok'}" id="verdict">${esc(answer[0] ?? '')}</div>${answer
    .slice(1)
    .map((l) => `<div>${esc(l)}</div>`)
    .join('')}`;
  const dev = r.device ? ` on ${r.device.name ?? 'GPU'} (${fmtGpuMemory(r.device.totalBytes)})` : '';
  const mem = d.memory;
  const measured = mem.allocated.some((v) => v !== null);
  const memChart =
    measured && mem.x.length > 1
      ? `<div id="chart-tune-memory" class="chart"></div>${noscriptTable(
          `peak memory against ${name} (the chart needs JavaScript)`,
          [name, 'peak allocated', 'peak reserved', 'memory line', 'budget'],
          spread(mem.x.length, 12).map((i) => {
            const g = (v: number | null | undefined) => (v === null || v === undefined ? '-' : `${v.toFixed(2)} GiB`);
            return [String(mem.x[i]), g(mem.allocated[i]), g(mem.reserved[i]), g(mem.line?.[i]), g(mem.budget)];
          }),
        )}`
      : `<p class="dim">${measured ? 'one value measured: nothing to draw' : 'no GPU memory figures (no CUDA, or the probe saw no step)'}; the trials are in the table below</p>`;
  const thr = d.throughput;
  const thrChart =
    thr && thr.x.length > 1
      ? `<div id="chart-tune-throughput" class="chart"></div>${noscriptTable(
          `${thr.unit} against ${name} (the chart needs JavaScript)`,
          [name, thr.unit],
          spread(thr.x.length, 12).map((i) => [String(thr.x[i]), rateText(thr.y[i] ?? null)]),
        )}`
      : `<p class="dim">${thr ? 'one value measured: nothing to draw' : 'no throughput measured (the probe could not count samples or tokens per step)'}</p>`;
  const trials = table(
    ['#', name, 'outcome', 'peak allocated', 'peak reserved', 'step', unit, 'why tried', 'how it ended'],
    r.trials.map((t) => [
      `${t.index}${t.kind === 'curve' ? 'c' : ''}`,
      String(t.value),
      OUTCOME[t.outcome],
      t.peakAllocatedBytes !== null ? fmtBytes(t.peakAllocatedBytes) : '-',
      t.peakReservedBytes !== null ? fmtBytes(t.peakReservedBytes) : '-',
      t.stepTimeS !== null ? `${(t.stepTimeS * 1e3).toFixed(t.stepTimeS < 0.1 ? 1 : 0)} ms` : '-',
      rateText(throughputOf(r, t)),
      t.reason,
      t.detail,
    ]),
    'trials',
    ['num', 'num', 'text', 'num', 'num', 'num', 'num', 'text', 'text'],
  );
  const body = `<h1>gpuwise tune: ${esc(`${name} in ${r.param.lo}..${r.param.hi}${dev}`)}</h1>
<div class="card">${verdict}
<div class="dim">${r.stepsPerTrial} steps per trial · margin ${Math.round(r.margin * 100)}% of the GPU memory · ${esc(`trials: ${r.searchTrials} of at most ${r.maxTrials}${r.trials.length > r.searchTrials ? ` (+${r.trials.length - r.searchTrials} for the curve)` : ''}; stopped: ${r.stopReason}`)}</div>
<div class="dim">runs: <code>${esc(r.outDir)}</code></div></div>
${memoryLineText(r)}
<h2>Peak memory against ${esc(name)}</h2><div class="card">${memChart}</div>
<h2>${esc(unit)} against ${esc(name)}</h2><div class="card">${thrChart}</div>
<h2>Trials</h2>${trials}
${r.notes.length ? `<h2>Notes</h2><ul id="notes">${r.notes.map((n) => `<li class="dim">${esc(n)}</li>`).join('')}</ul>` : ''}
<p class="dim">tune schema ${r.schemaVersion}</p>`;
  return page({ title: `tune: ${name}`, section: null, body, data: d, scripts: [TUNE_PAGE_JS], standalone: { assets, what: 'tune' } });
}
