/**
 * Re-diagnosing a recorded run (shell, shared by `doctor --from RUN_DIR` and `runs show --rediagnose RUN`): reads the
 * run directory (io/runDir.ts), analyses the windows and snapshots it holds, and rebuilds the report with this
 * build's rules (doctor/rediagnose.ts). Nothing is written into the run directory.
 */
import { writeFileSync } from 'node:fs';
import { basename } from 'node:path';
import { inlineAssets } from '../serve/assets.js';
import { renderDoctorHtml } from '../serve/pages/runs.js';
import { renderDoctorMarkdown } from '../doctor/markdown.js';
import { recordedRunInput } from '../doctor/rediagnose.js';
import { renderDoctorText } from '../doctor/render.js';
import { buildDoctorReport } from '../doctor/report.js';
import type { DoctorReport } from '../doctor/reportTypes.js';
import { analyseSnapshotFiles, analyseTraceFiles, type CaptureRef } from '../io/captures.js';
import { readStepBeacons } from '../io/beacons.js';
import { type CapturedFile, readRunDir } from '../io/runDir.js';
import { VERSION } from '../util/version.js';
import { PLAIN } from '../report/style.js';
import { terminalWidth } from './color.js';

/** A window or snapshot of the run: the file in the directory, or its name and where the recording machine wrote it. */
function refOf(f: CapturedFile): CaptureRef {
  return {
    rank: f.rank,
    path: f.path,
    label: f.path ?? basename(f.recorded),
    missing: `not in this run directory: the machine that ran it wrote it to ${f.recorded}`,
  };
}

/** `why`: notes put first in the report (why a re-diagnosis is shown instead of a run). */
export async function rediagnoseRunDir(dir: string, why: string[] = []): Promise<DoctorReport> {
  const run = readRunDir(dir);
  const traces = await analyseTraceFiles(run.traces.map(refOf));
  const snapshots = await analyseSnapshotFiles(run.snapshots.map((s) => ({ ...refOf(s), kind: s.kind === 'oom' ? ('oom' as const) : ('window' as const) })));
  const input = recordedRunInput({
      dir,
      records: run.records,
      skippedLines: run.skippedLines,
      recordNotes: run.recordNotes,
      traces,
      snapshots,
      savedReport: run.savedReport,
      savedReportProblem: run.savedReportProblem,
      modelJson: run.modelJson,
      version: VERSION,
      stepBeacons: readStepBeacons(dir),
  });
  return buildDoctorReport({ ...input, notes: [...why, ...input.notes] });
}

export interface ReportFormat {
  json?: boolean;
  md?: boolean;
  /** Write the HTML page here (checked by the caller with checkHtmlTarget before any work). */
  html?: string;
}

/** Prints a doctor report in the format asked for (terminal text by default); `--html` also writes the page. */
export function printDoctorReport(report: DoctorReport, format: ReportFormat, tool: string): void {
  if (format.json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  else if (format.md) process.stdout.write(renderDoctorMarkdown(report));
  else if (format.html === undefined) process.stdout.write(renderDoctorText(report, PLAIN, terminalWidth()));
  if (format.html !== undefined) {
    writeFileSync(format.html, renderDoctorHtml(report, inlineAssets()));
    process.stderr.write(`${tool}: wrote ${format.html}\n`);
  }
}
