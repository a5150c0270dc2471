/**
 * A CLI `gpuwise doctor` run followed live by the `gpuwise serve` of its store, both as real processes: the
 * server's discovery file, the run listed in progress with its steps streaming before it ends, then the saved
 * report under the live id; and doctor with a server that is gone or never answers runs as without one.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { type Server, createServer } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DoctorReport } from '../../src/doctor/reportTypes.js';
import { buildBundle } from '../cliBundle.js';
import { PYTHON, SKIP_PYTHON, TINY, pyEnv, runProcess } from '../doctor/helpers.js';
import { http, scratch } from './helpers.js';

const NO_GPU = { GPUWISE_NVML_LIB: '/nonexistent/libnvidia-ml.so.1', GPUWISE_NVIDIA_SMI: '/nonexistent/nvidia-smi' };
let bundle: string;
const started: ChildProcess[] = [];

beforeAll(async () => {
  bundle = await buildBundle('gpuwise-serve-doctor-live');
}, 120_000);
afterAll(() => {
  for (const p of started) if (p.exitCode === null) p.kill('SIGKILL');
});

function serve(store: string): Promise<{ url: string; proc: ChildProcess }> {
  const p = spawn(process.execPath, [bundle, 'serve', '--port', '0', '--no-record', '--store', store], { env: { ...process.env, ...NO_GPU }, stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(p);
  return new Promise((ok, no) => {
    let buf = '';
    p.stdout.on('data', (c) => {
      buf += c;
      const m = /^gpuwise serve: (http:\/\/\S+\/)\?token=/.exec(buf);
      if (m) ok({ url: m[1]!, proc: p });
    });
    p.on('exit', (code) => no(new Error(`serve exited ${code}`)));
  });
}

const doctor = (store: string, args: string[], extra: Record<string, string> = {}) =>
  runProcess(process.execPath, [bundle, 'doctor', ...args], pyEnv({ GPUWISE_STORE: store, ...NO_GPU, ...extra }));

interface SseEvent {
  type: string;
  data: unknown;
  atMs: number;
}

/** Every event of a stream until its 'end' event (or `timeoutMs`). */
function readStream(url: string, timeoutMs: number): Promise<SseEvent[]> {
  return new Promise((ok, no) => {
    const got: SseEvent[] = [];
    let buf = '';
    const timer = setTimeout(() => {
      req.destroy();
      no(new Error(`no 'end' event in ${timeoutMs} ms (${got.length} events)`));
    }, timeoutMs);
    const req = request(url, (res) => {
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        buf += c;
        for (let i = buf.indexOf('\n\n'); i >= 0; i = buf.indexOf('\n\n')) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          const type = /^event: (.*)$/m.exec(block)?.[1] ?? 'message';
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (data === undefined) continue;
          got.push({ type, data: JSON.parse(data), atMs: Date.now() });
          if (type === 'end') {
            clearTimeout(timer);
            req.destroy();
            ok(got);
          }
        }
      });
    });
    req.on('error', (e) => {
      if (!got.some((g) => g.type === 'end')) no(e);
    });
    req.end();
  });
}

