/** The telemetry commands as a user runs them: exit codes, one-line errors, JSON, recording and kill -9. */
import { execFile, spawn } from 'node:child_process';
import { copyFileSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBundle, buildFakeNvml, BUNDLE, gpuwise } from '../cliBundle.js';
import { fixturePath } from './fixtures.js';
import { cleanScratch, makeScratch } from './scratch.js';

afterAll(cleanScratch);

let fake: string | null = null;
let dir = '';
const NO_GPU = { GPUWISE_NVML_LIB: '/nonexistent/libnvidia-ml.so.1', GPUWISE_NVIDIA_SMI: '/nonexistent/nvidia-smi' };

beforeAll(async () => {
  await buildBundle();
  fake = buildFakeNvml();
  dir = makeScratch('cli');
}, 60_000);

const oneLine = (s: string) => s.trim().split('\n').length === 1;

describe('smi', () => {
  it('--from real files --json has the documented schema', async () => {
    const r = await gpuwise([
      'smi',
      '--json',
      '--from',
      fixturePath('query-gpu.busy.csv'),
      '--from',
      fixturePath('query-compute-apps.busy.csv'),
    ]);
    expect(r.code).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j.schemaVersion).toBe(1);
    expect(j.gpus.map((g: { index: number; memoryUsedBytes: number }) => [g.index, g.memoryUsedBytes])).toEqual([
      [0, 6735 * 2 ** 20],
      [1, 8641 * 2 ** 20],
    ]);
    expect(j.gpus[1]).toMatchObject({
      uuid: 'GPU-d9051a70-4846-2428-26d9-f7d1a0a353ea',
      name: 'NVIDIA H200',
      utilizationGpuPercent: 100,
      powerWatts: 691.47,
    });
    expect(j.gpus[1].processes).toEqual([expect.objectContaining({ pid: 621, usedMemoryBytes: 8632 * 2 ** 20 })]);
  });

  it('"Mem busy", not "MemBW": NVML\'s memory-controller busy share is not a bandwidth, in text, Markdown and HTML (issue 47 item 7)', async () => {
    const f = fixturePath('nvidia-smi-q.busy.xml.gz');
    const text = (await gpuwise(['smi', '--from', f])).stdout;
    const md = (await gpuwise(['smi', '--md', '--from', f])).stdout;
    const html = join(dir, 'smi-membusy.html');
    await gpuwise(['smi', '--from', f, '--html', html]);
    const page = readFileSync(html, 'utf8');
    expect(text).toMatch(/ {2}Util {2}Mem busy {2}/);
    expect(md).toMatch(/\| Util \| Mem busy \|/);
    expect(page).toContain('<th class="num">Mem busy</th>');
    for (const out of [text, md, page]) expect(out).not.toContain('MemBW');
  });

  it('the text shows the memory total the JSON gives, under the same name (issue 47 item 7)', async () => {
    for (const f of ['query-gpu.busy.csv', 'nvidia-smi-q.busy.xml.gz', 'nvidia-smi.busy.txt']) {
      const text = await gpuwise(['smi', '--from', fixturePath(f)]);
      const json = JSON.parse((await gpuwise(['smi', '--json', '--from', fixturePath(f)])).stdout);
      const head = text.stdout.split('\n').find((l) => l.startsWith('GPU  Name'))!;
      expect(head).toContain('Memory used / usable');
      for (const g of json.gpus as { index: number; memoryUsedBytes: number; memoryTotalBytes: number; memoryReservedBytes: number | null; memoryUsableBytes: number }[]) {
        // One figure: the usable total (NVML's total less the driver's reserve, torch's total_memory) in every view.
        expect(g.memoryUsableBytes).toBe(g.memoryTotalBytes - (g.memoryReservedBytes ?? 0));
        const row = text.stdout.split('\n').find((l) => l.startsWith(`  ${g.index}  `))!;
        expect(row).toContain(` / ${(g.memoryUsableBytes / 2 ** 30).toFixed(1)} GiB`);
      }
    }
  });

  it('reads gzip XML and prints the table', async () => {
    const r = await gpuwise(['smi', '--from', fixturePath('nvidia-smi-q.busy.xml.gz')]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/0\s+NVIDIA H200\s+00000000:00:06\.0\s+6\.58 GiB \/ 139\.8 GiB\s+100%/);
  });

  it('bad input: one line naming the file, exit 2', async () => {
    const bad = join(dir, 'truncated.xml');
    const xml = gunzipSync(readFileSync(fixturePath('nvidia-smi-q.busy.xml.gz'))).toString();
    writeFileSync(bad, xml.slice(0, 20000));
    const cases: [string[], RegExp][] = [
      [['smi', '--from', bad], new RegExp(`^gpuwise smi: ${bad}: malformed XML at line \\d+: `)],
      [['smi', '--from', join(dir, 'nope.csv')], /^gpuwise smi: .*nope\.csv: no such file$/],
      [['smi', '--from', fixturePath('query-compute-apps.busy.csv')], /only compute-app listings/],
      [['smi', '--bogus'], /^gpuwise smi: unknown option '--bogus'/],
      [['select', '-n', 'two', '--from', fixturePath('query-gpu.busy.csv')], /--count: 'two' is not a positive whole number/],
      [['select', '--min-free', 'lots', '--from', fixturePath('query-gpu.busy.csv')], /--min-free: 'lots' is not a size/],
    ];
    for (const [args, re] of cases) {
      const r = await gpuwise(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(oneLine(r.stderr), r.stderr).toBe(true);
      expect(r.stderr.trimEnd()).toMatch(re);
    }
  });

  // Exit 9 (nvidia-smi's code for no driver), not the usage code 2 (issue 16).
  it('no driver: a clear line and exit 9', async () => {
    const r = await gpuwise(['smi'], NO_GPU);
    expect(r.code).toBe(9);
    expect(oneLine(r.stderr)).toBe(true);
    expect(r.stderr).toMatch(/^gpuwise smi: no NVIDIA GPU can be read here: cannot load .*; nvidia-smi is not installed/);
    const m = await gpuwise(['monitor', '--json-stream', '--count', '1'], NO_GPU);
    expect(m.code).toBe(9);
  });
});

