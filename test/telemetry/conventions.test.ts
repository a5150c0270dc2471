/**
 * Issue 16's telemetry items, as a user meets them: the plain nvidia-smi table read by --from (or refused
 * naming the formats), no GPU -> a hint and exit 9 from every live command, monitor's -o/--only, colours by
 * load, help key and --replay of a recording.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { takeOnly } from '../../src/cli/monitor.js';
import { GPU_UTIL_THRESHOLDS, History, loadOf, renderMonitor } from '../../src/telemetry/monitorView.js';
import { RecordWriter } from '../../src/io/recordStore.js';
import { parseSmiTable } from '../../src/telemetry/smiTable.js';
import { parseSmiXml } from '../../src/telemetry/smiXml.js';
import { buildBundle, gpuwise } from '../cliBundle.js';
import { fixture, fixturePath } from './fixtures.js';
import { cleanScratch, makeScratch } from './scratch.js';

const NO_GPU = { GPUWISE_NVML_LIB: '/nonexistent/libnvidia-ml.so.1', GPUWISE_NVIDIA_SMI: '/nonexistent/nvidia-smi' };
let dir = '';
let recording = '';

beforeAll(async () => {
  await buildBundle();
  dir = makeScratch('conv');
  // A recording of two real snapshots (busy, then idle), one second apart.
  recording = join(dir, 'rec.sqlite');
  const w = new RecordWriter(recording, { command: 'test' });
  const busy = parseSmiXml(fixture('nvidia-smi-q.busy.xml.gz'));
  const idle = parseSmiXml(fixture('nvidia-smi-q.idle.xml.gz'));
  w.write({ ...busy, timestampMs: 1_700_000_000_000 });
  w.write({ ...idle, timestampMs: 1_700_000_001_000 });
  w.close();
}, 60_000);
afterAll(cleanScratch);

describe('smi --from the plain nvidia-smi table', () => {
  it('reads the table a bug report pastes (H200, driver 580)', async () => {
    const r = await gpuwise(['smi', '--json', '--from', fixturePath('nvidia-smi.busy.txt')]);
    expect(r.code, r.stderr).toBe(0);
    const j = JSON.parse(r.stdout);
    expect(j.source).toBe('smi-table');
    expect(j.driverVersion).toBe('580.159.04');
    expect(j.gpus.map((g: { name: string; memoryUsedBytes: number; utilizationGpuPercent: number }) => [g.name, g.memoryUsedBytes / 2 ** 20, g.utilizationGpuPercent])).toEqual([
      ['NVIDIA H200', 6735, 100],
      ['NVIDIA H200', 8641, 100],
    ]);
    expect(j.gpus[1].processes[0]).toMatchObject({ pid: 621, type: 'C', name: 'python3', usedMemoryBytes: 8632 * 2 ** 20 });
  });

  it.each([
    ['nvidia-smi.v100.470.txt', [['Tesla V100-SXM2...', 0, 16160, 0, 43, 300, 'P0', 0]], 0],
    ['nvidia-smi.rtx4090.535.txt', [['NVIDIA GeForce RTX 4090', 21563, 24564, 97, 287, 450, 'P2', null]], 3],
    [
      'nvidia-smi.t4x2.418.txt',
      [
        ['Tesla T4', 0, 15079, 0, 9, 70, 'P8', 0],
        ['Tesla T4', 14520, 15079, 100, 69, 70, 'P0', 0],
      ],
      1,
    ],
  ] as const)('older and consumer layouts: %s', (name, gpus, processes) => {
    const s = parseSmiTable(fixture(name));
    expect(
      s.gpus.map((g) => [g.name, g.memoryUsedBytes! / 2 ** 20, g.memoryTotalBytes! / 2 ** 20, g.utilizationGpuPercent, g.powerWatts, g.powerLimitWatts, g.performanceState, g.eccErrorsUncorrectedVolatile]),
    ).toEqual(gpus);
    expect(s.gpus.flatMap((g) => g.processes)).toHaveLength(processes);
  });

  it('anything else is refused naming the formats accepted', async () => {
    const p = join(dir, 'notes.txt');
    await import('node:fs').then((fs) => fs.writeFileSync(p, 'GPU looked busy yesterday\n'));
    const r = await gpuwise(['smi', '--from', p]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/notes\.txt: not nvidia-smi output gpuwise reads \(accepted: the plain 'nvidia-smi' table, 'nvidia-smi -q -x' XML, 'nvidia-smi --query-gpu=\.\.\. --format=csv' CSV/);
  });
});

describe('no GPU: a hint and exit 9 (not the usage code)', () => {
  it.each([
    [['smi'], /smi --from FILE reads nvidia-smi output/],
    [['monitor', '--json-stream', '--count', '1'], /monitor --replay FILE\.sqlite plays back/],
    [['select', '-n', '1'], /select --from FILE chooses/],
    [['record', '--out', 'never.sqlite', '--duration', '1s'], /Record on the GPU host/],
    [['exporter', '--port', '0'], /Run the exporter on the GPU host/],
  ])('%j', async (args, hint) => {
    const r = await gpuwise(args, NO_GPU);
    expect(r.code, r.stderr).toBe(9);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/no NVIDIA GPU can be read here/);
    expect(r.stderr).toMatch(hint);
  });
});

describe('monitor', () => {
  it('--replay plays a recording back without a GPU; -o keeps only the GPUs named', async () => {
    const r = await gpuwise(['monitor', '--replay', recording, '--json-stream', '-o', '1'], NO_GPU);
    expect(r.code, r.stderr).toBe(0);
    const frames = r.stdout.trim().split('\n').map((l) => JSON.parse(l));
    expect(frames).toHaveLength(2);
    for (const f of frames) expect(f.gpus.map((g: { index: number }) => g.index)).toEqual([1]);
    expect(frames[1].timestampMs - frames[0].timestampMs).toBe(1000);
  });

  it('-o takes several indices, spaced or comma-separated', () => {
    expect(takeOnly(['-o', '0', '2', '--sort', 'pid'])).toEqual({ argv: ['--sort', 'pid'], only: [0, 2] });
    expect(takeOnly(['--only=1,3'])).toEqual({ argv: [], only: [1, 3] });
    expect(() => takeOnly(['-o', '--sort'])).toThrow(/needs one or more GPU indices/);
  });

  it('colours utilisation and memory by load as nvitop does, only when asked; h shows the keys', () => {
    expect([loadOf(5, GPU_UTIL_THRESHOLDS), loadOf(50, GPU_UTIL_THRESHOLDS), loadOf(100, GPU_UTIL_THRESHOLDS)]).toEqual(['light', 'moderate', 'heavy']);
    const busy = parseSmiXml(fixture('nvidia-smi-q.busy.xml.gz'));
    const history = new History();
    history.push(busy);
    const base = { snapshot: busy, history, sort: 'memory' as const, intervalMs: 1000, cols: 140, rows: 20 };
    const plain = renderMonitor(base);
    const colored = renderMonitor({ ...base, color: true });
    const ESC = '\u001b';
    expect(plain.join('\n')).not.toContain(ESC);
    const row = colored.find((l) => l.includes('util'))!;
    expect(row).toContain(`${ESC}[31mutil 100%`); // 100% busy: red
    // Colour adds escapes only: the visible text and width are the same.
    expect(colored.map((l) => l.replace(new RegExp(`${ESC}\\[\\d+m`, 'g'), ''))).toEqual(plain);
    const help = renderMonitor({ ...base, help: true }).join('\n');
    expect(help).toMatch(/space +pause or resume/);
    expect(help).toMatch(/green below 10%, yellow below 75%, red above/);
  });
});

describe('smi --md and --html FILE', () => {
  it('Markdown tables of the GPUs and processes; an offline page; never over a foreign file', async () => {
    const from = ['--from', fixturePath('nvidia-smi.busy.txt')];
    const md = await gpuwise(['smi', '--md', ...from]);
    expect(md.code, md.stderr).toBe(0);
    expect(md.stdout).toMatch(/^## gpuwise smi/);
    expect(md.stdout).toMatch(/\| 0 \| NVIDIA H200 \| 00000000:00:06\.0 \|/);
    expect(md.stdout).toMatch(/\| 1 \| 621 \|/);
    const out = join(dir, 'smi.html');
    expect((await gpuwise(['smi', '--html', out, ...from])).code).toBe(0);
    const { readFileSync, writeFileSync } = await import('node:fs');
    const html = readFileSync(out, 'utf8');
    expect(html).toMatch(/^<!doctype html>/);
    expect(html).toContain('<td>python3</td>');
    // serve's design (src/serve/pages/smi.ts): the title bar of a standalone report, no script for one snapshot.
    expect(html).toContain('<nav><b>gpuwise</b><span>smi snapshot</span></nav>');
    expect(html).not.toContain('<script');
    const foreign = join(dir, 'mine.html');
    writeFileSync(foreign, 'mine');
    expect((await gpuwise(['smi', '--html', foreign, ...from])).code).toBe(2);
    expect(readFileSync(foreign, 'utf8')).toBe('mine');
  });
});
