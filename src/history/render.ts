/**
 * Text and Markdown for the run history (pure): the `gpuwise runs` table and the `gpuwise compare`
 * report. One sentence per figure, built once and set as terminal lines or Markdown bullets.
 */
import { fmtBytes, fmtMs, fmtPct } from '../util/format.js';
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
const fmtRate = (v: number) => (v >= 100 ? Math.round(v).toLocaleString('en-US') : v.toFixed(1));

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

/** "median step 412 ms -> 171 ms (-58%, 2.4x faster)" */
export function timeChangeText(label: string, c: Change, style: Style = 'text'): string | null {
  if (c.before === null && c.after === null) return null;
  const head = `${label} ${fmtS(c.before)} ${ARROW[style]} ${fmtS(c.after)}`;
  if (c.change === null || c.after === null || c.before === null || c.after <= 0) return head;
  if (Math.abs(c.change) < 0.005) return `${head} (no change)`;
  return c.after < c.before ? `${head} (${pct(c.change)}, ${factor(c.before / c.after)} faster)` : `${head} (${pct(c.change)}, ${factor(c.after / c.before)} slower)`;
}

export function valueChangeText(label: string, c: Change, fmt: (v: number) => string, style: Style = 'text'): string | null {
  if (c.before === null && c.after === null) return null;
  const f = (v: number | null) => (v === null ? 'n/a' : fmt(v));
  return `${label} ${f(c.before)} ${ARROW[style]} ${f(c.after)}${c.change === null ? '' : ` (${pct(c.change)})`}`;
}

function shareChangeText(c: Change, style: Style): string | null {
  if (c.before === null && c.after === null) return null;
  const f = (v: number | null) => (v === null ? 'n/a' : fmtPct(v));
  const points = c.before !== null && c.after !== null ? Math.round((c.after - c.before) * 100) : null;
  return `DataLoader wait ${f(c.before)} ${ARROW[style]} ${f(c.after)} of step time${points === null ? '' : ` (${points > 0 ? '+' : ''}${points} points)`}`;
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

function sections(c: RunComparison, style: Style): Section[] {
  const a = ARROW[style];
  const code = (s: string) => (style === 'md' ? `\`${s}\`` : s);
  const keep = (xs: (string | null)[]) => xs.filter((x): x is string => x !== null);
  const out: Section[] = [];
  out.push({
    title: 'Outcome',
    lines: [c.outcomeChanged ? `${c.a.outcome} ${a} ${c.b.outcome} (${c.b.outcomeText})` : `${c.b.outcome} in both runs`],
  });
  const steps = keep([
    timeChangeText('median step', c.stepTime.medianS, style),
    timeChangeText('mean step', c.stepTime.meanS, style),
    timeChangeText('p90 step', c.stepTime.p90S, style),
    valueChangeText('samples/s', c.throughput.samplesPerS, fmtRate, style),
    valueChangeText('tokens/s', c.throughput.tokensPerS, fmtRate, style),
    shareChangeText(c.dataWaitShare, style),
  ]);
  out.push({ title: 'Step time', lines: steps.length ? steps : ['no timed steps in either run'] });
  const mem = keep([
    valueChangeText('peak allocated', c.memory.peakAllocatedBytes, fmtBytes, style),
    valueChangeText('peak reserved', c.memory.peakReservedBytes, fmtBytes, style),
    valueChangeText('largest process seen by NVML', c.memory.maxProcessNvmlBytes, fmtBytes, style),
    valueChangeText('largest GPU memory used (NVML)', c.memory.maxGpuUsedBytes, fmtBytes, style),
  ]);
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