describe('select', () => {
  it("prints CUDA_VISIBLE_DEVICES for the best GPUs and respects the caller's", async () => {
    // Both GPUs at 100 %: busy, not free (issue 47 item 7), unless --max-util accepts them.
    const from = ['--from', fixturePath('query-gpu.busy.csv'), '--max-util', '100'];
    const none = await gpuwise(['select', '-n', '1', '--from', fixturePath('query-gpu.busy.csv')]);
    expect(none.code).toBe(1);
    expect(none.stdout).toBe('');
    expect(none.stderr).toMatch(/only 0 of 1 GPUs qualify \(GPU 0: busy \(100% utilisation; --max-util 100 accepts it\); GPU 1: busy/);
    expect((await gpuwise(['select', '-n', '1', ...from])).stdout).toBe('0\n'); // GPU 0 has more free memory
    expect((await gpuwise(['select', '-n', '1', ...from], { CUDA_VISIBLE_DEVICES: '1' })).stdout).toBe('1\n');
    expect((await gpuwise(['select', '-n', '2', '--format', 'uuid', ...from])).stdout).toBe(
      'GPU-0f176bdc-3405-3276-cdfa-544f010a401d,GPU-d9051a70-4846-2428-26d9-f7d1a0a353ea\n',
    );
    const busy = await gpuwise(['select', '-n', '1', '--max-util', '10', '--from', fixturePath('query-gpu.busy.csv')]);
    expect(busy.code).toBe(1);
    expect(busy.stderr).toMatch(/only 0 of 1 GPUs qualify \(GPU 0: too busy; GPU 1: too busy\)/);
  });

  it('runs a command with the choice and returns its exit status', async () => {
    const r = await gpuwise([
      'select',
      '-n',
      '2',
      '--from',
      fixturePath('query-gpu.idle.csv'),
      '--',
      process.execPath,
      '-e',
      'console.log(process.env.CUDA_VISIBLE_DEVICES); process.exit(7)',
    ]);
    expect(r.stdout).toBe('0,1\n');
    expect(r.code).toBe(7);
  });
});

describe('live commands on a fake NVML', () => {
  const env = () => ({ GPUWISE_NVML_LIB: fake! });

  it('monitor --json-stream writes one snapshot per line', async ({ skip }) => {
    if (!fake) skip();
    const r = await gpuwise(['monitor', '--json-stream', '--count', '3', '--interval', '20ms'], env());
    expect(r.code).toBe(0);
    const lines = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines).toHaveLength(3);
    expect(lines[0].source).toBe('nvml');
    expect(lines[2].gpus[0].processes).toHaveLength(20);
    expect(lines[2].timestampMs).toBeGreaterThan(lines[0].timestampMs);
  });

  it('monitor refuses a non-terminal without --json-stream', async () => {
    const r = await gpuwise(['monitor'], NO_GPU);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/needs a terminal; use --json-stream/);
  });

  it('record survives kill -9: the samples already written are read back', async ({ skip }) => {
    if (!fake) skip();
    const out = join(dir, 'killed.sqlite');
    const child = spawn(process.execPath, [BUNDLE, 'record', '--interval', '20ms', '--out', out], {
      env: { ...process.env, ...env() },
      stdio: 'pipe',
    });
    // Wait until some samples are surely committed (the WAL grows by about 4 KiB per sample), at most 15 s.
    for (let t = 0; t < 150 && (!existsSync(`${out}-wal`) || statSync(`${out}-wal`).size < 80_000); t++)
      await new Promise((r) => setTimeout(r, 100));
    // While it records, a reader is told so (and the file is not touched).
    const live = await gpuwise(['smi', '--replay', out]);
    expect(live.code).toBe(2);
    expect(live.stderr).toMatch(/is being recorded right now by gpuwise record \(pid \d+\)/);
    child.kill('SIGKILL');
    await new Promise((r) => child.on('exit', r));
    expect(existsSync(`${out}.lock`)).toBe(true); // the stale lock a killed writer leaves
    const r = await gpuwise(['smi', '--replay', out, '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/the recorder was killed/);
    const j = JSON.parse(r.stdout);
    expect(j.recording.samples).toBeGreaterThanOrEqual(5);
    expect(j.recording.recoveredFromCrash).toBe(true);
    expect(j.summary[0]).toMatchObject({ index: 0, utilizationGpuMeanPercent: 50, memoryUsedMaxBytes: 1000 * 2 ** 20 });
    expect(j.snapshot.source).toBe('replay');
    // Read again: still readable, same samples (the reader never writes).
    const again = JSON.parse((await gpuwise(['smi', '--replay', out, '--json'])).stdout);
    expect(again.recording.samples).toBe(j.recording.samples);
  }, 30_000);

  it('record -- CMD records for the life of the command, returns its status, never overwrites', async ({ skip }) => {
    if (!fake) skip();
    const out = join(dir, 'cmd.sqlite');
    const r = await gpuwise(
      ['record', '--interval', '50ms', '--out', out, '--', process.execPath, '-e', 'setTimeout(() => process.exit(3), 600)'],
      env(),
    );
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/gpuwise record: \d+ samples in/);
    expect(existsSync(`${out}.recorder`)).toBe(false);
    const j = JSON.parse((await gpuwise(['smi', '--replay', out, '--json', '--at', '0.2s'])).stdout);
    expect(j.recording.samples).toBeGreaterThanOrEqual(5);
    expect(j.recording.recoveredFromCrash).toBe(false);
    expect(j.snapshot.timestampMs - j.recording.startMs).toBeGreaterThanOrEqual(200);
    const size = statSync(out).size;
    const again = await gpuwise(['record', '--out', out, '--duration', '100ms'], env());
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/already exists; gpuwise never overwrites a file/);
    expect(statSync(out).size).toBe(size);
  }, 30_000);
});

