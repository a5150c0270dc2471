/**
 * Steps after the profiler window that CUPTI slowed (issue 27): Kineto leaves CUPTI attached once a profiler stops,
 * and every launch after doctor's window pays its callback. On real H200 records of examples/levers: a compiled
 * ResNet-50 whose steps ran 25.5 ms before the window and 33.7 ms after it (26-27 ms plainly) takes its statistics
 * from the steps before; a GAN fed by a DataLoader (stalls every few steps), a run whose window's stop detached CUPTI,
 * a run slower after the window whose stepping thread's CPU time did not grow (CUPTI's callbacks run on that thread),
 * and a window on a CPU run (no GPU timing, no CUPTI) keep every step.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { groupProcesses } from '../../src/doctor/stages/records.js';
import { parseProbeLines, type ProbeRecord } from '../../src/run/records.js';
import { gpuStepTimesOf, stepStats } from '../../src/run/steps.js';
import { REPO } from '../doctor/helpers.js';

const LEVERS = join(REPO, 'examples', 'levers', 'runs', 'h200');
const recordsOf = (dir: string): ProbeRecord[] => parseProbeLines(readFileSync(join(dir, 'probe.jsonl'), 'utf8')).records;
const statsOf = (records: ProbeRecord[], cuptiDetached = false) => {
  const p = groupProcesses(records)[0]!;
  return stepStats(p.steps, gpuStepTimesOf(p.records), [], cuptiDetached);
};

describe('steps after the profiler window', () => {
  it('a compiled CNN slowed 32% after the window: the statistics are the steady steps before it', () => {
    const records = recordsOf(join(LEVERS, 'compiled_cnn_probe2'));
    const st = statsOf(records);
    expect(st.slowedAfterWindow).not.toBeNull();
    expect(st.slowedAfterWindow!.slowdown).toBeGreaterThan(0.25);
    expect(st.slowedAfterWindow!.stepsBefore).toBeGreaterThanOrEqual(8);
    expect(st.measuredSteps).toBe(st.slowedAfterWindow!.stepsBefore);
    const window = records.filter((r) => r.type === 'step' && r.profiled).map((r) => (r as { step: number }).step);
    expect(st.steadyFromStep! + st.measuredSteps - 1).toBeLessThan(Math.min(...window));
    expect(st.slowedAfterWindow!.windowFirstStep).toBe(Math.min(...window));
    expect(st.meanS! * 1e3).toBeGreaterThan(24);
    expect(st.meanS! * 1e3).toBeLessThan(28);
    // The same records, said to have detached CUPTI: every step after the window counts.
    const kept = statsOf(records, true);
    expect(kept.slowedAfterWindow).toBeNull();
    expect(kept.meanS! * 1e3).toBeGreaterThan(31);
  });

  it('a loop fed by a DataLoader keeps its steps (prefetched batches at the start, stalls that need the whole run)', () => {
    const st = statsOf(recordsOf(join(LEVERS, 'gan_fakedata')));
    expect(st.slowedAfterWindow).toBeNull();
    expect(st.measuredSteps).toBeGreaterThan(300);
  });

  it("slower steps without more of the stepping thread's CPU time are not CUPTI's: every step kept", () => {
    // The compiled CNN's records with the thread's CPU time of every step at the median before the window.
    const records = recordsOf(join(LEVERS, 'compiled_cnn_probe2'));
    const flat = records.map((r) => (r.type === 'step' && r.hostCpuS !== null ? { ...r, hostCpuS: 0.0142 } : r));
    expect(statsOf(records).slowedAfterWindow).not.toBeNull();
    expect(statsOf(flat).slowedAfterWindow).toBeNull();
  });

  it('a run without GPU timing (a CPU run) is never judged so, however its steps move', () => {
    // The compiled CNN's records without their CUDA step times: host timing, no CUPTI to blame.
    const records = recordsOf(join(LEVERS, 'compiled_cnn_probe2')).map((r) => (r.type === 'step' ? { ...r, gpuStepTimes: [] } : r));
    const st = statsOf(records);
    expect(st.timing).toBe('host');
    expect(st.slowedAfterWindow).toBeNull();
  });
});

describe("the backward calls' time in the window and outside it (backwardS)", () => {
  it('gives the medians of the measured steps and of the window steps but its first and last', () => {
    // The GAN's real records, each step given a backward time by hand: 10 ms outside the window, 25 ms in its steps
    // but the first (the profiler's start) and the last (its stop), which are given 100 ms.
    const records = recordsOf(join(LEVERS, 'gan_fakedata'));
    const window = records.filter((r) => r.type === 'step' && r.profiled).map((r) => (r as { step: number }).step);
    expect(window.length).toBeGreaterThanOrEqual(4);
    const [first, last] = [Math.min(...window), Math.max(...window)];
    const timed = records.map((r) =>
      r.type !== 'step' ? r : { ...r, backwardS: !r.profiled ? 0.01 : r.step === first || r.step === last ? 0.1 : 0.025 },
    );
    const st = statsOf(timed);
    expect(st.medianBackwardS).toBeCloseTo(0.01, 6);
    expect(st.medianBackwardProfiledS).toBeCloseTo(0.025, 6);
    // Records of an older probe (no backwardS): neither is told.
    expect(statsOf(records)).toMatchObject({ medianBackwardS: null, medianBackwardProfiledS: null });
  });
});
