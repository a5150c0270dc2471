/**
 * Stage 6 of the doctor report, plan: what sets the pace of the slowest training rank and the plan of the findings'
 * fixes over the job (pace/report.ts).
 * In: the run (its windows), its pace (the job) and the ranked findings. Out: the report's `pace` section; null without
 * a timed step.
 */
import type { Job } from '../../pace/job.js';
import { type PaceReport, paceReportOf } from '../../pace/report.js';
import type { RankedFinding, TraceInput } from '../reportTypes.js';
import type { RunPace } from './pace.js';
import { type Run, windowsOf } from './run.js';

/** The pace section: the job's pipeline and the plan of the findings' fixes. */
export function planOf(run: Run, pace: RunPace, findings: readonly RankedFinding[]): PaceReport | null {
  return paceReportOf(pace.job, plannedFindings(pace.job, findings, run.input.traces));
}

/**
 * The findings as the plan reads them. The trace's rules look only at ranks with a window, so their findings name
 * those; a rank of the job without a window of its own runs the same script, so their fixes apply to it too (assumed),
 * as a what-if's does (the job's set-up: it names no rank). The probe's findings name each rank they were looked for on.
 */
export function plannedFindings(job: Job | null, findings: readonly RankedFinding[], traces: readonly TraceInput[]): RankedFinding[] {
  const windowed = new Set(windowsOf(traces).map((t) => t.rank));
  const unseen = (job?.ranks ?? []).map((r) => r.rank).filter((r) => !windowed.has(r));
  if (unseen.length === 0) return [...findings];
  return findings.map((f) =>
    f.source === 'planner'
      ? { ...f, ranks: [] }
      : f.source === 'trace' && f.ranks.length > 0
        ? { ...f, ranks: [...new Set([...f.ranks, ...unseen])].sort((a, b) => a - b) }
        : f,
  );
}
