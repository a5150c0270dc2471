/** `gpuwise exporter`: serve Prometheus metrics of the live GPUs (dcgm-exporter names) until stopped. */
import { hostname } from 'node:os';
import { startExporter } from '../live/exporterServer.js';
import { parseIntervalMs } from './telemetryArgs.js';
import { NO_GPU_HINTS, openLive } from './telemetryLive.js';
import { parseFlags, UsageError } from './usage.js';

const HELP = `gpuwise exporter: Prometheus metrics of the GPUs, with NVIDIA dcgm-exporter's metric names and
labels (DCGM_FI_DEV_FB_USED, DCGM_FI_DEV_GPU_UTIL, ...) plus per-process gpuwise_process_* metrics.

Usage: gpuwise exporter [--port 9400] [--host 127.0.0.1] [--interval 1s]

  --host ADDR      address to listen on (default 127.0.0.1: this machine only; 0.0.0.0 for Prometheus elsewhere)
  --port N         TCP port (default 9400, dcgm-exporter's)
  --interval D     how often to sample (default 1s; 100ms .. 60s)
`;

export async function run(argv: string[]): Promise<number> {
  const { values, positionals } = parseFlags({
    args: argv,
    allowPositionals: true,
    options: {
      port: { type: 'string', default: '9400' },
      host: { type: 'string', default: '127.0.0.1' },
      interval: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  if (positionals.length > 0) throw new UsageError(`unexpected argument '${positionals[0]}'`);
  if (!/^\d+$/.test(values.port) || Number(values.port) > 65535) throw new UsageError(`--port: '${values.port}' is not a TCP port`);
  const intervalMs = parseIntervalMs(values.interval, '--interval', 1000, 100, 60_000);
  const sampler = await openLive({ hint: NO_GPU_HINTS.exporter });
  let exporter: Awaited<ReturnType<typeof startExporter>>;
  try {
    exporter = await startExporter({
      host: values.host,
      port: Number(values.port),
      intervalMs,
      hostname: hostname(),
      sample: () => sampler.sample(),
      onError: (e) => process.stderr.write(`gpuwise exporter: sampling failed: ${(e as Error).message}\n`),
    });
  } catch (e) {
    sampler.close();
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'EADDRINUSE') throw new UsageError(`port ${values.port} on ${values.host} is already in use`);
    if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') throw new UsageError(`--host: cannot listen on '${values.host}'`);
    if (code === 'EACCES') throw new UsageError(`--port: no permission to listen on port ${values.port}`);
    throw e;
  }
  const loopback = /^(127\.|::1$|localhost$)/.test(values.host);
  process.stderr.write(
    `gpuwise exporter: serving ${exporter.url}/metrics (${sampler.source.kind}, every ${intervalMs} ms)${loopback ? '' : '; reachable from the network'}\n`,
  );
  await new Promise<void>((resolve) => {
    const stop = () => resolve();
    process.once('SIGINT', stop).once('SIGTERM', stop);
  });
  await exporter.close();
  sampler.close();
  return 0;
}
