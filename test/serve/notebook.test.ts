/**
 * The committed notebook (examples/notebook/gpuwise.ipynb) executed by a real kernel (Debian's python3-nbclient,
 * python3-ipykernel, python3-torch on CPU), as a person runs it top to bottom: it loads the extension, shows the
 * live panel, trains a small model in a `%%gpuwise doctor` cell, runs out of memory in another (simulated without
 * a GPU), and explains a snapshot. The test reads the outputs the notebook displayed and the history the runs
 * were saved in. Skipped locally without nbclient/ipykernel/torch; under CI=true that fails instead.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { listRuns, loadRun } from '../../src/io/runStore.js';
import { buildBundle } from '../cliBundle.js';
import { spawnAsync } from '../helpers/spawnAsync.js';
import { OOM_SNAPSHOT, ROOT } from './fixtures.js';
import { scratch } from './helpers.js';

const PY = '/usr/bin/python3';
function kernelMissing(): string | null {
  try {
    execFileSync(PY, ['-c', 'import nbclient, ipykernel, torch'], { stdio: 'pipe' });
    return null;
  } catch {
    return process.env.CI === 'true' ? null : `${PY} lacks nbclient, ipykernel or torch: notebook test skipped (apt-get install python3-nbclient python3-ipykernel python3-torch)`;
  }
}
const missing = kernelMissing();
if (missing) console.warn(`gpuwise notebook test: ${missing}`);

interface Output {
  output_type: string;
  name?: string;
  text?: string | string[];
  ename?: string;
  data?: Record<string, string | string[]>;
}
const joined = (v: string | string[] | undefined) => (Array.isArray(v) ? v.join('') : (v ?? ''));

describe.skipIf(missing !== null)('the notebook, executed by a real kernel', () => {
  let cells: { source: string; outputs: Output[] }[];
  let store: string;

  beforeAll(async () => {
    const bundle = await buildBundle('gpuwise-notebook');
    const work = scratch('notebook');
    store = join(work, 'store');
    const out = join(work, 'out.ipynb');
    const r = await spawnAsync(PY, [join(ROOT, 'test', 'serve', 'run_notebook.py'), join(ROOT, 'examples', 'notebook', 'gpuwise.ipynb'), out, '300'], {
      cwd: work,
      env: { ...process.env, PYTHONPATH: join(ROOT, 'python'), GPUWISE_CLI: `${process.execPath} ${bundle}`, GPUWISE_STORE: store, GPUWISE_NOTEBOOK_SNAPSHOT: OOM_SNAPSHOT, GPUWISE_NOTEBOOK_PROXY: '0', PYDEVD_DISABLE_FILE_VALIDATION: '1' },
      timeout: 400_000,
    });
    if (r.status !== 0) throw new Error(`the notebook did not run: ${r.stderr || r.error}`);
    cells = (JSON.parse(readFileSync(out, 'utf8')).cells as { cell_type: string; source: string | string[]; outputs: Output[] }[])
      .filter((c) => c.cell_type === 'code')
      .map((c) => ({ source: joined(c.source), outputs: c.outputs }));
  }, 420_000);

  const cell = (start: string) => {
    const c = cells.find((x) => x.source.startsWith(start));
    if (!c) throw new Error(`no cell starting with ${start}`);
    return c;
  };
  const shown = (c: { outputs: Output[] }, mime: string) => c.outputs.filter((o) => o.output_type === 'display_data').map((o) => joined(o.data?.[mime]));

  it('%gpuwise monitor embeds the live panel of the server it started', () => {
    const html = shown(cell('%gpuwise monitor'), 'text/html').join('');
    expect(html).toMatch(/<iframe title="gpuwise live GPUs" src="http:\/\/127\.0\.0\.1:\d+\/live-panel\?token=[\w-]+"/);
  });

  it('%%gpuwise doctor profiles the training cell and shows the doctor report when it ends, saved in the history', async () => {
    const c = cell('%%gpuwise doctor --profile-at 5');
    expect(c.outputs.filter((o) => o.output_type === 'error')).toEqual([]);
    const text = shown(c, 'text/plain').join('\n');
    // 4096 samples in batches of 128, two epochs: 64 optimizer steps, AdamW built in the cell before.
    expect(text).toContain('Outcome: completed (exit code 0)');
    expect(text).toMatch(/steps: 64 steps \(\d+ timed\), median [\d.]+ ms/);
    expect(text).toContain('optimizer AdamW');
    expect(text).toMatch(/saved as run (\S+)/);
    const html = shown(c, 'text/html').join('');
    expect(html).toContain('<iframe title="gpuwise doctor report"');
    expect(html).toContain('&lt;h1&gt;gpuwise doctor&lt;/h1&gt;');
    const id = /saved as run (\S+)/.exec(text)![1]!;
    const { report } = await loadRun(store, id);
    expect(report.ranks[0]!.steps.steps).toBe(64);
    expect(report.ranks[0]!.steps.stepSource).toBe('optimizer');
    expect(report.run.command[0]).toBe('%%gpuwise doctor --profile-at 5 --profile-steps 3');
  });

  it('an out-of-memory error in a doctor cell is explained in its report and the kernel keeps running', async () => {
    const c = cell('%%gpuwise doctor --profile-steps 0');
    expect(c.outputs.some((o) => o.output_type === 'error' && o.ename === 'OutOfMemoryError')).toBe(true);
    const text = shown(c, 'text/plain').join('\n');
    expect(text).toMatch(/Outcome: ran out of GPU memory on rank 0 in step 5/);
    const after = cell('import gpuwise, os');
    expect(after.outputs.filter((o) => o.output_type === 'error')).toEqual([]);
    expect(joined(after.outputs.find((o) => o.name === 'stdout')?.text)).toContain('kernel still running; model output (2, 10)');
    const runs = await listRuns(store, null);
    expect(runs.map((r) => r.outcome).sort()).toEqual(['completed', 'out-of-memory']);
  });

  it('gpuwise.memory_report() explains a snapshot inline', () => {
    const c = cell('import gpuwise, os');
    const html = shown(c, 'text/html').join('');
    expect(html).toContain('<iframe title="gpuwise memory report"');
    expect(html).toMatch(/Out of memory caused by fragmentation/);
  });
});
