/**
 * `gpuwise doctor [options] -- CMD ...`: runs CMD unchanged with the Python probe on PYTHONPATH,
 * collects the probe's records on a Unix socket, samples the GPUs, then analyses the captured
 * trace and snapshot with analyze's and memory's code and prints one report (src/doctor/).
 */
import { rmSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { type DoctorInput, type SnapshotInput, type TraceInput, buildDoctorReport } from '../doctor/report.js';
import { renderDoctorHtml } from '../doctor/html.js';
import { renderDoctorMarkdown } from '../doctor/markdown.js';
import { renderDoctorText } from '../doctor/render.js';
import type { DoctorReport } from '../doctor/report.js';
import { type ProbeRecord, rankOf } from '../doctor/records.js';
import { InputError } from '../io/inputError.js';
import { loadTrace } from '../io/loadTrace.js';
import { readSnapshotFile } from '../io/readSnapshot.js';
import { checkHtmlTarget, writeReportFile } from '../io/reportTarget.js';
import { analyze as analyzeSnapshot } from '../memory/report.js';
import { analyzeTrace, collectiveTimings } from '../trace/metrics/index.js';
import { VERSION } from './main.js';
import { type ProbeRun, makeRunDir, startProbeRun } from './probeRun.js';
import { splitCommand } from './telemetryArgs.js';
import { UsageError, parseFlags } from './usage.js';

const HELP = `Usage: gpuwise doctor [options] -- CMD [ARGS...]

Runs CMD (python train.py, torchrun ..., accelerate launch ...) unchanged with gpuwise's
Python probe injected (PYTHONPATH + sitecustomize), watches the GPUs, records a torch.profiler
window and a CUDA memory snapshot, and prints one report: environment, step times, DataLoader
wait, memory, and the ranked findings of analyze and memory on the captured window.

Options:
  --steps N      stop the training cleanly after N optimizer steps (exit status 0)
  --out DIR      run directory (default ./gpuwise-runs/DATE-TIME); must be new or empty
  --json         the report as JSON on stdout (schemaVersion 1)
  --md           the report as Markdown on stdout
  --html FILE    also write the report as one self-contained HTML page (charts, no script)
  --store DIR    the run history to save the run in (default: $GPUWISE_STORE, else ~/.gpuwise)
  --profile-at N first profiled step (default 10); --profile-steps K steps (default 5, 0 = off)
  -h, --help     this help

Every run is saved in the run history (gpuwise runs, gpuwise compare last~1 last); the run
directory also gets report.json, report.md and report.html.
Exit status: CMD's own (128+N when it died of signal N); 2 for bad usage or a CMD that cannot start.
Environment for the probe: see docs/doctor.md.
`;

const OPTIONS = {
  steps: { type: 'string' },
  out: { type: 'string' },
  json: { type: 'boolean' },
  md: { type: 'boolean' },
  html: { type: 'string' },
  store: { type: 'string' },
  'profile-at': { type: 'string' },
  'profile-steps': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

function intFlag(text: string | undefined, flag: string, min: number): number | undefined {
  if (text === undefined) return undefined;
  if (!/^\d+$/.test(text) || Number(text) < min) throw new UsageError(`${flag}: '${text}' is not an integer >= ${min}`);
  return Number(text);
}

async function analyseTraces(records: ProbeRecord[]): Promise<TraceInput[]> {
  const out: TraceInput[] = [];
  for (const r of records) {
    if (r.type !== 'profile-end' || r.trace === null) continue;
    try {
      const model = await loadTrace(r.trace);
      const metrics = analyzeTrace(model);
      out.push({ rank: rankOf(r), path: r.trace, metrics, collectives: collectiveTimings(model, metrics.steps), error: null });
    } catch (e) {
      out.push({ rank: rankOf(r), path: r.trace, metrics: null, collectives: null, error: (e as Error).message });
    }
  }
  return out.sort((a, b) => a.rank - b.rank);
}

async function analyseSnapshots(records: ProbeRecord[]): Promise<SnapshotInput[]> {
  const wanted: { rank: number; path: string; kind: 'window' | 'oom' }[] = [];
  for (const r of records) {
    if (r.type === 'profile-end' && r.snapshot) wanted.push({ rank: rankOf(r), path: r.snapshot, kind: 'window' });
    if (r.type === 'oom' && r.snapshot) wanted.push({ rank: rankOf(r), path: r.snapshot, kind: 'oom' });
  }
  const out: SnapshotInput[] = [];
  for (const w of wanted) {
    try {
      const { snapshot } = await readSnapshotFile(w.path);
      out.push({ ...w, report: analyzeSnapshot(snapshot, { path: w.path }).report, error: null });
    } catch (e) {
      out.push({ ...w, report: null, error: (e as Error).message });
    }
  }
  return out;
}

export async function run(argv: string[]): Promise<number> {
  const { own, command: cmd } = splitCommand(argv);
  const { values, positionals } = parseFlags({ args: own, options: OPTIONS, allowPositionals: true, strict: true });
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  if (positionals.length > 0) throw new UsageError(`put the command after --: gpuwise doctor [options] -- ${positionals.join(' ')}`);
  if (cmd.length === 0) throw new UsageError('missing the command to run: gpuwise doctor [options] -- python train.py ...');
  const maxSteps = intFlag(values.steps, '--steps', 1);
  const profileAt = intFlag(values['profile-at'], '--profile-at', 1);
  const profileSteps = intFlag(values['profile-steps'], '--profile-steps', 0);
  if (values.json && values.md) throw new UsageError('--json and --md are exclusive');
  // Checked before the run: a refused --html must not cost a training run.
  if (values.html !== undefined) checkHtmlTarget(values.html, cmd.slice(1));

  const started = new Date();
  const { runDir, created } = makeRunDir(values.out, started);
  const probeEnv: Record<string, string> = {};
  if (maxSteps !== undefined) probeEnv.GPUWISE_MAX_STEPS = String(maxSteps);
  if (profileAt !== undefined) probeEnv.GPUWISE_PROFILE_AT = String(profileAt);
  if (profileSteps !== undefined) probeEnv.GPUWISE_PROFILE_STEPS = String(profileSteps);

  let probeRun: ProbeRun;
  try {
    // Under --json/--md stdout holds the report alone (`doctor --json -- ... | jq`): the command's output goes to stderr.
    probeRun = await startProbeRun({ cmd, runDir, env: probeEnv, output: values.json || values.md ? 'stderr' : undefined });
  } catch (e) {
    if (created) rmSync(runDir, { recursive: true, force: true }); // created by this run, holds nothing
    throw e;
  }
  const { exit, forwardedSignal, records, stepRecordsByPid, skippedLines, notes, gpuSamples, gpuUnavailableReason, endedAtMs: ended } = await probeRun.done;
  const parsed = { records, skippedLines };
  const [traces, snapshots] = [await analyseTraces(parsed.records), await analyseSnapshots(parsed.records)];
  const input: DoctorInput = {
    version: VERSION,
    command: cmd,
    runDir,
    startedAtMs: started.getTime(),
    endedAtMs: ended,
    exit,
    forwardedSignal,
    records: parsed.records,
    stepRecordsByPid,
    skippedLines: parsed.skippedLines,
    traces,
    snapshots,
    gpuSamples,
    gpuUnavailableReason,
    notes,
  };
  const report = buildDoctorReport(input);
  // The run directory may be gone or full (removed mid-run, a full disk): the report still reaches stdout and the
  // exit status stays the command's.
  let html: string | null = null;
  let reportKept = false;
  try {
    if (report.planModel) writeFileSync(join(runDir, 'model.json'), `${JSON.stringify(report.planModel, null, 2)}\n`, { flag: 'wx' });
    writeFileSync(join(runDir, 'report.json'), `${JSON.stringify(report, null, 2)}\n`, { flag: 'wx' });
    reportKept = true;
    // The Markdown and HTML copies are a convenience: failing to write them must not cost the run its exit status.
    html = renderDoctorHtml(report);
    writeFileSync(join(runDir, 'report.md'), renderDoctorMarkdown(report), { flag: 'wx' });
    writeFileSync(join(runDir, 'report.html'), html, { flag: 'wx' });
  } catch (e) {
    process.stderr.write(`gpuwise doctor: warning: the report was not kept in ${runDir}: ${(e as Error).message}\n`);
    // A half-written report.json (a full disk) would read as a damaged run later: leave none.
    if (!reportKept && (e as NodeJS.ErrnoException).code !== 'EEXIST') rmSync(join(runDir, 'report.json'), { force: true });
  }
  if (values.json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  else if (values.md) process.stdout.write(`\n${renderDoctorMarkdown(report)}`);
  else process.stdout.write(`\n${renderDoctorText(report)}`);
  if (values.html !== undefined) {
    try {
      writeReportFile(values.html, html ?? renderDoctorHtml(report), cmd.slice(1), '--html');
      process.stderr.write(`gpuwise doctor: wrote ${values.html}\n`);
    } catch (e) {
      process.stderr.write(`gpuwise doctor: warning: ${values.html} not written (${(e as Error).message}); the same page is ${join(runDir, 'report.html')}\n`);
    }
  }
  await saveToHistory(report, values.store);
  return exit.code;
}

/** Saves the run in the history; a store that cannot be written costs one warning line, never the exit code. */
async function saveToHistory(report: DoctorReport, storeFlag: string | undefined): Promise<void> {
  let where = storeFlag ?? process.env.GPUWISE_STORE ?? '~/.gpuwise';
  try {
    const { saveRun, storeDir, storePath } = await import('../io/runStore.js');
    const dir = storeDir(storeFlag);
    where = storePath(dir);
    const id = await saveRun(dir, report, { cwd: process.cwd(), hostname: hostname() });
    process.stderr.write(`gpuwise doctor: saved as run ${id} in ${where} (gpuwise runs; gpuwise compare last~1 last)\n`);
  } catch (e) {
    process.stderr.write(
      `gpuwise doctor: warning: run not saved in the history (${e instanceof InputError ? e.message : `${where}: ${(e as Error)?.message ?? String(e)}`}); the run directory ${report.run.runDir} has it all\n`,
    );
  }
}
