/**
 * A notebook's memory names the cell (issue 47): an OOM captured in IPython used to put its 64 GiB on
 * `core/interactiveshell.py:3378 (run_code)` and a backward's allocation on `gpuwise/probe.py:422 (backward)`, frames
 * between the user's cell and torch that nobody changes. On the real snapshot of a notebook OOM on an H100 (cells named
 * `<ipython-input-N-HASH>`, IPython outside site-packages, gpuwise's probe of the time), and on a variant of it made by
 * renaming its frames as ipykernel 6+ and an installed gpuwise name them (`/tmp/ipykernel_PID/HASH.py`, IPython and the
 * probe package in site-packages).
 */
import { describe, expect, it } from 'vitest';
import { unpickle } from '../../src/memory/pickle.js';
import type { PickleValue } from '../../src/memory/pickle.js';
import { analyze } from '../../src/memory/report.js';
import { toSnapshot } from '../../src/memory/snapshot.js';
import { renderText } from '../../src/memory/render/text.js';
import { analyzeFixture, fixtureBytes } from './helpers.js';

const TOOLING = /interactiveshell|async_helpers|IPython|ipykernel_launcher|gpuwise[\\/]/;

/** Every source the report names, at the peak and at the failure. */
function sources(a: ReturnType<typeof analyzeFixture>) {
  return [...a.report.peak.bySource, ...a.report.final.bySource, ...(a.report.oom?.live.bySource ?? [])];
}

/** The real snapshot with its frames renamed in place (the pickle shares frame dicts: each renamed once, idempotently). */
function renamed(rename: (filename: string) => string): ReturnType<typeof analyzeFixture> {
  const raw = unpickle(fixtureBytes('notebook_oom_h100.pickle.gz'));
  const walk = (v: PickleValue): void => {
    if (Array.isArray(v)) for (const x of v) walk(x);
    else if (v && typeof v === 'object' && !(v instanceof Uint8Array)) {
      const d = v as Record<string, PickleValue>;
      if (typeof d.filename === 'string') d.filename = rename(d.filename);
      for (const x of Object.values(d)) if (x && typeof x === 'object') walk(x);
    }
  };
  walk(raw);
  return analyze(toSnapshot(raw), { path: 'notebook_oom_h100 (ipykernel frames)' });
}

describe("a notebook snapshot's sources are the cells, not IPython's or gpuwise's frames", () => {
  it('IPython cells (<ipython-input-N-HASH>): the 64 GiB list of cell 5, line 7', () => {
    const a = analyzeFixture('notebook_oom_h100.pickle.gz');
    const top = a.report.oom!.live.bySource[0]!;
    expect(top).toMatchObject({ source: '<ipython-input-5-35da6c574c60>:7', shortSource: 'notebook cell <ipython-input-5-35da6c574c60>:7', kind: 'user' });
    expect(top.bytes).toBe(64 * 2 ** 30);
    for (const s of sources(a)) expect(s.source).not.toMatch(TOOLING);
    // the backward's allocations (through the probe's backward wrapper) are the cell's `loss.backward()`, line 4
    expect(sources(a).map((s) => s.source)).toContain('<ipython-input-5-35da6c574c60>:4');
    const text = renderText(a.report);
    expect(text).toContain('Largest source: notebook cell <ipython-input-5-35da6c574c60>:7 (<module>) holds 64.0 GiB');
    expect(text).not.toMatch(/run_code|probe\.py/);
  });

  it('ipykernel cells (/tmp/ipykernel_PID/HASH.py), IPython and gpuwise installed in site-packages', () => {
    const site = '/opt/conda/lib/python3.12/site-packages';
    const a = renamed((f) =>
      f
        .replace(/^<ipython-input-(\d+)-[0-9a-f]+>$/, (_, n: string) => `/tmp/ipykernel_4242/${2871352700 + Number(n)}.py`)
        .replace(/^\/tmp\/site\/IPython\//, `${site}/IPython/`)
        .replace(/^\/work\/main\/python\/gpuwise\/probe\.py$/, `${site}/gpuwise/probe/hooks.py`)
        .replace(/^\/work\/main\/python\/gpuwise\//, `${site}/gpuwise/`),
    );
    const top = a.report.oom!.live.bySource[0]!;
    expect(top).toMatchObject({ source: '/tmp/ipykernel_4242/2871352705.py:7', shortSource: 'notebook cell ipykernel_4242/2871352705.py:7', kind: 'user' });
    for (const s of sources(a)) expect(s.source).not.toMatch(TOOLING);
  });
});
