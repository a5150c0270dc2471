/**
 * `gpuwise serve`: the local web dashboard (src/serve/). Runs, Reports and Live GPUs pages from one Node process,
 * loopback by default; any other address needs the token printed at start.
 */
import { join } from 'node:path';
import { storeDir as resolveStoreDir } from '../io/runStore.js';
import { isLoopbackBind } from '../serve/access.js';
import { removeDiscovery, writeDiscovery } from '../serve/discovery.js';
import { LiveHub } from '../serve/liveHub.js';
import { LiveRuns } from '../serve/liveRuns.js';
import { startServer } from '../serve/server.js';
import { parseIntervalMs } from './telemetryArgs.js';
import { UsageError, parseBytes, parseFlags } from './usage.js';

const HELP = `Usage: gpuwise serve [--port N] [--host ADDR] [--store DIR] [options]

A local web dashboard in one process: Runs (the doctor history: each run verdict first, compare of two),
Reports (open a profiler trace or a memory snapshot by path or upload; the trace opens in Perfetto's UI) and
Live GPUs (every GPU and process, sampled once for all viewers, with history kept in DIR/telemetry).

Options:
  --port N           TCP port (default 0: a free port; the URL is printed)
  --host ADDR        address to listen on (default 127.0.0.1). Any non-loopback address needs the token
                     printed at start (in the URL, then a cookie)
  --store DIR        the run history folder (default: $GPUWISE_STORE, else ~/.gpuwise); uploads go to
                     DIR/uploads (removed when done), the live history to DIR/telemetry
  --interval T       live sampling interval (default 1s; 100ms..60s)
  --history FILE     also show a \`gpuwise record\` file as live history (repeatable)
  --no-record        keep the live history in memory only (nothing written to DIR/telemetry)
  --max-upload SIZE  largest upload accepted (default 2GiB; e.g. 512MiB)
  --token T          the access token (default: random; also $GPUWISE_SERVE_TOKEN)
  -h, --help         this help

A \`gpuwise doctor\` on the same store shows here live while it runs (DIR/serve-PID.json tells it where;
doctor --no-serve opts out).

Prints one line, "gpuwise serve: URL", then serves until interrupted (Ctrl-C). Exit status: 0; 2 for bad
usage or a port that cannot be opened.
`;

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      store: { type: 'string' },
      interval: { type: 'string' },
      history: { type: 'string', multiple: true },
      'no-record': { type: 'boolean' },
      'max-upload': { type: 'string' },
      token: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  if (positionals.length) throw new UsageError(`unexpected argument '${positionals[0]}' (see gpuwise serve --help)`);
  const port = values.port === undefined ? 0 : Number(values.port);
  if (!/^\d+$/.test(values.port ?? '0') || port > 65535) throw new UsageError(`--port: '${values.port}' is not a port number (0-65535)`);
  const host = values.host ?? '127.0.0.1';
  const token = values.token ?? process.env.GPUWISE_SERVE_TOKEN;
  if (token !== undefined && token.length < 16) throw new UsageError('--token: use at least 16 characters');
  const intervalMs = parseIntervalMs(values.interval, '--interval', 1000, 100, 60_000);
  const maxUploadBytes = values['max-upload'] === undefined ? 2 * 1024 ** 3 : parseBytes(values['max-upload'], '--max-upload');
  const dir = resolveStoreDir(values.store);

  const live = new LiveHub({ intervalMs, telemetryDir: values['no-record'] ? null : join(dir, 'telemetry'), historyFiles: values.history ?? [] });
  const liveRuns = new LiveRuns(dir, live);
  let server: Awaited<ReturnType<typeof startServer>>;
  try {
    server = await startServer({ host, port, storeDir: dir, token, maxUploadBytes, live, liveRuns });
  } catch (e) {
    live.stop();
    liveRuns.close();
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND')
      throw new UsageError(`cannot listen on ${host}:${port}: ${code === 'EADDRINUSE' ? 'the port is in use' : (e as Error).message}`);
    throw e;
  }
  // The discovery file lets a `gpuwise doctor` on this store stream its run here (serve/discovery.ts).
  let discovery: string | null = null;
  try {
    discovery = writeDiscovery(dir, { url: server.url, token: server.token, pid: process.pid, startedAtMs: Date.now() });
  } catch (e) {
    process.stderr.write(`gpuwise serve: note: ${dir} has no discovery file (${(e as Error).message}): doctor runs will not show here live\n`);
  }
  const forget = () => discovery && removeDiscovery(discovery);
  process.once('exit', forget);
  const loopback = isLoopbackBind(host);
  process.stdout.write(`gpuwise serve: ${server.tokenUrl}\n`);
  if (!loopback) process.stderr.write(`gpuwise serve: listening on ${host}: every request needs the token above (it is in the URL; the page then keeps it in a cookie)\n`);
  await live.start();
  await new Promise<void>((done) => {
    const stop = () => done();
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  forget();
  await server.close();
  return 0;
}
