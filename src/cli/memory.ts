/**
 * `gpuwise memory SNAPSHOT` and `gpuwise memory diff A B`: the shell around
 * src/memory (read the file, analyse, print or write the report).
 */
import { SEVERITIES, type Severity } from '../findings/finding.js';
import { severityRank } from '../findings/rank.js';
import { checkHtmlTarget, writeReportFile } from '../io/reportTarget.js';
import { diffSnapshots, renderDiffMarkdown, renderDiffText } from '../memory/diff.js';
import { inlineAssets } from '../serve/assets.js';
import { renderMemoryDiffHtml, renderMemoryHtml } from '../serve/pages/memory.js';
import { renderMarkdown, renderText } from '../memory/render/text.js';
import { ANSI, PLAIN } from '../report/style.js';
import { terminalWidth, useColor } from './color.js';
import { type Analysis, analyze } from '../memory/report.js';
import { InputError } from '../io/inputError.js';
import { readSnapshotFile } from '../io/readSnapshot.js';
import { jsonReport } from './jsonReport.js';
import { UsageError, htmlTookInput, parseFlags } from './usage.js';

const HELP = `Usage: gpuwise memory [options] SNAPSHOT
       gpuwise memory diff [options] A B

Explains a CUDA memory snapshot written by torch.cuda.memory._dump_snapshot()
(pickle, plain or .gz): totals at the peak and at the end, memory over time,
what was live at the peak by category and source line, and why an
out-of-memory error happened. \`diff\` shows what grew from snapshot A to B.

Options:
  --json            the report as JSON on stdout (schemaVersion 1)
  --md              the report as Markdown on stdout
  --html FILE       also write a self-contained HTML page to FILE
  --no-color        no colour (also NO_COLOR=1; colour is only used on a terminal)
  --batch N         batch size of the run: turns activation bytes into the batch that fits
  --device N        device index to analyse (default: the one with the most history)
  --top N           source lines to list (default 15)
  --fail-on SEV     exit 1 if a finding of severity SEV or higher exists (high|medium|low|info)
  -h, --help        this help

Exit codes: 0 done, 1 a finding at or above --fail-on, 2 bad input or usage.
`;

const OPTIONS = {
  json: { type: 'boolean' },
  md: { type: 'boolean' },
  html: { type: 'string' },
  batch: { type: 'string' },
  device: { type: 'string' },
  top: { type: 'string' },
  'fail-on': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

function positiveInt(text: string | undefined, flag: string, min: number): number | undefined {
  if (text === undefined) return undefined;
  if (!/^\d+$/.test(text) || Number(text) < min) throw new UsageError(`${flag}: '${text}' is not an integer >= ${min}`);
  return Number(text);
}

async function load(path: string, opts: { device?: number; batchSize?: number; topSources?: number }): Promise<Analysis> {
  const { snapshot } = await readSnapshotFile(path);
  if (opts.device !== undefined) {
    const known = snapshot.segments.some((s) => s.device === opts.device) || (snapshot.deviceTraces[opts.device]?.length ?? 0) > 0;
    if (!known) throw new InputError(path, `has no memory for device ${opts.device}`);
  }
  return analyze(snapshot, { path, ...opts });
}

export async function run(argv: string[]): Promise<number> {
  const isDiff = argv[0] === 'diff';
  const { values, positionals } = parseFlags({ args: isDiff ? argv.slice(1) : argv, options: OPTIONS, allowPositionals: true, strict: true });
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  if (values.json && values.md) throw new UsageError('choose one of --json and --md');
  const failOn = values['fail-on'];
  if (failOn !== undefined && !SEVERITIES.includes(failOn as Severity)) throw new UsageError(`--fail-on: '${failOn}' is not one of ${SEVERITIES.join(', ')}`);
  const opts = {
    device: positiveInt(values.device, '--device', 0),
    batchSize: positiveInt(values.batch, '--batch', 1),
    topSources: positiveInt(values.top, '--top', 1),
  };

  if (isDiff) {
    if (positionals.length !== 2) throw new UsageError('memory diff takes two snapshots: gpuwise memory diff A B');
    if (values.html) checkHtmlTarget(values.html, positionals);
    const [a, b] = await Promise.all([load(positionals[0]!, opts), load(positionals[1]!, opts)]);
    const d = diffSnapshots(a, b, opts.topSources ?? 15);
    process.stdout.write(values.json ? jsonReport(d) : values.md ? renderDiffMarkdown(d) : renderDiffText(d));
    if (values.html) {
      writeReportFile(values.html, renderMemoryDiffHtml(d, inlineAssets()), positionals, '--html');
      process.stderr.write(`gpuwise memory: wrote ${values.html}\n`);
    }
    return 0;
  }

  if (positionals.length !== 1)
    throw (
      htmlTookInput('memory', values.html, positionals, 'snapshot') ??
      new UsageError(positionals.length === 0 ? 'missing SNAPSHOT (see gpuwise memory --help)' : 'give one SNAPSHOT (or use `gpuwise memory diff A B`)')
    );
  const path = positionals[0]!;
  if (values.html) checkHtmlTarget(values.html, positionals);
  const { report } = await load(path, opts);
  if (values.html) {
    // The shared rule (reportTarget.ts): an earlier gpuwise page is replaced, anything else is refused.
    writeReportFile(values.html, renderMemoryHtml(report, inlineAssets()), positionals, '--html');
    process.stderr.write(`gpuwise memory: wrote ${values.html}\n`);
  }
  const width = terminalWidth();
  process.stdout.write(
    values.json ? jsonReport(report) : values.md ? renderMarkdown(report) : renderText(report, useColor(values['no-color']) ? ANSI : PLAIN, width),
  );
  if (failOn !== undefined && report.findings.some((f) => severityRank(f.severity) <= severityRank(failOn as Severity))) return 1;
  return 0;
}
