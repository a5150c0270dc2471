/**
 * A plan (pure): the findings' fixes in the order that gains most, each applied on top of the ones before it, with the
 * step expected after it and the stage that binds then ("1. num_workers 4 -> 12: 116 -> 70 ms, then the GPU binds;
 * 2. bf16 autocast + channels_last: -> 42 ms, needs about 11 workers"). Greedy: at each place the fix that shortens
 * the composed step most; it stops when no fix left gains at least MIN_STEP_GAIN of the step. Composed over the job
 * (job.ts): each fix on the ranks its finding names, the step the slowest rank's own; a run of one rank is a job of one.
 */
import type { FindingId } from '../findings/ids.js';
import { fmtMs } from '../util/format.js';
import { type Fix, fixEffect } from './fix.js';
import { boundWords, fmtBatchScale, PER_RUN_BATCH, speedupText } from './gain.js';
import { applyJobFix, type Job, type JobRank, jobStepOf, ranksMadeOn } from './job.js';
import { type Bound, type PartialBatch, type Pipeline, stepOf, workersToAsk } from './pipeline.js';
import { likelyText, type TypicalError, typicalErrorOf } from './typicalError.js';

/** A fix must shorten the composed step by this share to take a place in the plan. */
export const MIN_STEP_GAIN = 0.01;
/** Places in a plan at most. */
export const MAX_PLAN_STEPS = 6;

export interface PlanCandidate {
  /** The finding the fix comes from. */
  id: FindingId;
  fix: Fix;
  /** The ranks its finding names: the fix applies to them (to every rank where none or absent). */
  ranks?: readonly number[];
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
  /** What the fix changes of the stages at this place of the plan, in words ("the host 60.1 ms -> 30.2 ms, ..."). */
  effect: string;
  /**
   * How far plan steps of this kind have been from the GPU: the expected step is ± this share (typicalError.ts).
   * Absent in reports saved before it was given.
   */
  typicalError?: TypicalError;
  /** The line as the report prints it (without its number). */
  text: string;
  /** The rank whose own step binds once it is made, and the ranks the fix is made on (a job of several ranks only). */
  rank?: number;
  ranks?: number[];
  /** The batch over the run's once this step is made, where a step so far changed it: the times are then per batch of today's size. */
  batchScale?: number;
}

export interface PacePlan {
  /** The step now and what binds it. */
  stepNs: number;
  bound: Bound;
  /** The rank whose own step binds now (a job of several ranks only). */
  rank?: number;
  steps: PlanStep[];
  /** The step expected after every fix of the plan. */
  expectedStepNs: number;
  /** The batch over the run's after the plan, where a step changed it: expectedStepNs is then per batch of today's size. */
  batchScale?: number;
}

/** Whether a fix changes the batch (a batch op, or a what-if modelled at another batch). */
function changesBatch(fix: Fix): boolean {
  return fix.ops.some((o) => o.kind === 'batch') || (fix.batchScale ?? 1) !== 1;
}

/** The plan for a job (a run of one rank: a job of one) and the fixes on offer. */
/** The share of the step a plan step saves where it stands: 1 - expected / the step before it (0 without one). */
export function stepSavedFraction(s: Pick<PlanStep, 'fromStepNs' | 'expectedStepNs'>): number {
  return s.fromStepNs > 0 ? 1 - s.expectedStepNs / s.fromStepNs : 0;
}

