/**
 * The pace model's invariants as code (pure; docs/reference/doctor.md, "What sets the pace"): what every job, fix and plan
 * satisfies, each one broken said in words (none broken: an empty list). The tests run them over every shipped trace
 * and run, mutated copies of them (truncated, a step dropped, ranks swapped) and generated jobs (test/pace/job.test.ts).
 */
import type { Finding } from '../findings/finding.js';
import { fmtMs } from '../util/format.js';
import { applyJobFix, type Job, jobStepOf } from './job.js';
import { type Pipeline, STAGE_NAMES, stepOf } from './pipeline.js';
import { MIN_STEP_GAIN, type PacePlan, type PlanCandidate, planOf } from './plan.js';
import type { PaceReport } from './report.js';

/** Rounding allowed in a comparison: a relative part and a nanosecond. */
const REL = 1e-9;
const over = (a: number, b: number) => a > b * (1 + REL) + 1;
/**
 * A stage may exceed the measured step by this share before the model is said to contradict it: the stages are read
 * off other clocks than the step (a thread's CPU time, a window's steps): a ResNet-50 compiled on an H200 spent 32.7 ms
 * of CPU a 32.6 ms step.
 */
export const STAGE_CLOCKS_SHARE = 0.02;

/** The step a pipeline's host and GPU's side sets, per batch (no DataLoader, no epoch starts): a floor of its step. */
export function chainNs(p: Pipeline): number {
  const none = { ns: null, how: 'assumed' as const, evidence: '' };
  const q: Pipeline = { ...p, loader: null, stages: { ...p.stages, input: none }, serial: p.serial.filter((c) => c.kind !== 'epoch-starts') };
  return stepOf(q).perBatchNs;
}

/**
 * The job: its modelled step is the slowest rank's measured step; no rank's own step is longer than its measured one
 * (a wait taken out never lengthens it); no stage of a rank's pipeline is above that rank's measured step (a stage
 * cannot bind above what was measured).
 */
export function jobViolations(job: Job): string[] {
  const out: string[] = [];
  const s = jobStepOf(job);
  if (s.stepNs > 0 && Math.abs(s.stepNs - job.stepNs) > job.stepNs * REL + 1)
    out.push(`the job's modelled step ${fmtMs(s.stepNs)} is not the slowest rank's measured ${fmtMs(job.stepNs)}`);
  if (!(job.calibration >= 1)) out.push(`the job's calibration ${job.calibration} is below 1: the job would go faster than a rank's own work`);
  for (const r of job.ranks) {
    if (!(r.waitNs >= 0)) out.push(`rank ${r.rank} waits ${r.waitNs} ns`);
    if (over(stepOf(r.pipeline).stepNs, stepOf(r.measured).stepNs))
      out.push(`rank ${r.rank}'s own step ${fmtMs(stepOf(r.pipeline).stepNs)} is longer than its measured ${fmtMs(stepOf(r.measured).stepNs)}`);
    for (const st of STAGE_NAMES) {
      // The stage's own figure, before the calibration scales it down: above the step, the evidence contradicts it
      // (past STAGE_CLOCKS_SHARE: a stage read off another clock than the step's, a thread's CPU time, differs by that).
      const ns = r.measured.stages[st].ns;
      if (ns !== null && over(ns, r.measured.stepNs * (1 + STAGE_CLOCKS_SHARE)))
        out.push(`rank ${r.rank}'s ${st} stage ${fmtMs(ns)} is above its measured step ${fmtMs(r.measured.stepNs)}`);
    }
  }
  return out;
}

/** Each fix on its own: the job's step once it is made is never longer than before. */
export function fixViolations(job: Job, candidates: readonly PlanCandidate[]): string[] {
  const now = jobStepOf(job).perBatchNs;
  return candidates.flatMap((c) => {
    const after = jobStepOf(applyJobFix(job, c.fix, c.ranks ?? [])).perBatchNs;
    return over(after, now) ? [`${c.id} (${c.fix.label}) makes the step longer: ${fmtMs(now)} -> ${fmtMs(after)}`] : [];
  });
}

/**
 * The plan: it starts at the job's step; each step starts where the one before ended and gains at least
 * MIN_STEP_GAIN; and, its fixes made again on the ranks they name, no step goes below what they leave of any rank's
 * work (the rank's host and GPU's side, calibrated to the job).
 */
