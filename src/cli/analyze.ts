/** `gpuwise analyze <trace|dir>...`: diagnose torch.profiler traces. */
import { SEVERITIES, type Severity } from '../findings/finding.js';
import { severityRank } from '../findings/rank.js';
import { checkHtmlTarget, writeReportFile } from '../io/reportTarget.js';
import { loadTrace } from '../io/loadTrace.js';
import { collectTraceFiles } from '../io/traceFiles.js';
import type { AnalyzeReport } from '../report/analyzeReport.js';
import { type AnalysedInput, analyzeJson, buildAnalyzeRuns } from '../report/analyzeRuns.js';
import { renderMarkdown } from '../report/markdown.js';
import { inlineAssets } from '../serve/assets.js';
import { renderAnalyzeHtml } from '../serve/pages/analyze.js';
import { ANSI, PLAIN } from '../report/style.js';
import { renderTerminal } from '../report/terminal.js';
import { assessTrace, coverageNote } from '../trace/coverage.js';
import { collectiveTimings } from '../trace/metrics/index.js';
import { identityOf } from '../trace/runGroups.js';
import { VERSION } from '../util/version.js';
import { EXIT_BAD_INPUT, EXIT_FINDINGS, EXIT_OK } from './version.js';
import { terminalWidth, useColor } from './color.js';
import { progressBar } from './progress.js';
import { UsageError, htmlTookInput, parseFlags } from './usage.js';

const HELP = `Usage: gpuwise analyze [options] <trace|dir>...

Diagnose torch.profiler traces (Chrome trace JSON, plain or .gz). Give one trace,
several (one per rank), or a directory of traces. Files are grouped into runs by
their distributedInfo and time: the ranks of one run (one profiling window) are
compared with each other; separate runs are analysed one by one.

Options:
  --json              print the report as JSON on stdout (schema: docs/analyze.md)
  --md                print the report as Markdown (for pull-request comments)
  --html FILE         also write a self-contained HTML report with charts to FILE
  --fail-on SEVERITY  exit 1 when a finding at or above SEVERITY exists (high|medium|low|info)
  --no-progress       never draw the progress bar
  --no-color          no colour (also NO_COLOR=1; colour is only ever used on a terminal)
  -h, --help          show this help

Exit codes: 0 done, 1 a finding at or above --fail-on, 2 bad input or usage, or
nothing to judge (no GPU activity, no whole step with GPU work, not a PyTorch
profiler trace). A damaged trace is analysed on the steps read whole only.`;

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags({
    args: argv,
    allowPositionals: true,
    options: {
      json: { type: 'boolean' },
      md: { type: 'boolean' },
      html: { type: 'string' },
      'fail-on': { type: 'string' },
      'no-progress': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(`${HELP}\n`);
    return EXIT_OK;
  }
  if (positionals.length === 0) throw htmlTookInput('analyze', values.html, positionals, 'trace') ?? new UsageError('give at least one trace file or directory (see --help)');
  if (values.json && values.md) throw new UsageError('--json and --md are exclusive');
  const failOn = values['fail-on'];
  if (failOn !== undefined && !SEVERITIES.includes(failOn as Severity)) throw new UsageError(`--fail-on: '${failOn}' is not one of ${SEVERITIES.join(', ')}`);

  const files = await collectTraceFiles(positionals, (line) => process.stderr.write(`gpuwise analyze: ${line}\n`));
  if (values.html !== undefined) checkHtmlTarget(values.html, files);

  const showProgress = !values['no-progress'] && process.stderr.isTTY === true;
  const inputs: AnalysedInput[] = [];
  for (const file of files) {
    const bar = showProgress ? progressBar(file) : undefined;
    const model = await loadTrace(file, bar?.update).finally(() => bar?.done());
    const { coverage, metrics, model: used } = assessTrace(model);
    const note = coverageNote(coverage);
    inputs.push({
      summary: { path: file, rank: model.rank, events: coverage.events, warnings: [...model.warnings, ...(note === null ? [] : [note])], coverage },
      identity: identityOf(file, model),
      judged: metrics === null ? null : { metrics, collectives: collectiveTimings(used, metrics.steps) },
    });
  }
  // Only the ranks of one window of one run are compared with each other (trace/runGroups.ts).
  const runs = buildAnalyzeRuns(VERSION, inputs);
  const { reports, split } = runs;
  if (values.html !== undefined && split !== null) throw new UsageError(`--html: ${split}; give the files of one run for an HTML page`);

  if (values.json) process.stdout.write(`${JSON.stringify(analyzeJson(VERSION, runs), null, 1)}\n`);
  else if (runs.judgedAny) {
    const style = useColor(values['no-color']) ? ANSI : PLAIN;
    const width = terminalWidth();
    // A run none of whose files could be judged prints nothing here (never "No findings"): its lines are on stderr.
    const parts = reports.flatMap((r, k) => {
      if (r.metrics.ranks.length === 0) return [];
      const head = split === null ? '' : `Run ${k + 1} of ${reports.length}: ${r.run?.label}${r.run?.notes.length ? ` (${r.run.notes.join('; ')})` : ''}\n\n`;
      return [head + (values.md ? renderMarkdown(r) : renderTerminal(r, style, width))];
    });
    if (split !== null) parts.unshift(`${split}.\n`);
    process.stdout.write(parts.join('\n'));
  }
  if (!values.json) {
    for (const r of reports) for (const n of r.run?.notes ?? []) process.stderr.write(`gpuwise analyze: ${r.run!.label}: warning: ${n}\n`);
    for (const { summary: i } of inputs) for (const w of i.warnings) process.stderr.write(`gpuwise analyze: ${i.path}: ${w.startsWith('nothing to judge') ? '' : 'warning: '}${w}\n`);
  }
  if (!runs.judgedAny) return EXIT_BAD_INPUT; // nothing could be judged: never "no findings" for absent data
  if (values.html !== undefined) {
    writeReportFile(values.html, renderAnalyzeHtml(reports[0]!, inlineAssets()), files, '--html');
    process.stderr.write(`gpuwise analyze: wrote ${values.html}\n`);
  }
  return Math.max(...reports.map((r) => exitCode(r, failOn as Severity | undefined)));
}

export function exitCode(report: AnalyzeReport, failOn: Severity | undefined): number {
  if (failOn === undefined) return EXIT_OK;
  return report.findings.some((f) => severityRank(f.severity) <= severityRank(failOn)) ? EXIT_FINDINGS : EXIT_OK;
}
