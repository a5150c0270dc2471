/**
 * The Prometheus endpoint (shell, node:http). One background loop samples every `intervalMs` and
 * renders the exposition once per sample; a scrape only sends the cached text, so it costs the same
 * whether 1 or 100 Prometheus servers scrape. Loopback by default. Only GET/HEAD of /metrics, / and
 * /healthz are served; anything else gets a short 404/405 and the connection stays healthy.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { renderExposition } from './prometheus.js';
import type { Snapshot } from './sample.js';

export interface ExporterOptions {
  host: string;
  port: number;
  intervalMs: number;
  hostname: string;
  sample: () => Promise<Snapshot> | Snapshot;
  /** Called with sampling errors (the last good exposition keeps being served). */
  onError?: (e: unknown) => void;
}

export interface Exporter {
  url: string;
  server: Server;
  /** Scrapes answered, samples taken, sampling errors. */
  stats: { scrapes: number; samples: number; errors: number };
  close(): Promise<void>;
}

const INDEX =
  '<html><head><title>gpuwise exporter</title></head><body><h1>gpuwise exporter</h1><p><a href="/metrics">Metrics</a></p></body></html>\n';

export async function startExporter(o: ExporterOptions): Promise<Exporter> {
  const stats = { scrapes: 0, samples: 0, errors: 0 };
  let body = '';
  let lastSampleMs = 0;
  let sampleCost = 0;
  const takeSample = async () => {
    const t0 = performance.now();
    try {
      const s = await o.sample();
      sampleCost = (performance.now() - t0) / 1000;
      lastSampleMs = Date.now();
      stats.samples++;
      body = renderExposition(s, o.hostname);
    } catch (e) {
      stats.errors++;
      o.onError?.(e);
    }
  };
  await takeSample();
  let stopped = false;
  let timer: NodeJS.Timeout | null = null;
  const loop = async () => {
    if (stopped) return;
    const start = Date.now();
    await takeSample();
    if (!stopped) timer = setTimeout(loop, Math.max(0, o.intervalMs - (Date.now() - start)));
  };
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET, HEAD', 'Content-Type': 'text/plain' }).end('method not allowed\n');
      return;
    }
    if (path === '/metrics') {
      stats.scrapes++;
      const own = [
        '# HELP gpuwise_exporter_sample_seconds Time the last sample of all GPUs took.',
        '# TYPE gpuwise_exporter_sample_seconds gauge',
        `gpuwise_exporter_sample_seconds ${sampleCost.toFixed(6)}`,
        '# HELP gpuwise_exporter_sample_errors_total Samples that failed (the previous values are served).',
        '# TYPE gpuwise_exporter_sample_errors_total counter',
        `gpuwise_exporter_sample_errors_total ${stats.errors}`,
        '# HELP gpuwise_exporter_last_sample_age_seconds Age of the served sample.',
        '# TYPE gpuwise_exporter_last_sample_age_seconds gauge',
        `gpuwise_exporter_last_sample_age_seconds ${lastSampleMs === 0 ? 'NaN' : ((Date.now() - lastSampleMs) / 1000).toFixed(3)}`,
        '',
      ].join('\n');
      const text = body + own;
      res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
      res.end(req.method === 'HEAD' ? undefined : text);
    } else if (path === '/' || path === '') {
      res.writeHead(200, { 'Content-Type': 'text/html' }).end(req.method === 'HEAD' ? undefined : INDEX);
    } else if (path === '/healthz') {
      res.writeHead(200, { 'Content-Type': 'text/plain' }).end(req.method === 'HEAD' ? undefined : 'ok\n');
    } else {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('not found\n');
    }
  });
  server.on('clientError', (_err, socket) => {
    // Malformed HTTP: answer 400 and close, as Node would, without logging a stack.
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
    else socket.destroy();
  });
  server.keepAliveTimeout = 5000;
  server.headersTimeout = 10000;
  server.requestTimeout = 10000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => resolve());
  });
  timer = setTimeout(loop, o.intervalMs); // only once listening: a failed start leaves nothing running
  const addr = server.address() as AddressInfo;
  const hostForUrl = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return {
    url: `http://${hostForUrl}:${addr.port}`,
    server,
    stats,
    close: () =>
      new Promise<void>((resolve) => {
        stopped = true;
        if (timer) clearTimeout(timer);
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}
