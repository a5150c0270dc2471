/**
 * `gpuwise tune --md`: the result first (largest that fits, recommended, Goldilocks), then every trial, as Markdown
 * for an issue or a pull request. Pure.
 */
import { fmtInt, fmtBytes, fmtGpuMemory } from '../util/format.js';
import { largestLine, type TuneReport } from './report.js';

/** A trial's throughput as tune's answer and page print it. */
export const rateText = (x: number | null) => (x === null ? '-' : x >= 100 ? fmtInt(x) : x.toPrecision(3));

/** The answer lines, shared with the HTML page. */
export function tuneAnswer(r: TuneReport): string[] {
  const name = r.param.name;
  const res = r.result;
  if (res.largestOk === null) return [`No value of ${name} in ${r.param.lo}..${r.param.hi} fits: ${r.stopReason}.`];
  const out = [largestLine(r)];
  const pct = `${Math.round(r.margin * 100)}%`;
  if (res.line === null) out.push(`Recommended: no margin: the trials measured no memory figures to apply ${pct} to`);
  else if (res.recommended !== null) out.push(`Recommended: ${name}=${res.recommended} (leaves ${pct} of the GPU memory free)`);
  else out.push(`Recommended: none leaves ${pct} of the GPU memory free`);
  if (res.goldilocks !== null) out.push(`Goldilocks: ${name}=${res.goldilocks}: ${res.goldilocksReason}`);
  return out;
}

export function renderTuneMarkdown(r: TuneReport): string {
  const name = r.param.name;
  const dev = r.device ? ` on ${r.device.name ?? 'GPU'} (${fmtGpuMemory(r.device.totalBytes)})` : '';
  const unit = r.throughputUnit ?? 'throughput';
  const out = [`## gpuwise tune: ${name} in ${r.param.lo}..${r.param.hi}${dev}`, '', ...tuneAnswer(r).map((l) => `**${l}**  `), ''];
  out.push(`| # | ${name} | outcome | peak allocated | peak reserved | step | ${unit} |`, '|---:|---:|---|---:|---:|---:|---:|');
  for (const t of r.trials) {
    const thr = r.throughputUnit === 'tokens/s' ? t.tokensPerS : t.samplesPerS;
    out.push(
      `| ${t.index}${t.kind === 'curve' ? 'c' : ''} | ${t.value} | ${t.outcome} | ${t.peakAllocatedBytes !== null ? fmtBytes(t.peakAllocatedBytes) : '-'} | ${t.peakReservedBytes !== null ? fmtBytes(t.peakReservedBytes) : '-'} | ${t.stepTimeS !== null ? `${(t.stepTimeS * 1e3).toFixed(1)} ms` : '-'} | ${rateText(thr)} |`,
    );
  }
  out.push('', `Trials: ${r.searchTrials} of at most ${r.maxTrials}; stopped: ${r.stopReason}`);
  for (const n of r.notes) out.push(`> note: ${n}`);
  out.push('', `<sub>gpuwise tune, schema ${r.schemaVersion}</sub>`);
  return `${out.join('\n')}\n`;
}
