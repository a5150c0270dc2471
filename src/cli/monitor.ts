/**
 * `gpuwise monitor`: the live terminal view (alternate screen, redrawn in place, resize-safe) or, with
 * `--json-stream`, one JSON snapshot per line (NDJSON) on stdout.
 */
import { readRecording } from '../io/recordStore.js';
import { History, onlyGpus, renderMonitor, renderNoGpu, SORT_KEYS, type SortKey } from '../telemetry/monitorView.js';
import { type Snapshot, snapshotJson } from '../telemetry/sample.js';
import { LiveSampler, NoGpu, openLiveSource } from '../live/sampler.js';
import { useColor } from './color.js';
import { NoGpuError } from './noGpuError.js';
import { parseCount, parseIntervalMs } from './telemetryArgs.js';
import { NO_GPU_HINTS, openLive } from './telemetryLive.js';
import { selfCpu } from './selfCpu.js';
import { parseFlags, UsageError } from './usage.js';

const HELP = `gpuwise monitor: live view of the GPUs (utilisation and memory history) and their processes.

Usage: gpuwise monitor [--interval 1s] [--sort KEY] [-o IDX...] [--replay FILE.sqlite] [--json-stream [--count N]]

  --interval D       refresh period, 100ms .. 1s (default 1s); + and - change it while running
  --sort KEY         process order: memory, sm, cpu, pid, gpu (default memory); s cycles it while running
  -o, --only IDX...  only these GPUs (indices as nvidia-smi numbers them: -o 0 2, or -o 0,2)
  --replay FILE      play back a 'gpuwise record' file at its recorded pace (no GPU needed)
  --json-stream      write one JSON snapshot per line (NDJSON) instead of the screen
  --count N          stop after N samples
  --no-color         no colour (also NO_COLOR=1)
Keys: q or Ctrl-C quit, s sort, + faster, - slower, space pause, h or ? help.
Colours by load as nvitop: GPU utilisation green < 10% <= yellow < 75% <= red; memory 10% / 80%.
Without a GPU (no driver): exit 9; --replay works anywhere.
`;

/** Where frames come from: the live GPUs, or a recording played back at its own pace. */
interface Feed {
  next(): Promise<Snapshot>;
  /** Wait before the next frame, ms (null: the refresh interval). */
  delayMs(): number | null;
  replay?: () => { file: string; sample: number; samples: number; offsetMs: number };
  close(): void;
}

/** A recording's snapshots, one per call, paced by their timestamps (gaps cut to 0.05-5 s); the last stays. */
function replayFeed(path: string, only: readonly number[]): Feed {
  const rec = readRecording(path);
  if (rec.snapshots.length === 0) throw new UsageError(`${path}: a recording with no samples`);
  const snaps = rec.snapshots;
  let i = 0;
  const t0 = snaps[0]!.timestampMs ?? 0;
  return {
    next: async () => onlyGpus(snaps[Math.min(i++, snaps.length - 1)]!, only),
    delayMs: () => {
      if (i >= snaps.length) return 1000; // at the end: keep the last frame, still answer keys
      const gap = (snaps[i]!.timestampMs ?? 0) - (snaps[i - 1]!.timestampMs ?? 0);
      return Math.min(5000, Math.max(50, gap));
    },
    replay: () => ({ file: path, sample: Math.min(i, snaps.length), samples: snaps.length, offsetMs: (snaps[Math.min(i, snaps.length) - 1]!.timestampMs ?? 0) - t0 }),
    close: () => undefined,
  };
}

/** -o/--only takes one or more indices: `-o 0 2`, `-o 0,2`, `--only=1`. The integers after it are taken out of argv. */
export function takeOnly(argv: readonly string[]): { argv: string[]; only: number[] } {
  const rest: string[] = [];
  const only: number[] = [];
  const indices = (text: string) => {
    for (const part of text.split(',').filter(Boolean)) {
      if (!/^\d+$/.test(part)) throw new UsageError(`--only: '${part}' is not a GPU index`);
      only.push(Number(part));
    }
  };
  for (let k = 0; k < argv.length; k++) {
    const a = argv[k]!;
    if (a === '--') {
      rest.push(...argv.slice(k));
      break;
    }
    const eq = /^(?:-o|--only)=(.*)$/.exec(a);
    if (eq) indices(eq[1]!);
    else if (a === '-o' || a === '--only') {
      const before = only.length;
      while (k + 1 < argv.length && /^\d+(,\d+)*,?$/.test(argv[k + 1]!)) indices(argv[++k]!);
      if (only.length === before) throw new UsageError(`${a} needs one or more GPU indices (e.g. ${a} 0 1)`);
    } else rest.push(a);
  }
  return { argv: rest, only: [...new Set(only)] };
}

