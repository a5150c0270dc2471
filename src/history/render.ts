/**
 * Text and Markdown for the run history (pure): the `gpuwise runs` table and the `gpuwise compare`
 * report. One sentence per figure, built once and set as terminal lines or Markdown bullets.
 */
import { fmtInt, fmtBytes, fmtMs, fmtPct, fmtRate } from '../util/format.js';
import type { Change, FindingChange, RunComparison } from './compare.js';

/** The row of `gpuwise runs` (a StoredRun has these fields; kept structural so this module stays pure). */
export interface RunRow {
  id: string;
  startedAtMs: number;
  command: string[];
  outcome: string;
  medianStepS: number | null;
  samplesPerS: number | null;
  tokensPerS: number | null;
  peakReservedBytes: number | null;
  maxProcessNvmlBytes: number | null;
  findings: { high: number; medium: number; low: number; info: number };
}

/** Local date and minute, as a person reads a list of runs. */
export function whenText(ms: number, tzOffsetMin = new Date(ms).getTimezoneOffset()): string {
  const d = new Date(ms - tzOffsetMin * 60_000);
  return d.toISOString().slice(0, 16).replace('T', ' ');
}

/** The command with paths cut to their last part, at most `max` characters. */
export function shortCommand(command: string[], max = 48): string {
  const text = command.map((t) => (t.includes('/') && !t.startsWith('-') && !t.includes('=') ? (t.split('/').pop() ?? t) : t)).join(' ');
  return text.length > max ? `${text.slice(0, max - 3)}...` : text;
}

const fmtS = (s: number | null) => (s === null ? 'n/a' : fmtMs(s * 1e9));

export function throughputText(row: { samplesPerS: number | null; tokensPerS: number | null }): string {
  if (row.tokensPerS !== null) return `${fmtRate(row.tokensPerS)} tokens/s`;
  if (row.samplesPerS !== null) return `${fmtRate(row.samplesPerS)} samples/s`;
  return 'n/a';
}

export function findingsText(f: RunRow['findings']): string {
  const parts = (['high', 'medium', 'low', 'info'] as const).filter((s) => f[s] > 0).map((s) => `${f[s]} ${s}`);
  return parts.length ? parts.join(', ') : 'none';
}

