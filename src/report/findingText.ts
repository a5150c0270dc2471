/**
 * The one format of a finding (pure), for every report that shows one: the terminal text of analyze, memory and
 * doctor, their Markdown, and the HTML pages (serve/pages/runs.ts findingHtml lays out these same parts). In this
 * order everywhere: severity and title, with a tag (id, ranks, source, advice); what the fix gives, first
 * (`expected: 183 ms -> 72.2 ms per step (-61%, 2.54x)`, or for a memory finding the bytes it frees), and, where the
 * plan gives it another figure after the fixes before it, that figure too (report/planFirst.ts); `how:` the
 * arithmetic behind it; the evidence; `fix:` and its code (led by the framework's own switch when the framework is
 * known: advice/framework.ts). A title states no share of the step: the expected line does, and the evidence holds
 * the measured shares.
 */
import type { EstimatedGain, Finding, MemoryGain, Severity } from '../findings/finding.js';
import { bigBatchStepNs, fmtBatchScale, perRunBatch, speedupText } from '../pace/gain.js';
import { fmtBytes, fmtMs, fmtPct } from '../util/format.js';
import { wrapLine } from '../util/wrap.js';
import type { Style } from './style.js';

/** What a finding must have to be shown: analyze's, memory's and doctor's findings (a stored report may lack fields). */
export type ShownFinding = Pick<Finding, 'id' | 'severity' | 'title' | 'evidence' | 'recommendation'> &
  Partial<Pick<Finding, 'ranks' | 'kind'>> & {
    estimatedGain?: EstimatedGain | null;
    memoryGain?: MemoryGain | null;
    /** Where doctor found it: trace, memory, probe, telemetry, planner. */
    source?: string;
  };

export interface FindingParts {
  severity: Severity;
  title: string;
  id: string;
  /** After the id: the ranks (when other than rank 0 alone), where doctor found it, "advice to weigh". */
  tags: string[];
  /** What the fix gives: `expected` (step time) or `frees` (memory), and the figure; null without a gain. */
  gain: { label: 'expected' | 'frees'; text: string } | null;
  /** How the gain was computed. */
  how: string | null;
  evidence: string[];
  fix: string;
  code: string;
}

const SOURCE_LABEL: Record<string, string> = {
  trace: 'from the trace',
  memory: 'from the memory snapshot',
  probe: 'from the probe',
  telemetry: 'from the GPU samples',
  planner: 'from the planner',
};

/**
 * "183 ms -> 72.2 ms per step (-61%, 2.54x)": the step now, the step once fixed, the share saved, the speed-up. A fix
 * that changes the batch gives the time per batch of today's size and the speed-up in samples/s, and the bigger
 * batch's own step beside them: "17.6 ms -> 4.41 ms per batch of today's size (-75%, 4.00x the samples/s; a step
 * of the 4x batch: 17.6 ms)".
 */
export function expectedStepText(g: EstimatedGain): string {
  const k = g.batchScale ?? 1;
  const speedup = speedupText(g.stepTimeNs, g.expectedStepTimeNs, k, g.batchUnit);
  const ownStep = k !== 1 ? `; a step of the ${fmtBatchScale(k)} batch: ${fmtMs(bigBatchStepNs(g.expectedStepTimeNs, k))}` : '';
  return `${fmtMs(g.stepTimeNs)} -> ${fmtMs(g.expectedStepTimeNs)} ${k !== 1 ? perRunBatch(g.batchUnit) : 'per step'} (-${fmtPct(g.savedFraction)}${speedup ? `, ${speedup}` : ''}${ownStep})`;
}

/** "1.20 GiB of 14.1 GiB (8.5%)", and whether it lets a run that ran out of memory go on. */
export function freedMemoryText(g: MemoryGain): string {
  return `${fmtBytes(g.savedBytes)} of ${fmtBytes(g.ofBytes)} (${fmtPct(g.savedFraction)})${g.unblocksRun ? ': enough for the run to go on' : ''}`;
}

function ranksTag(ranks: readonly number[] | undefined): string | null {
  if (!ranks || ranks.length === 0 || (ranks.length === 1 && ranks[0] === 0)) return null;
  return ranks.length === 1 ? `rank ${ranks[0]}` : `ranks ${ranks.join(',')}`;
}

export function findingParts(f: ShownFinding): FindingParts {
  const tags = [
    ranksTag(f.ranks),
    f.source ? (SOURCE_LABEL[f.source] ?? `from the ${f.source}`) : null,
    f.kind === 'advice' ? 'advice to weigh' : null,
  ].filter((t): t is string => t !== null);
  const g = f.estimatedGain ?? null;
  const m = f.memoryGain ?? null;
  return {
    severity: f.severity,
    title: f.title,
    id: f.id,
    tags,
    gain: g ? { label: 'expected', text: expectedStepText(g) } : m ? { label: 'frees', text: freedMemoryText(m) } : null,
    how: g ? g.arithmetic : m ? m.arithmetic : null,
    evidence: f.evidence,
    fix: f.recommendation.summary,
    code: f.recommendation.code,
  };
}

