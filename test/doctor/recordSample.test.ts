/** The bounded record sample doctor and tune keep in memory (src/doctor/recordSample.ts). */
import { describe, expect, it } from 'vitest';
import { PERIODIC_HEAD, PERIODIC_MIDDLE, RecordSample } from '../../src/doctor/recordSample.js';
import type { ProbeRecord, StepRecord } from '../../src/run/records.js';
import { gpuStepTimesOf, stepStats, stepsInFlightOf } from '../../src/run/steps.js';

const step = (pid: number, s: number, gpu: [number, number][] = []): StepRecord => ({
  v: 1,
  pid,
  rank: null,
  t: s,
  type: 'step',
  step: s,
  stepTimeS: 0.01 + (s % 10) * 0.001,
  dataWaitS: 0,
  batches: 1,
  samples: 8,
  gpuStepTimes: gpu,
  memory: null,
  profiled: false,
});

/** A `cpu` reading `i` seconds into the run, at 10 steps a second, each step 40 ms of the stepping thread's CPU. */
const cpu = (pid: number, i: number): ProbeRecord => ({
  v: 3,
  pid,
  rank: null,
  t: i,
  type: 'cpu',
  step: 10 * i,
  threads: 40,
  processCpuS: 0.5 * i,
  steppingCpuS: 0.4 * i,
  autogradCpuS: 0.08 * i,
  probeCpuS: 0.001 * i,
  otherCpuS: 0.019 * i,
});

describe('RecordSample', () => {
  it("keeps a run of days' periodic readings as an even sample, apart from the cap on other records: its end is kept", () => {
    const rs = new RecordSample({ headSteps: 20, tailSteps: 20, middleSteps: 40, otherRecords: 100 });
    const days = 3 * 24 * 3600; // one reading a second
    for (let i = 0; i < days; i++) rs.add(cpu(5, i));
    rs.add({ v: 3, pid: 5, rank: null, t: days, type: 'end', reason: 'exit', steps: 10 * days, exception: null, gpuStepTimes: [] });
    const kept = rs.records();
    expect(rs.droppedOther).toBe(0);
    expect(kept.find((r) => r.type === 'end')).toBeDefined();
    const readings = kept.filter((r): r is Extract<ProbeRecord, { type: 'cpu' }> => r.type === 'cpu');
    expect(readings.length).toBeLessThanOrEqual(PERIODIC_HEAD + PERIODIC_MIDDLE + 1);
    expect(readings.length).toBeGreaterThan(PERIODIC_MIDDLE / 2);
    // the first readings, then an even stride, and the last reading
    expect(readings.slice(0, PERIODIC_HEAD).map((r) => r.t)).toEqual([...Array(PERIODIC_HEAD).keys()]);
    expect(readings[readings.length - 1]?.t).toBe(days - 1);
    const mid = readings.slice(PERIODIC_HEAD, -1).map((r) => r.t);
    expect(new Set(mid.slice(1).map((t, i) => t - (mid[i] as number))).size).toBe(1);
    // differences between kept readings are the run's: 40 ms of the stepping thread a step
    const a = readings[PERIODIC_HEAD] as Extract<ProbeRecord, { type: 'cpu' }>;
    const b = readings[readings.length - 1] as Extract<ProbeRecord, { type: 'cpu' }>;
    expect((b.steppingCpuS - a.steppingCpuS) / (b.step - a.step)).toBeCloseTo(0.04, 9);
  });

  it('keeps every record of a short run unchanged', () => {
    const rs = new RecordSample();
    const recs: ProbeRecord[] = [];
    for (let s = 1; s <= 100; s++) recs.push(step(1, s, s > 1 ? [[s - 1, 0.02]] : []));
    for (const r of recs) rs.add(r);
    expect(rs.sampled()).toBe(false);
    expect(rs.stepCounts()).toEqual({ 1: 100 });
    // unchanged, GPU times included: each record carries what it carried when it arrived (an earlier build put each
    // step's own time on it, which said the GPU was never behind: 0 steps in flight live, 1 from the same run's files)
    expect(rs.records()).toEqual(recs);
  });

  it('keeps how far the GPU was behind at each kept step when it drops records', () => {
    const limits = { headSteps: 20, tailSteps: 20, middleSteps: 40, otherRecords: 10 };
    const rs = new RecordSample(limits);
    const all: StepRecord[] = [];
    // the GPU's times arrive two steps late, as in the real records
    for (let s = 1; s <= 5000; s++) {
      const r = step(3, s, s > 2 ? [[s - 2, 0.01]] : []);
      all.push(r);
      rs.add(r);
    }
    expect(rs.sampled()).toBe(true);
    const kept = rs.records().filter((r): r is StepRecord => r.type === 'step');
    const full = stepsInFlightOf(all);
    const sampled = stepsInFlightOf(kept);
    for (const r of kept) expect(sampled.get(r.step), `step ${r.step}`).toBe(full.get(r.step));
    // and every kept step still has its GPU time
    const times = gpuStepTimesOf(kept);
    for (const r of kept.slice(0, -2)) expect(times.get(r.step), `step ${r.step}`).toBe(0.01);
  });

  it('bounds a long run: head, tail and an even stride of the middle, with the same statistics', () => {
    const limits = { headSteps: 50, tailSteps: 50, middleSteps: 200, otherRecords: 10 };
    const rs = new RecordSample(limits);
    const all: StepRecord[] = [];
    for (let s = 1; s <= 200_000; s++) {
      const r = step(7, s, s > 2 ? [[s - 2, 0.01 + ((s - 2) % 10) * 0.001]] : []);
      all.push(r);
      rs.add(r);
    }
    for (let i = 0; i < 15; i++) rs.add({ v: 1, pid: 7, rank: null, t: 0, type: 'probe-error', error: 'x', step: i });
    const kept = rs.records();
    expect(rs.sampled()).toBe(true);
    expect(rs.droppedOther).toBe(5);
    const steps = kept.filter((r): r is StepRecord => r.type === 'step');
    expect(steps.length).toBeLessThanOrEqual(50 + 50 + 200);
    expect(steps.length).toBeGreaterThan(200);
    expect(steps[0]?.step).toBe(1);
    expect(steps[steps.length - 1]?.step).toBe(200_000);
    expect(rs.stepCounts()).toEqual({ 7: 200_000 });
    // the middle is evenly spread: the gaps are one stride
    const mid = steps.slice(50, -50).map((r) => r.step);
    const gaps = new Set(mid.slice(1).map((s, i) => s - (mid[i] as number)));
    expect(gaps.size).toBe(1);
    // GPU times of the kept steps survive; statistics match the full run's
    const full = stepStats(all, new Map(all.map((r) => [r.step, 0.01 + (r.step % 10) * 0.001])));
    const gpu = new Map<number, number>();
    for (const r of steps) for (const [s, t] of r.gpuStepTimes ?? []) gpu.set(s, t);
    const sampled = stepStats(steps, gpu);
    expect(sampled.timing).toBe('gpu');
    expect(sampled.medianS).toBeCloseTo(full.medianS as number, 3);
    expect(sampled.meanS).toBeCloseTo(full.meanS as number, 3);
  });
});