export function planViolations(job: Job, candidates: readonly PlanCandidate[], plan: PacePlan): string[] {
  const out: string[] = [];
  const start = jobStepOf(job).perBatchNs;
  if (Math.abs(plan.stepNs - start) > start * REL + 1) out.push(`the plan starts at ${fmtMs(plan.stepNs)}, the job's step is ${fmtMs(start)}`);
  let cur = job;
  let from = plan.stepNs;
  const left = [...candidates];
  plan.steps.forEach((s, i) => {
    if (s.fromStepNs !== from) out.push(`step ${i + 1} starts at ${fmtMs(s.fromStepNs)}, not where the one before ended (${fmtMs(from)})`);
    if (!(s.expectedStepNs < s.fromStepNs * (1 - MIN_STEP_GAIN) * (1 + REL)))
      out.push(`step ${i + 1} (${s.id}) gains less than ${MIN_STEP_GAIN * 100}%: ${fmtMs(s.fromStepNs)} -> ${fmtMs(s.expectedStepNs)}`);
    const c = left.find((x) => x.id === s.id && x.fix.label === s.label);
    if (!c) {
      out.push(`step ${i + 1} (${s.id}) is no candidate's fix`);
      return;
    }
    left.splice(left.indexOf(c), 1);
    cur = applyJobFix(cur, c.fix, c.ranks ?? []);
    for (const r of cur.ranks) {
      const floor = chainNs(r.pipeline) * cur.calibration;
      if (over(floor, s.expectedStepNs))
        out.push(`step ${i + 1} (${s.id}) expects ${fmtMs(s.expectedStepNs)}, below what its fixes leave of rank ${r.rank}'s work (${fmtMs(floor)})`);
    }
    from = s.expectedStepNs;
  });
  if (plan.expectedStepNs !== from) out.push(`the plan ends at ${fmtMs(plan.expectedStepNs)}, its last step at ${fmtMs(from)}`);
  return out;
}

/** The plan's candidates from the findings, as the reports make them (pace/report.ts paceReportOf). */
export function candidatesOf(findings: readonly Finding[]): PlanCandidate[] {
  return findings
    .filter((f) => f.fix && f.kind !== 'advice')
    .map((f) => ({ id: f.id, fix: f.fix as NonNullable<Finding['fix']>, ranks: f.ranks }));
}

/** Every invariant of a job and the fixes on offer, the plan composed here. */
export function paceViolations(job: Job, candidates: readonly PlanCandidate[]): string[] {
  return [...jobViolations(job), ...fixViolations(job, candidates), ...planViolations(job, candidates, planOf(job, candidates))];
}

/**
 * What a report's JSON alone says of the invariants (a report read back, a doctor run re-diagnosed through the CLI):
 * the plan starts at the measured step and each step gains; a job's own steps are at most the measured ones and the
 * longest, calibrated, is the job's step; no step of the plan goes below the own step of a rank no fix so far was made
 * on (`PlanStep.ranks`).
 */
export function paceReportViolations(r: PaceReport): string[] {
  const out: string[] = [];
  const p = r.plan;
  if (Math.abs(p.stepNs - r.stepNs) > r.stepNs * 1e-6 + 1) out.push(`the plan starts at ${fmtMs(p.stepNs)}, the measured step is ${fmtMs(r.stepNs)}`);
  let from = p.stepNs;
  p.steps.forEach((s, i) => {
    if (s.fromStepNs !== from) out.push(`step ${i + 1} starts at ${fmtMs(s.fromStepNs)}, not where the one before ended (${fmtMs(from)})`);
    if (!(s.expectedStepNs < s.fromStepNs)) out.push(`step ${i + 1} (${s.id}) does not shorten the step`);
    from = s.expectedStepNs;
  });
  const j = r.job;
  if (!j) return out;
  if (!(j.calibration >= 1)) out.push(`the job's calibration ${j.calibration} is below 1`);
  const longest = Math.max(...j.ranks.map((x) => x.ownStepNs));
  if (Math.abs(longest * j.calibration - r.stepNs) > r.stepNs * 1e-6 + 1)
    out.push(`the longest own step ${fmtMs(longest)} x ${j.calibration} is not the measured step ${fmtMs(r.stepNs)}`);
  for (const x of j.ranks) if (over(x.ownStepNs, x.stepNs)) out.push(`rank ${x.rank}'s own step ${fmtMs(x.ownStepNs)} is longer than its measured ${fmtMs(x.stepNs)}`);
  const touched = new Set<number>();
  p.steps.forEach((s, i) => {
    for (const k of s.ranks ?? j.ranks.map((x) => x.rank)) touched.add(k);
    for (const x of j.ranks)
      if (!touched.has(x.rank) && over(x.ownStepNs * j.calibration, s.expectedStepNs))
        out.push(`step ${i + 1} (${s.id}) expects ${fmtMs(s.expectedStepNs)}, below rank ${x.rank}'s own step ${fmtMs(x.ownStepNs * j.calibration)}, on which no fix so far was made`);
  });
  return out;
}