export function planOf(job: Job, candidates: readonly PlanCandidate[]): PacePlan {
  const start = jobStepOf(job);
  const several = job.ranks.length > 1;
  let cur = job;
  let now = start.perBatchNs;
  const left = [...candidates];
  const steps: PlanStep[] = [];
  let saidUntimed = false;
  const slowest = job.ranks.find((r) => r.rank === job.slowestRank) as JobRank;
  // The DataLoader workers the plan has set so far (the run's own at first): a later step that needs more says so from there.
  let workersNow: number | null = slowest.pipeline.loader?.workers ?? null;
  while (left.length > 0 && steps.length < MAX_PLAN_STEPS) {
    const loaderBinds = jobStepOf(cur).bound === 'input';
    const tried = left.map((c) => {
      const q = applyJobFix(cur, c.fix, c.ranks ?? []);
      const r = loaderBinds ? q : withWorkersNeeded(q);
      return { c, q: r, s: jobStepOf(r) };
    });
    // A larger batch changes the training itself (its learning rate, its optimisation), so the fixes that leave the
    // batch as it is come first; a batch step is planned once none of them gains (issue 47: a DDP plan led by "batch x4").
    const bestOf = (ts: typeof tried) => ts.reduce((a, b) => (b.s.perBatchNs < a.s.perBatchNs ? b : a));
    const keepBatch = tried.filter((t) => !changesBatch(t.c.fix));
    const bestKeeping = keepBatch.length > 0 ? bestOf(keepBatch) : null;
    const best = bestKeeping !== null && bestKeeping.s.perBatchNs < now * (1 - MIN_STEP_GAIN) ? bestKeeping : bestOf(tried);
    if (!(best.s.perBatchNs < now * (1 - MIN_STEP_GAIN))) break;
    left.splice(left.indexOf(best.c), 1);
    for (const id of best.c.fix.includes ?? []) for (const c of left.filter((x) => x.id === id)) left.splice(left.indexOf(c), 1);
    // The workers the binding rank's loader needs now, when its rate is known and the run's count is short of it.
    const bp = best.s.pipeline;
    const l = bp.loader;
    const have = typeof l?.workersTo === 'number' ? l.workersTo : (workersNow ?? l?.workers ?? null);
    const setsWorkers = best.c.fix.ops.find((o) => o.kind === 'workers');
    // As many as the cores allow: the step was expected with that many (stepOf's `enough`).
    const wanted = best.s.workersNeeded !== null && l ? workersToAsk(l, best.s.workersNeeded) : null;
    const need = !setsWorkers && wanted !== null && have !== null && wanted > have ? wanted : null;
    const upFrom = need !== null && have !== null ? `, up from ${have}` : '';
    if (need !== null) workersNow = need;
    else if (setsWorkers) workersNow = typeof setsWorkers.to === 'number' ? setsWorkers.to : (wanted ?? workersNow);
    const boundText = boundWords(bp, best.s.bound);
    // A stage the evidence could not time cannot be said to keep up: the step stops at it if it is longer (issue 47).
    // Said at the first step it holds for; the steps after it rest on the same caveat.
    const untimedHost: string =
      bp.stages.host.ns === null && best.s.bound !== 'host' && !saidUntimed ? ', unless the host binds first (its time was not measured)' : '';
    saidUntimed ||= untimedHost !== '';
    const partial = best.c.fix.compiles ? (slowest.measured.partialBatch ?? null) : null;
    const dropLast = partial !== null ? `; with DataLoader(drop_last=True): ${partialWords(partial)}` : '';
    const madeOn = several ? ranksMadeOn(cur, best.c.fix, best.c.ranks ?? []) : [];
    const batchScale = bp.batchScale / start.pipeline.batchScale;
    const per = batchScale !== 1 ? PER_RUN_BATCH : 'a step';
    // The step that changes the batch says how long its own, bigger step takes: its time per run's batch is not that.
    const ownStep =
      batchScale !== (steps.at(-1)?.batchScale ?? 1)
        ? `; a step of the ${fmtBatchScale(batchScale)} batch: ${fmtMs(best.s.perBatchNs * batchScale)}`
        : '';
    const typicalError = typicalErrorOf(best.c.id);
    steps.push({
      id: best.c.id,
      label: best.c.fix.label,
      fromStepNs: now,
      expectedStepNs: best.s.perBatchNs,
      bound: best.s.bound,
      boundText,
      workersNeeded: need,
      dropLast: partial !== null,
      effect: fixEffect(cur.ranks.find((r) => r.rank === best.s.rank)?.pipeline ?? bp, bp),
      typicalError,
      text: `${best.c.fix.label}${madeOn.length > 1 ? ` (ranks ${madeOn.join(', ')})` : ''}: ${fmtMs(now)} -> ${fmtMs(best.s.perBatchNs)} ${per} (${speedupText(now, best.s.perBatchNs, batchScale)}; ${likelyText(best.s.perBatchNs, typicalError)}${ownStep}); then ${boundText} sets the pace${several ? ` (rank ${best.s.rank})` : ''}${untimedHost}${need !== null ? `; needs about ${need} DataLoader workers${upFrom}` : ''}${dropLast}`,
      ...(several ? { rank: best.s.rank, ranks: madeOn } : {}),
      ...(batchScale !== 1 ? { batchScale } : {}),
    });
    cur = best.q;
    now = best.s.perBatchNs;
  }
  const batchScale = steps.at(-1)?.batchScale;
  return {
    stepNs: start.perBatchNs,
    bound: start.bound,
    ...(several ? { rank: start.rank } : {}),
    steps,
    expectedStepNs: now,
    ...(batchScale ? { batchScale } : {}),
  };
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
function withWorkersNeeded(job: Job): Job {
  return { ...job, ranks: job.ranks.map((r) => ({ ...r, pipeline: rankWithWorkersNeeded(r.pipeline) })) };
}

/** One rank's pipeline with the workers its step says it needs, where they shorten it. */
function rankWithWorkersNeeded(q: Pipeline): Pipeline {
  const l = q.loader;
  const s = stepOf(q);
  if (!l || l.batchNsPerWorker === null || l.workersTo !== undefined || s.workersNeeded === null || s.workersNeeded <= (l.workers ?? 0))
    return q;
  const r: Pipeline = { ...q, loader: { ...l, workersTo: 'enough' } };
  return stepOf(r).perBatchNs < s.perBatchNs ? r : q;
}

/** The plan as lines, numbered, for the terminal and Markdown. */
export function planLines(plan: PacePlan): string[] {
  if (plan.steps.length === 0) return ['no fix found shortens the step'];
  return plan.steps.map((s, i) => `${i + 1}. ${s.text}`);
}
