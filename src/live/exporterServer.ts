/**
 * The Prometheus endpoint (shell, node:http). One background loop samples every `intervalMs` and
 * renders the exposition once per sample; a scrape only sends the cached text, so it costs the same
 * whether 1 or 100 Prometheus servers scrape. Loopback by default. Only GET/HEAD of /metrics, / and
 * /healthz are served; anything else gets a short 404/405 and the connection stays healthy.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { renderExposition } from '../telemetry/prometheus.js';
import type { Snapshot } from '../telemetry/sample.js';

export interface ExporterOptions {
  host: string;
  port: number;
  intervalMs: number;
  hostname: string;
  sample: () => Promise<Snapshot> | Snapshot;
  /** Called with sampling errors (the last good exposition keeps being served). */
  onError?: (e: unknown) => void;
  /** Open connections at most (default 256): past it the oldest idle one is closed, or a new one refused when none is idle. */
  maxConnections?: number;
  /** A connection with no traffic for this long is closed (default 30 s: longer than Prometheus' usual 15 s scrape interval). */
  idleTimeoutMs?: number;
}

export interface Exporter {
  url: string;
  server: Server;
  /** Scrapes answered, samples taken, sampling errors, connections closed for the cap or idleness. */
  stats: { scrapes: number; samples: number; errors: number; evicted: number; refused: number; idleClosed: number };
  close(): Promise<void>;
}

const INDEX =
  '<html><head><title>gpuwise exporter</title></head><body><h1>gpuwise exporter</h1><p><a href="/metrics">Metrics</a></p></body></html>\n';

export async function startExporter(o: ExporterOptions): Promise<Exporter> {
  const stats = { scrapes: 0, samples: 0, errors: 0, evicted: 0, refused: 0, idleClosed: 0 };
  const maxConnections = o.maxConnections ?? 256;
  // Connections in the order they opened, and those with a request in progress (never evicted).
  const conns = new Set<Socket>();
  const busy = new WeakSet<Socket>();
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
    busy.add(req.socket);
    res.once('close', () => busy.delete(req.socket));
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
  // Idle sockets (never a request, or kept alive and forgotten) must not pile up until file descriptors run out:
  // a cap with the oldest idle connection evicted first, so a scrape always gets in, and an idle timeout.
  server.on('connection', (socket: Socket) => {
    if (conns.size >= maxConnections) {
      for (const c of conns) {
        if (busy.has(c)) continue;
        conns.delete(c);
        c.destroy();
        stats.evicted++;
        break;
      }
      if (conns.size >= maxConnections) {
        stats.refused++;
        socket.destroy();
        return;
      }
    }
    conns.add(socket);
    socket.once('close', () => conns.delete(socket));
  });
  server.timeout = o.idleTimeoutMs ?? 30_000;
  server.on('timeout', (socket: Socket) => {
    stats.idleClosed++;
    socket.destroy();
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
