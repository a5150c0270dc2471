/**
 * `gpuwise monitor`: the live terminal view (alternate screen, redrawn in place, resize-safe) or, with
 * `--json-stream`, one JSON snapshot per line (NDJSON) on stdout.
 */
import { History, renderMonitor, renderNoGpu, SORT_KEYS, type SortKey } from '../telemetry/monitorView.js';
import { LiveSampler, NoGpu, openLiveSource } from '../telemetry/sampler.js';
import { parseCount, parseIntervalMs } from './telemetryArgs.js';
import { openLive } from './telemetryLive.js';
import { selfCpu } from './selfCpu.js';
import { parseFlags, UsageError } from './usage.js';

const HELP = `gpuwise monitor: live view of the GPUs (utilisation and memory history) and their processes.

Usage: gpuwise monitor [--interval 1s] [--sort memory|sm|cpu|pid|gpu] [--json-stream [--count N]]

  --interval D     refresh period, 100ms .. 1s (default 1s); + and - change it while running
  --sort KEY       process order (default memory); s cycles it while running
  --json-stream    write one JSON snapshot per line (NDJSON) instead of the screen
  --count N        stop after N samples
Keys: q or Ctrl-C quit, s sort, + faster, - slower.
`;

const STEPS_MS = [100, 200, 250, 500, 1000];
const SCREEN_SLOW_INTERVAL_MS = 10_000;

async function jsonStream(intervalMs: number, count: number | null): Promise<number> {
  const sampler = await openLive();
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
        const s = await sampler.sample();
        if (!process.stdout.write(`${JSON.stringify(s)}\n`)) await new Promise((r) => process.stdout.once('drain', r));
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

async function tui(intervalMsIn: number, sortIn: SortKey, count: number | null): Promise<number> {
  const out = process.stdout;
  let intervalMs = intervalMsIn;
  let sort = sortIn;
  const history = new History();
  let sampler: LiveSampler | null = null;
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
      ? renderMonitor({ snapshot: last, history, sort, intervalMs, cols, rows, sampleMs })
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
      // The screen shows neither PCIe throughput nor HBM temperature: their ~0.5 ms call per GPU every 10 s, not every second.
      if (sampler === null) sampler = new LiveSampler(await openLiveSource(process.env, { slowIntervalMs: SCREEN_SLOW_INTERVAL_MS }));
      last = await sampler.sample();
      sampleMs = performance.now() - t0;
      history.push(last);
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
    timer = setTimeout(() => void step().catch(fail), sampler === null ? 5000 : intervalMs);
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

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags({
    args: argv,
    allowPositionals: true,
    options: {
      interval: { type: 'string' },
      sort: { type: 'string', default: 'memory' },
      'json-stream': { type: 'boolean', default: false },
      count: { type: 'string' },
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
  if (values['json-stream']) return jsonStream(parseIntervalMs(values.interval, '--interval', 1000, 10, 3_600_000), count);
  if (!process.stdout.isTTY) throw new UsageError('the live view needs a terminal; use --json-stream to write samples to a pipe or file');
  return tui(parseIntervalMs(values.interval, '--interval', 1000, 100, 1000), sort, count);
}