const STEPS_MS = [100, 200, 250, 500, 1000];
const SCREEN_SLOW_INTERVAL_MS = 10_000;

async function jsonStream(intervalMs: number, count: number | null, only: readonly number[], replayPath: string | undefined): Promise<number> {
  if (replayPath !== undefined) {
    // A recording as NDJSON: every sample at once (it is already recorded).
    const rec = readRecording(replayPath);
    const snaps = count === null ? rec.snapshots : rec.snapshots.slice(0, count);
    for (const snap of snaps) if (!process.stdout.write(`${JSON.stringify(snapshotJson(onlyGpus(snap, only)))}\n`)) await new Promise((r) => process.stdout.once('drain', r));
    return 0;
  }
  const sampler = await openLive({ hint: NO_GPU_HINTS.monitor });
  let stop = false;
  const onSig = () => {
    stop = true;
  };
  process.once('SIGINT', onSig).once('SIGTERM', onSig);
  process.stdout.on('error', () => {
    stop = true; // reader went away (| head): end quietly
  });
  let n = 0;
  const self = selfCpu();
  try {
    while (!stop && (count === null || n < count)) {
      const start = Date.now();
      try {
        const s = onlyGpus(await sampler.sample(), only);
        if (!process.stdout.write(`${JSON.stringify(snapshotJson(s))}\n`)) await new Promise((r) => process.stdout.once('drain', r));
      } catch (e) {
        process.stderr.write(`gpuwise monitor: sample failed: ${(e as Error).message}\n`); // the stream goes on
      }
      if (n === 0) self?.mark();
      else self?.sample();
      n++;
      if (count !== null && n >= count) break;
      await new Promise((r) => setTimeout(r, Math.max(0, intervalMs - (Date.now() - start))));
    }
  } finally {
    self?.report('monitor --json-stream');
    sampler.close();
  }
  return 0;
}

