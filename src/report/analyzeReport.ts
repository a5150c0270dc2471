/**
 * The analyze report: the one object every renderer reads and `--json`
 * prints. Its shape is the stable, documented contract (docs/analyze.md);
 * bump SCHEMA_VERSION on any incompatible change.
 */
import { diagnose } from '../advice/engine.js';
import type { Finding } from '../findings/finding.js';
import type { CollectiveTimings } from '../trace/metrics/collectives.js';
import type { TraceMetrics } from '../trace/metrics/types.js';

/** 2: `metrics.ranks[].collectives` (one entry per collective, growing with the trace) removed. */
export const ANALYZE_SCHEMA_VERSION = 2;

export interface InputSummary {
  path: string;
  rank: number;
  events: number;
  warnings: string[];
}

export interface AnalyzeReport {
  schemaVersion: number;
  tool: 'gpuwise';
  command: 'analyze';
  version: string;
  inputs: InputSummary[];
  summary: {
    ranks: number;
    stepsAnalysed: number;
    stepTimeMedianNs: number;
    gpuBusyShare: number;
    topFinding: string | null;
  };
  findings: Finding[];
  metrics: { ranks: TraceMetrics[] };
}

/** `collectives[i]` belongs to `ranks[i]` (for the cross-rank rules; not printed). */
export function buildAnalyzeReport(
  version: string,
  inputs: InputSummary[],
  ranks: TraceMetrics[],
  collectives: readonly CollectiveTimings[] = [],
): AnalyzeReport {
  const findings = diagnose(ranks, collectives);
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
    metrics: { ranks },
  };
}
