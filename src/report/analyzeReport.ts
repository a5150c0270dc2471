/**
 * The analyze report: the one object every renderer reads and `--json`
 * prints. Its shape is the stable, documented contract (docs/analyze.md);
 * bump SCHEMA_VERSION on any incompatible change.
 */
import { diagnose } from '../advice/engine.js';
import { frameworkNamedBy, inTraceFramework } from '../advice/framework.js';
import type { Finding } from '../findings/finding.js';
import { severityRank } from '../findings/rank.js';
import { windowJob } from '../pace/job.js';
import { findingsByPlanWorth, type PaceReport, paceReportOf } from '../pace/report.js';
import { windowPipeline } from '../pace/window.js';
import type { CollectiveTimings } from '../trace/metrics/collectives.js';
import { type TraceCoverage, capSeverity } from '../trace/coverage.js';
import type { TraceMetrics } from '../trace/metrics/types.js';

/** 2: `metrics.ranks[].collectives` (one entry per collective, growing with the trace) removed. */
export const ANALYZE_SCHEMA_VERSION = 2;

export interface InputSummary {
  path: string;
  rank: number;
  events: number;
  warnings: string[];
  /** How much of the trace the findings rest on, or why nothing in it can be judged (trace/coverage.ts). */
  coverage?: TraceCoverage;
}

export interface AnalyzeReport {
  schemaVersion: number;
  tool: 'gpuwise';
  command: 'analyze';
  version: string;
  inputs: InputSummary[];
  /** Present when the inputs were split into several runs, or this run's ranks do not add up: what this group is. */
  run?: { label: string; notes: string[] };
  summary: {
    ranks: number;
    stepsAnalysed: number;
    stepTimeMedianNs: number;
    gpuBusyShare: number;
    topFinding: string | null;
  };
  findings: Finding[];
  /**
   * What sets the pace of the slowest rank's step in the window (src/pace/: its stages, each measured or assumed, the
   * bound and why) and the plan of the findings' fixes over the job of every rank (pace/job.ts; `job` with two ranks
   * or more); null without a step. Added within schema 2 (absent from older reports).
   */
  pace?: PaceReport | null;
  metrics: { ranks: TraceMetrics[] };
}

const CROSS_RANK_IDS = new Set(['rank-imbalance']);

/** `collectives[i]` belongs to `ranks[i]` (for the cross-rank rules; not printed). */
export function buildAnalyzeReport(
  version: string,
  inputs: InputSummary[],
  ranks: TraceMetrics[],
  collectives: readonly CollectiveTimings[] = [],
): AnalyzeReport {
  // A cross-rank finding needs collectives matched across the ranks: compute skew alone may be different runs or data.
  const matched = diagnose(ranks, collectives).filter((f) => !CROSS_RANK_IDS.has(f.id) || Number(f.data.matchedCollectives ?? 0) > 0);
  // A trace cut inside its GPU activity cannot prove its steps whole: its findings are capped (trace/coverage.ts).
  const caps = new Map(inputs.flatMap((i) => (i.coverage?.severityCap ? [[i.rank, i.coverage.severityCap] as const] : [])));
  // A fix led by the framework's own switch when the trace names the framework (doctor learns it from the probe).
  const named = frameworkNamedBy(ranks);
  const found = matched.map((f) => inTraceFramework(f, named));
  const pace = paceReportOf(analyzeJobOf(ranks, collectives), found);
  // Valued by the plan before the cap: a cut trace's findings stay capped however much the plan makes of them.
  const findings = capSeverity(findingsByPlanWorth(found, pace?.plan), caps).sort((a, b) => severityRank(a.severity) - severityRank(b.severity));
  const busy = ranks.length ? ranks.reduce((a, r) => a + r.gpuBusyShare, 0) / ranks.length : 0;
  return {
    schemaVersion: ANALYZE_SCHEMA_VERSION,
    tool: 'gpuwise',
    command: 'analyze',
    version,
    inputs,
    summary: {
      ranks: ranks.length,
      stepsAnalysed: Math.max(0, ...ranks.map((r) => r.steps.length)),
      stepTimeMedianNs: Math.max(0, ...ranks.map((r) => r.stepTime.medianNs)),
      gpuBusyShare: busy,
      topFinding: findings[0]?.id ?? null,
    },
    findings,
    pace,
    metrics: { ranks },
  };
}

/** The job of the ranks with steps: each rank's window pipeline less its wait for the others in collectives. */
export function analyzeJobOf(ranks: readonly TraceMetrics[], collectives: readonly CollectiveTimings[]): ReturnType<typeof windowJob> {
  const timed = ranks.flatMap((m, i) => (m.perStep.durNs > 0 ? [i] : []));
  const withCollectives = collectives.length === ranks.length ? timed.map((i) => collectives[i] as CollectiveTimings) : [];
  const ms = timed.map((i) => ranks[i] as TraceMetrics);
  return windowJob(ms, withCollectives, ms.map(windowPipeline));
}
