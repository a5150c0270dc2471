/**
 * What the reports carry of the pace model (pure): the pipeline of the slowest rank as measured (its stages, the bound
 * and why), the plan of the findings' fixes over the job (job.ts: every rank's own pipeline), and the words every
 * renderer prints for them (terminal, Markdown, HTML; analyze and doctor alike).
 */
import { type Finding, withPlanWorth } from '../findings/finding.js';
import { sortFindings } from '../findings/rank.js';
import { fmtMs } from '../util/format.js';
import { PER_RUN_BATCH } from './gain.js';
import { type Job, type JobRank, jobStepOf } from './job.js';
import { type Bound, type PaceSummary, paceSummary, STAGE_NAMES, type StageName, stepOf } from './pipeline.js';
import { type PacePlan, planOf, stepSavedFraction } from './plan.js';

export interface PaceReport extends PaceSummary {
  /** The rank the pipeline is of: the slowest as measured (a synchronous job goes at its pace). */
  rank: number;
  plan: PacePlan;
  /** A job of several ranks: each rank's own step (its wait for the others taken out) and which binds the job. */
  job?: JobSummary;
}

export interface JobSummary {
  /** The rank whose own step sets the job's pace now. */
  bindingRank: number;
  /** The slowest rank's measured step over the longest own step (job.ts). */
  calibration: number;
  ranks: {
    rank: number;
    /** The rank's measured step, its wait for the other ranks in it, and its own step without that wait, ns. */
    stepNs: number;
    waitNs: number;
    ownStepNs: number;
    /** What binds its own step. */
    bound: Bound;
  }[];
}

/**
 * The pace section of a report: the slowest rank's pipeline as measured and the plan over the job of the fixes the
 * findings offer, each on the ranks it names (defects: advice such as a bigger batch is weighed, not planned). Null
 * without a job.
 */
export function paceReportOf(job: Job | null, findings: readonly Finding[]): PaceReport | null {
  if (job === null) return null;
  const slowest = job.ranks.find((r) => r.rank === job.slowestRank) as JobRank;
  const candidates = findings
    .filter((f) => f.fix && f.kind !== 'advice')
    .map((f) => ({ id: f.id, fix: f.fix as NonNullable<Finding['fix']>, ranks: f.ranks }));
  const plan = planOf(job, candidates);
  return { rank: job.slowestRank, ...paceSummary(slowest.measured), plan, ...(job.ranks.length > 1 ? { job: jobSummary(job) } : {}) };
}

/**
 * The findings as the plan values them: each fix that is a step of the plan and saves more there than alone carries
 * that share (its severity and place follow it: findings/finding.ts `withPlanWorth`), re-ranked.
 */
export function findingsByPlanWorth<F extends Finding>(findings: readonly F[], plan: PacePlan | null | undefined): F[] {
  if (!plan?.steps.length) return [...findings];
  const saved = new Map(plan.steps.map((s) => [s.id, stepSavedFraction(s)]));
  return sortFindings(findings.map((f) => (saved.has(f.id) ? withPlanWorth(f, saved.get(f.id) as number) : f)));
}

function jobSummary(job: Job): JobSummary {
  return {
    bindingRank: jobStepOf(job).rank,
    calibration: job.calibration,
    ranks: job.ranks.map((r) => {
      const s = stepOf(r.pipeline);
      return { rank: r.rank, stepNs: r.measured.stepNs, waitNs: r.waitNs, ownStepNs: s.stepNs, bound: s.bound };
    }),
  };
}

const STAGE_TITLE: Record<StageName, string> = { input: 'DataLoader', host: 'host', gpu: 'GPU', comm: 'communication' };

/** One row per stage and serial cost: what, time per step (or "not timed"), measured or assumed, the evidence. */
export function paceRows(r: PaceSummary): [string, string, string, string][] {
  return [
    // No row for communication that took nothing, nor for a GPU that did nothing (a CPU run, issue 47 item 4).
    ...STAGE_NAMES.filter(
      (s) => !(s === 'comm' && !(r.stages.comm.ns ?? 0)) && !(s === 'gpu' && r.stages.gpu.ns === 0 && !(r.stages.comm.ns ?? 0)),
    ).map((s): [string, string, string, string] => {
      const st = r.stages[s];
      return [
        st.label ? `${STAGE_TITLE[s]} (${st.label})` : STAGE_TITLE[s],
        st.ns === null ? 'not timed' : fmtMs(st.ns),
        st.how,
        st.evidence,
      ];
    }),
    ...r.serial.map((c): [string, string, string, string] => [`blocking wait: ${c.kind}`, fmtMs(c.ns), c.how, c.evidence]),
  ];
}

/** The headline: what sets the pace now (and, in a job of several ranks, which rank's own work), the step after the plan. */
export function paceHeadline(r: PaceReport, ranks: number): string {
  const who = ranks > 1 ? ` (rank ${r.rank}'s, the longest measured)` : '';
  const per = r.plan.batchScale ? ` ${PER_RUN_BATCH}` : '';
  const after = r.plan.steps.length
    ? `; after the plan: ${fmtMs(r.plan.expectedStepNs)}${per} (${(r.plan.stepNs / r.plan.expectedStepNs).toFixed(1)}x${per ? ' the samples/s' : ''})`
    : '';
  const other = r.job ? otherRankBinds(r.job, r.rank) : null;
  // Where another rank's own work binds, rank r's pipeline (its wait for that rank read as communication) would name
  // a second binding stage: the headline names the one that sets the job's pace (issue 47, the DDP cold read).
  // The stage rows under it are rank r's pipeline, not the binding rank's: said, as a cold reader set rank 0's "the host
  // keeps ahead" against "the host of rank 1 sets the pace".
  if (other) return `mean step ${fmtMs(r.stepNs)}${who}: ${other}${after}; the stages below are rank ${r.rank}'s`;
  return `mean step ${fmtMs(r.stepNs)}${who}: ${r.why}${r.job ? waitWords(r.job, r.rank) : ''}${after}`;
}

/** Rank `slowest`'s wait for the others, where it has one. */
function waitWords(j: JobSummary, slowest: number): string {
  const s = j.ranks.find((x) => x.rank === slowest);
  return s && s.waitNs > 0
    ? `; rank ${s.rank} waits ${fmtMs(s.waitNs)} a step for the others in collectives (its own step ${fmtMs(s.ownStepNs)})`
    : '';
}

/** The job's pace in words where another rank's own work sets it, not the slowest rank's measured step; else null. */
function otherRankBinds(j: JobSummary, slowest: number): string | null {
  const s = j.ranks.find((x) => x.rank === slowest);
  const b = j.ranks.find((x) => x.rank === j.bindingRank);
  if (!s || !b || j.bindingRank === slowest || !(s.waitNs > 0)) return null;
  return `rank ${b.rank}'s own work sets the job's pace (${fmtMs(b.ownStepNs)} a step, ${boundWordsOf(b.bound)} binding); rank ${s.rank}'s own step is ${fmtMs(s.ownStepNs)} and it waits ${fmtMs(s.waitNs)} a step for the others in collectives`;
}

/** What binds, in words, without the pipeline's own stage labels (a report's headline, a plan with no step). */
export function boundWordsOf(b: Bound): string {
  return b === 'serial'
    ? 'the blocking waits'
    : b === 'input'
      ? 'the DataLoader'
      : b === 'comm'
        ? 'communication'
        : `the ${b === 'gpu' ? 'GPU' : 'host'}`;
}
