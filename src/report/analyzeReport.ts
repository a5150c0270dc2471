/**
 * The analyze report: the one object every renderer reads and `--json`
 * prints. Its shape is the stable, documented contract (docs/analyze.md);
 * bump SCHEMA_VERSION on any incompatible change.
 */
import { diagnose } from '../advice/engine.js';
import type { Finding } from '../advice/finding.js';
import type { TraceMetrics } from '../trace/metrics/types.js';

export const ANALYZE_SCHEMA_VERSION = 1;

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

export function buildAnalyzeReport(version: string, inputs: InputSummary[], ranks: TraceMetrics[]): AnalyzeReport {
  const findings = diagnose(ranks);
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
