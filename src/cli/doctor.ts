/**
 * `gpuwise doctor [options] -- CMD ...`: runs CMD unchanged with the Python probe on PYTHONPATH,
 * collects the probe's records on a Unix socket, samples the GPUs, then analyses the captured
 * trace and snapshot with analyze's and memory's code and prints one report (src/doctor/).
 */
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { type LeverAccuracy, leverAccuracy } from '../history/leverAccuracy.js';
import { hostname } from 'node:os';
import { basename, dirname, join } from 'node:path';
import type { DoctorInput } from '../doctor/reportTypes.js';
import { buildDoctorReport } from '../doctor/report.js';
import { inlineAssets } from '../serve/assets.js';
import { renderDoctorHtml } from '../serve/pages/runs.js';
import { renderDoctorMarkdown } from '../doctor/markdown.js';
import { renderDoctorText } from '../doctor/render.js';
import { StallTracker, innermostFrames } from '../doctor/hang.js';
import type { DoctorReport } from '../doctor/reportTypes.js';
import { analysedWindowEnds, type ProbeRecord, rankOf } from '../run/records.js';
import { InputError } from '../io/inputError.js';
import { analyseSnapshotFiles, analyseTraceFiles, type CaptureRef } from '../io/captures.js';
import { checkHtmlTarget, writeReportFile } from '../io/reportTarget.js';
import { type RunFeed, startRunFeed } from '../serve/runFeed.js';
import { unprobedProcesses } from '../run/attach.js';
import { checkPythonTorch, commandPythonOf } from './commandPython.js';
import { VERSION } from '../util/version.js';
import { endBySignal } from '../io/signalDeath.js';
import { type ProbeRun, type ProbeRunResult, makeRunDir, startProbeRun } from './probeRun.js';
import { readStepBeacons, removeSpentBeacons } from '../io/beacons.js';
import { printDoctorReport, rediagnoseRunDir } from './rediagnose.js';
import { terminalWidth } from './color.js';
import { PLAIN } from '../report/style.js';
import { splitCommand } from './telemetryArgs.js';
import { UsageError, parseFlags } from './usage.js';

const HELP = `Usage: gpuwise doctor [options] -- CMD [ARGS...]
       gpuwise doctor --from RUN_DIR [--json | --md | --html FILE]

Runs CMD (python train.py, torchrun ..., accelerate launch ...) unchanged with gpuwise's
Python probe injected (PYTHONPATH + sitecustomize), watches the GPUs, records a torch.profiler
window and a CUDA memory snapshot, and prints one report: environment, step times, DataLoader
wait, memory, and the ranked findings of analyze and memory on the captured window.

Options:
  --steps N      stop the training cleanly after N optimizer steps (exit status 0)
  --out DIR      run directory (default ./gpuwise-runs/DATE-TIME); must be new or empty
  --json         the report as JSON on stdout (schemaVersion 1)
  --md           the report as Markdown on stdout
  --html FILE    also write the report as one self-contained HTML page (the page gpuwise serve shows
                 for the run, uPlot inline: opens offline)
  --store DIR    the run history to save the run in (default: $GPUWISE_STORE, else ~/.gpuwise)
  --no-serve     do not stream the run to a gpuwise serve running on that store (by default its Runs
                 page follows the run live)
  --profile-at N first profiled step (default: the first steady step, 10 to 50); --profile-steps K steps (default 5, 0 = off)
  --importable   \`import gpuwise\` in the script gives the running probe when no gpuwise is installed
                 (for gpuwise.step() marks; without it the import fails as it does without doctor)
  --hang-timeout S  stop the job when every training rank has made no progress for S seconds
                 (default 600, 0 = never); the report's outcome is then "hung", exit status 124
  -h, --help     this help

--from RUN_DIR re-diagnoses a recorded run: the report is rebuilt from the run directory's probe
records, profiler window and snapshot (gzipped or not) with this version's rules; nothing runs and
nothing is written there. A run recorded on a GPU machine can so be read again anywhere.

Every run is saved in the run history (gpuwise runs, gpuwise compare last~1 last); the run
directory also gets report.json, report.md and report.html.
Exit status: CMD's own; when CMD died of a signal, doctor ends by the same signal after its report
(128+N where it cannot); 124 when doctor stopped a hung job; 2 for bad usage or a CMD that cannot start.
Environment for the probe: see docs/reference/doctor.md, "The probe".
`;