async function tui(intervalMsIn: number, sortIn: SortKey, count: number | null, only: readonly number[], color: boolean, replayPath: string | undefined): Promise<number> {
  const out = process.stdout;
  let intervalMs = intervalMsIn;
  let sort = sortIn;
  let help = false;
  let paused = false;
  const history = new History();
  let sampler: LiveSampler | null = null;
  const replay = replayPath === undefined ? null : replayFeed(replayPath, only);
  if (replay === null) {
    // No GPU at all at the start: say so and exit 9 rather than wait on a screen (a GPU that goes away later is retried).
    try {
      sampler = new LiveSampler(await openLiveSource(process.env, { slowIntervalMs: SCREEN_SLOW_INTERVAL_MS }));
    } catch (e) {
      if (e instanceof NoGpu) throw new NoGpuError(`${e.message}. ${NO_GPU_HINTS.monitor}`);
      throw e;
    }
  }
  let noGpu: string | null = null;
  let last: Awaited<ReturnType<LiveSampler['sample']>> | null = null;
  let sampleMs: number | undefined;
  let quit: () => void = () => undefined;
  const finished = new Promise<void>((r) => (quit = r));
  let timer: NodeJS.Timeout | null = null;
  const self = selfCpu();
  let drawn = 0;

  // The frame on screen: only lines that changed are rewritten (most of a frame is the same text).
  let shown: string[] | null = null;
  const draw = () => {
    const cols = out.columns ?? 80;
    const rows = out.rows ?? 24;
    const lines = last
      ? renderMonitor({ snapshot: last, history, sort, intervalMs, cols, rows, sampleMs, color, help, paused, ...(replay?.replay ? { replay: replay.replay() } : {}) })
      : sampler === null
        ? renderNoGpu(noGpu ?? 'starting', cols, rows)
        : renderNoGpu(noGpu ?? '', cols, rows, 'cannot read the GPUs', 'retrying at every refresh');
    if (shown === null || shown.length !== lines.length) out.write(`\x1b[H${lines.join('\r\n')}`);
    else {
      let diff = '';
      for (let r = 0; r < lines.length; r++) if (lines[r] !== shown[r]) diff += `\x1b[${r + 1};1H${lines[r]}`;
      if (diff) out.write(diff);
    }
    shown = lines;
  };
  const step = async () => {
    const t0 = performance.now();
    try {
      if (paused) {
        // Paused: keep the frame, look again later.
      } else if (replay !== null) {
        last = await replay.next();
        history.push(last);
      } else {
        // The screen shows neither PCIe throughput nor HBM temperature: their ~0.5 ms call per GPU every 10 s, not every second.
        if (sampler === null) sampler = new LiveSampler(await openLiveSource(process.env, { slowIntervalMs: SCREEN_SLOW_INTERVAL_MS }));
        last = onlyGpus(await sampler.sample(), only);
        sampleMs = performance.now() - t0;
        history.push(last);
      }
      noGpu = null;
    } catch (e) {
      // No GPU yet, or a sample that failed (nvidia-smi died, driver reloading): show why and retry.
      noGpu = e instanceof NoGpu ? e.message : `sampling failed: ${(e as Error).message}`;
      last = null;
    }
    draw();
    if (drawn++ === 0) self?.mark();
    else self?.sample();
    if (count !== null && --count <= 0) return quit();
    timer = setTimeout(() => void step().catch(fail), replay !== null ? (replay.delayMs() ?? intervalMs) : sampler === null ? 5000 : intervalMs);
  };
  let failure: unknown = null;
  const fail = (e: unknown) => {
    failure = e;
    quit();
  };
  const restore = () => {
    out.write('\x1b[?25h\x1b[?1049l');
    if (process.stdin.isTTY) process.stdin.setRawMode(false);
  };
  out.write('\x1b[?1049h\x1b[?25l\x1b[2J');
  process.on('exit', restore);
  const onResize = () => {
    out.write('\x1b[2J');
    shown = null;
    draw();
  };
  out.on('resize', onResize);
  process.once('SIGTERM', () => quit());
  process.once('SIGINT', () => quit());
  if (process.stdin.isTTY) {
    process.stdin.setRawMode(true);
    process.stdin.resume();
    process.stdin.on('data', (buf: Buffer) => {
      const k = buf.toString();
      if (k === 'q' || k === 'Q' || k === '\x03') quit();
      else if (help) help = false; // any other key closes the help
      else if (k === 'h' || k === '?') help = true;
      else if (k === ' ') paused = !paused;
      else if (k === 's') sort = SORT_KEYS[(SORT_KEYS.indexOf(sort) + 1) % SORT_KEYS.length]!;
      else if (k === '+' || k === '=') intervalMs = STEPS_MS.filter((s) => s < intervalMs).pop() ?? intervalMs;
      else if (k === '-') intervalMs = STEPS_MS.find((s) => s > intervalMs) ?? intervalMs;
      draw();
    });
  }
  await step().catch(fail);
  await finished;
  if (timer) clearTimeout(timer);
  out.off('resize', onResize);
  process.stdin.pause();
  restore();
  process.off('exit', restore);
  self?.report('monitor');
  (sampler as LiveSampler | null)?.close();
  if (failure) throw failure;
  return 0;
}

export async function run(argvIn: string[]): Promise<number> {
  const { argv, only } = takeOnly(argvIn);
  const { values, positionals } = parseFlags({
    args: argv,
    allowPositionals: true,
    options: {
      interval: { type: 'string' },
      sort: { type: 'string', default: 'memory' },
      'json-stream': { type: 'boolean', default: false },
      count: { type: 'string' },
      replay: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'`);
  const sort = values.sort as SortKey;
  if (!SORT_KEYS.includes(sort)) throw new UsageError(`--sort: '${values.sort}' is not one of ${SORT_KEYS.join(', ')}`);
  const count = values.count === undefined ? null : parseCount(values.count, '--count', 1);
  if (values['json-stream']) return jsonStream(parseIntervalMs(values.interval, '--interval', 1000, 10, 3_600_000), count, only, values.replay);
  if (!process.stdout.isTTY) throw new UsageError('the live view needs a terminal; use --json-stream to write samples to a pipe or file');
  return tui(parseIntervalMs(values.interval, '--interval', 1000, 100, 1000), sort, count, only, useColor(values['no-color']), values.replay);
}
