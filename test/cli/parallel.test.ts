/**
 * The parallel loader needs a bundled file to start workers from, so this test
 * bundles the CLI into a temporary folder and runs it on a real trace, with
 * one and with several threads: the reports must agree.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';
import { tracePath } from '../helpers/fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'gpuwise-bundle-'));
const bundle = join(dir, 'gpuwise.mjs');

beforeAll(async () => {
  await build({ entryPoints: ['src/cli/bin.ts'], bundle: true, platform: 'node', format: 'esm', outfile: bundle, logLevel: 'error' });
});

function analyze(file: string, threads: number): Record<string, unknown> {
  const out = execFileSync('node', [bundle, 'analyze', '--json', file], { env: { ...process.env, GPUWISE_THREADS: String(threads) }, maxBuffer: 1 << 26 });
  return JSON.parse(out.toString());
}

describe('parallel loading in worker threads', () => {
  for (const name of ['ddp_gpt2.rank0', 'mlp_launch_bound']) {
    it(`${name}: 3 threads give the report of 1`, () => {
      const one = analyze(tracePath(name), 1) as { findings: unknown; metrics: { ranks: { steps: unknown; launch: unknown; gemmShapes: unknown }[] } };
      const three = analyze(tracePath(name), 3) as typeof one;
      expect(three.findings).toEqual(one.findings);
      expect(three.metrics.ranks[0]!.steps).toEqual(one.metrics.ranks[0]!.steps);
      expect(three.metrics.ranks[0]!.launch).toEqual(one.metrics.ranks[0]!.launch);
      expect(three.metrics.ranks[0]!.gemmShapes).toEqual(one.metrics.ranks[0]!.gemmShapes);
    });
  }

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
