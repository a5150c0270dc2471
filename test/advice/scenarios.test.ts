/**
 * Every scenario script in examples/scenarios reproduces one problem on a real
 * GPU and records which finding it must produce (`expect_findings` in its
 * meta file). The traces it wrote on an H200 are checked here.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { diagnose } from '../../src/advice/engine.js';
import { loadTrace } from '../../src/io/loadTrace.js';
import { analyzeTrace, collectiveTimings } from '../../src/trace/metrics/index.js';
import { TRACES } from '../helpers/fixtures.js';

const DIR = `${TRACES}scenarios/`;
const metas = readdirSync(DIR).filter((f) => f.endsWith('.meta.json'));
const scenarios = new Map<string, { files: string[]; expect: string[] }>();
for (const f of metas) {
  const meta = JSON.parse(readFileSync(DIR + f, 'utf8'));
  if (!Array.isArray(meta.expect_findings)) continue; // a sweep's medians (model_parallel.micro_sweep), no trace of its own
  const entry = scenarios.get(meta.scenario) ?? { files: [] as string[], expect: meta.expect_findings as string[] };
  entry.files.push(DIR + f.replace('.meta.json', '.trace.json.gz'));
  scenarios.set(meta.scenario, entry);
}

describe('scenario traces recorded on H200s', () => {
  it('has the scenarios', () => {
    expect(scenarios.size).toBeGreaterThanOrEqual(11);
  });
  for (const [name, { files, expect: ids }] of scenarios) {
    it(`${name} -> ${ids.join(', ')}`, async () => {
      const ranks = await Promise.all(
        files.sort().map(async (f) => {
          const model = await loadTrace(f);
          const metrics = analyzeTrace(model);
          return { metrics, collectives: collectiveTimings(model, metrics.steps) };
        }),
      );
      const findings = diagnose(
        ranks.map((r) => r.metrics),
        ranks.map((r) => r.collectives),
      );
      for (const id of ids) {
        const f = findings.find((x) => x.id === id);
        expect(f, `${id} in ${findings.map((x) => x.id).join(',')}`).toBeDefined();
        // On several ranks a fix is judged on the job: one that leaves the binding rank as it is gains nothing, and
        // says so (ddp_small_buckets: rank 1's launches set the pace; rank 0's exposed communication is its wait).
        const elsewhere = files.length > 1 && /still sets the pace/.test(f!.estimatedGain?.arithmetic ?? '');
        if (id !== 'memory-near-limit' && !elsewhere) expect(['high', 'medium', 'low']).toContain(f!.severity);
      }
      if (files.length > 1) {
        // One baseline: every step gain starts from the job's measured step, the slowest rank's.
        const jobStepNs = Math.max(...ranks.map((r) => r.metrics.perStep.durNs));
        for (const f of findings.filter((x) => x.estimatedGain))
          expect(f.estimatedGain!.stepTimeNs / jobStepNs, `${f.id} starts from the job's step`).toBeCloseTo(1, 2);
      }
    });
  }
});

describe('windows begun at different steps (doctor): their waits are the profiler\'s, so no finding is judged on a job of them', () => {
  it('ddp_small_buckets with windowsApart: each finding keeps its own rank\'s gain', async () => {
    const files = ['rank0', 'rank1'].map((r) => `${DIR}ddp_small_buckets.${r}.trace.json.gz`);
    const ranks = await Promise.all(
      files.map(async (f) => {
        const model = await loadTrace(f);
        const metrics = analyzeTrace(model);
        return { metrics, collectives: collectiveTimings(model, metrics.steps) };
      }),
    );
    const metrics = ranks.map((r) => r.metrics);
    const apart = diagnose(metrics, ranks.map((r) => r.collectives), metrics.map(() => ({ askedHalf: null, windowsApart: true })));
    const launch = apart.find((f) => f.id === 'launch-bound')!;
    // rank 1's own step (42.0 ms), not the job's 46.1 ms
    expect(launch.estimatedGain!.stepTimeNs).toBeCloseTo(metrics[1]!.perStep.durNs, -3);
  });
});
