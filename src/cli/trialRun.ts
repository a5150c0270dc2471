/**
 * One trial of a command with the probe (shell, shared by `tune` and `tune --plan`): its stdout and stderr kept in
 * files and watched for out-of-memory messages (any rank out of memory ends the whole trial), a timeout, and the
 * trial's summary (tune/trial.ts) with its records.
 */
import { closeSync, mkdirSync, openSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import type { ProbeRecord } from '../run/records.js';
import { OOM_TEXT, summarizeTrial, type TrialSummary } from '../tune/trial.js';
import { removeSpentBeacons } from '../io/beacons.js';
import { type ProbeRun, startProbeRun } from './probeRun.js';

const STDERR_TAIL_LINES = 15;

/** Reads what a file gained since the last call (the trial's stderr, as it is written). */
class FileTail {
  private offset = 0;
  private text = '';
  /** UTF-8 split across reads stays whole. */
  private readonly decoder = new StringDecoder('utf8');
  constructor(private readonly path: string) {}
  /**
   * Reads what the file gained; each chunk goes to `sink` (--show-output) and only the last 16 KB are kept: a trial
   * that prints 300 MB at once must not be held in memory (it was: 710 MB).
   */
  read(sink?: (text: string) => void): boolean {
    let fd: number;
    try {
      fd = openSync(this.path, 'r');
    } catch {
      return false;
    }
    const buf = Buffer.alloc(1 << 16);
    let any = false;
    try {
      for (;;) {
        const n = readSync(fd, buf, 0, buf.length, this.offset);
        if (n <= 0) break;
        this.offset += n;
        any = true;
        const got = this.decoder.write(buf.subarray(0, n));
        sink?.(got);
        // Keep the end only: enough for the last lines and a message split across reads.
        this.text = (this.text + got).slice(-16384);
      }
    } finally {
      closeSync(fd);
    }
    return any;
  }
  lastLines(n: number): string[] {
    return this.text
      .split('\n')
      .filter((l) => l.trim() !== '')
      .slice(-n);
  }
  matches(re: RegExp): boolean {
    return re.test(this.text);
  }
}

export interface TrialRun {
  summary: TrialSummary;
  stderrTail: string[];
  /** The probe's records (a bounded sample of the step records: tune's trials are short). */
  records: ProbeRecord[];
  /** Wall time of the trial, start to end, ms. */
  wallMs: number;
}

/** One trial of CMD with the probe (shared with `tune --plan`): `env` adds probe settings, `commandEnv` the command's variables. */
export async function runTrial(opts: {
  cmd: string[];
  dir: string;
  value: number;
  steps: number;
  timeoutS: number | undefined;
  showOutput: boolean;
  env?: Record<string, string>;
  commandEnv?: Record<string, string>;
}): Promise<TrialRun> {
  mkdirSync(opts.dir, { recursive: true });
  const stdoutPath = join(opts.dir, 'stdout.log');
  const stderrPath = join(opts.dir, 'stderr.log');
  const out = new FileTail(stdoutPath);
  const err = new FileTail(stderrPath);
  let run: ProbeRun | null = null;
  let oomSeen = false;
  const stopForOom = () => {
    oomSeen = true;
    run?.stop('oom');
  };
  run = await startProbeRun({
    cmd: opts.cmd,
    runDir: opts.dir,
    // Short trials, no profiler window: only the steps' memory and time are needed.
    env: { GPUWISE_MAX_STEPS: String(opts.steps), GPUWISE_PROFILE_STEPS: '0', ...opts.env },
    commandEnv: opts.commandEnv,
    output: { stdoutPath, stderrPath },
    // Any rank out of memory ends the whole trial, so no other rank waits forever in a collective.
    onRecord: (r) => {
      if (r.type === 'exception' && r.outOfMemory) stopForOom();
    },
  });
  const started = run;
  if (oomSeen) started.stop('oom'); // seen before the handle existed
  let timedOut = false;
  const timer = opts.timeoutS
    ? setTimeout(() => {
        timedOut = true;
        started.stop('timeout');
      }, opts.timeoutS * 1000)
    : null;
  const poll = () => {
    const echo = opts.showOutput ? (t: string) => process.stderr.write(t) : undefined;
    out.read(echo);
    const e = err.read(echo);
    if (!oomSeen && e && err.matches(OOM_TEXT)) stopForOom();
  };
  const poller = setInterval(poll, 200);
  const res = await started.done;
  clearInterval(poller);
  if (timer) clearTimeout(timer);
  poll();
  const stderrTail = err.lastLines(STDERR_TAIL_LINES);
  // The step counters of the processes that ended are spent, as doctor's are; a killed process's stays (io/beacons.ts).
  removeSpentBeacons(opts.dir, res.records);
  const summary = summarizeTrial({
    value: opts.value,
    records: res.records,
    exit: res.exit,
    forwardedSignal: res.forwardedSignal,
    stoppedBy: oomSeen ? 'oom' : timedOut ? 'timeout' : null,
    stderrOom: err.matches(OOM_TEXT),
    stderrTail,
    gpuSamples: res.gpuSamples,
  });
  return { summary, stderrTail, records: res.records, wallMs: res.endedAtMs - res.startedAtMs };
}
