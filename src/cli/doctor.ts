/**
 * `gpuwise doctor [options] -- CMD ...`: runs CMD unchanged with the Python probe on PYTHONPATH,
 * collects the probe's records on a Unix socket, samples the GPUs, then analyses the captured
 * trace and snapshot with analyze's and memory's code and prints one report (src/doctor/).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { type Server, type Socket, createServer } from 'node:net';
import { hostname, tmpdir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { constants as osConstants } from 'node:os';
import { type DoctorInput, type SnapshotInput, type TraceInput, buildDoctorReport } from '../doctor/report.js';
import { renderDoctorHtml } from '../doctor/html.js';
import { renderDoctorMarkdown } from '../doctor/markdown.js';
import { renderDoctorText } from '../doctor/render.js';
import type { DoctorReport } from '../doctor/report.js';
import { type ProbeRecord, parseProbeLines, rankOf } from '../doctor/records.js';
import { InputError } from '../io/inputError.js';
import { loadTrace } from '../io/loadTrace.js';
import { readSnapshotFile } from '../io/readSnapshot.js';
import { checkHtmlTarget } from '../io/reportTarget.js';
import { analyze as analyzeSnapshot } from '../memory/report.js';
import type { Snapshot } from '../telemetry/sample.js';
import { analyzeTrace } from '../trace/metrics/index.js';
import { VERSION } from './main.js';
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

/** The folder holding `gpuwise/` (the probe package): next to dist/ in a package, or the repo's python/. */
export function probeRoot(): string {
  if (process.env.GPUWISE_PROBE_DIR) return resolve(process.env.GPUWISE_PROBE_DIR);
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const cand = join(dir, 'python');
    if (existsSync(join(cand, 'gpuwise', 'probe.py'))) return cand;
    dir = dirname(dir);
  }
  throw new InputError('python/gpuwise', 'the probe package is missing from this gpuwise installation');
}

