/**
 * The parallel loader needs a bundled file to start workers from, so this test
 * bundles the CLI into a temporary folder and runs it on a real trace, with
 * one and with several threads: the reports must agree.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { build } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a build script in JavaScript, without types
import { cliBuildOptions } from '../../scripts/buildConfig.mjs';
import { tracePath } from '../helpers/fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'gpuwise-bundle-'));
const bundle = join(dir, 'gpuwise.mjs');

beforeAll(async () => {
  await build({ ...cliBuildOptions(bundle), logLevel: 'error' });
});

/** Runs analyze; returns the report and how many segments the event scanner read (0 on one thread). */
function analyzeCounting(file: string, threads: number, env: Record<string, string> = {}): { report: Record<string, unknown>; scanned: number } {
  const r = spawnSync('node', [bundle, 'analyze', '--json', file], {
    env: { ...process.env, GPUWISE_THREADS: String(threads), GPUWISE_DEBUG: '1', ...env },
    maxBuffer: 1 << 26,
    encoding: 'utf8',
  });
  expect(r.status).toBe(0);
  // The parallel path must have run, not fallen back to one parser (which would make the comparison vacuous).
  expect(r.stderr).not.toContain('fell back');
  const scanned = [...r.stderr.matchAll(/parse thread: \d+ segments, (\d+) by the event scanner/g)].reduce((n, m) => n + Number(m[1]), 0);
  return { report: JSON.parse(r.stdout), scanned };
}

function analyze(file: string, threads: number): Record<string, unknown> {
  return analyzeCounting(file, threads).report;
}

type Report = { findings: unknown; metrics: { ranks: { steps: unknown; launch: unknown; gemmShapes: unknown }[] } };

describe('parallel loading in worker threads', () => {
  for (const name of ['ddp_gpt2.rank0', 'mlp_launch_bound']) {
    // Plain files: one thread parses segment by segment, with 2 threads the main thread parses beside one worker, with
    // 3 three workers parse while the main thread reads; gzip: one thread parses while an inflate worker decompresses,
    // and with 2 threads one worker parses while the main thread decompresses. The middle segments go through the WebAssembly event scanner, so this also holds it to the
    // parser's reports.
    it(`${name}: 2 and 3 threads, plain and gzip, give the report of 1`, () => {
      const plain = join(dir, `${name}.json`);
      writeFileSync(plain, gunzipSync(readFileSync(tracePath(name))));
      // The parser alone (one thread also reads large files through the scanner).
      const one = analyzeCounting(tracePath(name), 1, { GPUWISE_NO_WASM: '1' }).report as Report;
      for (const [file, threads] of [
        [plain, 1],
        [plain, 2],
        [plain, 3],
        [tracePath(name), 1],
        [tracePath(name), 2],
      ] as const) {
        const { report, scanned } = analyzeCounting(file, threads);
        const many = report as Report;
        expect(scanned).toBeGreaterThan(0);
        expect(many.findings).toEqual(one.findings);
        expect(many.metrics.ranks[0]!.steps).toEqual(one.metrics.ranks[0]!.steps);
        expect(many.metrics.ranks[0]!.launch).toEqual(one.metrics.ranks[0]!.launch);
        expect(many.metrics.ranks[0]!.gemmShapes).toEqual(one.metrics.ranks[0]!.gemmShapes);
      }
    });
  }

  it('cuts and decodes segments as bytes: names with multi-byte characters all over the file', () => {
    const text = gunzipSync(readFileSync(tracePath('ddp_gpt2.rank0'))).toString('utf8').replaceAll('cutlass::Kernel2', 'cutlass::Kernél2_正規化');
    const file = join(dir, 'utf8.json');
    writeFileSync(file, text);
    const one = analyze(file, 1);
    const two = analyze(file, 2);
    expect(JSON.stringify(two.metrics)).toContain('cutlass::Kernél2_正規化');
    expect(two.metrics).toEqual(one.metrics);
  });

  it('reads invalid UTF-8 with one parser, which says where it was replaced', () => {
    const bytes = gunzipSync(readFileSync(tracePath('ddp_gpt2.rank0')));
    const at = bytes.indexOf('layer_norm', bytes.length >> 1);
    bytes[at + 3] = 0xff;
    const file = join(dir, 'bad-utf8.json');
    writeFileSync(file, bytes);
    const run = (threads: number) =>
      spawnSync('node', [bundle, 'analyze', '--json', file], { env: { ...process.env, GPUWISE_THREADS: String(threads), GPUWISE_DEBUG: '1' }, maxBuffer: 1 << 26, encoding: 'utf8' });
    const two = run(2);
    expect(two.stderr, JSON.stringify(two.stderr)).toContain('fell back: invalid UTF-8');
    const parsed = JSON.parse(two.stdout);
    expect(parsed.inputs[0].warnings.join(' ')).toMatch(/UTF-8/);
    expect(parsed.metrics).toEqual(JSON.parse(run(1).stdout).metrics);
  });

  it('a truncated gzip file: the inflate worker gives up, and the parser reports it as it does alone', () => {
    const gz = readFileSync(tracePath('mlp_launch_bound'));
    const file = join(dir, 'cut.json.gz');
    writeFileSync(file, gz.subarray(0, Math.floor(gz.length * 0.8))); // over 1 MB: read in segments
    const run = (env: Record<string, string>) =>
      spawnSync('node', [bundle, 'analyze', '--json', file], { env: { ...process.env, GPUWISE_DEBUG: '1', ...env }, maxBuffer: 1 << 26, encoding: 'utf8' });
    const withWorker = run({});
    expect(withWorker.stderr).toContain('fell back');
    const alone = run({ GPUWISE_NO_WASM: '1' });
    expect(withWorker.status).toBe(alone.status);
    const report = JSON.parse(withWorker.stdout);
    expect(report.inputs[0].warnings.join(' ')).toMatch(/gzip stream is corrupt or truncated/);
    expect(report).toEqual(JSON.parse(alone.stdout));
  });

  it('falls back to one parser for damaged input and reports it the same way', () => {
    const run = (threads: number) => {
      try {
        execFileSync('node', [bundle, 'analyze', join(dir, 'missing.json')], { env: { ...process.env, GPUWISE_THREADS: String(threads) }, stdio: 'pipe' });
        return 'ok';
      } catch (e) {
        return String((e as { stderr: Buffer }).stderr);
      }
    };
    expect(run(3)).toBe(run(1));
  });
});
