/**
 * `gpuwise tune --plan`'s terminal and Markdown renderings (pure) of the report built in planTrials.ts.
 */
import { fmtMs } from '../util/format.js';
import type { PlanTrial, PlanTuneReport, PlanTuneStep, TrialSettings } from './planTrials.js';

/** A step in ms, or '-'; a ratio as x0.23, or '-' (the text, Markdown and HTML renderings share them). */
export const ms = (ns: number | null) => (ns === null ? '-' : fmtMs(ns));
export const ratio = (x: number | null) => (x === null ? '-' : `x${x.toFixed(2)}`);
const pm = (m: { meanNs: number; spreadNs: number } | null) => (m === null ? '-' : `${fmtMs(m.meanNs)} ± ${fmtMs(m.spreadNs)}`);

/** A permanent change's heading: plain PyTorch, the command (--param's value), or the framework's name. */
export const frameworkTitle = (f: string, capital = false) =>
  f === 'pytorch' ? `${capital ? 'P' : 'p'}lain PyTorch` : f === 'command' ? `${capital ? 'T' : 't'}he command` : f;

/** With --param: what every step time of the report is per (a larger batch's step counted per the diagnosis's samples). */
export function perSampleNote(r: PlanTuneReport): string | null {
  const p = r.param;
  return p
    ? `step times are per ${p.start} samples (${p.name}=${p.start}, the diagnosis's): a trial at a larger ${p.name} is compared per sample, its own step scaled by ${p.start}/${p.name} (its own step in the trial's line)`
    : null;
}

/** The settings in words (`num_workers=14, bf16 autocast`); `as run` when none. */
export function settingsText(s: TrialSettings): string {
  const parts: string[] = [];
  if (s.batch) parts.push(`${s.batch.name}=${s.batch.value}`);
  const l = s.loader;
  if (l?.numWorkers !== undefined) parts.push(`num_workers=${l.numWorkers}`);
  if (l?.pinMemory) parts.push('pin_memory=True');
  if (l?.persistentWorkers) parts.push('persistent_workers=True');
  if (l?.prefetchFactor !== undefined) parts.push(`prefetch_factor=${l.prefetchFactor}`);
  if (s.tf32) parts.push('TF32');
  if (s.cudnnBenchmark) parts.push('cudnn.benchmark');
  if (s.autocast) parts.push(`${s.autocast} autocast`);
  if (s.channelsLast) parts.push('channels_last');
  if (s.compile) parts.push(s.compile === 'default' ? 'torch.compile' : `torch.compile(mode="${s.compile}")`);
  return parts.length ? parts.join(', ') : 'as the script has it';
}

/** A plan step's verdict in words: kept, not kept and why, or predicted only. */
export function planStepVerdict(s: PlanTuneStep): string {
  if (!s.injectable) return s.codeChange ? `predicted only: ${s.why ?? 'needs a code change'}` : (s.why ?? 'not tried');
  if (s.measuredStepNs === null) return s.why ?? 'no trial measured a step';
  return s.kept
    ? `kept (${s.chosen}${s.recheck ? `; confirmed against a second run of the configuration before, #${s.recheck.trial}` : ''})`
    : `not kept: ${s.why ?? 'no gain beyond the spread'}`;
}

/** One trial in a line: its measured step (or how it failed), its warm-up, its time, what it could not apply. */
export function trialLine(t: PlanTrial): string {
  const m = t.measure;
  const warm =
    m && m.warmupCostNs > 0.5e9 ? `, warm-up ${(m.warmupCostNs / 1e9).toFixed(1)} s over ${m.warmupSteps} steps (not in the mean)` : '';
  const own = t.batch !== null && t.batchStepNs !== null && t.measure && t.batchStepNs !== t.measure.meanNs ? ` (its own step at ${t.batch}: ${fmtMs(t.batchStepNs)})` : '';
  const stopped = t.stopped ? `, stopped at step ${t.stopped.step}: ${t.stopped.why === 'steady' ? 'steady' : 'its seconds of steady steps'}` : '';
  const what = t.outcome === 'ok' ? `${pm(m)}${own} (${m?.steps ?? 0} steady steps${warm}${stopped})` : `${t.outcome.toUpperCase()}: ${t.detail}`;
  const not = t.notApplied.length ? `; not applied: ${t.notApplied.map((n) => `${n.lever} (${n.why})`).join(', ')}` : '';
  return `#${t.index} ${t.name}: ${what}, ${t.wallS.toFixed(1)} s${not}`;
}

