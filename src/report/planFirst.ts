/**
 * What to do, first (pure): the opening of every report that has a plan (analyze's and doctor's terminal text,
 * Markdown and HTML pages, serve/pages/pace.ts). Each plan step in a line: the fix, the step before and after it, what
 * sets the pace next and the workers it needs; under it the change to make, the first line of its finding's code (led by the framework's own switch where
 * doctor knows the framework). The findings, why, follow. A reader who stops after these lines knows what to change
 * and what it gives (issue 47: the plan used to close the report, under a first finding of LOW).
 */
import { type LeverAccuracy, measuredHereText } from '../history/leverAccuracy.js';
import { fmtBatchScale, PER_RUN_BATCH, speedupText } from '../pace/gain.js';
import { type PacePlan, type PlanStep, planLines, stepSavedFraction } from '../pace/plan.js';
import { boundWordsOf } from '../pace/report.js';
import { likelyText, typicalErrorWords } from '../pace/typicalError.js';
import { fmtMs } from '../util/format.js';
import { mdCode, type ShownFinding } from './findingText.js';

/** Bracket depth a line of Python adds (strings aside: the fixes' code has no bracket inside a string). */
function depthOf(line: string): number {
  let d = 0;
  for (const c of line.replace(/#.*$/, '')) d += c === '(' || c === '[' || c === '{' ? 1 : c === ')' || c === ']' || c === '}' ? -1 : 0;
  return d;
}

/** The first statement of a fix's code (a call over several lines joined into one), its comments and imports left out. */
export function changeLine(code: string): string | null {
  const lines = code.split('\n');
  // Comments and imports are not the change (SDPA's code opens with `import torch.nn.functional as F`).
  const start = lines.findIndex((l) => l.trim().length > 0 && !/^(#|import |from \S+ import )/.test(l.trim()));
  if (start < 0) return null;
  const parts: string[] = [];
  let depth = 0;
  for (const l of lines.slice(start, start + 6)) {
    const text = l.replace(/\s+#.*$/, '').trim();
    parts.push(text);
    depth += depthOf(text);
    if (depth <= 0) break;
  }
  const first = parts
    .join(' ')
    .replace(/([([{]) /g, '$1')
    .replace(/ ([)\]}])/g, '$1');
  // A block's header (`for ...:`, `with ...:`) says little alone: its first statement goes with it, or the comment
  // that opens the block where the body is the loop's own (autocast: "# your forward and loss as they are").
  if (!first.endsWith(':')) return first;
  const rest = lines.slice(start + parts.length).filter((l) => l.trim().length > 0);
  if (rest[0]?.trim().startsWith('#')) return `${first}  ${rest[0].trim()}`;
  const body = rest.find((l) => !l.trim().startsWith('#'));
  return body ? `${first} ${body.replace(/\s+#.*$/, '').trim()} ...` : first;
}

/** A `name=value` keyword argument of a one-line call. */
const kwarg = (name: string) => new RegExp(`(,\\s*)?\\b${name}=[^,)]*`);

/**
 * The change of plan step `i`, in one line: its finding's first statement, made to say what this step sets. A
 * DataLoader call gets the workers the step says it needs (`workersNeeded`: the fix's own count is in its finding's
 * code already); a pinned DataLoader says the non-blocking copy that goes with it, where its finding's code has one.
 */
export function stepChangeLine(plan: PacePlan, i: number, code: string): string | null {
  let line = changeLine(code);
  const step = plan.steps[i];
  if (line === null || step === undefined || !/\bDataLoader\(/.test(line)) return line;
  const need = step.workersNeeded;
  if (need !== null)
    line = kwarg('num_workers').test(line)
      ? line.replace(/\bnum_workers=[^,)]*/, `num_workers=${need}`)
      : line.replace(/DataLoader\(([^)]*)\)/, `DataLoader($1, num_workers=${need})`);
  if (/\bpin_memory=True/.test(line) && /non_blocking=True/.test(code) && !/non_blocking/.test(line))
    line += '; x = x.to(device, non_blocking=True)';
  return line.replace(/\(\s*,\s*/, '(');
}

/** What sets a change line's pointer to its finding apart from its code. */
const POINTER_SEP = '   · ';
/** After a change line, where its finding's code holds more than that line: "   · all of it: finding 3". */
export const WHOLE_CHANGE = `${POINTER_SEP}all of it: finding `;

/** A change line's code and, where the finding holds more, the pointer to it (Markdown and HTML set them apart). */
export function splitChange(text: string): [code: string, more: string | null] {
  const i = text.indexOf(WHOLE_CHANGE);
  return i < 0 ? [text, null] : [text.slice(0, i), text.slice(i + POINTER_SEP.length)];
}

/** A line under a plan step (its change, what this machine measured), as planFirstLines indents it. */
export const SUB_LINE = /^ {7}\S/;

/**
 * What doctor's plan starts from, named in its headline: its report gives the profiled window's step too (slowed by
 * the profiler: 189 ms against the run's 184 for the Trainer's GPT-2), near it in the findings' evidence.
 */
export const RUN_STEP_NAME = "the run's mean step";

/** What a report's opening is drawn from: planFirstLines, planFirstMarkdown and serve's planFirstHtml take it. */
export interface PlanFirstOptions {
  /** The pace plan: its steps, each step's gain and the whole plan's. */
  plan: PacePlan;
  /** The report's findings: each plan step's change is the first line of its finding's code. */
  findings: readonly ShownFinding[];
  /**
   * What the plan's first step is, named in the headline where the report gives another step beside it (doctor:
   * RUN_STEP_NAME); absent or null: the headline says "a step".
   */
  stepName?: string | null;
  /** What tune --plan measured of the plan's steps on this machine, said under each (DoctorReport.measuredHere); none by default. */
  measuredHere?: readonly LeverAccuracy[];
  /**
   * Where the plan comes from, for the note that closes it: a run doctor watched (tune --plan can measure its steps)
   * or a trace (default).
   */
  from?: 'run' | 'trace';
}

/**
 * The plan's closing note: its times are estimates, and how to measure them (a cold reader took three-digit figures
 * from a chain of assumed factors for measurements). Not said where this machine measured every step already.
 */
function estimateNote(from: 'run' | 'trace', banded: boolean): string[] {
  return [
    `       (estimates from ${from === 'run' ? 'this run' : 'the trace'}${banded ? `: ${typicalErrorWords()}` : ''};`,
    from === 'run'
      ? '       `gpuwise tune --plan -- CMD` measures each step on your script)'
      : '       make a change and profile again to measure it)',
  ];
}

/**
 * The section's lines, unstyled: a headline with the whole plan's gain, each step and its change. With no plan step:
 * one line that says so (and the findings follow).
 */
export function planFirstLines({ plan, findings, stepName = null, measuredHere = [], from = 'trace' }: PlanFirstOptions): string[] {
  // Said with what binds: a trace whose pace section has the host binding read "No findings" under a bare "no fix
  // found" (issue 47: model_parallel_pipelined, its GPUs waiting 64% of the step for launches).
  if (plan.steps.length === 0)
    return [`What to do: no fix found that shortens the step: ${boundWordsOf(plan.bound)} sets the pace (below), and no finding's fix shortens it`];
  const per = plan.batchScale ? ` ${PER_RUN_BATCH}` : stepName ? '' : ' a step';
  const last = plan.steps.at(-1) as PlanStep;
  // Per run's batch, the plan's own step is said too: a cold reader of a batch x4 plan took 5.38 ms for its step.
  const ownStep = plan.batchScale && plan.batchScale !== 1 ? `; a step of the ${fmtBatchScale(plan.batchScale)} batch: ${fmtMs(plan.expectedStepNs * plan.batchScale)}` : '';
  const out = [
    `What to do: ${stepName ? `${stepName} ` : ''}${fmtMs(plan.stepNs)} -> ${fmtMs(plan.expectedStepNs)}${per} (${speedupText(plan.stepNs, plan.expectedStepNs, plan.batchScale)}${last.typicalError ? `; ${likelyText(plan.expectedStepNs, last.typicalError)}` : ''}${ownStep}) with ${plan.steps.length === 1 ? 'this change' : `these ${plan.steps.length} changes, each on top of the ones before`}`,
  ];
  const lines = planLines(plan);
  plan.steps.forEach((s, i) => {
    out.push(`  ${lines[i]}`);
    const f = findings.find((x) => x.id === s.id);
    const change = f ? stepChangeLine(plan, i, f.recommendation.code) : null;
    // The change line is the code's first statement; where the finding has more (a third sync's own fix, the plain
    // PyTorch lines beside the framework's), it says where (issue 47: a cold reader took the line for the whole fix).
    const more = f && f.recommendation.code.split('\n').filter((l) => l.trim()).length > 2 ? `${WHOLE_CHANGE}${findings.indexOf(f) + 1}` : '';
    if (change) out.push(`       change: ${change}${more}`);
    const here = measuredHere.find((a) => a.stepId === s.id);
    if (here) out.push(`       ${measuredHereText(here)}`);
  });
  if (!plan.steps.every((s) => measuredHere.some((a) => a.stepId === s.id)))
    out.push(
      ...estimateNote(
        from,
        plan.steps.some((s) => s.typicalError),
      ),
    );
  return out;
}

/**
 * A finding's gain in the plan beside its gain alone, where they differ: "in the plan (step 2, after bf16 autocast):
 * 74.8 ms -> 41.0 ms a step (1.82x)". null when the finding is not in the plan or the two agree within 1%.
 */
export function inPlanText(plan: PacePlan | null | undefined, f: ShownFinding): string | null {
  const i = plan ? plan.steps.findIndex((s) => s.id === f.id) : -1;
  if (!plan || i < 0) return null;
  const s = plan.steps[i] as PlanStep;
  const alone = f.estimatedGain ? 1 - f.estimatedGain.expectedStepTimeNs / f.estimatedGain.stepTimeNs : 0;
  const planned = stepSavedFraction(s);
  // The same share from the same step says nothing new; the same share from a later step of the plan does (a batch x4
  // after compile: 17.6 -> 4.41 ms alone, 6.46 -> 1.61 ms in the plan).
  const aloneFromNs = f.estimatedGain?.stepTimeNs ?? s.fromStepNs;
  if (Math.abs(planned - alone) < 0.01 && Math.abs(s.fromStepNs / aloneFromNs - 1) < 0.01) return null;
  const after =
    i > 0
      ? `, after ${plan.steps
          .slice(0, i)
          .map((x) => x.label)
          .join(', ')}`
      : '';
  // What the fix changes at that place, so that a gain unlike the finding's own arithmetic (made on the run as it is) says why.
  const effect = s.effect ? `: ${s.effect}` : '';
  return `in the plan (step ${i + 1}${after}): ${fmtMs(s.fromStepNs)} -> ${fmtMs(s.expectedStepNs)} ${s.batchScale ? PER_RUN_BATCH : 'a step'} (${speedupText(s.fromStepNs, s.expectedStepNs, s.batchScale)})${effect}`;
}

/** The same section as Markdown: a bold headline, the steps as a numbered list with the change as code. */
export function planFirstMarkdown(options: PlanFirstOptions): string[] {
  const [head, ...rest] = planFirstLines(options);
  const out = [`**${head}**`, ''];
  for (const l of rest) {
    const change = /^ +change: (.*)$/.exec(l);
    if (change) {
      const [code, more] = splitChange(change[1] as string);
      out.push(`   change: ${mdCode(code)}${more ? ` (${more})` : ''}`);
    }
    else if (SUB_LINE.test(l)) out.push(`   ${l.trim()}`);
    else out.push(l.trim());
  }
  return out;
}
