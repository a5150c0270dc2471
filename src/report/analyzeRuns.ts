/**
 * Analyze over several trace files: the files grouped into runs (trace/runGroups.ts), one AnalyzeReport per run,
 * and the JSON printed when the inputs form more than one run. Pure: the shell loads each file, assesses it
 * (trace/coverage.ts) and hands the results here.
 */
import type { CollectiveTimings } from '../trace/metrics/collectives.js';
import type { TraceMetrics } from '../trace/metrics/types.js';
import { type TraceIdentity, describeSplit, groupRuns } from '../trace/runGroups.js';
import { ANALYZE_SCHEMA_VERSION, type AnalyzeReport, type InputSummary, buildAnalyzeReport } from './analyzeReport.js';

/** One input file as analysed: null metrics when nothing in it can be judged. */
export interface AnalysedInput {
  summary: InputSummary;
  identity: TraceIdentity;
  judged: { metrics: TraceMetrics; collectives: CollectiveTimings } | null;
}

/** `--json` when the inputs form several runs (docs/analyze.md): one report per run, and why they were split. */
export interface AnalyzeSplitJson {
  schemaVersion: number;
  tool: 'gpuwise';
  command: 'analyze';
  version: string;
  split: string;
  runs: AnalyzeReport[];
}

export interface AnalyzeRuns {
  reports: AnalyzeReport[];
  /** Why the inputs were split into several runs; null when they form one. */
  split: string | null;
  /** Whether any input could be judged (else the command says what is missing and exits 2). */
  judgedAny: boolean;
}

export function buildAnalyzeRuns(version: string, inputs: readonly AnalysedInput[]): AnalyzeRuns {
  const ids = inputs.map((i) => i.identity);
  const groups = groupRuns(ids);
  const reports = groups.map((g) => {
    const judged = g.members.filter((i) => inputs[i]!.judged !== null);
    const report = buildAnalyzeReport(
      version,
      g.members.map((i) => inputs[i]!.summary),
      judged.map((i) => inputs[i]!.judged!.metrics),
      judged.map((i) => inputs[i]!.judged!.collectives),
    );
    if (groups.length > 1 || g.notes.length) report.run = { label: g.label, notes: g.notes };
    return report;
  });
  return { reports, split: groups.length > 1 ? describeSplit(ids, groups) : null, judgedAny: inputs.some((i) => i.judged !== null) };
}

/** What `--json` prints: the one report, or every run's under `runs`. */
export function analyzeJson(version: string, runs: AnalyzeRuns): AnalyzeReport | AnalyzeSplitJson {
  return runs.split === null ? runs.reports[0]! : { schemaVersion: ANALYZE_SCHEMA_VERSION, tool: 'gpuwise', command: 'analyze', version, split: runs.split, runs: runs.reports };
}