export function renderPlanTuneText(r: PlanTuneReport): string {
  const out: string[] = [];
  const d = r.diagnosis;
  out.push(
    `gpuwise tune --plan: ${r.steps.filter((s) => s.source === 'plan').length} plan step(s), ${r.trials.length} trial(s) ${r.trialStop ? `each until its step is steady (at most ${r.stepsPerTrial} steps)` : `of ${r.stepsPerTrial} steps`}`,
    `diagnosis: ${ms(d.stepNs)} a step${d.bound ? `, bound by ${d.bound}` : ''}; the plan expects ${ms(d.planExpectedStepNs)} (${d.runDir}${d.runId ? `, run ${d.runId}` : ''})`,
    `baseline trial: ${r.baseline ? (r.baseline.outcome === 'ok' ? pm(r.baseline.measure) : `${r.baseline.outcome}: ${r.baseline.detail}`) : '-'}`,
    '',
  );
  const head = ['#', 'plan step', 'predicted', 'ratio', 'measured', 'ratio', 'verdict'];
  const rows = r.steps.map((s, i) => [
    String(i + 1),
    `${s.label} [${s.stepId}]`,
    s.predictedStepNs !== null ? `${ms(s.fromStepNs)} -> ${ms(s.predictedStepNs)}` : '-',
    ratio(s.predictedRatio),
    s.measuredStepNs !== null ? `${ms(s.measuredFromStepNs)} -> ${ms(s.measuredStepNs)}` : '-',
    ratio(s.measuredRatio),
    planStepVerdict(s),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((x) => (x[i] as string).length)));
  const line = (c: string[]) => c.map((x, i) => (i === c.length - 1 ? x : x.padEnd(widths[i] as number))).join('  ');
  out.push(line(head), ...rows.map(line));
  const per = perSampleNote(r);
  if (per) out.push(`(${per})`);
  out.push('', 'Trials:');
  if (r.baseline) out.push(`  ${trialLine(r.baseline)}`);
  for (const t of r.trials) if (t.index !== r.baseline?.index) out.push(`  ${trialLine(t)}`);
  out.push('');
  const b = r.best;
  if (b.names.length === 0) out.push('Verified best: the script as it is (no fix measured better beyond the spread).');
  else
    out.push(
      `Verified best: ${settingsText(b.settings)}: ${ms(b.stepNs)} ± ${ms(b.spreadNs)} a step against ${ms(b.baselineStepNs)} as the script is${b.speedup !== null ? ` (${b.speedup.toFixed(2)}x)` : ''}`,
    );
  if (r.permanent.length > 0) {
    out.push('To make it permanent:');
    for (const p of r.permanent) {
      out.push(`  ${frameworkTitle(p.framework)}:`);
      for (const l of p.lines) out.push(`    | ${l}`);
    }
  }
  out.push(
    `Time: ${r.totalS.toFixed(0)} s in all (diagnosis ${d.wallS.toFixed(0)} s, trials ${r.trialsS.toFixed(0)} s${r.warmupCostS > 0.5 ? `, of it ${r.warmupCostS.toFixed(0)} s of warm-up` : ''})`,
    `Runs: ${r.outDir}`,
  );
  for (const n of r.notes) out.push(`note: ${n}`);
  return `${out.join('\n')}\n`;
}

export function renderPlanTuneMarkdown(r: PlanTuneReport): string {
  const d = r.diagnosis;
  const out = [
    '## gpuwise tune --plan',
    '',
    `Diagnosis: ${ms(d.stepNs)} a step${d.bound ? `, bound by ${d.bound}` : ''}; the plan expects ${ms(d.planExpectedStepNs)}. Baseline trial: ${r.baseline?.measure ? pm(r.baseline.measure) : '-'}.`,
    '',
    '| # | plan step | predicted | ratio | measured | ratio | verdict |',
    '|---:|---|---:|---:|---:|---:|---|',
  ];
  r.steps.forEach((s, i) => {
    out.push(
      `| ${i + 1} | ${s.label} \`${s.stepId}\` | ${s.predictedStepNs !== null ? `${ms(s.fromStepNs)} → ${ms(s.predictedStepNs)}` : '-'} | ${ratio(s.predictedRatio)} | ${s.measuredStepNs !== null ? `${ms(s.measuredFromStepNs)} → ${ms(s.measuredStepNs)}` : '-'} | ${ratio(s.measuredRatio)} | ${planStepVerdict(s)} |`,
    );
  });
  const b = r.best;
  const perMd = perSampleNote(r);
  if (perMd) out.push('', `(${perMd})`);
  out.push(
    '',
    b.names.length === 0
      ? '**Verified best: the script as it is** (no fix measured better beyond the spread).'
      : `**Verified best: ${settingsText(b.settings)}**: ${ms(b.stepNs)} ± ${ms(b.spreadNs)} a step against ${ms(b.baselineStepNs)}${b.speedup !== null ? ` (${b.speedup.toFixed(2)}x)` : ''}.`,
  );
  for (const p of r.permanent)
    out.push('', `${frameworkTitle(p.framework, true)}:`, p.framework === 'command' ? '```sh' : '```python', ...p.lines, '```');
  out.push('', '<details><summary>Trials</summary>', '');
  if (r.baseline) out.push(`- ${trialLine(r.baseline)}`);
  for (const t of r.trials) if (t.index !== r.baseline?.index) out.push(`- ${trialLine(t)}`);
  out.push('', '</details>', '', `Time: ${r.totalS.toFixed(0)} s (diagnosis ${d.wallS.toFixed(0)} s, trials ${r.trialsS.toFixed(0)} s).`);
  for (const n of r.notes) out.push(`> note: ${n}`);
  out.push('', `<sub>gpuwise tune --plan, schema ${r.schemaVersion}</sub>`);
  return `${out.join('\n')}\n`;
}
