/**
 * Trace findings re-based on the run, checked against what the fix really gave: real doctor runs of the examples
 * (examples/train) on 2x H200, their probe records and profiler windows in examples/doctor/runs/h200, and the
 * measured step of each example's --fixed run (fixed.json).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseProbeLines } from '../../src/run/records.js';
import { rebaseGain } from '../../src/doctor/rebase.js';
import { buildDoctorReport } from '../../src/doctor/report.js';
import { loadTrace } from '../../src/io/loadTrace.js';
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

describe('findings re-based on the run (H200 examples)', () => {
  // The expected step after the fix, against the step the fixed script measured: within 25%.
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
      // The run's step when the profiler made the window's step longer (by 2% or more), else the window's.
      const run = r.ranks[0]!.steps.medianS! * 1e9;
      if (g.stepTimeNs !== run) expect(g.stepTimeNs).toBeLessThan(run * 1.02);
      const predicted = g.expectedStepTimeNs / 1e9;
      expect(Math.abs(predicted / fixed[name]! - 1)).toBeLessThan(0.25);
    });
  }
});

describe('rebaseGain', () => {
  const metrics = { perStep: { busyNs: 18e6 }, steps: [] } as unknown as Parameters<typeof rebaseGain>[1];
  const gain = { stepTimeNs: 230e6, expectedStepTimeNs: 33e6, savedFraction: 1 - 33 / 230, arithmetic: 'x' };
  it('removes the profiler cost but not below the GPU work the estimate kept', () => {
    const g = rebaseGain(gain, metrics, 200e6);
    expect(g.stepTimeNs).toBe(200e6);
    expect(g.expectedStepTimeNs).toBe(18e6); // 33 - 30 = 3, floored at the GPU busy 18
    expect(g.savedFraction).toBeCloseTo(0.91, 2);
    expect(rebaseGain({ ...gain, expectedStepTimeNs: 10e6 }, metrics, 200e6).expectedStepTimeNs).toBe(10e6); // kept: below busy already
  });
  it('leaves the estimate alone when the window was not slower than the run', () => {
    expect(rebaseGain(gain, metrics, 229e6)).toBe(gain);
    expect(rebaseGain(gain, metrics, 260e6)).toBe(gain);
  });
});