function stamp(d: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}-${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}`;
}

/** The run directory, and whether this run created it (only then may a failed start remove it). */
function makeRunDir(out: string | undefined, now: Date): { runDir: string; created: boolean } {
  if (out !== undefined) {
    const dir = resolve(out);
    if (existsSync(dir)) {
      let entries: string[];
      try {
        entries = readdirSync(dir);
      } catch {
        throw new InputError(out, 'exists and is not a directory');
      }
      if (entries.length > 0) throw new InputError(out, 'exists and is not empty (gpuwise never overwrites a run; choose another --out)');
      return { runDir: dir, created: false };
    }
    mkdirSync(dir, { recursive: true });
    return { runDir: dir, created: true };
  }
  const base = resolve('gpuwise-runs', stamp(now));
  let dir = base;
  for (let i = 2; existsSync(dir); i++) dir = `${base}-${i}`;
  mkdirSync(dir, { recursive: true });
  return { runDir: dir, created: true };
}

/** Collects JSON lines from every probe connection into probe.jsonl (and memory). */
class Collector {
  readonly lines: string[] = [];
  private readonly conns = new Set<Socket>();
  private readonly server: Server;

  constructor(
    readonly socketPath: string,
    private readonly logPath: string,
  ) {
    this.server = createServer((c) => {
      this.conns.add(c);
      let pending = '';
      c.setEncoding('utf8');
      c.on('data', (chunk: string) => {
        pending += chunk;
        const cut = pending.lastIndexOf('\n');
        if (cut < 0) return;
        const complete = pending.slice(0, cut + 1);
        pending = pending.slice(cut + 1);
        this.lines.push(complete);
        writeFileSync(this.logPath, complete, { flag: 'a' });
      });
      c.on('close', () => {
        if (pending) {
          this.lines.push(`${pending}\n`);
          writeFileSync(this.logPath, `${pending}\n`, { flag: 'a' });
        }
        this.conns.delete(c);
      });
      c.on('error', () => undefined);
    });
  }

  listen(): Promise<void> {
    return new Promise((ok, fail) => {
      this.server.once('error', fail);
      this.server.listen(this.socketPath, () => ok());
    });
  }

  /** Waits (at most `graceMs`) for the probes' connections to end, then closes. */
  async close(graceMs: number): Promise<void> {
    const until = Date.now() + graceMs;
    while (this.conns.size > 0 && Date.now() < until) await sleep(20);
    for (const c of this.conns) c.destroy();
    await new Promise<void>((ok) => this.server.close(() => ok()));
    rmSync(this.socketPath, { force: true });
  }
}

const sleep = (ms: number) => new Promise<void>((ok) => setTimeout(ok, ms));

/** Samples every GPU once a second while the command runs; null with a reason when there is none. */
async function startGpuSampling(): Promise<{ samples: Snapshot[]; stop: () => Promise<void> } | { reason: string }> {
  try {
    const { openLiveSource, LiveSampler } = await import('../telemetry/sampler.js');
    const source = await openLiveSource();
    const sampler = new LiveSampler(source);
    const samples: Snapshot[] = [];
    let busy: Promise<unknown> = Promise.resolve();
    const take = () => {
      busy = sampler
        .sample()
        .then((s) => samples.push(s))
        .catch(() => undefined);
    };
    take();
    const timer = setInterval(take, 1000);
    return {
      samples,
      stop: async () => {
        clearInterval(timer);
        await busy;
        source.close();
      },
    };
  } catch (e) {
    return { reason: (e as Error).message };
  }
}

function startChild(cmd: string[], env: NodeJS.ProcessEnv): Promise<ChildProcess> {
  return new Promise((ok, fail) => {
    // Own process group: signals are forwarded to the whole job (launchers, ranks, workers) and
    // stragglers can be cleaned up after the main process ends.
    const child = spawn(cmd[0] as string, cmd.slice(1), { stdio: 'inherit', env, detached: true });
    child.once('spawn', () => ok(child));
    child.once('error', (e: NodeJS.ErrnoException) => {
      const problem = e.code === 'ENOENT' ? 'command not found' : e.code === 'EACCES' ? 'permission denied (not executable)' : e.message;
      fail(new InputError(cmd[0] as string, problem));
    });
  });
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Ends what is left of the child's process group (DataLoader workers, ranks of a dead launcher). */
async function reapGroup(pgid: number): Promise<void> {
  if (!groupAlive(pgid)) return;
  try {
    process.kill(-pgid, 'SIGTERM');
  } catch {
    return;
  }
  for (let i = 0; i < 50 && groupAlive(pgid); i++) await sleep(40);
  if (groupAlive(pgid)) {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

function readFallbackRecords(runDir: string): string[] {
  return readdirSync(runDir)
    .filter((f) => /^probe-\d+\.jsonl$/.test(f))
    .map((f) => readFileSync(join(runDir, f), 'utf8'));
}

async function analyseTraces(records: ProbeRecord[]): Promise<TraceInput[]> {
  const out: TraceInput[] = [];
  for (const r of records) {
    if (r.type !== 'profile-end' || r.trace === null) continue;
    try {
      const metrics = analyzeTrace(await loadTrace(r.trace));
      out.push({ rank: rankOf(r), path: r.trace, metrics, error: null });
    } catch (e) {
      out.push({ rank: rankOf(r), path: r.trace, metrics: null, error: (e as Error).message });
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
  const dash = argv.indexOf('--');
  const own = dash < 0 ? argv : argv.slice(0, dash);
  const cmd = dash < 0 ? [] : argv.slice(dash + 1);
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
  const probeDir = probeRoot();
  const socketPath = join(tmpdir(), `gpuwise-${process.pid}-${Math.random().toString(36).slice(2, 8)}.sock`);
  const collector = new Collector(socketPath, join(runDir, 'probe.jsonl'));
  await collector.listen();

  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PYTHONPATH: [join(probeDir, 'gpuwise', 'boot'), probeDir, process.env.PYTHONPATH].filter((p) => p).join(delimiter),
    GPUWISE_SOCKET: socketPath,
    GPUWISE_RUN_DIR: runDir,
  };
  if (maxSteps !== undefined) env.GPUWISE_MAX_STEPS = String(maxSteps);
  if (profileAt !== undefined) env.GPUWISE_PROFILE_AT = String(profileAt);
  if (profileSteps !== undefined) env.GPUWISE_PROFILE_STEPS = String(profileSteps);

  const gpu = await startGpuSampling();
  let child: ChildProcess;
  try {
    child = await startChild(cmd, env);
  } catch (e) {
    if ('stop' in gpu) await gpu.stop();
    await collector.close(0);
    if (created) rmSync(runDir, { recursive: true, force: true }); // created by this run, holds nothing
    throw e;
  }
  const pgid = child.pid as number;

  let forwardedSignal: string | null = null;
  let forwards = 0;
  const forward = (sig: NodeJS.Signals) => {
    forwardedSignal = sig;
    forwards++;
    try {
      // A third Ctrl-C means it: kill the job.
      process.kill(-pgid, forwards >= 3 ? 'SIGKILL' : sig);
    } catch {
      // the group is gone already
    }
  };
  const onInt = () => forward('SIGINT');
  const onTerm = () => forward('SIGTERM');
  const onExit = () => {
    // doctor itself is going away (a bug, a kill): leave no orphan behind.
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      // nothing left to kill
    }
  };
  process.on('SIGINT', onInt).on('SIGTERM', onTerm).on('exit', onExit);

  const exit = await new Promise<{ code: number; signal: string | null }>((ok) => {
    child.once('exit', (code, signal) => {
      const signo = signal ? (osConstants.signals[signal] ?? 0) : 0;
      ok({ code: code ?? 128 + signo, signal });
    });
  });
  await reapGroup(pgid);
  process.off('SIGINT', onInt).off('SIGTERM', onTerm).off('exit', onExit);
  if ('stop' in gpu) await gpu.stop();
  await collector.close(1000);
  const ended = Date.now();

  const parsed = parseProbeLines([...collector.lines, ...readFallbackRecords(runDir)].join(''));
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
    skippedLines: parsed.skippedLines,
    traces,
    snapshots,
    gpuSamples: 'samples' in gpu ? gpu.samples : null,
    gpuUnavailableReason: 'reason' in gpu ? gpu.reason : null,
    notes: [],
  };
  const report = buildDoctorReport(input);
  if (report.planModel) writeFileSync(join(runDir, 'model.json'), `${JSON.stringify(report.planModel, null, 2)}\n`, { flag: 'wx' });
  writeFileSync(join(runDir, 'report.json'), `${JSON.stringify(report, null, 2)}\n`, { flag: 'wx' });
  // The Markdown and HTML copies are a convenience: failing to write them must not cost the run its exit status.
  let html: string | null = null;
  try {
    html = renderDoctorHtml(report);
    writeFileSync(join(runDir, 'report.md'), renderDoctorMarkdown(report), { flag: 'wx' });
    writeFileSync(join(runDir, 'report.html'), html, { flag: 'wx' });
  } catch (e) {
    process.stderr.write(`gpuwise doctor: warning: report.md/report.html not written in ${runDir}: ${(e as Error).message}\n`);
  }
  if (values.json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  else if (values.md) process.stdout.write(`\n${renderDoctorMarkdown(report)}`);
  else process.stdout.write(`\n${renderDoctorText(report)}`);
  if (values.html !== undefined) {
    try {
      writeFileSync(values.html, html ?? renderDoctorHtml(report));
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