describe('finding koffi at run time', () => {
  it('uses GPUWISE_KOFFI_DIR when no node_modules sits next to the bundle', async ({ skip }) => {
    if (!fake) skip();
    const alone = join(makeScratch('alone'), 'gpuwise.mjs');
    copyFileSync(BUNDLE, alone);
    const runAlone = (env: Record<string, string>) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
        execFile(
          process.execPath,
          [alone, 'smi', '--json'],
          { env: { ...process.env, GPUWISE_NVIDIA_SMI: '/nonexistent', ...env } },
          (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
        ),
      );
    const without = await runAlone({ GPUWISE_NVML_LIB: fake! });
    expect(without.code).toBe(9); // no GPU can be read: the no-GPU code (issue 16)
    expect(without.stderr).toMatch(/koffi \(the FFI used to call NVML\) could not be loaded/);
    const withDir = await runAlone({
      GPUWISE_NVML_LIB: fake!,
      GPUWISE_KOFFI_DIR: join(new URL('../../', import.meta.url).pathname, 'node_modules'),
    });
    expect(withDir.code, withDir.stderr).toBe(0);
    expect(JSON.parse(withDir.stdout).source).toBe('nvml');
  });
});

describe('replay of bad files', () => {
  it('gives one line and exit 2 for non-SQLite, foreign SQLite and corrupt files', async () => {
    const notDb = join(dir, 'x.sqlite');
    writeFileSync(notDb, 'hello');
    const r1 = await gpuwise(['smi', '--replay', notDb]);
    expect([r1.code, oneLine(r1.stderr)]).toEqual([2, true]);
    expect(r1.stderr).toMatch(/not a SQLite file/);
    const corrupt = join(dir, 'corrupt.sqlite');
    writeFileSync(corrupt, Buffer.concat([Buffer.from('SQLite format 3\0'), Buffer.alloc(4096, 0xab)]));
    const r2 = await gpuwise(['smi', '--replay', corrupt]);
    expect([r2.code, oneLine(r2.stderr)]).toEqual([2, true]);
    expect(r2.stderr).toMatch(/corrupt\.sqlite: /);
    const r3 = await gpuwise(['smi', '--replay', join(dir, 'missing.sqlite')]);
    expect(r3.code).toBe(2);
  });
});