const OPTIONS = {
  steps: { type: 'string' },
  out: { type: 'string' },
  json: { type: 'boolean' },
  md: { type: 'boolean' },
  html: { type: 'string' },
  store: { type: 'string' },
  'no-serve': { type: 'boolean' },
  'profile-at': { type: 'string' },
  'profile-steps': { type: 'string' },
  'hang-timeout': { type: 'string' },
  importable: { type: 'boolean' },
  from: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** A shipped run recorded on an H200, shown when the shipped example cannot run for want of PyTorch. */
const SHIPPED_RUN = join('runs', 'h200', 'starved_dataloader');

/**
 * The README's first command runs a script shipped in examples/doctor/. On a machine whose Python has no PyTorch
 * that cannot work; instead of the script's traceback and an empty report, doctor re-diagnoses a run of the same
 * kind recorded on an H200 and says so. Only for the shipped examples: a user's own script runs as given.
 * Returns the reason when the fallback applies, else null.
 */
function shippedExampleWithoutTorch(cmd: string[]): { runDir: string; why: string } | null {
  const [python, script] = cmd;
  if (python === undefined || script === undefined || !/^python[0-9.]*$/.test(basename(python))) return null;
  const runDir = join(dirname(script), SHIPPED_RUN);
  if (!existsSync(script) || !existsSync(join(runDir, 'probe.jsonl'))) return null;
  const checked = checkPythonTorch(python);
  if (checked?.torch) return null;
  const reason = checked === null ? `there is no ${python} on this machine` : `${python} has no PyTorch (${checked.importError})`;
  return {
    runDir,
    why: `${reason}, so ${script} cannot run here. Shown instead: the diagnosis of a run recorded on an NVIDIA H200 (a ResNet-50 whose DataLoader starves the GPU), re-diagnosed from its run directory with gpuwise doctor --from ${runDir}. Install PyTorch to run the example itself.`,
  };
}

function intFlag(text: string | undefined, flag: string, min: number): number | undefined {
  if (text === undefined) return undefined;
  if (!/^\d+$/.test(text) || Number(text) < min) throw new UsageError(`${flag}: '${text}' is not an integer >= ${min}`);
  return Number(text);
}

/** The windows and snapshots the probe's records name, at the paths it wrote them to. */
function capturesOf(records: ProbeRecord[]): { traces: CaptureRef[]; snapshots: (CaptureRef & { kind: 'window' | 'oom' })[] } {
  const traces: CaptureRef[] = [];
  const snapshots: (CaptureRef & { kind: 'window' | 'oom' })[] = [];
  const windows = new Set<ProbeRecord>(analysedWindowEnds(records));
  for (const r of records) {
    if (r.type === 'profile-end' && !windows.has(r)) continue;
    if (r.type === 'profile-end' && r.trace !== null) traces.push({ rank: rankOf(r), path: r.trace, label: r.trace });
    if (r.type === 'profile-end' && r.snapshot) snapshots.push({ rank: rankOf(r), path: r.snapshot, label: r.snapshot, kind: 'window' });
    if (r.type === 'oom' && r.snapshot) snapshots.push({ rank: rankOf(r), path: r.snapshot, label: r.snapshot, kind: 'oom' });
  }
  return { traces, snapshots };
}

export async function run(argv: string[]): Promise<number> {
  const { own, command: cmd } = splitCommand(argv);
  const { values, positionals } = parseFlags({ args: own, options: OPTIONS, allowPositionals: true, strict: true });
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  if (positionals.length > 0) throw new UsageError(`put the command after --: gpuwise doctor [options] -- ${positionals.join(' ')}`);
  if (values.json && values.md) throw new UsageError('--json and --md are exclusive');
  const format = { json: values.json, md: values.md, html: values.html };
  if (values.from !== undefined) {
    if (cmd.length > 0) throw new UsageError('--from re-diagnoses a recorded run: give no command (gpuwise doctor --from RUN_DIR)');
    for (const flag of ['steps', 'out', 'store', 'profile-at', 'profile-steps', 'no-serve', 'hang-timeout', 'importable'] as const)
      if (values[flag] !== undefined) throw new UsageError(`--${flag} is for a new run, not for --from`);
    if (values.html !== undefined) checkHtmlTarget(values.html, [values.from]);
    printDoctorReport(await rediagnoseRunDir(values.from), format, 'gpuwise doctor');
    return 0;
  }
  if (cmd.length === 0) throw new UsageError('missing the command to run: gpuwise doctor [options] -- python train.py ...');
  const maxSteps = intFlag(values.steps, '--steps', 1);
  const profileAt = intFlag(values['profile-at'], '--profile-at', 1);
  const profileSteps = intFlag(values['profile-steps'], '--profile-steps', 0);
  const hangTimeoutS = intFlag(values['hang-timeout'], '--hang-timeout', 0) ?? DEFAULT_HANG_TIMEOUT_S;
  // Checked before the run: a refused --html must not cost a training run.
  if (values.html !== undefined) checkHtmlTarget(values.html, cmd.slice(1));
  const fallback = shippedExampleWithoutTorch(cmd);
  if (fallback) {
    process.stderr.write(`gpuwise doctor: ${fallback.why}\n`);
    printDoctorReport(await rediagnoseRunDir(fallback.runDir, [fallback.why]), format, 'gpuwise doctor');
    return 0;
  }

  const started = new Date();
  const { runDir, created } = makeRunDir(values.out, started);
  const probeEnv: Record<string, string> = {};
  if (maxSteps !== undefined) probeEnv.GPUWISE_MAX_STEPS = String(maxSteps);
  if (profileAt !== undefined) probeEnv.GPUWISE_PROFILE_AT = String(profileAt);
  if (profileSteps !== undefined) probeEnv.GPUWISE_PROFILE_STEPS = String(profileSteps);
  if (values.importable) probeEnv.GPUWISE_IMPORTABLE = '1';

  // A `gpuwise serve` on the run's store follows the run live (fail-open: it never slows or stops the run).
  const feed = values['no-serve'] ? null : await feedServe(values.store, cmd, runDir, started.getTime());
  let probeRun: ProbeRun;
  const stalls = new StallTracker();
  try {
    // Under --json/--md stdout holds the report alone (`doctor --json -- ... | jq`): the command's output goes to stderr.
    probeRun = await startProbeRun({
      cmd,
      runDir,
      env: probeEnv,
      output: values.json || values.md ? 'stderr' : undefined,
      onRecord: (r) => {
        feed?.push(r);
        stalls.add(r);
        if (r.type === 'stall')
          process.stderr.write(
            `gpuwise doctor: warning: ${r.rank === null ? `pid ${r.pid}` : `rank ${r.rank} (pid ${r.pid})`} has made no progress for ${r.sinceStepS.toFixed(0)} s in step ${r.step} (at ${innermostFrames(r.stack, 1)[0] ?? '?'})\n`,
          );
      },
      onProcessGone: (pid) => stalls.gone(pid),
    });
  } catch (e) {
    await feed?.finish(2, null, null);
    if (created) rmSync(runDir, { recursive: true, force: true }); // created by this run, holds nothing
    throw e;
  }
  const stopHung = watchForHang(probeRun, stalls, hangTimeoutS);
  const done = await probeRun.done;
  clearInterval(stopHung.timer);
  const { exit } = done;
  const report = await reportOfRun({
    cmd,
    runDir,
    startedAtMs: started.getTime(),
    done,
    hang: stopHung.stopped ? { timeoutS: hangTimeoutS, atMs: done.stoppedAtMs } : null,
    leverAccuracy: await machineLeverAccuracy(values.store),
  });
  // The run directory may be gone or full (removed mid-run, a full disk): the report still reaches stdout and the
  // exit status stays the command's.
  let html: string | null = null;
  let reportKept = false;
  try {
    if (report.planModel) writeFileSync(join(runDir, 'model.json'), `${JSON.stringify(report.planModel, null, 2)}\n`, { flag: 'wx' });
    writeFileSync(join(runDir, 'report.json'), `${JSON.stringify(report, null, 2)}\n`, { flag: 'wx' });
    reportKept = true;
    // The Markdown and HTML copies are a convenience: failing to write them must not cost the run its exit status.
    html = renderDoctorHtml(report, inlineAssets());
    writeFileSync(join(runDir, 'report.md'), renderDoctorMarkdown(report), { flag: 'wx' });
    writeFileSync(join(runDir, 'report.html'), html, { flag: 'wx' });
  } catch (e) {
    process.stderr.write(`gpuwise doctor: warning: the report was not kept in ${runDir}: ${(e as Error).message}\n`);
    // A half-written report.json (a full disk) would read as a damaged run later: leave none.
    if (!reportKept && (e as NodeJS.ErrnoException).code !== 'EEXIST') rmSync(join(runDir, 'report.json'), { force: true });
  }
  if (values.json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  else if (values.md) process.stdout.write(`\n${renderDoctorMarkdown(report)}`);
  else process.stdout.write(`\n${renderDoctorText(report, PLAIN, terminalWidth())}`);
  if (values.html !== undefined) {
    try {
      writeReportFile(values.html, html ?? renderDoctorHtml(report, inlineAssets()), cmd.slice(1), '--html');
      process.stderr.write(`gpuwise doctor: wrote ${values.html}\n`);
    } catch (e) {
      process.stderr.write(`gpuwise doctor: warning: ${values.html} not written (${(e as Error).message}); the same page is ${join(runDir, 'report.html')}\n`);
    }
  }
  const savedAs = await saveToHistory(report, values.store);
  await feed?.finish(exit.code, exit.signal, savedAs);
  // A job doctor stopped because it hung: the status `timeout` uses, not the SIGTERM doctor itself sent.
  if (stopHung.stopped && report.run.outcome === 'hung') return HUNG_EXIT_CODE;
  // The command died of a signal doctor did not send: doctor dies of it too once done (a parent tells the two apart).
  if (exit.signal !== null && done.stoppedBy === null) endBySignal(exit.code - 128);
  return exit.code;
}

/**
 * The doctor report of a finished probe run (shared with `tune --plan`'s diagnosis): the captured windows and snapshots
 * analysed, and the run's records, exit and samples turned into one report (doctor/report.ts).
 */
export async function reportOfRun(opts: {
  cmd: string[];
  runDir: string;
  startedAtMs: number;
  done: ProbeRunResult;
  hang: DoctorInput['hang'];
  /** What tune --plan measured on this machine before (machineLeverAccuracy). */
  leverAccuracy?: readonly LeverAccuracy[];
}): Promise<DoctorReport> {
  const { cmd, runDir, done } = opts;
  const {
    exit,
    forwardedSignal,
    records,
    stepRecordsByPid,
    skippedLines,
    notes,
    gpuSamples,
    gpuUnavailableReason,
    endedAtMs: ended,
  } = done;
  const parsed = { records, skippedLines };
  // Nothing from the probe: say whether the command's Python has PyTorch at all (and which Python it is).
  const python = records.length === 0 && !done.attach.processes.some((p) => p.torch) ? commandPythonOf(cmd) : null;
  const captured = capturesOf(parsed.records);
  const [traces, snapshots] = [await analyseTraceFiles(captured.traces), await analyseSnapshotFiles(captured.snapshots)];
  const input: DoctorInput = {
    version: VERSION,
    command: cmd,
    runDir,
    startedAtMs: opts.startedAtMs,
    endedAtMs: ended,
    exit,
    forwardedSignal,
    hang: opts.hang,
    disconnectedAtMs: done.disconnectedAtMs,
    stepBeacons: readStepBeacons(runDir),
    records: parsed.records,
    stepRecordsByPid,
    skippedLines: parsed.skippedLines,
    traces,
    snapshots,
    gpuSamples,
    gpuUnavailableReason,
    // written below, with report.json, when the model has a config plan reads
    planModelFile: join(runDir, 'model.json'),
    python: python === null ? null : checkPythonTorch(python),
    commandPids: done.attach.processes.map((p) => p.pid),
    unprobed: unprobedProcesses(done.attach.processes, done.attach.route, done.attach.tokens),
    notes,
    leverAccuracy: opts.leverAccuracy ?? [],
  };
  const report = buildDoctorReport(input);
  // Read: the counters of the processes that ended are spent; a killed process's stays, the evidence (io/beacons.ts).
  removeSpentBeacons(runDir, parsed.records);
  return report;
}

/** --hang-timeout's default: ten minutes with every rank stalled (a slow step has long been reported by then). */
const DEFAULT_HANG_TIMEOUT_S = 600;
/** doctor's exit status after stopping a hung job, as timeout(1)'s. */
export const HUNG_EXIT_CODE = 124;

/**
 * Checks once a second whether every training rank has been stalled (or gone) for `timeoutS`; then says so in one
 * line and stops the job (SIGTERM to its process group, SIGKILL after 3 s). 0 = never.
 */
function watchForHang(run: ProbeRun, stalls: StallTracker, timeoutS: number): { timer: NodeJS.Timeout | undefined; stopped: boolean } {
  const state: { timer: NodeJS.Timeout | undefined; stopped: boolean } = { timer: undefined, stopped: false };
  if (timeoutS <= 0) return state;
  state.timer = setInterval(
    () => {
      const forS = stalls.stalledForS(Date.now() / 1000);
      if (forS === null || forS < timeoutS || state.stopped) return;
      state.stopped = true;
      clearInterval(state.timer);
      const open = stalls.stalls();
      const steps = open.map((s) => `${s.rank === null ? `pid ${s.pid}` : `rank ${s.rank}`} in step ${s.step}`).join(', ');
      process.stderr.write(
        `gpuwise doctor: every training rank has made no progress for ${forS.toFixed(0)} s (--hang-timeout ${timeoutS}): stopping the job (SIGTERM to its process group); ${steps}\n`,
      );
      run.stop('hang');
    },
    Math.min(1000, Math.max(100, timeoutS * 250)),
  );
  state.timer.unref();
  return state;
}

/** The live feed to the servers of the store; null when none runs or the store cannot be named. */
async function feedServe(storeFlag: string | undefined, cmd: string[], runDir: string, startedAtMs: number): Promise<RunFeed | null> {
  try {
    const { storeDir } = await import('../io/runStore.js');
    const dir = storeDir(storeFlag);
    return startRunFeed(dir, { command: cmd, runDir, startedAtMs, pid: process.pid }, (line) => {
      try {
        process.stderr.write(`${line}\n`);
      } catch {
        // stderr is gone: the note is not worth more
      }
    });
  } catch {
    return null;
  }
}

/**
 * What `tune --plan` measured of each plan step on this machine (the history's pairs of this hostname), for a live
 * run's plan to say where this machine differs from the model. A run re-diagnosed with --from may come from another
 * machine: it gets none. A store that cannot be read gives none (saving the run says what is wrong with it).
 */
export async function machineLeverAccuracy(storeFlag: string | undefined): Promise<LeverAccuracy[]> {
  try {
    const { listLeverTrials, storeDir } = await import('../io/runStore.js');
    return leverAccuracy(await listLeverTrials(storeDir(storeFlag)), hostname());
  } catch {
    return [];
  }
}

/** Saves the run in the history; a store that cannot be written costs one warning line, never the exit code. Returns the run's id. */
export async function saveToHistory(report: DoctorReport, storeFlag: string | undefined): Promise<string | null> {
  let where = storeFlag ?? process.env.GPUWISE_STORE ?? '~/.gpuwise';
  try {
    const { saveRun, storeDir, storePath } = await import('../io/runStore.js');
    const dir = storeDir(storeFlag);
    where = storePath(dir);
    const id = await saveRun(dir, report, { cwd: process.cwd(), hostname: hostname() });
    process.stderr.write(`gpuwise doctor: saved as run ${id} in ${where} (gpuwise runs; gpuwise compare last~1 last)\n`);
    return id;
  } catch (e) {
    process.stderr.write(
      `gpuwise doctor: warning: run not saved in the history (${e instanceof InputError ? e.message : `${where}: ${(e as Error)?.message ?? String(e)}`}); the run directory ${report.run.runDir} has it all\n`,
    );
    return null;
  }
}
