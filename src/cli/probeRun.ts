/**
 * Runs one command with gpuwise's Python probe (shell, shared by `doctor` and `tune`): the run directory,
 * the Unix-socket collector, the child in its own process group (signals forwarded, stragglers reaped),
 * the records the probes wrote to files when no collector listened, and optional GPU sampling
 * (live/sampler.ts).
 */
import { closeSync, existsSync, mkdirSync, openSync, readSync, readdirSync, rmSync, writeSync } from 'node:fs';
import { type Server, type Socket, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ChildExit } from '../run/exit.js';
import { DEFAULT_RECORD_LIMITS, RecordSample } from '../doctor/recordSample.js';
import { type ProbeRecord, parseProbeLines } from '../run/records.js';
import { InputError } from '../io/inputError.js';
import { CommandTree } from '../io/commandTree.js';
import { type ChildStdio, SpawnError, type StartedChild, startInNewSession } from '../io/nativeSpawn.js';
import { type RunRegistry, openRunRegistry } from '../io/runRegistry.js';
import { hasSiteHook, likelyPython } from '../io/siteHook.js';
import { type AttachRoute, type CommandProcess, type PythonpathTokens, bootTokens, withBootEntry } from '../run/attach.js';
import type { Snapshot } from '../telemetry/sample.js';
import { sleep } from '../io/sleep.js';

