/**
 * Snapshots made on a real GPU by examples/scenarios/memory_*.py (see docs/memory.md),
 * kept in test/fixtures/memory/gpu/ with the meta file each script wrote: what torch
 * measured and what gpuwise must find. Inactive until those fixtures are committed.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { diffSnapshots } from '../../src/memory/diff.js';
import { severityRank } from '../../src/findings/rank.js';
import { FIXTURES, analyzeFixture } from './helpers.js';

const DIR = `${FIXTURES}gpu/`;
const metas = existsSync(DIR) ? readdirSync(DIR).filter((f) => f.endsWith('.meta.json')) : [];

interface Meta {
  scenario: string;
  peak_alloc: number;
  peak_reserved: number;
  expect: { finding?: string; findings_at_most?: 'low' | 'medium'; batch?: number; batch_that_trains?: number; diff_with?: string };
}

describe.skipIf(metas.length === 0)('snapshots from a real GPU', () => {
  for (const file of metas) {
    const meta = JSON.parse(readFileSync(DIR + file, 'utf8')) as Meta;
    const snap = `gpu/${meta.scenario}.pickle.gz`;
    it(`${meta.scenario}: totals match torch and the expected findings appear`, () => {
      const { report } = analyzeFixture(snap, meta.expect.batch);
      expect(report.history.complete).toBe(true);
      expect(report.totals.peakAllocatedBytes).toBe(meta.peak_alloc);
      expect(report.totals.peakReservedBytes).toBe(meta.peak_reserved);
      const ids = report.findings.map((f) => f.id);
      if (meta.expect.finding) expect(ids).toContain(meta.expect.finding);
      if (meta.expect.findings_at_most) {
        const worst = Math.min(...report.findings.map((f) => severityRank(f.severity)));
        expect(worst).toBeGreaterThanOrEqual(severityRank(meta.expect.findings_at_most));
      }
      if (meta.expect.batch !== undefined) {
        const f = report.findings.find((x) => x.id === meta.expect.finding)!;
        const fits = f.data.batchThatFits as number;
        expect(fits).toBeGreaterThan(0);
        expect(fits).toBeLessThan(meta.expect.batch);
      }
    });
    if (meta.expect.diff_with) {
      it(`${meta.scenario} -> ${meta.expect.diff_with}: diff names the leaking line`, () => {
        const d = diffSnapshots(analyzeFixture(snap), analyzeFixture(`gpu/${meta.expect.diff_with}.pickle.gz`));
        expect(d.final.totalB).toBeGreaterThan(d.final.totalA);
        // The growth is attributed to where the kept tensors were allocated: the model's forward in
        // the scenarios' shared helper (memory_leak.py only keeps references to them).
        expect(d.final.bySource[0]!.key).toMatch(/scenarios\/memory_common\.py:\d+$/);
        expect(d.final.bySource[0]!.deltaBytes).toBeGreaterThan(200 * 2 ** 20);
      });
    }
  }
});