/**
 * A finding as terminal lines: ` 1. HIGH   title  [id, tags]`, then the expected line, `how:`, the evidence, `fix:` and
 * the code. `width`: wrap prose to it (the terminal's columns); 0 leaves lines whole.
 */
export function findingLines(f: ShownFinding, st: Style, index: number, width = 0, inPlan: string | null = null): string[] {
  const p = findingParts(f);
  const out: string[] = [];
  const wrap = (line: string, hang: number) => wrapLine(line, width, hang);
  const sev = p.severity.toUpperCase().padEnd(6);
  const tag = `[${[p.id, ...p.tags].join(', ')}]`;
  const num = `${String(index + 1).padStart(2)}.`;
  const head = wrap(`${num} ${sev} ${p.title}  ${tag}`, 11);
  if (head.length === 1) out.push(`${num} ${st.severity(p.severity, sev)} ${st.bold(p.title)}  ${st.dim(tag)}`);
  else out.push(`${num} ${st.severity(p.severity, sev)} ${st.bold(head[0]!.slice(num.length + 8))}`, ...head.slice(1).map((l) => st.bold(l)));
  if (p.gain) out.push(...wrap(`    ${p.gain.label}${inPlan ? ' alone' : ''}: ${p.gain.text}`, 5));
  if (inPlan) out.push(...wrap(`    ${inPlan}`, 5));
  if (p.how) out.push(...howLines(p.how, wrap).map((l) => st.dim(l)));
  for (const e of p.evidence) out.push(...wrap(`    · ${e}`, 2));
  out.push(...wrap(`    fix: ${p.fix}`, 5));
  if (p.code) for (const line of p.code.split('\n')) out.push(`      ${st.dim('|')} ${line}`);
  return out;
}

/** Parts of a derivation three or more long are numbered, one a line (the Markdown and HTML keep the paragraph). */
const HOW_NUMBERED_PARTS = 3;

/**
 * A `how:` derivation's parts: split at "; " and at a sentence's end (". " before a capital), never inside
 * parentheses, so "0.78 x the peak" and "(a; b)" stay whole.
 */
export function howParts(how: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < how.length; i++) {
    const c = how[i];
    if (c === '(' || c === '[') depth++;
    else if (c === ')' || c === ']') depth = Math.max(0, depth - 1);
    else if (depth === 0 && how[i + 1] === ' ' && (c === ';' || (c === '.' && /[A-Z]/.test(how[i + 2] ?? '')))) {
      parts.push(how.slice(start, c === '.' ? i + 1 : i).trim());
      start = i + 2;
    }
  }
  parts.push(how.slice(start).trim());
  return parts.filter(Boolean);
}

/**
 * The terminal's `how:`: one line where the derivation is short, else its parts numbered one a line (issue 47: a
 * run-on chain of a dozen factors read as one sentence); each part wrapped under itself.
 */
function howLines(how: string, wrap: (line: string, hang: number) => string[]): string[] {
  const parts = howParts(how);
  if (parts.length < HOW_NUMBERED_PARTS) return wrap(`    how: ${how}`, 5);
  return ['    how:', ...parts.flatMap((part, i) => wrap(`      ${i + 1}. ${part}`, 3 + String(i + 1).length))];
}

const ICON: Record<Severity, string> = { high: '🔴', medium: '🟠', low: '🔵', info: '⚪' };

/** Inline Markdown code that survives backticks in the text. */
export function mdCode(s: string): string {
  const fence = s.includes('`') ? '``' : '`';
  return `${fence}${fence === '``' ? ` ${s} ` : s}${fence}`;
}

/** A finding as Markdown, the parts in the terminal's order; `heading`: its level (`###`, `####`). */
export function findingMarkdown(f: ShownFinding, index: number, heading: string, inPlan: string | null = null): string[] {
  const p = findingParts(f);
  const out = [`${heading} ${index + 1}. ${ICON[p.severity] ?? ''} ${p.severity.toUpperCase()}: ${p.title}`, [mdCode(p.id), ...p.tags].join(' · '), ''];
  if (p.gain) out.push(`**${p.gain.label}${inPlan ? ' alone' : ''}:** ${p.gain.text}${p.how || inPlan ? '  ' : ''}`);
  if (inPlan) out.push(`**${inPlan.replace(/^(in the plan[^:]*):/, '$1:**')}${p.how ? '  ' : ''}`);
  if (p.how) out.push(`_how:_ ${p.how}`);
  if (p.gain || p.how) out.push('');
  if (p.evidence.length) out.push(...p.evidence.map((e) => `- ${e}`), '');
  out.push(`**fix:** ${p.fix}`, '');
  if (p.code) out.push('```python', p.code, '```', '');
  return out;
}