export function renderRunsTable(rows: RunRow[], store: string): string {
  if (rows.length === 0) return `No runs in ${store} yet: \`gpuwise doctor -- CMD\` saves every run there.\n`;
  const head = ['id', 'when', 'outcome', 'command', 'median step', 'throughput', 'peak memory', 'findings'];
  const body = rows.map((r) => [
    r.id,
    whenText(r.startedAtMs),
    r.outcome,
    shortCommand(r.command),
    fmtS(r.medianStepS),
    throughputText(r),
    r.peakReservedBytes !== null ? `${fmtBytes(r.peakReservedBytes)} rsv` : r.maxProcessNvmlBytes !== null ? `${fmtBytes(r.maxProcessNvmlBytes)} nvml` : 'n/a',
    findingsText(r.findings),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => (b[i] as string).length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padEnd(widths[i] as number)).join('  ').trimEnd();
  return `${[line(head), ...body.map(line)].join('\n')}\n`;
}

function pct(c: number): string {
  const p = Math.round(c * 100);
  return p === 0 ? '±0%' : `${p > 0 ? '+' : ''}${p}%`;
}

function factor(x: number): string {
  return `${x >= 10 ? x.toFixed(0) : x.toFixed(1)}x`;
}

const ARROW = { text: '->', md: '→' } as const;
type Style = keyof typeof ARROW;

/**
 * One figure of a comparison as every view shows it (compare's text and Markdown, serve's Compare page): A and B
 * formatted, what changed ("-58%, 2.4x faster", "+141%", "-58 points"), and the unit the sentence ends on.
 */
export interface ComparedFigure {
  label: string;
  before: string;
  after: string;
  /** null when either side is unknown (or A is 0). */
  change: string | null;
  /** Read after B in a sentence ("of step time"); the page's column heads say it instead. */
  unit: string | null;
  /** True when B is better than A (shorter, faster, smaller), false when worse, null for no change or unknown. */
  better: boolean | null;
}

const orNa = (fmt: (v: number) => string) => (v: number | null) => (v === null ? 'n/a' : fmt(v));

/** What a step holds in either run when the batch changed ("256 samples vs 16"), else null. */
function batchText(c: RunComparison): string | null {
  const b = c.basis;
  if (b.samplesPerStep) return `${fmtCount(b.samplesPerStep.after)} samples vs ${fmtCount(b.samplesPerStep.before)}`;
  if (b.tokensPerStep) return `${fmtCount(b.tokensPerStep.after)} tokens vs ${fmtCount(b.tokensPerStep.before)}`;
  return null;
}

const fmtCount = (v: number) => (Number.isInteger(v) ? fmtInt(v) : v.toFixed(1));

/** A step time; with `perBatch` (the batch changed) its change is not called faster or slower: a step holds other work. */
function timeFigure(label: string, c: Change, perBatch: string | null = null): ComparedFigure {
  const fig = { label, before: fmtS(c.before), after: fmtS(c.after), unit: null };
  if (c.change === null || c.after === null || c.before === null || c.after <= 0) return { ...fig, change: null, better: null };
  if (Math.abs(c.change) < 0.005) return { ...fig, change: 'no change', better: null };
  if (perBatch !== null) return { ...fig, change: `${pct(c.change)}, per step of ${perBatch}`, better: null };
  return c.after < c.before
    ? { ...fig, change: `${pct(c.change)}, ${factor(c.before / c.after)} faster`, better: true }
    : { ...fig, change: `${pct(c.change)}, ${factor(c.after / c.before)} slower`, better: false };
}

/** A figure where more is better (throughput) or less is (memory). */
function valueFigure(label: string, c: Change, fmt: (v: number) => string, more: 'better' | 'worse'): ComparedFigure {
  const better = c.change === null || Math.round(c.change * 100) === 0 ? null : c.change > 0 === (more === 'better');
  return { label, before: orNa(fmt)(c.before), after: orNa(fmt)(c.after), change: c.change === null ? null : pct(c.change), unit: null, better };
}

/** A share of the step: its change in percentage points, not a percentage of a percentage. */
function shareFigure(label: string, c: Change): ComparedFigure {
  const points = c.before !== null && c.after !== null ? Math.round((c.after - c.before) * 100) : null;
  return {
    label,
    before: orNa(fmtPct)(c.before),
    after: orNa(fmtPct)(c.after),
    change: points === null ? null : `${points > 0 ? '+' : ''}${points} points`,
    unit: 'of step time',
    better: points === null || points === 0 ? null : points < 0,
  };
}

const known = (c: Change) => c.before !== null || c.after !== null;

/** The step-time and throughput figures of a comparison, those known in either run. */
export function stepFigures(c: RunComparison): ComparedFigure[] {
  const batch = c.basis ? batchText(c) : null;
  return [
    known(c.stepTime.medianS) ? timeFigure('median step', c.stepTime.medianS, batch) : null,
    known(c.stepTime.meanS) ? timeFigure('mean step', c.stepTime.meanS, batch) : null,
    known(c.stepTime.p90S) ? timeFigure('p90 step', c.stepTime.p90S, batch) : null,
    known(c.throughput.samplesPerS) ? valueFigure('samples/s', c.throughput.samplesPerS, fmtRate, 'better') : null,
    known(c.throughput.tokensPerS) ? valueFigure('tokens/s', c.throughput.tokensPerS, fmtRate, 'better') : null,
    known(c.dataWaitShare) ? shareFigure('DataLoader wait', c.dataWaitShare) : null,
  ].filter((x): x is ComparedFigure => x !== null);
}

/** The memory figures of a comparison, those known in either run. */
export function memoryFigures(c: RunComparison): ComparedFigure[] {
  const m = c.memory;
  return (
    [
      ['peak allocated', m.peakAllocatedBytes],
      ['peak reserved', m.peakReservedBytes],
      ['largest process seen by NVML', m.maxProcessNvmlBytes],
      ['largest GPU memory used (NVML)', m.maxGpuUsedBytes],
    ] as const
  )
    .filter(([, ch]) => known(ch))
    .map(([label, ch]) => valueFigure(label, ch, fmtBytes, 'worse'));
}

/** "median step 412 ms -> 171 ms (-58%, 2.4x faster)" */
export function figureText(f: ComparedFigure, style: Style = 'text'): string {
  return `${f.label} ${f.before} ${ARROW[style]} ${f.after}${f.unit ? ` ${f.unit}` : ''}${f.change === null ? '' : ` (${f.change})`}`;
}

/** "median step 412 ms -> 171 ms (-58%, 2.4x faster)", or null when neither run has the figure. */
export function timeChangeText(label: string, c: Change, style: Style = 'text'): string | null {
  return known(c) ? figureText(timeFigure(label, c), style) : null;
}

function findingLine(f: FindingChange, style: Style): string {
  const gain = (s: FindingChange['before']) => (s?.savedFraction ? `about ${fmtPct(s.savedFraction)} of the step` : 'no time estimate');
  const a = ARROW[style];
  const id = style === 'md' ? `\`${f.id}\`` : f.id;
  switch (f.status) {
    case 'new':
      return `new: ${f.after?.severity.toUpperCase()} ${id}: ${f.after?.title} (${gain(f.after)})`;
    case 'gone':
      return `gone: ${f.before?.severity.toUpperCase()} ${id}: ${f.before?.title} (was ${gain(f.before)})`;
    case 'changed':
      return `changed: ${id}: ${f.before?.severity} ${a} ${f.after?.severity}, ${gain(f.before)} ${a} ${gain(f.after)}`;
    default:
      return `unchanged: ${f.after?.severity.toUpperCase()} ${id} (${gain(f.after)})`;
  }
}

interface Section {
  title: string;
  lines: string[];
}

/**
 * The headline (issue 47): what differs between the two setups before any ratio (another script, other GPUs), then the
 * one figure to compare by: the median step for one batch, the throughput when the batch changed (with the step time
 * per batch as a secondary fact: a step of 16x the samples is not "slower").
 */
export function headlineLines(c: RunComparison, style: Style = 'text'): string[] {
  const code = (s: string) => (style === 'md' ? `\`${s}\`` : s);
  const b = c.basis;
  if (!b) return [];
  const out: string[] = [];
  const setup = [
    b.scripts ? `different scripts: ${code(b.scripts.before)} vs ${code(b.scripts.after)}` : null,
    b.gpus ? `different GPUs: ${b.gpus.before} vs ${b.gpus.after}` : null,
  ].filter((x): x is string => x !== null);
  if (setup.length) out.push(`${setup.join('; ')}: two setups, not one change`);
  const per = b.samplesPerStep ?? b.tokensPerStep;
  if (per !== null) {
    const unit = b.samplesPerStep ? 'samples' : 'tokens';
    const by = b.measure === 'step' ? 'neither run counts its throughput, so only the step time (per step of a different batch)' : 'compared by throughput';
    out.push(`batch ${fmtCount(per.before)} ${ARROW[style]} ${fmtCount(per.after)} ${unit} per step: ${by}`);
    if (b.measure !== 'step') {
      const t = b.measure === 'tokens/s' ? c.throughput.tokensPerS : c.throughput.samplesPerS;
      out.push(figureText(valueFigure(b.measure, t, fmtRate, 'better'), style));
    }
    const m = c.stepTime.medianS;
    if (m.before !== null && m.after !== null && m.change !== null) {
      const ratio = per.after / per.before;
      const times = ratio >= 1 ? `${factor(ratio)} the ${unit}` : `${factor(1 / ratio)} fewer ${unit}`;
      out.push(`step time per batch ${fmtS(m.before)} ${ARROW[style]} ${fmtS(m.after)} (${pct(m.change)}), for ${times} per step`);
    }
    return out;
  }
  if (known(c.stepTime.medianS)) out.push(figureText(timeFigure('median step', c.stepTime.medianS), style));
  return out;
}

function sections(c: RunComparison, style: Style): Section[] {
  const a = ARROW[style];
  const code = (s: string) => (style === 'md' ? `\`${s}\`` : s);
  const out: Section[] = [];
  const head = headlineLines(c, style);
  if (head.length) out.push({ title: 'In short', lines: head });
  out.push({
    title: 'Outcome',
    lines: [c.outcomeChanged ? `${c.a.outcome} ${a} ${c.b.outcome} (${c.b.outcomeText})` : `${c.b.outcome} in both runs`],
  });
  const steps = stepFigures(c).map((f) => figureText(f, style));
  out.push({ title: 'Step time', lines: steps.length ? steps : ['no timed steps in either run'] });
  const mem = memoryFigures(c).map((f) => figureText(f, style));
  out.push({ title: 'Memory', lines: mem.length ? mem : ['no memory figures in either run (CPU runs)'] });
  const moved = c.findings.filter((f) => f.status !== 'unchanged');
  const same = c.findings.length - moved.length;
  out.push({
    title: 'Findings',
    lines: c.findings.length === 0 ? ['none in either run'] : [...moved.map((f) => findingLine(f, style)), ...(same ? [`${same} finding(s) unchanged`] : [])],
  });
  const env = [
    ...c.environment.map((e) => `${e.field}: ${e.before ?? 'n/a'} ${a} ${e.after ?? 'n/a'}`),
    ...c.commandChanges.map((h) => `command: ${code(h.before.join(' ') || '(nothing)')} ${a} ${code(h.after.join(' ') || '(nothing)')}`),
  ];
  out.push({ title: 'Environment and command', lines: env.length ? env : ['same'] });
  return out;
}

function runLine(r: RunComparison['a']): string {
  return `${r.label}: ${shortCommand(r.command, 80)} (${whenText(r.startedAtMs)}, ${r.outcome})`;
}

export function renderComparisonText(c: RunComparison): string {
  const out = [`gpuwise compare`, `  A ${runLine(c.a)}`, `  B ${runLine(c.b)}`];
  for (const s of sections(c, 'text')) {
    out.push('', s.title);
    for (const l of s.lines) out.push(`  ${l}`);
  }
  return `${out.join('\n')}\n`;
}

export function renderComparisonMarkdown(c: RunComparison): string {
  const out = [
    '## gpuwise compare',
    '',
    `- **A** \`${c.a.label}\`: \`${c.a.command.join(' ')}\` (${whenText(c.a.startedAtMs)}, ${c.a.outcome})`,
    `- **B** \`${c.b.label}\`: \`${c.b.command.join(' ')}\` (${whenText(c.b.startedAtMs)}, ${c.b.outcome})`,
  ];
  for (const s of sections(c, 'md')) {
    out.push('', `### ${s.title}`, '');
    for (const l of s.lines) out.push(`- ${l}`);
  }
  out.push('', `<sub>gpuwise compare, schema ${c.schemaVersion}</sub>`);
  return `${out.join('\n')}\n`;
}
