/** `gpuwise serve` as a process: the printed URL, the token rule off loopback, bad usage, a clean stop. */
import { spawn, spawnSync } from 'node:child_process';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildBundle } from '../cliBundle.js';
import { http, scratch } from './helpers.js';

let bundle: string;
beforeAll(async () => {
  bundle = await buildBundle('gpuwise-serve-cli');
}, 120_000);

const NO_GPU = { GPUWISE_NVML_LIB: '/nonexistent/libnvidia-ml.so.1', GPUWISE_NVIDIA_SMI: '/nonexistent/nvidia-smi' };

function start(args: string[]): Promise<{ url: string; token: string; stop(): Promise<number | null> }> {
  const p = spawn(process.execPath, [bundle, 'serve', '--port', '0', '--no-record', ...args], { env: { ...process.env, ...NO_GPU }, stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((ok, no) => {
    let buf = '';
    let err = '';
    p.stderr.on('data', (c) => (err += c));
    p.stdout.on('data', (c) => {
      buf += c;
      const m = /^gpuwise serve: (http:\/\/\S+\/)\?token=(\S+)\n/.exec(buf);
      if (m)
        ok({
          url: m[1]!,
          token: m[2]!,
          stop: () =>
            new Promise((done) => {
              p.on('exit', (code) => done(code));
              p.kill('SIGTERM');
            }),
        });
    });
    p.on('exit', (code) => no(new Error(`serve exited ${code}: ${err}`)));
  });
}

describe('gpuwise serve', () => {
  it('on 0.0.0.0, answers only requests that carry the printed token', async () => {
    const s = await start(['--host', '0.0.0.0', '--store', scratch('cli')]);
    expect(s.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    expect(s.token.length).toBeGreaterThanOrEqual(16);
    expect((await http(`${s.url}runs`)).status).toBe(401);
    const ok = await http(`${s.url}runs?token=${s.token}`);
    expect(ok.status).toBe(200);
    const cookie = String(ok.headers['set-cookie']).split(';')[0]!;
    expect((await http(`${s.url}live`, { headers: { cookie } })).status).toBe(200);
    expect(await s.stop()).toBe(0);
  });

  it('on loopback, serves without the token and says why the live page has no GPU', async () => {
    const s = await start(['--store', scratch('cli')]);
    const status = JSON.parse((await http(`${s.url}api/live/status`)).body);
    expect(status.problem).toMatch(/^no NVIDIA GPU can be read here/);
    expect(await s.stop()).toBe(0);
  });

  it('refuses bad usage in one line with exit status 2', () => {
    for (const [args, msg] of [
      [['--port', 'abc'], "--port: 'abc' is not a port number"],
      [['--interval', '5ms'], '--interval: 5ms is outside'],
      [['--token', 'short'], '--token: use at least 16 characters'],
      [['extra'], "unexpected argument 'extra'"],
    ] as const) {
      const r = spawnSync(process.execPath, [bundle, 'serve', ...args], { encoding: 'utf8', env: { ...process.env, ...NO_GPU } });
      expect(r.status).toBe(2);
      expect(r.stderr.trim().split('\n').length).toBe(1);
      expect(r.stderr).toContain(`gpuwise serve: ${msg}`);
    }
  });
});
