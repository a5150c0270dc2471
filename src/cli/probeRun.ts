/**
 * Runs one command with gpuwise's Python probe (shell, shared by `doctor` and `tune`): the run directory,
 * the Unix-socket collector, the child in its own process group (signals forwarded, stragglers reaped),
 * the records the probes wrote to files when no collector listened, and optional GPU sampling
 * (telemetry/sampler.ts).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { type Server, type Socket, createServer } from 'node:net';
import { constants as osConstants, tmpdir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ChildExit } from '../doctor/report.js';
import { type ProbeRecord, parseProbeLines } from '../doctor/records.js';
import { InputError } from '../io/inputError.js';
import type { Snapshot } from '../telemetry/sample.js';

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

/** Local date and time as YYYYMMDD-HHMMSS (run directory names). */
export function stamp(d: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}-${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}`;
}

/**
 * The run directory, and whether this run created it (only then may a failed start remove it): `out` when
 * given (it must not exist or be empty: a run is never overwritten), else `./gpuwise-runs/PREFIX+DATE-TIME`.
 */
export function makeRunDir(out: string | undefined, now: Date, prefix = ''): { runDir: string; created: boolean } {
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
  const base = resolve('gpuwise-runs', `${prefix}${stamp(now)}`);
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
    private readonly onLines?: (complete: string) => void,
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
        this.take(complete);
      });
      c.on('close', () => {
        if (pending) this.take(`${pending}\n`);
        this.conns.delete(c);
      });
      c.on('error', () => undefined);
    });
  }

  private take(complete: string): void {
    this.lines.push(complete);
    writeFileSync(this.logPath, complete, { flag: 'a' });
    this.onLines?.(complete);
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

export const sleep = (ms: number) => new Promise<void>((ok) => setTimeout(ok, ms));

type GpuSampling = { samples: Snapshot[]; stop: () => Promise<void> } | { reason: string };

/** Samples every GPU once a second while the command runs; a reason when there is none. */
async function startGpuSampling(): Promise<GpuSampling> {
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

function startChild(cmd: string[], env: NodeJS.ProcessEnv, stdio: 'inherit' | ['ignore', number, number]): Promise<ChildProcess> {
  return new Promise((ok, fail) => {
    // Own process group: signals are forwarded to the whole job (launchers, ranks, workers) and
    // stragglers can be cleaned up after the main process ends.
    const child = spawn(cmd[0] as string, cmd.slice(1), { stdio, env, detached: true });
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

function killGroup(pgid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(-pgid, sig);
  } catch {
    // the group is gone already
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
  if (groupAlive(pgid)) killGroup(pgid, 'SIGKILL');
}

function readFallbackRecords(runDir: string): string[] {
  return readdirSync(runDir)
    .filter((f) => /^probe-\d+\.jsonl$/.test(f))
    .map((f) => readFileSync(join(runDir, f), 'utf8'));
}

export interface ProbeRunOptions {
  /** The command and its arguments, run unchanged. */
  cmd: string[];
  /** An existing directory: probe.jsonl, the probes' fallback files, traces and snapshots land there. */
  runDir: string;
  /** Probe settings added to the environment (GPUWISE_MAX_STEPS, GPUWISE_PROFILE_STEPS, ...). */
  env?: Record<string, string>;
  /** Where the command's stdout and stderr go: inherited (default), or these files (created, never overwritten). */
  output?: { stdoutPath: string; stderrPath: string };
  /** Sample the GPUs once a second with the telemetry sampler (default true). */
  sampleGpus?: boolean;
  /** Each record as it arrives on the socket (records written to fallback files are read only at the end). */
  onRecord?: (r: ProbeRecord) => void;
}

export interface ProbeRunResult {
  exit: ChildExit;
  /** The signal forwarded to the command's process group (SIGINT/SIGTERM received by gpuwise). */
  forwardedSignal: string | null;
  /** Why gpuwise ended the command itself (`stop()`), null when it ended on its own or by a forwarded signal. */
  stoppedBy: string | null;
  records: ProbeRecord[];
  skippedLines: number;
  gpuSamples: Snapshot[] | null;
  gpuUnavailableReason: string | null;
  startedAtMs: number;
  endedAtMs: number;
}

/** A started command; `done` resolves once it, its process group and the collector have ended. */
export interface ProbeRun {
  pid: number;
  done: Promise<ProbeRunResult>;
  /** Ends the command's whole process group (SIGTERM, then SIGKILL after `graceMs`); the first reason is kept. */
  stop(reason: string, graceMs?: number): void;
}

/**
 * Starts `cmd` with the probe on PYTHONPATH and the collector listening. Throws InputError when the command
 * cannot be started (nothing is left running; the caller owns the run directory).
 */
export async function startProbeRun(opts: ProbeRunOptions): Promise<ProbeRun> {
  const { cmd, runDir } = opts;
  const startedAtMs = Date.now();
  const probeDir = probeRoot();
  const socketPath = join(tmpdir(), `gpuwise-${process.pid}-${Math.random().toString(36).slice(2, 8)}.sock`);
  const onRecord = opts.onRecord;
  const collector = new Collector(
    socketPath,
    join(runDir, 'probe.jsonl'),
    onRecord
      ? (complete) => {
          for (const r of parseProbeLines(complete).records) onRecord(r);
        }
      : undefined,
  );
  await collector.listen();

  const env: NodeJS.ProcessEnv = {
    ...process.env,
    // Only the boot folder: it loads the probe under a private name, so a `gpuwise` module of the user's still wins.
    PYTHONPATH: [join(probeDir, 'gpuwise', 'boot'), process.env.PYTHONPATH].filter((p) => p).join(delimiter),
    GPUWISE_SOCKET: socketPath,
    GPUWISE_RUN_DIR: runDir,
    ...opts.env,
  };

  const gpu: GpuSampling = opts.sampleGpus === false ? { reason: 'not sampled' } : await startGpuSampling();
  let child: ChildProcess;
  const fds: number[] = [];
  try {
    let stdio: 'inherit' | ['ignore', number, number] = 'inherit';
    if (opts.output) {
      fds.push(openSync(opts.output.stdoutPath, 'wx'), openSync(opts.output.stderrPath, 'wx'));
      stdio = ['ignore', fds[0] as number, fds[1] as number];
    }
    child = await startChild(cmd, env, stdio);
  } catch (e) {
    if ('stop' in gpu) await gpu.stop();
    await collector.close(0);
    throw e;
  } finally {
    for (const fd of fds) closeSync(fd); // the child holds its own copies
  }
  const pgid = child.pid as number;

  let forwardedSignal: string | null = null;
  let stoppedBy: string | null = null;
  let forwards = 0;
  let killTimer: NodeJS.Timeout | null = null;
  const forward = (sig: NodeJS.Signals) => {
    forwardedSignal = sig;
    forwards++;
    // A third Ctrl-C means it: kill the job.
    killGroup(pgid, forwards >= 3 ? 'SIGKILL' : sig);
  };
  const onInt = () => forward('SIGINT');
  const onTerm = () => forward('SIGTERM');
  // gpuwise itself is going away (a bug, a kill): leave no orphan behind.
  const onExit = () => killGroup(pgid, 'SIGKILL');
  process.on('SIGINT', onInt).on('SIGTERM', onTerm).on('exit', onExit);

  const exited = new Promise<ChildExit>((ok) => {
    child.once('exit', (code, signal) => {
      const signo = signal ? (osConstants.signals[signal] ?? 0) : 0;
      ok({ code: code ?? 128 + signo, signal });
    });
  });

  const done = (async (): Promise<ProbeRunResult> => {
    const exit = await exited;
    if (killTimer) clearTimeout(killTimer);
    await reapGroup(pgid);
    process.off('SIGINT', onInt).off('SIGTERM', onTerm).off('exit', onExit);
    if ('stop' in gpu) await gpu.stop();
    await collector.close(1000);
    const endedAtMs = Date.now();
    const parsed = parseProbeLines([...collector.lines, ...readFallbackRecords(runDir)].join(''));
    return {
      exit,
      forwardedSignal,
      stoppedBy,
      records: parsed.records,
      skippedLines: parsed.skippedLines,
      gpuSamples: 'samples' in gpu ? gpu.samples : null,
      gpuUnavailableReason: 'reason' in gpu ? gpu.reason : null,
      startedAtMs,
      endedAtMs,
    };
  })();

  return {
    pid: pgid,
    done,
    stop(reason: string, graceMs = 3000) {
      if (stoppedBy !== null) return;
      stoppedBy = reason;
      killGroup(pgid, 'SIGTERM');
      killTimer = setTimeout(() => killGroup(pgid, 'SIGKILL'), graceMs);
      killTimer.unref();
    },
  };
}
