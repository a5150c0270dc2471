/**
 * A RUN argument as `runs show` and `compare` take it: read (io/loadRunRef.ts) without control characters, and what
 * they render from it refused in one line when a renderer cannot read it. Here, in the CLI, because those renderers
 * span doctor/, history/ and serve's pages.
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

/**
 * `measuredOnly`: `last` and `last~N` skip runs that measured no step, saying so in `note` (compare). The report's
 * strings come without terminal control characters (a report.json could recolour or retitle the terminal through
 * `runs show`); what the command renders from it goes through renderedOrRefused.
 */
export async function loadRunRef(ref: string, storeDir: string, opts: { measuredOnly?: boolean } = {}): Promise<LoadedRun> {
  const run = await readRunRef(ref, storeDir, opts);
  return { ...run, report: stripControlChars(run.report) };
}

/**
 * What a command renders from reports read from outside (a file, the history), or one line naming the damaged
 * report, never an internal error deep in a renderer. `render` runs first; only when it throws is each report tried
 * with every renderer of `runs show` and `compare`, to name the one that cannot be read. (Trying them all up front
 * cost two doctor renders, a page and two comparisons per report on every `runs show` and `compare`.)
 */
export function renderedOrRefused<T>(runs: readonly LoadedRun[], render: () => T): T {
  try {
    return render();
  } catch (e) {
    for (const run of runs) provenReadable(run.report, run.id === null ? run.source : `${run.source} (run ${run.id})`);
    throw e;
  }
}

/** Throws an InputError naming `where` when a renderer of `runs show` or `compare` cannot read the report. */
function provenReadable(clean: DoctorReport, where: string): void {
  try {
    renderDoctorText(clean);
    renderDoctorMarkdown(clean);
    renderDoctorHtml(clean, { uplotJs: '', uplotCss: '' }); // the page around the report; uPlot plays no part in the check
    const run = { label: where, id: null, report: clean };
    const c = compareRuns(run, run);
    renderComparisonText(c);
    renderComparisonMarkdown(c);
    JSON.stringify(c);
  } catch (e) {
    throw new InputError(where, `is a damaged gpuwise doctor report (${e instanceof Error ? e.message : String(e)})`);
  }
}
