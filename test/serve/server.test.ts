/**
 * `gpuwise serve` over HTTP on loopback, against fixtures: a history of the real H200 doctor runs, the shipped
 * traces and snapshots, a `record` file of a real nvidia-smi sample, and the fake libnvidia-ml of the telemetry
 * tests as the live GPUs. Checks what each page says, the access rule, the limits, and that nothing is written
 * outside the store.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inlineAssets } from '../../src/serve/assets.js';
import { renderDoctorHtml } from '../../src/serve/pages/runs.js';
import { renderAnalyzeHtml } from '../../src/serve/pages/analyze.js';
import { loadRun } from '../../src/io/runStore.js';
import { escapeHtml } from '../../src/util/html.js';
import { LIVE_SCHEMA_VERSION, type LiveFrame, type LiveHistory } from '../../src/serve/liveFrame.js';
import { OOM_SNAPSHOT, ROOT, RUNS, SNAPSHOT, TRACES, makeRecording, makeRunStore, smiSample } from './fixtures.js';
import { type Served, fakeNvml, http, scratch, serveOn, sseEvents } from './helpers.js';

let store: string;
let ids: Record<string, string>;
let s: Served;
let lib: string | null;
const RECORDED = 120;

/** Each fixture file's size and modification time, and the file list: what the server must leave as it found it. */
function fixtureStamps(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const dir of [RUNS, TRACES, join(ROOT, 'test', 'fixtures', 'memory')])
    for (const f of readdirSync(dir, { recursive: true }) as string[]) {
      const st = statSync(join(dir, f));
      if (!st.isDirectory()) out[join(dir, f)] = `${st.size}:${st.mtimeMs}`;
    }
  return out;
}
const STAMPS_BEFORE = fixtureStamps();

beforeAll(async () => {
  store = scratch('store');
  ids = await makeRunStore(store);
  makeRecording(join(store, 'telemetry'), 'earlier.sqlite', RECORDED);
  lib = fakeNvml(scratch('nvml'));
  s = await serveOn(store, { env: { GPUWISE_NVML_LIB: lib ?? '/nonexistent/libnvidia-ml.so.1', GPUWISE_NVIDIA_SMI: '/nonexistent/nvidia-smi' } }, { maxUploadBytes: 4 << 20 });
}, 120_000);
afterAll(async () => {
  await s?.close();
});

const u = (path: string) => `${s.url}${path}`;

/** POSTs the open form the Reports page sends. */
function openPath(path: string) {
  return http(u('open'), { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `path=${encodeURIComponent(path)}` });
}

