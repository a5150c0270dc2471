/**
 * `gpuwise runs`: the local run history that `gpuwise doctor` fills (src/io/runStore.ts).
 * `gpuwise runs` lists the runs, newest first; `gpuwise runs show RUN` prints one run's report again
 * (terminal, --json, --md, --html FILE).
 */
import { existsSync, statSync } from 'node:fs';
import { hostname } from 'node:os';
import { leverAccuracy, renderLeverAccuracy } from '../history/leverAccuracy.js';
import { renderRunsTable } from '../history/render.js';
import { InputError } from '../io/inputError.js';
import { looksLikePath } from '../io/loadRunRef.js';
import { loadRunRef, renderedOrRefused } from './runRef.js';
import { checkHtmlTarget } from '../io/reportTarget.js';
import { listLeverTrials, listRuns, storeDir, storePath } from '../io/runStore.js';
import { printDoctorReport, rediagnoseRunDir } from './rediagnose.js';
import { jsonReport } from './jsonReport.js';
import { UsageError, parseFlags } from './usage.js';

export const RUNS_SCHEMA_VERSION = 1;

const HELP = `Usage: gpuwise runs [--store DIR] [--limit N] [--json]
       gpuwise runs show RUN [--store DIR] [--rediagnose] [--json | --md | --html FILE]
       gpuwise runs --accuracy [--store DIR] [--json]

Lists the runs \`gpuwise doctor\` saved in the local history (DIR/runs.sqlite), newest first:
id, start, outcome, command, median step, throughput, peak memory (allocator reserved, else NVML),
findings. \`show\` prints a saved run's doctor report again.

RUN: an id, a unique id prefix, last (the newest run), last~N (N runs before it),
or a run directory / report.json (read directly, no history needed).

Options:
  --store DIR    the history folder (default: $GPUWISE_STORE, else ~/.gpuwise)
  --limit N      list the N newest runs (default 20; 0 = all)
  --json         JSON on stdout (runs: schemaVersion 1; show: the doctor report)
  --md           show: the report as Markdown
  --html FILE    show: write the report as one self-contained HTML page
  --accuracy     the pace model's error on this machine by lever: each plan step gpuwise tune --plan
                 measured, its predicted step against the measured one
  --rediagnose   show: rebuild the report from the run directory's records with this version's
                 rules (as gpuwise doctor --from RUN_DIR) instead of printing the saved one
  -h, --help     this help

Exit status: 0; 2 for an unknown run, a damaged history or bad usage.
`;

/** The run directory a RUN names: a directory given as is, else the one its saved report was written in. */
async function runDirOf(ref: string, storeDir: string): Promise<string> {
  if (looksLikePath(ref) && existsSync(ref) && statSync(ref).isDirectory()) return ref;
  const loaded = await loadRunRef(ref, storeDir);
  const runDir = loaded.report.run.runDir;
  if (!existsSync(runDir)) throw new InputError(runDir, `run ${loaded.label}'s directory is gone: nothing to re-diagnose (the saved report is still shown by gpuwise runs show ${ref})`);
  return runDir;
}

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      store: { type: 'string' },
      limit: { type: 'string' },
      json: { type: 'boolean' },
      md: { type: 'boolean' },
      html: { type: 'string' },
      rediagnose: { type: 'boolean' },
      accuracy: { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const dir = storeDir(values.store);
  const [sub, ...rest] = positionals;
  if (values.accuracy) {
    if (sub !== undefined || values.md || values.html !== undefined || values.limit !== undefined || values.rediagnose)
      throw new UsageError('--accuracy takes only --store and --json');
    const host = hostname();
    const rows = leverAccuracy(await listLeverTrials(dir), host);
    if (values.json)
      process.stdout.write(jsonReport({ schemaVersion: RUNS_SCHEMA_VERSION, tool: 'gpuwise', command: 'runs --accuracy', store: storePath(dir), hostname: host, levers: rows }));
    else process.stdout.write(renderLeverAccuracy(rows, storePath(dir), host));
    return 0;
  }
  if (sub === 'show') {
    if (rest.length !== 1) throw new UsageError('give one run: gpuwise runs show RUN (an id, last, last~N, or a run directory)');
    if (values.limit !== undefined) throw new UsageError('--limit is for the list, not for show');
    if ([values.json, values.md].filter(Boolean).length > 1) throw new UsageError('--json and --md are exclusive');
    const ref = rest[0] as string;
    const format = { json: values.json, md: values.md, html: values.html };
    if (values.rediagnose) {
      const runDir = await runDirOf(ref, dir);
      if (values.html !== undefined) checkHtmlTarget(values.html, [runDir]);
      printDoctorReport(await rediagnoseRunDir(runDir), format, 'gpuwise runs');
      return 0;
    }
    const loaded = await loadRunRef(ref, dir);
    if (values.html !== undefined) checkHtmlTarget(values.html, [loaded.source]);
    renderedOrRefused([loaded], () => printDoctorReport(loaded.report, format, 'gpuwise runs'));
    return 0;
  }
  if (values.rediagnose) throw new UsageError('--rediagnose is for `gpuwise runs show RUN`');
  if (sub !== undefined) throw new UsageError(`unexpected argument '${sub}' (gpuwise runs [options], or gpuwise runs show RUN)`);
  if (values.md || values.html !== undefined) throw new UsageError('--md and --html are for `gpuwise runs show RUN`');
  let limit: number | null = 20;
  if (values.limit !== undefined) {
    if (!/^\d+$/.test(values.limit)) throw new UsageError(`--limit: '${values.limit}' is not an integer >= 0`);
    limit = Number(values.limit) === 0 ? null : Number(values.limit);
  }
  const runs = await listRuns(dir, limit);
  if (values.json)
    process.stdout.write(jsonReport({ schemaVersion: RUNS_SCHEMA_VERSION, tool: 'gpuwise', command: 'runs', store: storePath(dir), runs }));
  else process.stdout.write(renderRunsTable(runs, storePath(dir)));
  return 0;
}
