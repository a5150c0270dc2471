/** `gpuwise analyze <trace|dir>...`: diagnose torch.profiler traces. */
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { SEVERITIES, type Severity } from '../findings/finding.js';
import { severityRank } from '../findings/rank.js';
import { InputError } from '../io/inputError.js';
import { describeFsError } from '../io/readTrace.js';
import { loadTrace } from '../io/loadTrace.js';
import { type AnalyzeReport, type InputSummary, buildAnalyzeReport } from '../report/analyzeReport.js';
import { renderHtml } from '../report/html.js';
import { renderMarkdown } from '../report/markdown.js';
import { ANSI, PLAIN, renderTerminal } from '../report/terminal.js';
import { type CollectiveTimings, analyzeTrace, collectiveTimings } from '../trace/metrics/index.js';
import type { TraceMetrics } from '../trace/metrics/types.js';
import { EXIT_FINDINGS, EXIT_OK, VERSION } from './version.js';
import { progressBar } from './progress.js';
import { UsageError, parseFlags } from './usage.js';

const HELP = `Usage: gpuwise analyze [options] <trace|dir>...

Diagnose torch.profiler traces (Chrome trace JSON, plain or .gz). Give one trace,
several (one per rank), or a directory of traces (a distributed run).

Options:
  --json              print the report as JSON on stdout (schema: docs/analyze.md)
  --md                print the report as Markdown (for pull-request comments)
  --html FILE         also write a self-contained HTML report with charts to FILE
  --fail-on SEVERITY  exit 1 when a finding at or above SEVERITY exists (high|medium|low|info)
  --no-progress       never draw the progress bar
  -h, --help          show this help

Exit codes: 0 done, 1 a finding at or above --fail-on, 2 bad input or usage.`;

const TRACE_FILE = /\.json(\.gz)?$/i;

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
  if (positionals.length === 0) throw new UsageError('give at least one trace file or directory (see --help)');
  if (values.json && values.md) throw new UsageError('--json and --md are exclusive');
  const failOn = values['fail-on'];
  if (failOn !== undefined && !SEVERITIES.includes(failOn as Severity)) throw new UsageError(`--fail-on: '${failOn}' is not one of ${SEVERITIES.join(', ')}`);

  const files = await collectTraceFiles(positionals);
  if (values.html !== undefined) await checkOutputPath(values.html, files);

  const showProgress = !values['no-progress'] && process.stderr.isTTY === true;
  const inputs: InputSummary[] = [];
  const ranks: TraceMetrics[] = [];
  const collectives: CollectiveTimings[] = [];
  const seenRanks = new Set<number>();
  for (const file of files) {
    const bar = showProgress ? progressBar(file) : undefined;
    const model = await loadTrace(file, bar?.update).finally(() => bar?.done());
    const metrics = analyzeTrace(model);
    const warnings = [...model.warnings];
    if (seenRanks.has(metrics.rank)) {
      // Two files claim one rank (e.g. two single-GPU runs): keep both, numbered by position.
      const rank = Math.max(...seenRanks) + 1;
      warnings.push(`rank ${metrics.rank} already taken by another input: shown as rank ${rank}`);
      metrics.rank = rank;
    }
    seenRanks.add(metrics.rank);
    if (model.gpu.count === 0) warnings.push('no GPU activity (kernels, memcpy) in this trace: was the profiler run with ProfilerActivity.CUDA?');
    inputs.push({ path: file, rank: metrics.rank, events: Object.values(model.eventCounts).reduce((a, b) => a + b, 0), warnings });
    ranks.push(metrics);
    collectives.push(collectiveTimings(model, metrics.steps));
  }
  const order = ranks.map((_, i) => i).sort((a, b) => ranks[a]!.rank - ranks[b]!.rank);
  const report = buildAnalyzeReport(
    VERSION,
    order.map((i) => inputs[i]!),
    order.map((i) => ranks[i]!),
    order.map((i) => collectives[i]!),
  );

  if (values.json) process.stdout.write(`${JSON.stringify(report, null, 1)}\n`);
  else if (values.md) process.stdout.write(renderMarkdown(report));
  else process.stdout.write(renderTerminal(report, process.stdout.isTTY && !process.env.NO_COLOR ? ANSI : PLAIN));
  if (!values.json && !values.md) for (const i of inputs) for (const w of i.warnings) process.stderr.write(`gpuwise analyze: ${i.path}: warning: ${w}\n`);
  if (values.html !== undefined) {
    await writeFile(values.html, renderHtml(report));
    process.stderr.write(`gpuwise analyze: wrote ${values.html}\n`);
  }
  return exitCode(report, failOn as Severity | undefined);
}

export function exitCode(report: AnalyzeReport, failOn: Severity | undefined): number {
  if (failOn === undefined) return EXIT_OK;
  return report.findings.some((f) => severityRank(f.severity) <= severityRank(failOn)) ? EXIT_FINDINGS : EXIT_OK;
}

/** Expands directories into the trace files they hold (one level, sorted), checking every path. */
export async function collectTraceFiles(paths: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const p of paths) {
    let st: Awaited<ReturnType<typeof stat>>;
    try {
      st = await stat(p);
    } catch (e) {
      throw new InputError(p, describeFsError(e));
    }
    if (!st.isDirectory()) {
      out.push(p);
      continue;
    }
    let entries: string[];
    try {
      entries = await readdir(p);
    } catch (e) {
      throw new InputError(p, describeFsError(e));
    }
    const traces = entries.filter((e) => TRACE_FILE.test(e) && !e.endsWith('.meta.json')).sort();
    if (traces.length === 0) throw new InputError(p, 'directory holds no trace files (*.json, *.json.gz)');
    out.push(...traces.map((e) => join(p, e)));
  }
  return out;
}

/** Never overwrite an input, nor a file that is not an earlier gpuwise report. */
async function checkOutputPath(path: string, inputs: string[]): Promise<void> {
  const target = resolve(path);
  if (inputs.some((i) => resolve(i) === target)) throw new InputError(path, 'is one of the input traces: choose another --html file');
  let existing: string | null = null;
  try {
    existing = (await readFile(path)).subarray(0, 4096).toString('utf8');
  } catch {
    return;
  }
  if (!existing.startsWith('<!doctype html>') || !existing.includes('gpuwise')) throw new InputError(path, 'exists and is not a gpuwise report: refusing to overwrite it');
}