describe('Runs', () => {
  it('lists the history newest first, each run linked', async () => {
    const r = await http(u('runs'));
    expect(r.status).toBe(200);
    const order = Object.values(ids).reverse();
    const at = order.map((id) => r.body.indexOf(`run?id=${id}`));
    expect(at.every((x) => x > 0)).toBe(true);
    expect([...at].sort((a, b) => a - b)).toEqual(at);
    expect(r.body).toContain('python3 host_sync.py');
    const api = JSON.parse((await http(u('api/runs'))).body);
    expect(api.schemaVersion).toBe(1);
    expect(api.runs.map((x: { id: string }) => x.id)).toEqual(order);
  });

  it("shows one run verdict first: the top finding, then every finding's evidence and fix, and doctor's own page", async () => {
    const { report } = await loadRun(store, ids.starved_dataloader!);
    const r = await http(u(`run?id=${ids.starved_dataloader}`));
    expect(r.status).toBe(200);
    const top = report.findings[0]!;
    expect(top.id).toBe('dataloader-bound');
    const verdict = r.body.indexOf('id="verdict"');
    expect(r.body.indexOf(escapeHtml(top.title))).toBeGreaterThan(verdict);
    expect(verdict).toBeLessThan(r.body.indexOf('Findings, ranked'));
    for (const f of report.findings) expect(r.body).toContain(`data-id="${f.id}"`);
    // The planner's what-ifs calibrated on the run (the H200 runs have a model summary and allocator peaks).
    expect(report.whatIfs.length).toBeGreaterThan(0);
    for (const w of report.whatIfs) expect(r.body).toContain(escapeHtml(w.title));
    const full = await http(u(`run-report?id=${ids.starved_dataloader}`));
    expect(full.body).toBe(renderDoctorHtml(report, inlineAssets()));
    // A unique prefix and last~N work as on the command line.
    expect((await http(u(`run?id=${ids.starved_dataloader!.slice(0, 12)}`))).status).toBe(200);
    expect((await http(u('run?id=last~2'))).body).toContain(`Run ${ids.starved_dataloader}`);
  });

  it('compares two runs: figures before and after, findings gone and new', async () => {
    const r = await http(u(`compare?a=${ids.starved_dataloader}&b=${ids.host_sync}`));
    expect(r.status).toBe(200);
    expect(r.body).toMatch(/<td>dataloader-bound<\/td><td class="ok">gone<\/td>/);
    // host_sync's eager MLP step brings a finding the starved run did not have.
    expect(r.body).toMatch(/<td>fusion<\/td><td class="bad">new<\/td>/);
    expect(r.body).toContain('median step');
  });

  it('answers an unknown run with 404 and one line, and a missing parameter with 400', async () => {
    const r = await http(u('run?id=zzz-nope'));
    expect(r.status).toBe(404);
    expect(r.body).toContain('zzz-nope: unknown run');
    expect(r.body).not.toMatch(/at .*\.ts:\d+/);
    expect((await http(u('api/run?id=zzz'))).body).toMatch(/^\{"error":"zzz: unknown run/);
    expect((await http(u('compare?a=last'))).status).toBe(400);
  });
});

describe('Reports', () => {
  it("opens a trace by path: analyze's findings, the step breakdown, and the bytes for Perfetto", async () => {
    const path = join(TRACES, 'resnet_starved.trace.json.gz');
    const r = await openPath(path);
    expect(r.status).toBe(303);
    const loc = r.headers.location as string;
    expect(loc).toMatch(/^report\?id=/);
    const page = await http(u(loc));
    expect(page.body).toContain('data-id="dataloader-bound"');
    expect(page.body).toContain('id="step-breakdown"');
    expect(page.body).toContain('data-perfetto="api/report/trace?id=');
    const id = loc.slice('report?id='.length);
    const json = JSON.parse((await http(u(`api/report?id=${id}`))).body);
    expect(json.command).toBe('analyze');
    expect(json.findings[0].id).toBe('dataloader-bound');
    const bytes = await fetch(u(`api/report/trace?id=${id}&file=0`)).then((x) => x.arrayBuffer());
    expect(Buffer.from(bytes).equals(readFileSync(path))).toBe(true);
    expect((await http(u('reports'))).body).toContain('resnet_starved.trace.json.gz');
    // report-full is the page as one file: exactly what `analyze --html` writes for this report.
    expect((await http(u(`report-full?id=${id}`))).body).toBe(renderAnalyzeHtml(json, inlineAssets()));
  });

  it('opens a folder of rank traces as one multi-rank report', async () => {
    const r = await openPath(join(TRACES, 'ddp_gpt2'));
    expect(r.status).toBe(303);
    const page = await http(u(r.headers.location as string));
    expect((page.body.match(/class="rank-row"/g) ?? []).length).toBe(2);
  });

  it("opens a memory snapshot: memory's report, the OOM explained", async () => {
    const r = await openPath(OOM_SNAPSHOT);
    expect(r.status).toBe(303);
    const page = await http(u(r.headers.location as string));
    expect(page.body).toMatch(/id="verdict">Out of memory: asked 16\.0 MiB/);
    const ok = await openPath(SNAPSHOT);
    expect((await http(u(ok.headers.location as string))).body).toContain('id="chart-memory"');
  });

  it('uploads a trace and a snapshot through the same readers', async () => {
    const body = readFileSync(join(TRACES, 'mlp_launch_bound.trace.json.gz'));
    const r = await http(u('api/reports/upload?name=mlp.trace.json.gz'), { method: 'POST', body });
    expect(r.status).toBe(200);
    const { id, kind } = JSON.parse(r.body);
    expect(kind).toBe('trace');
    expect((await http(u(`report?id=${id}`))).body).toContain('data-id="launch-bound"');
    // A snapshot uploaded without a telling name is recognised by its bytes.
    const snap = await http(u('api/reports/upload?name=upload.bin'), { method: 'POST', body: readFileSync(OOM_SNAPSHOT) });
    expect(JSON.parse(snap.body).kind).toBe('snapshot');
  });

  it('refuses, in one line, a pickle that would run code, a file that is neither, a path that is not there', async () => {
    const evil = await http(u('api/reports/upload?name=evil.pickle'), { method: 'POST', body: readFileSync(join(ROOT, 'test', 'fixtures', 'memory', 'evil_os_system.pickle')) });
    expect(evil.status).toBe(400);
    expect(JSON.parse(evil.body).error).toMatch(/^evil\.pickle: /);
    const passwd = await openPath('/etc/passwd');
    expect(passwd.status).toBe(400);
    expect(passwd.body).toContain('/etc/passwd: neither a torch.profiler trace');
    // A FIFO would block the server's thread on its first read: refused before any read.
    const fifo = join(scratch('fifo'), 'trace.json');
    execFileSync('mkfifo', [fifo]);
    const blocked = await openPath(fifo);
    expect(blocked.status).toBe(400);
    expect(blocked.body).toContain('trace.json: is not a regular file or a folder');
    const missing = await openPath('/nonexistent/trace.json');
    expect(missing.body).toMatch(/\/nonexistent\/trace\.json: (no such file|not found)/i);
  });

  it('refuses an upload over the limit and keeps nothing of it; uploads live only under the store', async () => {
    const big = Buffer.alloc((4 << 20) + 1, 0x20);
    const r = await http(u('api/reports/upload?name=big.json'), { method: 'POST', body: big });
    expect(r.status).toBe(413);
    const uploads = join(store, 'uploads');
    const left = existsSync(uploads) ? readdirSync(uploads) : [];
    // What is left is the kept uploads (mlp, snapshot), all under STORE/uploads, none of the refused ones.
    expect(left.filter((f) => f.includes('big') || f.includes('evil'))).toEqual([]);
    // A name with path parts cannot leave the uploads folder.
    const sneaky = await http(u(`api/reports/upload?name=${encodeURIComponent('../../../tmp/x.json.gz')}`), { method: 'POST', body: readFileSync(join(TRACES, 'mlp_launch_bound.trace.json.gz')) });
    expect(sneaky.status).toBe(200);
    expect(readdirSync(uploads).some((f) => f.endsWith('-x.json.gz'))).toBe(true);
  });
});

describe('Live GPUs', () => {
  it('streams one frame per sample to every viewer, the same frame to each', async () => {
    if (!lib) return expect.fail('no C compiler to build the fake NVML (cc)');
    const [a, b] = await Promise.all([sseEvents(u('api/live/stream'), 3), sseEvents(u('api/live/stream'), 3)]);
    const fa = a as LiveFrame[];
    expect(fa[0]!.schemaVersion).toBe(LIVE_SCHEMA_VERSION);
    expect(fa[0]!.gpus.map((g) => g.name)).toEqual(['Fake H200', 'Fake H200']);
    expect(fa[2]!.processes.length).toBe(21); // fake-nvml.c: 20 processes on GPU 0, one on GPU 1
    // Both viewers saw the same samples (collected once): their last frames share a time.
    const ta = new Set(fa.map((f) => f.tMs));
    expect((b as LiveFrame[]).some((f) => ta.has(f.tMs))).toBe(true);
  });

  it("serves history: the store's recordings of the last day and what it sampled since", async () => {
    const h = JSON.parse((await http(u('api/live/history?seconds=86400&points=100000'))).body) as LiveHistory;
    const recorded = smiSample();
    expect(h.tS.length).toBeGreaterThan(RECORDED);
    expect(h.gpus[0]!.memTotalBytes).not.toBeNull();
    // The recorded samples carry the real nvidia-smi figures.
    expect(h.gpus[0]!.utilPercent.slice(0, RECORDED).every((v) => v === recorded.gpus[0]!.utilizationGpuPercent)).toBe(true);
    const thin = JSON.parse((await http(u('api/live/history?seconds=86400&points=50'))).body) as LiveHistory;
    expect(thin.tS.length).toBeLessThanOrEqual(50);
  });

  it('caps viewers: past the cap a stream is refused (503) and the server keeps answering', async () => {
    const small = await serveOn(scratch('cap'), { env: { GPUWISE_NVML_LIB: lib ?? '/nonexistent', GPUWISE_NVIDIA_SMI: '/nonexistent' }, maxViewers: 2, telemetryDir: null });
    try {
      const open = [sseEvents(`${small.url}api/live/stream`, 1000, 'message', 3000).catch(() => null), sseEvents(`${small.url}api/live/stream`, 1000, 'message', 3000).catch(() => null)];
      await new Promise((r) => setTimeout(r, 300));
      expect(small.live.viewerCount).toBe(2);
      const refused = await http(`${small.url}api/live/stream`);
      expect(refused.status).toBe(503);
      expect(JSON.parse(refused.body).error).toBe('too many live viewers');
      expect((await http(`${small.url}live`)).status).toBe(200);
      await Promise.all(open);
      // The two readers gave up (timed out): their slots are free again.
      await new Promise((r) => setTimeout(r, 100));
      expect(small.live.viewerCount).toBe(0);
    } finally {
      await small.close();
    }
  });
});

describe('a viewer that cannot keep up', () => {
  it('misses frames instead of queueing them: what waits for one viewer stays under the cap', async () => {
    const small = await serveOn(scratch('slow'), { env: { GPUWISE_NVML_LIB: '/nonexistent', GPUWISE_NVIDIA_SMI: '/nonexistent' }, telemetryDir: null, maxBufferedBytes: 64 << 10 });
    try {
      const got = sseEvents(`${small.url}api/live/stream`, 1_000_000, 'message', 3000).catch((e: Error) => e.message);
      await new Promise((r) => setTimeout(r, 200));
      expect(small.live.viewerCount).toBe(1);
      // 500 samples in one turn of the event loop: nothing reaches the socket meanwhile, so the queue would grow by
      // 500 frames of a real nvidia-smi sample; past 64 KiB the viewer misses them instead.
      const snap = smiSample();
      for (let i = 0; i < 500; i++) small.live.onSnapshot({ ...snap, timestampMs: Date.now() + i });
      const status = small.live.status();
      const frameBytes = JSON.stringify(small.live.latest()).length;
      expect(status.droppedFrames).toBeGreaterThan(400);
      expect(status.droppedFrames).toBeLessThan(500 - (64 << 10) / (frameBytes + 10) + 2);
      // The viewer got every frame that was queued, and no more.
      expect(Number(/^only (\d+) of/.exec(String(await got))?.[1])).toBe(500 - status.droppedFrames);
    } finally {
      await small.close();
    }
  });
});

describe('safety and limits', () => {
  it('refuses a request whose Host is not loopback (DNS rebinding) and a cross-site POST', async () => {
    const r = await http(u('runs'), { headers: { host: 'attacker.example' } });
    expect(r.status).toBe(401);
    expect(r.body).not.toContain('examples/train');
    const post = await http(u('api/reports/upload?name=a.json'), { method: 'POST', headers: { origin: 'https://evil.example' }, body: '{}' });
    expect(post.status).toBe(403);
    const withToken = await http(`${u('runs')}?token=${s.token}`, { headers: { host: 'hub.example' } });
    expect(withToken.status).toBe(200);
    expect(String(withToken.headers['set-cookie'])).toContain('HttpOnly');
  });

  it('stays up and answers after a burst of bad requests', async () => {
    const replies = [];
    // 300 requests, 25 at a time (the connection cap is 256: past it connections are dropped, by design).
    for (let i = 0; i < 60; i += 5) {
      const bad = [];
      for (let k = i; k < i + 5; k++) {
        bad.push(http(u(`nope/${k}`)));
        bad.push(http(u('run?id=%E0%A4%A'))); // malformed escape
        bad.push(http(u('api/live/history?seconds=abc&points=-5')));
        bad.push(http(u('runs'), { method: 'DELETE' }));
        bad.push(http(u('api/runs/live/records?id=none'), { method: 'POST', body: 'x' }));
      }
      replies.push(...(await Promise.all(bad)));
    }
    expect(replies.every((r) => r.status >= 200 && r.status < 600)).toBe(true);
    expect(replies.filter((r) => r.status === 500)).toEqual([]);
    expect((await http(u('runs'))).status).toBe(200);
  });

  it('writes nothing outside the store', () => {
    // Every fixture file as it was before the server started (a fresh clone's files are all minutes old: compare
    // with the snapshot, not with the clock).
    expect(fixtureStamps()).toEqual(STAMPS_BEFORE);
  });
});

describe('a run in progress', () => {
  it('takes probe records from a client, streams its steps, and saves the doctor report in the history', async () => {
    const lines = readFileSync(join(RUNS, 'host_sync', 'probe.jsonl'), 'utf8')
      .replaceAll('/tmp/w/train/host_sync/trace-pid1116.json', join(RUNS, 'host_sync', 'trace.json.gz'))
      .split('\n')
      .filter(Boolean);
    const start = JSON.parse((await http(u('api/runs/live/start'), { method: 'POST', body: JSON.stringify({ command: ['%%gpuwise doctor', 'host_sync'], runDir: join(RUNS, 'host_sync') }) })).body);
    expect(start.id).toMatch(/^live-/);
    const steps = sseEvents(u(`api/runs/live/stream?id=${start.id}`), 5, 'step');
    await new Promise((r) => setTimeout(r, 100));
    expect((await http(u(`run?id=${start.id}`))).body).toContain('Run in progress');
    expect((await http(u('runs'))).body).toContain(`run?id=${start.id}`);
    const half = Math.floor(lines.length / 2);
    for (const chunk of [lines.slice(0, half), lines.slice(half)]) {
      const r = await http(u(`api/runs/live/records?id=${start.id}`), { method: 'POST', body: `${chunk.join('\n')}\n` });
      expect(JSON.parse(r.body).skipped).toBe(0);
    }
    const got = (await steps) as { step: number }[];
    expect(got.map((x) => x.step)).toEqual([1, 2, 3, 4, 5]);
    const end = JSON.parse((await http(u(`api/runs/live/end?id=${start.id}`), { method: 'POST', body: JSON.stringify({ exitCode: 0 }) })).body);
    expect(end.saveError).toBeNull();
    expect(end.report.findings.map((f: { id: string }) => f.id)).toContain('host-sync');
    expect(end.html).toContain('<html');
    const saved = await loadRun(store, end.runId);
    expect(saved.report.run.command).toEqual(['%%gpuwise doctor', 'host_sync']);
    // The live id now leads to the saved run; an id that never ran leads nowhere.
    expect(JSON.parse((await http(u(`api/run?id=${start.id}`))).body).run).toEqual(saved.report.run);
    expect((await http(u('api/run?id=live-nosuchrun'))).status).toBe(404);
  });
});

describe('restart', () => {
  it("keeps the live history: a second server reads the first one's recording", async () => {
    const before = JSON.parse((await http(u('api/live/history?seconds=86400&points=100000'))).body) as LiveHistory;
    await s.close();
    const files = readdirSync(join(store, 'telemetry'));
    expect(files.some((f) => /^serve-.*\.sqlite$/.test(f))).toBe(true);
    s = await serveOn(store, { env: { GPUWISE_NVML_LIB: '/nonexistent/libnvidia-ml.so.1', GPUWISE_NVIDIA_SMI: '/nonexistent/nvidia-smi' } });
    const after = JSON.parse((await http(u('api/live/history?seconds=86400&points=100000'))).body) as LiveHistory;
    // Recorded at 1 Hz: every whole second the first server sampled is back.
    expect(after.tS.length).toBeGreaterThan(RECORDED);
    expect(after.tS.length).toBeLessThanOrEqual(before.tS.length);
    const status = JSON.parse((await http(u('api/live/status'))).body);
    expect(status.problem).toMatch(/no NVIDIA GPU can be read here/);
    expect((await http(u('live'))).status).toBe(200);
  });
});