/** The folder holding `gpuwise/` (the probe package): next to dist/ in a package, or the repo's python/. */
export function probeRoot(): string {
  if (process.env.GPUWISE_PROBE_DIR) return resolve(process.env.GPUWISE_PROBE_DIR);
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const cand = join(dir, 'python');
    if (existsSync(join(cand, 'gpuwise', 'probe', '__init__.py'))) return cand;
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
    try {
      mkdirSync(dir, { recursive: true });
    } catch (e) {
      throw new InputError(out, `cannot be created (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
    }
    return { runDir: dir, created: true };
  }
  // ./gpuwise-runs, else (a read-only or full current directory) the temporary directory, else /tmp: a place
  // for gpuwise's records must never be the reason the training does not start.
  let firstProblem: string | null = null;
  for (const parent of [resolve('gpuwise-runs'), join(tmpdir(), 'gpuwise-runs'), '/tmp/gpuwise-runs']) {
    const base = join(parent, `${prefix}${stamp(now)}`);
    let dir = base;
    try {
      for (let i = 2; existsSync(dir); i++) dir = `${base}-${i}`;
      mkdirSync(dir, { recursive: true });
    } catch (e) {
      firstProblem ??= `${parent} cannot be created (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`;
      continue;
    }
    if (firstProblem !== null) process.stderr.write(`gpuwise: warning: ${firstProblem}; this run's directory is ${dir}\n`);
    return { runDir: dir, created: true };
  }
  throw new InputError('gpuwise-runs', `no run directory could be created (${firstProblem}); give one with --out`);
}

/** The longest probe record read (a model record with a large config is well under 1 MB); longer lines are skipped. */
export const MAX_RECORD_BYTES = 8 << 20;

/**
 * Cuts a byte stream into lines without ever holding more than `maxLineBytes` of one: a line past the limit
 * (a probe gone wrong, or anything else writing to the socket) is counted and skipped up to its newline.
 */
export class LineCutter {
  private parts: Buffer[] = [];
  private partsBytes = 0;
  private skipping = false;
  /** Lines longer than the limit. */
  oversized = 0;

  constructor(
    private readonly onLine: (line: Buffer) => void,
    private readonly maxLineBytes = MAX_RECORD_BYTES,
  ) {}

  push(chunk: Buffer): void {
    let from = 0;
    for (;;) {
      const nl = chunk.indexOf(10, from);
      if (nl < 0) {
        this.hold(chunk.subarray(from));
        return;
      }
      this.hold(chunk.subarray(from, nl + 1));
      if (!this.skipping) this.onLine(this.parts.length === 1 ? (this.parts[0] as Buffer) : Buffer.concat(this.parts, this.partsBytes));
      this.skipping = false;
      this.parts = [];
      this.partsBytes = 0;
      from = nl + 1;
    }
  }

  /** The last line of a stream that did not end with a newline (a process killed mid-write). */
  end(): void {
    if (!this.skipping && this.partsBytes > 0) this.onLine(Buffer.concat([...this.parts, Buffer.from('\n')]));
    this.parts = [];
    this.partsBytes = 0;
    this.skipping = false;
  }

  private hold(b: Buffer): void {
    if (this.skipping || b.length === 0) return;
    if (this.partsBytes + b.length > this.maxLineBytes) {
      this.oversized++;
      this.skipping = true;
      this.parts = [];
      this.partsBytes = 0;
      return;
    }
    // A copy: the socket may reuse its buffers.
    this.parts.push(Buffer.from(b));
    this.partsBytes += b.length;
  }
}

/** What the collector could not keep, in words for the report's notes. */
function fsProblem(e: unknown): string {
  const err = e as NodeJS.ErrnoException;
  return err.code ? `${err.code}: ${err.message.replace(/^\w+: /, '')}` : String((e as Error)?.message ?? e);
}

/**
 * Collects JSON lines from every probe connection: each line is appended to probe.jsonl as it arrives (no
 * buffering beyond the line being read) and added to a bounded in-memory sample (doctor/recordSample.ts).
 * Nothing here may stop the training: a failed write (the run directory removed, a full disk) is noted, the
 * file is given up and collecting goes on in memory.
 */
class Collector {
  readonly sample = new RecordSample();
  skippedLines = 0;
  private oversized = 0;
  private readonly problems: string[] = [];
  private logFd: number | null = null;
  private logBytes = 0;
  private readonly conns = new Set<Socket>();
  private readonly server: Server;
  /** When each probe's connection closed (Unix ms, by pid): its process ended, end record or not. */
  readonly disconnectedAtMs: Record<number, number> = {};
  private closing = false;

  constructor(
    logPath: string,
    private readonly onRecord?: (r: ProbeRecord) => void,
    private readonly onGone?: (pid: number) => void,
  ) {
    try {
      this.logFd = openSync(logPath, 'a');
    } catch (e) {
      this.problems.push(`probe.jsonl could not be created (${fsProblem(e)}): the records were kept in memory only`);
    }
    this.server = createServer((c) => {
      this.conns.add(c);
      const pids = new Set<number>();
      // The probe writes records in batches: the complete lines of each chunk are written and parsed together.
      const lines: Buffer[] = [];
      const takeLines = () => {
        if (lines.length === 0) return;
        this.take(lines.length === 1 ? (lines[0] as Buffer) : Buffer.concat(lines), true, pids);
        lines.length = 0;
      };
      const cutter = new LineCutter((line) => lines.push(line));
      // When the process's end reached the socket, taken first thing at the EOF (sub-millisecond): two ranks that end
      // a few ms apart are ordered by it, not by how long their last records took to write out afterwards.
      let eofAtMs: number | null = null;
      c.on('data', (chunk: Buffer) => {
        cutter.push(chunk);
        takeLines();
      });
      c.on('end', () => {
        eofAtMs ??= performance.timeOrigin + performance.now();
      });
      c.on('close', () => {
        cutter.end();
        takeLines();
        this.oversized += cutter.oversized;
        this.conns.delete(c);
        // Only a close while collecting: connections doctor itself ends at the close are not a process ending.
        if (!this.closing)
          for (const pid of pids) {
            this.disconnectedAtMs[pid] ??= eofAtMs ?? Date.now();
            try {
              this.onGone?.(pid);
            } catch {
              // a caller's callback must not stop the collection
            }
          }
      });
      c.on('error', () => undefined);
    });
  }

  /** Complete lines (each with its newline): parsed and kept in the sample; when `log` (they came from the socket), also written to probe.jsonl and passed to `onRecord`. */
  take(line: Buffer, log: boolean, pids?: Set<number>): void {
    if (log && this.logFd !== null) {
      try {
        let off = 0;
        while (off < line.length) off += writeSync(this.logFd, line, off, line.length - off);
        this.logBytes += line.length;
      } catch (e) {
        this.problems.push(`probe.jsonl stopped after ${this.logBytes} bytes (${fsProblem(e)}): later records were kept in memory only`);
        try {
          closeSync(this.logFd);
        } catch {
          // already unusable
        }
        this.logFd = null;
      }
    }
    const parsed = parseProbeLines(line.toString('utf8'));
    this.skippedLines += parsed.skippedLines;
    for (const r of parsed.records) {
      pids?.add(r.pid);
      this.sample.add(r);
      try {
        if (log) this.onRecord?.(r);
      } catch {
        // a caller's callback must not stop the collection
      }
    }
  }

  /** Reads the probes' fallback files (records written while no collector listened) through the same limits. */
  readFallbackFiles(runDir: string): void {
    let names: string[];
    try {
      names = readdirSync(runDir).filter((f) => /^probe-\d+\.jsonl$/.test(f));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') this.problems.push(`${runDir} could not be read (${fsProblem(e)})`);
      else this.problems.push(`the run directory ${runDir} was removed during the run: only the records sent to doctor were kept`);
      return;
    }
    const buf = Buffer.alloc(1 << 20);
    for (const name of names) {
      const cutter = new LineCutter((line) => this.take(line, false));
      let fd: number;
      try {
        fd = openSync(join(runDir, name), 'r');
      } catch (e) {
        this.problems.push(`${name} could not be read (${fsProblem(e)})`);
        continue;
      }
      try {
        for (;;) {
          const n = readSync(fd, buf, 0, buf.length, null);
          if (n <= 0) break;
          cutter.push(buf.subarray(0, n));
        }
        cutter.end();
      } catch (e) {
        this.problems.push(`${name} could not be read to its end (${fsProblem(e)})`);
      } finally {
        closeSync(fd);
      }
      this.oversized += cutter.oversized;
    }
  }

  /** What could not be kept, for the report's notes. */
  notes(): string[] {
    const out = [...this.problems];
    if (this.oversized > 0) out.push(`${this.oversized} probe line(s) longer than ${MAX_RECORD_BYTES >> 20} MB were skipped`);
    if (this.sample.droppedOther > 0)
      out.push(
        `${this.sample.droppedOther} probe record(s) past the first ${DEFAULT_RECORD_LIMITS.otherRecords} non-step records were not kept`,
      );
    return out;
  }

  listen(socketPath: string): Promise<void> {
    return new Promise((ok, fail) => {
      const onError = (e: Error) => fail(e);
      this.server.once('error', onError);
      this.server.listen(socketPath, () => {
        this.server.off('error', onError);
        this.server.on('error', () => undefined);
        ok();
      });
    });
  }

  /** Waits (at most `graceMs`) for the probes' connections to end, then closes (and removes `socketPath`). */
  async close(graceMs: number, socketPath: string | null): Promise<void> {
    const until = Date.now() + graceMs;
    while (this.conns.size > 0 && Date.now() < until) await sleep(20);
    this.closing = true;
    for (const c of this.conns) c.destroy();
    if (this.server.listening) await new Promise<void>((ok) => this.server.close(() => ok()));
    if (socketPath) rmSync(socketPath, { force: true });
    if (this.logFd !== null) {
      try {
        closeSync(this.logFd);
      } catch (e) {
        this.problems.push(`probe.jsonl could not be closed (${fsProblem(e)})`);
      }
      this.logFd = null;
    }
  }
}

/**
 * Where the collector listens: a Unix socket in the temporary directory, else /tmp, else the run directory
 * (an unusable TMPDIR must not stop the run); null when none works, and the probes write their records to
 * files in the run directory instead.
 */
async function listenSomewhere(collector: Collector, runDir: string): Promise<string | null> {
  const name = `gpuwise-${process.pid}-${Math.random().toString(36).slice(2, 8)}.sock`;
  const dirs: string[] = [];
  for (const d of [tmpdir(), '/tmp', runDir]) if (!dirs.includes(d)) dirs.push(d);
  for (const d of dirs) {
    const path = join(d, name);
    if (Buffer.byteLength(path) > 100) continue; // sun_path holds 108 bytes
    try {
      await collector.listen(path);
      return path;
    } catch {
      // next place
    }
  }
  return null;
}


type GpuSampling = { samples: Snapshot[]; stop: () => Promise<void> } | { reason: string };

/** Samples every GPU once a second while the command runs; a reason when there is none. */
async function startGpuSampling(): Promise<GpuSampling> {
  try {
    const { openLiveSource, LiveSampler } = await import('../live/sampler.js');
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

/** Starts the command in its own session (io/nativeSpawn.ts: how it ended is read from the kernel, real-time signals included). */
async function startChild(cmd: string[], env: NodeJS.ProcessEnv, stdio: ChildStdio): Promise<StartedChild> {
  try {
    // Own process group: signals are forwarded to the whole job (launchers, ranks, workers) and
    // stragglers can be cleaned up after the main process ends.
    return await startInNewSession(cmd, env, stdio);
  } catch (e) {
    if (!(e instanceof SpawnError)) throw e;
    const problem = e.code === 'ENOENT' ? 'command not found' : e.code === 'EACCES' ? 'permission denied (not executable)' : e.message;
    throw new InputError(cmd[0] as string, problem);
  }
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

export interface ProbeRunOptions {
  /** The command and its arguments, run unchanged. */
  cmd: string[];
  /** An existing directory: probe.jsonl, the probes' fallback files, traces and snapshots land there. */
  runDir: string;
  /** Probe settings added to the environment (GPUWISE_MAX_STEPS, GPUWISE_PROFILE_STEPS, ...). */
  env?: Record<string, string>;
  /** Variables for the command itself, which its script sees (tune --plan's GPUWISE_TRIAL=1); not the probe's settings. */
  commandEnv?: Record<string, string>;
  /**
   * Where the command's stdout and stderr go: inherited (default); `stderr`: both to gpuwise's stderr (so that
   * gpuwise's stdout holds only its report: `doctor --json | jq`); or these files (created, never overwritten).
   */
  output?: { stdoutPath: string; stderrPath: string } | 'stderr';
  /** Sample the GPUs once a second with the telemetry sampler (default true). */
  sampleGpus?: boolean;
  /** Each record as it arrives on the socket (records written to fallback files are read only at the end). */
  onRecord?: (r: ProbeRecord) => void;
  /** A probe's connection closed while the command runs: that process ended. */
  onProcessGone?: (pid: number) => void;
}

export interface ProbeRunResult {
  exit: ChildExit;
  /** The signal forwarded to the command's process group (SIGINT, SIGTERM, SIGHUP or SIGQUIT received by gpuwise). */
  forwardedSignal: string | null;
  /** Why gpuwise ended the command itself (`stop()`), null when it ended on its own or by a forwarded signal. */
  stoppedBy: string | null;
  /** Every non-step record and a bounded sample of each process's step records (doctor/recordSample.ts). */
  records: ProbeRecord[];
  /** Step records received per process id, all of them (`records` may hold a sample). */
  stepRecordsByPid: Record<number, number>;
  skippedLines: number;
  /** What the collector could not keep (a failed write to the run directory, oversized lines), for the report. */
  notes: string[];
  /** When each probe's connection closed during the run (Unix ms, by pid): the process ended. */
  disconnectedAtMs: Record<number, number>;
  /** When gpuwise stopped the command itself (`stop()`), Unix ms; null when it did not. */
  stoppedAtMs: number | null;
  /** How the probe reached the command's processes, and the processes /proc showed (run/attach.ts). */
  attach: { route: AttachRoute; tokens: PythonpathTokens | null; processes: CommandProcess[] };
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

/** How often the command's processes are looked at in /proc (io/commandTree.ts): a full scan costs a few ms. */
const TREE_SCAN_MS = 500;

interface Attach {
  /** The command's environment: the user's, with the boot folder on PYTHONPATH on the `path` route only. */
  env: NodeJS.ProcessEnv;
  route: AttachRoute;
  tokens: PythonpathTokens | null;
  registry: RunRegistry | null;
  /** Why the registry could not be used (the probe's settings then travel in the environment), for the notes. */
  problem: string | null;
}

/**
 * How the probe reaches the command (run/attach.ts): the run's entry in doctor's registry, and the boot folder on
 * PYTHONPATH unless the command's Python has the site hook. GPUWISE_ATTACH=site|path forces the route. Where the
 * registry cannot be used, the settings go into the environment (the probe's direct interface), as before it existed.
 */
function attachTo(cmd: readonly string[], probeDir: string, settings: Record<string, string>): Attach {
  const bootDir = join(probeDir, 'gpuwise', 'boot');
  const forced = process.env.GPUWISE_ATTACH;
  const python = likelyPython(cmd, process.env.PATH);
  const route: AttachRoute = forced === 'site' || forced === 'path' ? forced : python !== null && hasSiteHook(python) ? 'site' : 'path';
  const registry = openRunRegistry();
  if ('problem' in registry) {
    const env: NodeJS.ProcessEnv = { ...withoutDoctorControls(process.env), ...settings };
    env.PYTHONPATH = [bootDir, process.env.PYTHONPATH].filter((p) => p).join(delimiter);
    if (process.env.PYTHONPATH !== undefined) env.GPUWISE_USER_PYTHONPATH = process.env.PYTHONPATH;
    return {
      env,
      route: 'path',
      tokens: null,
      registry: null,
      problem: `doctor's run registry could not be used (${registry.problem}): the probe's settings went into the command's environment`,
    };
  }
  const tokens = route === 'path' ? bootTokens(bootDir) : null;
  const env = withoutDoctorControls(process.env);
  if (tokens !== null) env.PYTHONPATH = withBootEntry(process.env.PYTHONPATH, tokens, delimiter);
  registry.register({ probeRoot: probeDir, settings, pythonpathTokens: tokens });
  return { env, route, tokens, registry, problem: null };
}

/** Variables that steer doctor itself (where its probe is, which route): doctor's, not the command's. */
const DOCTOR_CONTROLS = ['GPUWISE_PROBE_DIR', 'GPUWISE_ATTACH'];

function withoutDoctorControls(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out = { ...env };
  for (const name of DOCTOR_CONTROLS) delete out[name];
  return out;
}

/**
 * Starts `cmd` with the probe attached (attachTo) and the collector listening. Throws InputError when the command
 * cannot be started (nothing is left running; the caller owns the run directory).
 */
export async function startProbeRun(opts: ProbeRunOptions): Promise<ProbeRun> {
  const { cmd, runDir } = opts;
  const startedAtMs = Date.now();
  const probeDir = probeRoot();
  const collector = new Collector(join(runDir, 'probe.jsonl'), opts.onRecord, opts.onProcessGone);
  const socketPath = await listenSomewhere(collector, runDir);

  const settings: Record<string, string> = { GPUWISE_RUN_DIR: runDir, ...opts.env };
  if (socketPath) settings.GPUWISE_SOCKET = socketPath;
  const attach = attachTo(opts.cmd, probeDir, settings);

  const gpu: GpuSampling = opts.sampleGpus === false ? { reason: 'not sampled' } : await startGpuSampling();
  // Signals that come while the command starts are held, then passed on once its process group exists: without this,
  // a SIGHUP in that instant (the command already printing) ended gpuwise by Node's default and orphaned the job.
  const held: NodeJS.Signals[] = [];
  const holders = [...FORWARDED, ...PASSED_ON].map((sig) => [sig, () => held.push(sig)] as const);
  for (const [sig, h] of holders) process.on(sig, h);
  const stopHolding = () => {
    for (const [sig, h] of holders) process.off(sig, h);
  };
  let child: StartedChild;
  const fds: number[] = [];
  try {
    let stdio: ChildStdio = 'inherit';
    if (opts.output === 'stderr') stdio = ['inherit', 2, 2];
    else if (opts.output) {
      fds.push(openSync(opts.output.stdoutPath, 'wx'), openSync(opts.output.stderrPath, 'wx'));
      stdio = ['ignore', fds[0] as number, fds[1] as number];
    }
    child = await startChild(cmd, opts.commandEnv ? { ...attach.env, ...opts.commandEnv } : attach.env, stdio);
  } catch (e) {
    stopHolding();
    if ('stop' in gpu) await gpu.stop();
    await collector.close(0, socketPath);
    attach.registry?.close();
    for (const sig of held) process.kill(process.pid, sig); // no command to pass them to: gpuwise takes them as they came
    throw e;
  } finally {
    for (const fd of fds) closeSync(fd); // the child holds its own copies
  }
  const pgid = child.pid;
  const tree = new CommandTree(pgid, hasSiteHook);
  const treeTimer = setInterval(() => tree.scan(), TREE_SCAN_MS);
  treeTimer.unref();

  let forwardedSignal: string | null = null;
  let stoppedBy: string | null = null;
  let stoppedAtMs: number | null = null;
  let killTimer: NodeJS.Timeout | null = null;
  // Each signal is passed on as it came, every time: the job reacts as the plain command would to the terminal's
  // or a scheduler's signals (a script that takes SIGINT or SIGTERM itself, to save a checkpoint, gets each one).
  const forward = (sig: NodeJS.Signals) => {
    forwardedSignal = sig;
    killGroup(pgid, sig);
  };
  // SIGHUP (the SSH session dropped, the terminal closed) and SIGQUIT reach only gpuwise: the child has its own
  // process group. Forwarded like SIGINT/SIGTERM so the training and its DataLoader workers are never orphaned.
  // A terminal's resize and job control reach only gpuwise as well: passed on, without ending the run. Ctrl-Z stops
  // the job with SIGSTOP (a process group outside the terminal's session ignores SIGTSTP), then gpuwise itself.
  const handlers = [
    ...FORWARDED.map((sig) => [sig, () => forward(sig)] as const),
    ...PASSED_ON.map((sig) => [sig, () => killGroup(pgid, sig)] as const),
    [
      'SIGTSTP' as NodeJS.Signals,
      () => {
        killGroup(pgid, 'SIGSTOP');
        process.kill(process.pid, 'SIGSTOP');
      },
    ] as const,
  ];
  // gpuwise itself is going away (a kill, a bug): leave no orphan behind. It also ends the thread-pool wait for the
  // child (io/nativeSpawn.ts), which Node's exit otherwise waits for.
  const onExit = () => {
    killGroup(pgid, 'SIGKILL');
    attach.registry?.close();
  };
  // A bug in gpuwise while the training runs must not end the training: say so once and keep waiting for it.
  let internalError: string | null = null;
  const onUncaught = (e: unknown) => {
    if (internalError !== null) return;
    internalError = (e as Error)?.message ?? String(e);
    try {
      process.stderr.write(`gpuwise: warning: internal error while the command runs (${internalError}); the command goes on\n`);
    } catch {
      // stderr is gone (a closed terminal)
    }
  };
  // Writes to a terminal that went away (SIGHUP) fail with EIO/EPIPE: never a reason to stop.
  const onStdioError = () => undefined;
  for (const [sig, h] of handlers) process.on(sig, h);
  stopHolding();
  for (const sig of held) handlers.find(([s]) => s === sig)?.[1]();
  process.on('exit', onExit).on('uncaughtException', onUncaught);
  process.stdout.on('error', onStdioError);
  process.stderr.on('error', onStdioError);

  const done = (async (): Promise<ProbeRunResult> => {
    const exit = await child.exited;
    clearInterval(treeTimer);
    if (killTimer) clearTimeout(killTimer);
    await reapGroup(pgid);
    for (const [sig, h] of handlers) process.off(sig, h);
    process.off('exit', onExit).off('uncaughtException', onUncaught);
    if ('stop' in gpu) await gpu.stop();
    await collector.close(1000, socketPath);
    collector.readFallbackFiles(runDir);
    const processes = tree.processes(attach.registry?.probedPids() ?? new Set());
    attach.registry?.close();
    const endedAtMs = Date.now();
    const notes = collector.notes();
    if (attach.problem !== null) notes.push(attach.problem);
    if (socketPath === null)
      notes.push(
        "no Unix socket could be opened for the probes (TMPDIR, /tmp and the run directory refused it): records came from the probes' files",
      );
    if (internalError !== null)
      notes.push(`gpuwise hit an internal error during the run (${internalError}); the figures may be incomplete`);
    if (collector.sample.sampled())
      notes.push(
        'step statistics are taken over a sample of the steps (the first and last 2000 and an even spread between); probe.jsonl in the run directory holds every record',
      );
    return {
      exit,
      forwardedSignal,
      stoppedBy,
      records: collector.sample.records(),
      stepRecordsByPid: collector.sample.stepCounts(),
      skippedLines: collector.skippedLines,
      notes,
      disconnectedAtMs: { ...collector.disconnectedAtMs },
      stoppedAtMs,
      attach: { route: attach.route, tokens: attach.tokens, processes },
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
      stoppedAtMs = Date.now();
      killGroup(pgid, 'SIGTERM');
      killTimer = setTimeout(() => killGroup(pgid, 'SIGKILL'), graceMs);
      killTimer.unref();
    },
  };
}

/** The signals gpuwise passes on to the command's process group, each one that comes: the run was interrupted. */
export const FORWARDED: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'];
/** Passed on too, without ending the run: a terminal resize, the continuation after Ctrl-Z (`fg`). */
export const PASSED_ON: NodeJS.Signals[] = ['SIGWINCH', 'SIGCONT'];
