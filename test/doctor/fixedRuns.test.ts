/**
 * Every finding's expected step is its fix applied to the run's pipeline (src/pace/): checked against what the fix
 * really gave, on real doctor runs of the examples (examples/train) on 2x H200, their probe records and profiler
 * windows in examples/doctor/runs/h200, and the measured step of each example's --fixed run (fixed.json).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildDoctorReport } from '../../src/doctor/report.js';
import { loadTrace } from '../../src/io/loadTrace.js';
import { parseProbeLines } from '../../src/run/records.js';
import { analyzeTrace } from '../../src/trace/metrics/index.js';
import { doctorInput } from './input.js';

const RUNS = join(__dirname, '..', '..', 'examples', 'doctor', 'runs', 'h200');
const fixed = JSON.parse(readFileSync(join(RUNS, 'fixed.json'), 'utf8')).fixedMedianStepS as Record<string, number>;

async function doctorReport(name: string) {
  const { records } = parseProbeLines(readFileSync(join(RUNS, name, 'probe.jsonl'), 'utf8'));
  const path = join(RUNS, name, 'trace.json.gz');
  const metrics = analyzeTrace(await loadTrace(path));
  return buildDoctorReport(
    doctorInput(records, { command: ['python3', `examples/train/${name}.py`], runDir: join(RUNS, name), traces: [{ rank: 0, path, metrics, collectives: null, error: null }] }),
  );
}

describe('expected steps against the fixed runs (H200 examples)', () => {
  // The expected step after the fix, against the step the fixed script measured: within 25% (errors in docs/validation/doctor-tests.md).
  for (const [name, id] of [
    ['starved_dataloader', 'dataloader-bound'],
    ['host_sync', 'host-sync'],
    ['fp32_matmul', 'no-tensor-cores'],
    ['dataparallel', 'dataparallel'],
    ['accum_no_sync', 'ddp-accum-without-no-sync'],
  ] as const) {
    it(`${name}: ${id} predicts the fixed run's step`, async () => {
      const r = await doctorReport(name);
      expect(r.ranks[0]?.steps.timing).toBe('gpu');
      const f = r.findings.find((x) => x.id === id);
      expect(f?.estimatedGain).toBeTruthy();
      const g = f!.estimatedGain!;
      // the gain is on the run's own mean step, outside the profiler
      expect(g.stepTimeNs).toBeCloseTo(r.ranks[0]!.steps.meanS! * 1e9, 0);
      const predicted = g.expectedStepTimeNs / 1e9;
      expect(Math.abs(predicted / fixed[name]! - 1), `predicted ${predicted}, measured ${fixed[name]}`).toBeLessThan(0.25);
    });
  }

  it('starved_dataloader: the fixed script made two of the plan\'s fixes (workers, pinned non-blocking copies); the plan after both', async () => {
    const r = await doctorReport('starved_dataloader');
    const plan = r.pace!.plan;
    expect(plan.steps.slice(0, 2).map((s) => s.id)).toEqual(['dataloader-bound', 'pageable-h2d']);
    expect(plan.steps[0]!.bound).toBe('gpu');
    const predicted = plan.steps[1]!.expectedStepNs / 1e9;
    expect(Math.abs(predicted / fixed.starved_dataloader! - 1), `predicted ${predicted}`).toBeLessThan(0.15);
  });
});
