/**
 * What the reports carry of the pace model (pure): the pipeline of the slowest rank (its stages, the bound and why)
 * and the plan of the findings' fixes on it, and the words every renderer prints for them (terminal, Markdown, HTML;
 * analyze and doctor alike).
 */
import type { Finding } from '../findings/finding.js';
import { fmtMs } from '../util/format.js';
import { type PaceSummary, type Pipeline, paceSummary, STAGE_NAMES, type StageName } from './pipeline.js';
import { type PacePlan, planOf } from './plan.js';

export interface PaceReport extends PaceSummary {
  /** The rank the pipeline is of: the slowest (a synchronous job goes at its pace). */
  rank: number;
  plan: PacePlan;
}

/**
 * The pace section of a report: `paces` by rank; the slowest rank's pipeline and the plan of the fixes its findings
 * offer (defects: advice such as a bigger batch is weighed, not planned). Null without a pipeline.
 */
export function paceReportOf(paces: ReadonlyMap<number, Pipeline>, findings: readonly Finding[]): PaceReport | null {
  const slowest = [...paces].sort((a, b) => b[1].stepNs - a[1].stepNs || a[0] - b[0])[0];
  if (!slowest) return null;
  const [rank, p] = slowest;
  const candidates = findings
    .filter((f) => f.fix && f.kind !== 'advice' && (f.ranks.length === 0 || f.ranks.includes(rank)))
    .map((f) => ({ id: f.id, fix: f.fix as NonNullable<Finding['fix']> }));
  return { rank, ...paceSummary(p), plan: planOf(p, candidates) };
}

const STAGE_TITLE: Record<StageName, string> = { input: 'DataLoader', host: 'host', gpu: 'GPU', comm: 'communication' };

/** One row per stage and serial cost: what, time per step (or "not timed"), measured or assumed, the evidence. */
export function paceRows(r: PaceSummary): [string, string, string, string][] {
  return [
    ...STAGE_NAMES.filter((s) => !(s === 'comm' && !(r.stages.comm.ns ?? 0))).map((s): [string, string, string, string] => {
      const st = r.stages[s];
      return [st.label ? `${STAGE_TITLE[s]} (${st.label})` : STAGE_TITLE[s], st.ns === null ? 'not timed' : fmtMs(st.ns), st.how, st.evidence];
    }),
    ...r.serial.map((c): [string, string, string, string] => [`serial: ${c.kind}`, fmtMs(c.ns), c.how, c.evidence]),
  ];
}

/** The headline: what sets the pace now, and the step after the plan. */
export function paceHeadline(r: PaceReport, ranks: number): string {
  const who = ranks > 1 ? ` (rank ${r.rank}, the slowest)` : '';
  const after = r.plan.steps.length ? `; after the plan: ${fmtMs(r.plan.expectedStepNs)} (${(r.plan.stepNs / r.plan.expectedStepNs).toFixed(1)}x)` : '';
  return `mean step ${fmtMs(r.stepNs)}${who}: ${r.why}${after}`;
}


