/**
 * `gpuwise record --interval 100ms --out FILE.sqlite [--duration D] [-- CMD ...]`: samples into a
 * SQLite file until Ctrl-C, the duration, or the end of CMD (whose exit status it then returns).
 * Each sample is committed on its own, so a kill -9 loses at most the sample being written.
 */
import { spawn } from 'node:child_process';
import { RecordWriter } from '../io/recordStore.js';
import { VERSION } from '../util/version.js';
import { parseDurationMs, parseIntervalMs, splitCommand } from './telemetryArgs.js';
import { NO_GPU_HINTS, openLive } from './telemetryLive.js';
import { parseFlags, UsageError } from './usage.js';

const HELP = `gpuwise record: record GPU and process samples into a SQLite file (WAL mode).

Usage: gpuwise record --out FILE.sqlite [--interval 100ms] [--duration D] [-- CMD ARGS...]

  --out FILE       the recording to create (never overwritten)
  --interval D     time between samples (default 1s; 10ms .. 1h)
  --duration D     stop after this long (default: until Ctrl-C, or until CMD ends)
  -- CMD ARGS...    run CMD and record for its lifetime; exit with its status
Read it back with: gpuwise smi --replay FILE.sqlite [--json]
`;

export async function run(argv: string[]): Promise<number> {
  const { own, command } = splitCommand(argv);
  const { values, positionals } = parseFlags({
    args: own,
    allowPositionals: true,
    options: {
      out: { type: 'string', short: 'o' },
      interval: { type: 'string' },
      duration: { type: 'string' },
      quiet: { type: 'boolean', short: 'q', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}' (put the command after --)`);
  if (!values.out) throw new UsageError('--out FILE.sqlite is required');
  const intervalMs = parseIntervalMs(values.interval, '--interval', 1000, 10, 3_600_000);
  const durationMs = values.duration === undefined ? null : parseDurationMs(values.duration, '--duration');
  const sampler = await openLive({ hint: NO_GPU_HINTS.record });
  let writer: RecordWriter;
  try {
    writer = new RecordWriter(values.out, {
      gpuwiseVersion: VERSION,
      intervalMs: String(intervalMs),
      startedMs: String(Date.now()),
      source: sampler.source.kind,
      command: command.join(' '),
    });
  } catch (e) {
    sampler.close();
    throw e;
  }
  let stopping = false;
  let exitCode = 0;
  const done = new Promise<void>((resolve) => {
    const stop = () => {
      stopping = true;
      resolve();
    };
    process.once('SIGINT', stop).once('SIGTERM', stop);
    if (durationMs !== null) setTimeout(stop, durationMs).unref();
    if (command.length > 0) {
      const [bin, ...args] = command as [string, ...string[]];
      const child = spawn(bin, args, { stdio: 'inherit' });
      // Ctrl-C reaches the child through the terminal; record stops when the child ends. SIGTERM is passed on.
      process.removeAllListeners('SIGINT').removeAllListeners('SIGTERM');
      process.on('SIGINT', () => undefined).once('SIGTERM', () => child.kill('SIGTERM'));
      child.on('error', (e) => {
        process.stderr.write(`gpuwise record: cannot run ${bin}: ${e.message}\n`);
        exitCode = 127;
        stop();
      });
      child.on('exit', (code, signal) => {
        exitCode = code ?? (signal === 'SIGINT' ? 130 : 1);
        stop();
      });
    }
  });
  const tick = async () => {
    const start = Date.now();
    try {
      writer.write(await sampler.sample());
    } catch (e) {
      process.stderr.write(`gpuwise record: sample not written: ${(e as Error).message}\n`);
    }
    return Math.max(0, intervalMs - (Date.now() - start));
  };
  try {
    while (!stopping) {
      const wait = await tick();
      if (stopping) break;
      await Promise.race([new Promise((r) => setTimeout(r, wait)), done]);
    }
  } finally {
    writer.close(); // checkpoint, release the lock, remove FILE.recorder
    sampler.close();
  }
  if (!values.quiet) process.stderr.write(`gpuwise record: ${writer.samplesWritten} samples in ${values.out}\n`);
  return exitCode;
}
