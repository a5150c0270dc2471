/**
 * A plan (pure): the findings' fixes in the order that gains most, each applied on top of the ones before it, with the
 * step expected after it and the stage that binds then ("1. num_workers 4 -> 12: 116 -> 70 ms, then the GPU binds;
 * 2. bf16 autocast + channels_last: -> 42 ms, needs about 11 workers"). Greedy: at each place the fix that shortens
 * the composed step most; it stops when no fix left gains at least MIN_STEP_GAIN of the step.
 */
import { fmtMs } from '../util/format.js';
import { applyFix, type Fix } from './fix.js';
import { boundWords } from './gain.js';
import { type Bound, type PartialBatch, type Pipeline, stepOf, workersToAsk } from './pipeline.js';

/** A fix must shorten the composed step by this share to take a place in the plan. */
export const MIN_STEP_GAIN = 0.01;
/** Places in a plan at most. */
export const MAX_PLAN_STEPS = 6;

export interface PlanCandidate {
  /** The finding the fix comes from. */
  id: string;
  fix: Fix;
}

export interface PlanStep {
  /** The finding whose fix this is. */
  id: string;
  label: string;
  /** The step before this fix (after the ones before it) and after it, per batch of the run's size, ns. */
  fromStepNs: number;
  expectedStepNs: number;
  /** The stage that binds once it is made, in words too. */
  bound: Bound;
  boundText: string;
  /** DataLoader workers the step then needs, when the loader's rate is known and the run's count is short of it. */
  workersNeeded: number | null;
  /**
   * The step assumes DataLoader(drop_last=True): the fix compiles the model and the loader keeps each epoch's last,
   * partial batch, whose shape would cost a recompilation and new graphs (on an H200 a ResNet-50 compiled with CUDA
   * graphs took 48 s at its first epoch's end, and ran slower for a dozen steps after).
   */
  dropLast: boolean;
  /** The line as the report prints it (without its number). */
  text: string;
}

export interface PacePlan {
  /** The step now and what binds it. */
  stepNs: number;
  bound: Bound;
  steps: PlanStep[];
  /** The step expected after every fix of the plan. */
  expectedStepNs: number;
}

/** The plan for a pipeline and the fixes on offer. */
export function planOf(p: Pipeline, candidates: readonly PlanCandidate[]): PacePlan {
  const start = stepOf(p);
  let cur = p;
  let now = start.perBatchNs;
  const left = [...candidates];
  const steps: PlanStep[] = [];
  while (left.length > 0 && steps.length < MAX_PLAN_STEPS) {
    const loaderBinds = stepOf(cur).bound === 'input';
    const tried = left.map((c) => {
      const q = applyFix(cur, c.fix);
      return { c, ...(loaderBinds ? { q, s: stepOf(q) } : withWorkersNeeded(q, stepOf(q))) };
    });
    const best = tried.reduce((a, b) => (b.s.perBatchNs < a.s.perBatchNs ? b : a));
    if (!(best.s.perBatchNs < now * (1 - MIN_STEP_GAIN))) break;
    left.splice(left.indexOf(best.c), 1);
    for (const id of best.c.fix.includes ?? []) for (const c of left.filter((x) => x.id === id)) left.splice(left.indexOf(c), 1);
    // The workers the loader needs now, when its rate is known and the run's count is short of it.
    const l = best.q.loader;
    const have = typeof l?.workersTo === 'number' ? l.workersTo : (l?.workers ?? null);
    const setsWorkers = best.c.fix.ops.some((o) => o.kind === 'workers');
    // As many as the cores allow: the step was expected with that many (stepOf's `enough`).
    const wanted = best.s.workersNeeded !== null && l ? workersToAsk(l, best.s.workersNeeded) : null;
    const need = !setsWorkers && wanted !== null && have !== null && wanted > have ? wanted : null;
    const boundText = boundWords(best.q, best.s.bound);
    const partial = best.c.fix.compiles ? (p.partialBatch ?? null) : null;
    const dropLast = partial !== null ? `; with DataLoader(drop_last=True): ${partialWords(partial)}` : '';
    steps.push({
      id: best.c.id,
      label: best.c.fix.label,
      fromStepNs: now,
      expectedStepNs: best.s.perBatchNs,
      bound: best.s.bound,
      boundText,
      workersNeeded: need,
      dropLast: partial !== null,
      text: `${best.c.fix.label}: ${fmtMs(now)} -> ${fmtMs(best.s.perBatchNs)}, then ${boundText} binds${need !== null ? `; needs about ${need} DataLoader workers` : ''}${dropLast}`,
    });
    cur = best.q;
    now = best.s.perBatchNs;
  }
  return { stepNs: start.perBatchNs, bound: start.bound, steps, expectedStepNs: now };
}

/** Why a compiling fix asks for drop_last, in words. */
function partialWords(b: PartialBatch): string {
  const every = b.everySteps !== null ? `every ${b.everySteps} steps, ` : '';
  return `the loader ends each epoch on a batch of ${b.samples.join(' or ')} samples (${every}the others hold ${b.fullSamples}), whose shape would make the compiled model recompile`;
}

/**
 * The workers a step says it needs are part of it: where the loader's rate is measured and a step that found another
 * stage binding leaves the loader short of workers, the step expected is the one reached with as many as the demand
 * asks (the cores allowing), and every later step keeps them in step with the demand. Where the loader binds already,
 * more workers are the DataLoader finding's gain, never another fix's. (A Lightning ResNet-50 on an H200: pinned memory, "needs about 3
 * workers", measured 42.1 ms with 3; the step at its 2 workers, 67.3 ms, was what the plan said before.)
 */
function withWorkersNeeded(q: Pipeline, s: ReturnType<typeof stepOf>): { q: Pipeline; s: ReturnType<typeof stepOf> } {
  const l = q.loader;
  if (!l || l.batchNsPerWorker === null || l.workersTo !== undefined || s.workersNeeded === null || s.workersNeeded <= (l.workers ?? 0))
    return { q, s };
  const r: Pipeline = { ...q, loader: { ...l, workersTo: 'enough' } };
  const rs = stepOf(r);
  return rs.perBatchNs < s.perBatchNs ? { q: r, s: rs } : { q, s };
}

/** The plan as lines, numbered, for the terminal and Markdown. */
export function planLines(plan: PacePlan): string[] {
  if (plan.steps.length === 0) return ['no fix found shortens the step'];
  return plan.steps.map((s, i) => `${i + 1}. ${s.text}`);
}
