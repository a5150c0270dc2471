/**
 * The one build definition (scripts/buildConfig.mjs): the npm bundle and the pip wheel's CommonJS bundle are built
 * from it, and both carry what a page needs. The wheel's bundle is built here as `npm run wheel` builds it and run
 * from a folder with no node_modules (as in the installed wheel): it writes a page with uPlot inline. The whole
 * wheel, installed, runs every command's outputs in scripts/checkInstalled.mjs (CI).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a build script in JavaScript, without types
import { cliBuildOptions, seaBuildOptions } from '../../scripts/buildConfig.mjs';
import { REPO } from '../doctor/helpers.js';

const tmp = mkdtempSync(join(tmpdir(), 'gpuwise-build-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const UPLOT_CODE = readFileSync(join(REPO, 'node_modules', 'uplot', 'dist', 'uPlot.iife.min.js'), 'utf8').slice(0, 200);

describe('scripts/buildConfig.mjs', () => {
  it('the wheel bundle differs from the npm bundle only in format, output, banner and import.meta.url', () => {
    const esm = cliBuildOptions();
    const sea = seaBuildOptions(join(tmp, 'x.cjs'));
    const { format, outfile, banner, define, ...same } = sea;
    expect(format).toBe('cjs');
    expect(same).toEqual(Object.fromEntries(Object.entries(esm).filter(([k]) => !['format', 'outfile', 'banner', 'define'].includes(k))));
    expect(define).toEqual({ ...esm.define, 'import.meta.url': '__gwMetaUrl' });
  });

  it("the wheel's bundle, run where no node_modules is, writes a memory page with uPlot inline", async () => {
    const bundle = join(tmp, 'gpuwise.cjs');
    await build(seaBuildOptions(bundle));
    const page = join(tmp, 'memory.html');
    const snapshot = join(REPO, 'test', 'fixtures', 'memory', 'gpu', 'memory_oom_activations.pickle.gz');
    const r = spawnSync(process.execPath, [bundle, 'memory', snapshot, '--html', page], { cwd: tmp, encoding: 'utf8' });
    expect(r.stderr).toBe(`gpuwise memory: wrote ${page}\n`);
    expect(r.status).toBe(0);
    expect(readFileSync(page, 'utf8')).toContain(UPLOT_CODE);
  });
});
