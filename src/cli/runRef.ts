/**
 * A RUN argument as `runs show` and `compare` take it: read (io/loadRunRef.ts), then made readable by every
 * renderer they use. Here, in the CLI, because those renderers span doctor/, history/ and serve's pages.
 */
import { renderDoctorMarkdown } from '../doctor/markdown.js';
import type { DoctorReport } from '../doctor/reportTypes.js';
import { renderDoctorText } from '../doctor/render.js';
import { compareRuns } from '../history/compare.js';
import { renderComparisonMarkdown, renderComparisonText } from '../history/render.js';
import { InputError } from '../io/inputError.js';
import { type LoadedRun, readRunRef } from '../io/loadRunRef.js';
import { renderDoctorHtml } from '../serve/pages/runs.js';
import { stripControlChars } from '../util/controlChars.js';

/** `measuredOnly`: `last` and `last~N` skip runs that measured no step, saying so in `note` (compare). */
export async function loadRunRef(ref: string, storeDir: string, opts: { measuredOnly?: boolean } = {}): Promise<LoadedRun> {
  const run = await readRunRef(ref, storeDir, opts);
  const where = run.id === null ? run.source : `${run.source} (run ${run.id})`;
  return { ...run, report: readableReport(run.report, where) };
}

/**
 * A report from outside (a file, the history) as every reader will take it: its strings without terminal control
 * characters (a report.json could recolour or retitle the terminal through `runs show`), and proven readable by
 * the renderers of `runs show` and `compare`, so a damaged field is one line naming the file, never an internal
 * error deep in a renderer.
 */
function readableReport(report: DoctorReport, where: string): DoctorReport {
  try {
    const clean = stripControlChars(report);
    renderDoctorText(clean);
    renderDoctorMarkdown(clean);
    renderDoctorHtml(clean, { uplotJs: '', uplotCss: '' }); // the page around the report; uPlot plays no part in the check
    const run = { label: where, id: null, report: clean };
    const c = compareRuns(run, run);
    renderComparisonText(c);
    renderComparisonMarkdown(c);
    JSON.stringify(c);
    return clean;
  } catch (e) {
    throw new InputError(where, `is a damaged gpuwise doctor report (${e instanceof Error ? e.message : String(e)})`);
  }
}
