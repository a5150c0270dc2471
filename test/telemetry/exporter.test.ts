/** The exporter under load on 127.0.0.1 with a fake sampler: 1000 rapid scrapes, bad requests, sampling failures. */
import { request, Agent } from 'node:http';
import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { type Exporter, startExporter } from '../../src/live/exporterServer.js';
import type { Snapshot } from '../../src/telemetry/sample.js';
import { attachApps, parseAppsCsv, parseGpuCsv } from '../../src/telemetry/smiCsv.js';
import { fixture } from './fixtures.js';

const base = (): Snapshot => attachApps(parseGpuCsv(fixture('query-gpu.busy.csv')), parseAppsCsv(fixture('query-compute-apps.busy.csv')));

function get(url: string, agent: Agent, method = 'GET'): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, agent, timeout: 5000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

function raw(port: number, text: string): Promise<string> {
  return new Promise((resolve) => {
    const sock = connect(port, '127.0.0.1', () => sock.end(text));
    let got = '';
    sock.on('data', (d) => (got += d.toString()));
    sock.on('close', () => resolve(got));
    sock.on('error', () => resolve(got));
    sock.setTimeout(3000, () => sock.destroy());
  });
}

let exporter: Exporter | null = null;
afterEach(async () => {
  await exporter?.close();
  exporter = null;
});

describe('exporter', () => {
  it('serves 1000 rapid scrapes while sampling, and survives bad requests', async () => {
    let n = 0;
    exporter = await startExporter({
      host: '127.0.0.1',
      port: 0,
      intervalMs: 5,
      hostname: 'testhost',
      sample: () => {
        const s = base();
        s.gpus[0]!.utilizationGpuPercent = n++ % 101;
        if (n % 50 === 0) throw new Error('driver hiccup');
        return s;
      },
    });
    const url = exporter.url;
    const port = Number(new URL(url).port);
    const agent = new Agent({ keepAlive: true, maxSockets: 16 });
    const bad: Promise<unknown>[] = [];
    let ok = 0;
    for (let batch = 0; batch < 50; batch++) {
      const results = await Promise.all(Array.from({ length: 20 }, () => get(`${url}/metrics`, agent)));
      for (const r of results) {
        expect(r.status).toBe(200);
        expect(r.body).toMatch(/^DCGM_FI_DEV_FB_USED\{gpu="1",[^}]*Hostname="testhost"\} 8641$/m);
        ok++;
      }
      // Interleave bad requests: wrong method, unknown path, malformed HTTP, a client that hangs up.
      bad.push(get(`${url}/metrics`, agent, 'POST').then((r) => expect(r.status).toBe(405)));
      bad.push(get(`${url}/../../etc/passwd`, agent).then((r) => expect(r.status).toBe(404)));
      bad.push(raw(port, 'GARBAGE\r\n\r\n').then((t) => expect(t).toMatch(/^HTTP\/1\.1 400/)));
      bad.push(
        raw(port, `GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20000)}\r\n\r\n`).then((t) =>
          expect(t).toMatch(/^HTTP\/1\.1 4\d\d/),
        ),
      );
      bad.push(raw(port, 'GET /metr'));
    }
    await Promise.all(bad);
    expect(ok).toBe(1000);
    expect(exporter.stats.scrapes).toBe(1000);
    expect(exporter.stats.samples).toBeGreaterThan(1);
    const after = await get(`${url}/metrics`, agent);
    expect(after.status).toBe(200);
    expect(after.body).toContain('gpuwise_exporter_sample_errors_total');
    expect((await get(`${url}/healthz`, agent)).body).toBe('ok\n');
    agent.destroy();
  }, 60_000);

  it('keeps serving the last good sample when sampling fails', async () => {
    let calls = 0;
    exporter = await startExporter({
      host: '127.0.0.1',
      port: 0,
      intervalMs: 5,
      hostname: 'h',
      sample: () => {
        if (calls++ > 0) throw new Error('GPU gone');
        return base();
      },
      onError: () => undefined,
    });
    await new Promise((r) => setTimeout(r, 50));
    const agent = new Agent();
    const r = await get(`${exporter.url}/metrics`, agent);
    expect(r.body).toContain('DCGM_FI_DEV_GPU_UTIL{gpu="0"');
    expect(Number(/gpuwise_exporter_sample_errors_total (\d+)/.exec(r.body)![1])).toBeGreaterThan(0);
    agent.destroy();
  });

  it('refuses a port that is taken', async () => {
    exporter = await startExporter({ host: '127.0.0.1', port: 0, intervalMs: 1000, hostname: 'h', sample: base });
    const port = Number(new URL(exporter.url).port);
    await expect(startExporter({ host: '127.0.0.1', port, intervalMs: 1000, hostname: 'h', sample: base })).rejects.toMatchObject({
      code: 'EADDRINUSE',
    });
  });
});

describe('exporter connection limits (issue 20 item 8)', () => {
  it('idle sockets past the cap are evicted oldest first, idle ones time out, and scrapes keep working', async () => {
    exporter = await startExporter({
      host: '127.0.0.1',
      port: 0,
      intervalMs: 1000,
      hostname: 'h',
      sample: base,
      maxConnections: 40,
      idleTimeoutMs: 800,
    });
    const port = Number(new URL(exporter.url).port);
    // 300 connections that never send a byte (the probe used 19,990; the cap makes the count irrelevant).
    let closed = 0;
    const idle = await Promise.all(
      Array.from(
        { length: 300 },
        () =>
          new Promise<ReturnType<typeof connect>>((resolve) => {
            const s = connect(port, '127.0.0.1', () => resolve(s));
            s.on('close', () => closed++);
            s.on('error', () => undefined);
          }),
      ),
    );
    const count = () => new Promise<number>((r) => exporter!.server.getConnections((_e, n) => r(n)));
    expect(await count()).toBeLessThanOrEqual(40);
    const agent = new Agent({ keepAlive: false });
    for (let i = 0; i < 20; i++) {
      const r = await get(`${exporter.url}/metrics`, agent);
      expect(r.status).toBe(200);
      expect(r.body).toContain('gpuwise_exporter_sample_seconds');
    }
    expect(exporter.stats.evicted).toBeGreaterThanOrEqual(260);
    // Idle connections are closed after the idle timeout.
    await new Promise((r) => setTimeout(r, 2000));
    expect(await count()).toBe(0);
    expect(closed).toBe(300);
    for (const s of idle) s.destroy();
  }, 20_000);
});