async function until<T>(what: string, f: () => Promise<T | null>, timeoutMs = 60_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    const v = await f();
    if (v !== null) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for ${what}`);
}

describe.skipIf(SKIP_PYTHON)('gpuwise doctor streams into the gpuwise serve of its store', () => {
  it('the run is listed in progress and streams its steps, then its saved report is shown', async () => {
    const store = scratch('doctor-live');
    const s = await serve(store);
    const discovery = join(store, `serve-${s.proc.pid}.json`);
    expect(statSync(discovery).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(discovery, 'utf8'))).toMatchObject({ schemaVersion: 1, url: s.url, pid: s.proc.pid });

    const out = join(scratch('doctor-live-run'), 'run');
    const ran = doctor(store, ['--out', out, '--profile-steps', '0', '--', PYTHON, TINY, '--steps', '40', '--step-sleep-ms', '100']);
    let doctorEndedMs: number | null = null;
    void ran.then(() => (doctorEndedMs = Date.now()));

    const listed = await until('the run in progress', async () => {
      const runs = JSON.parse((await http(`${s.url}api/runs`)).body) as { inProgress: { id: string; client: string; command: string[] }[] };
      return runs.inProgress[0] ?? null;
    });
    expect(listed.client).toBe('doctor');
    expect(listed.command).toEqual([PYTHON, TINY, '--steps', '40', '--step-sleep-ms', '100']);
    const events = readStream(`${s.url}api/runs/live/stream?id=${encodeURIComponent(listed.id)}`, 90_000);
    // The server's state of the run while doctor still runs: steps already there.
    const midway = await until('steps in progress', async () => {
      const st = JSON.parse((await http(`${s.url}api/run?id=${encodeURIComponent(listed.id)}`)).body) as { inProgress?: boolean; steps?: number };
      return st.inProgress && (st.steps ?? 0) >= 3 ? { st, atMs: Date.now() } : null;
    });
    expect(doctorEndedMs).toBeNull();
    expect(midway.st.steps).toBeLessThan(40);
    expect((await http(`${s.url}run?id=${encodeURIComponent(listed.id)}`)).body).toContain('Run in progress');
    expect((await http(`${s.url}runs`)).body).toContain('id="in-progress"');

    const r = await ran;
    expect(r.code).toBe(0);
    const savedAs = /saved as run (\S+) in/.exec(r.stderr)?.[1];
    expect(savedAs).toBeDefined();
    expect(r.stderr).not.toContain('does not follow this run');
    const ev = await events;
    const steps = ev.filter((e) => e.type === 'step').map((e) => (e.data as { step: number }).step);
    const end = ev.at(-1)!;
    expect(end).toMatchObject({ type: 'end', data: { runId: savedAs } });
    // Steps came while the run went on (not all at its end), in order, up to the last of the 40.
    expect(steps.length).toBeGreaterThan(3);
    expect(steps).toEqual([...steps].sort((a, b) => a - b));
    expect(steps.at(-1)).toBe(40);
    expect(ev.find((e) => e.type === 'step')!.atMs).toBeLessThan(doctorEndedMs!);

    // The live id now leads to the report doctor saved: the same one its run directory holds.
    const report = JSON.parse((await http(`${s.url}api/run?id=${encodeURIComponent(listed.id)}`)).body) as DoctorReport;
    const onDisk = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8')) as DoctorReport;
    expect(report.run).toEqual(onDisk.run);
    expect(report.findings.map((f) => f.id)).toEqual(onDisk.findings.map((f) => f.id));
    expect(JSON.parse((await http(`${s.url}api/runs`)).body).inProgress).toEqual([]);
    const page = await http(`${s.url}run?id=${encodeURIComponent(listed.id)}`);
    expect(page.status).toBe(200);
    expect(page.body).toContain('id="verdict"');

    s.proc.kill('SIGTERM');
    await new Promise((ok) => s.proc.once('exit', ok));
    expect(existsSync(discovery)).toBe(false);
  }, 180_000);

  it('a server that is gone or never answers is given up with one note and the run goes on; --no-serve feeds none', async () => {
    const store = scratch('doctor-dead');
    mkdirSync(store, { recursive: true });
    // A port nobody listens on (a server killed with SIGKILL left its file), and a server that accepts and never
    // answers; both under a live pid (this test's), so only the HTTP side can tell.
    const closed: Server = createServer();
    await new Promise<void>((ok) => closed.listen(0, '127.0.0.1', ok));
    const deadPort = (closed.address() as { port: number }).port;
    await new Promise<void>((ok) => closed.close(() => ok()));
    const hole: Server = createServer(() => undefined);
    await new Promise<void>((ok) => hole.listen(0, '127.0.0.1', ok));
    const holePort = (hole.address() as { port: number }).port;
    const write = (name: string, port: number, pid: number) =>
      writeFileSync(join(store, name), JSON.stringify({ schemaVersion: 1, url: `http://127.0.0.1:${port}/`, token: 'x'.repeat(24), pid, startedAtMs: Date.now() }), { mode: 0o600 });
    write(`serve-${process.pid}.json`, deadPort, process.pid);
    write('serve-1.json', holePort, process.ppid);

    const args = (n: number) => ['--out', join(scratch('doctor-dead-run'), `r${n}`), '--profile-steps', '0', '--', PYTHON, TINY, '--steps', '12'];
    const fed = await doctor(store, args(0));
    const off = await doctor(store, ['--no-serve', ...args(1)]);
    hole.close();
    for (const r of [fed, off]) {
      expect(r.code).toBe(0);
      expect(r.stdout).toContain('gpuwise doctor');
      expect(r.stderr).toMatch(/saved as run \S+ in/);
    }
    // Each server given up once, with one note; none with --no-serve. How long doctor may wait on them is bounded
    // by the feed itself (test/serve/runFeed.test.ts, on a fake clock): a wall-clock bound here would be load noise.
    const notes = fed.stderr.split('\n').filter((l) => l.includes('does not follow this run'));
    expect(notes).toHaveLength(2);
    expect(notes.join('\n')).toContain(`127.0.0.1:${deadPort}`);
    expect(notes.join('\n')).toContain(`127.0.0.1:${holePort}`);
    expect(off.stderr).not.toContain('does not follow this run');
  }, 240_000);
});
