/**
 * A run's pipeline (src/pace/run.ts) on a real window: the GPT-2 of examples/traces/scenarios/sync_refill (H100, 124M,
 * 4 micro-batches of 12x1024, .item() and synchronize() after each), unprofiled step 169.5 ms (its meta). The run's
 * figures around it are put in by hand, as the eager GPT-2 measured them: the stepping thread's CPU time 55 ms
 * a step, and 0 steps in flight at every step end (a sync at the end of each step always leaves none).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { diagnose } from '../../src/advice/engine.js';
import { loadTrace } from '../../src/io/loadTrace.js';
import { stepOf } from '../../src/pace/pipeline.js';
import { epochStartsOf, gpuIdleInWaitsNs, runPipeline, stepsPerEpochOf } from '../../src/pace/run.js';
import { epochStepsOf, type StallPattern, type StepStats } from '../../src/run/steps.js';
import { analyzeTrace } from '../../src/trace/metrics/index.js';
import type { TraceMetrics } from '../../src/trace/metrics/types.js';
import { TRACES } from '../helpers/fixtures.js';

let m: TraceMetrics;
beforeAll(async () => {
  m = analyzeTrace(await loadTrace(`${TRACES}scenarios/sync_refill.trace.json.gz`));
}, 60_000);

const stats = { meanS: 0.1695, medianS: 0.1695, dataWaitShare: 0, medianHostCpuS: 0.055, medianStepsInFlight: 0, stalls: null } as unknown as StepStats;

describe('a sync at the end of every step', () => {
  it('0 steps in flight does not make the host the bound: the GPU binds, and fusion keeps its gain', () => {
    const p = runPipeline({ steps: stats, window: m, loader: [], batchesPerStep: 4 })!;
    expect(p.stages.host).toMatchObject({ ns: 55e6, how: 'measured' });
    expect(stepOf(p).bound).toBe('gpu');
    const fusion = diagnose([m], [], [{ askedHalf: null, pace: p }]).find((f) => f.id === 'fusion')!;
    expect(fusion.severity).toBe('high');
    expect(fusion.estimatedGain!.stepTimeNs).toBeCloseTo(169.5e6, -3);
    expect(fusion.estimatedGain!.boundAfter).toBe('gpu');
  });

  it("keeps the thread's CPU time where no copy blocks, whatever the backward's slowdown in the window", () => {
    const steps = { ...stats, medianBackwardS: 0.01, medianBackwardProfiledS: 0.03 } as StepStats;
    const p = runPipeline({ steps, window: m, loader: [], batchesPerStep: 4 })!;
    expect(p.stages.host).toMatchObject({ ns: 55e6, how: 'measured' });
    expect(p.stages.host.evidence).not.toContain('backward');
  });

  it('the window alone (analyze) rates it high too: there the profiled host binds, and compiling also cuts its launches', () => {
    const fusion = diagnose([m]).find((f) => f.id === 'fusion')!;
    expect(fusion.estimatedGain!.boundNow).toBe('host');
    expect(fusion.severity).toBe('high');
  });
});

/**
 * The GPU-bound ViT-B/16 of examples/pace/runs/h200/gpu_bound (fp32, batch 128, a 77 MB pageable copy a step that
 * waits for the GPU): the host's own work is read from the window, which holds the profiler's cost. The run's figures
 * are its report's (mean step 342.5 ms, the stepping thread's CPU 330 ms a step spinning in the copies, one step in
 * flight); the backward medians are put in by hand, as the probe now times them.
 */
describe('the host of a GPU-bound run whose copies block, less the profiler', () => {
  let vit: TraceMetrics;
  beforeAll(async () => {
    vit = analyzeTrace(await loadTrace('examples/pace/runs/h200/gpu_bound/trace-pid1157.json.gz'));
  }, 60_000);
  const vitStats = {
    meanS: 0.3425,
    medianS: 0.342,
    dataWaitShare: 0.0045,
    medianHostCpuS: 0.3296,
    medianStepsInFlight: 1,
    stalls: null,
  } as unknown as StepStats;

  it('takes the window outside copies and syncs as it is when the backward was not timed', () => {
    const p = runPipeline({ steps: vitStats, window: vit, loader: [], batchesPerStep: 1 })!;
    const free = vit.examples.hostFreeNsPerStep as number;
    expect(free).toBeGreaterThan(70e6);
    expect(p.stages.host.ns).toBeCloseTo(free, -3);
    expect(p.stages.host.evidence).toContain("the profiler's cost included");
  });

  it("divides it by the profiler's cost on the backward's launches: in the window's steps against outside it", () => {
    const steps = { ...vitStats, medianBackwardS: 0.012, medianBackwardProfiledS: 0.03 } as StepStats;
    const p = runPipeline({ steps, window: vit, loader: [], batchesPerStep: 1 })!;
    const free = vit.examples.hostFreeNsPerStep as number;
    expect(p.stages.host.ns).toBeCloseTo(free / 2.5, -3);
    expect(p.stages.host.evidence).toMatch(/backward calls took 30\.0 ms a step in the window against 12\.0 ms outside it .* \/ 2\.50/);
    expect(stepOf(p).bound).toBe('gpu');
  });

  it('takes nothing off when the window did not slow the backward', () => {
    const steps = { ...vitStats, medianBackwardS: 0.012, medianBackwardProfiledS: 0.011 } as StepStats;
    const p = runPipeline({ steps, window: vit, loader: [], batchesPerStep: 1 })!;
    expect(p.stages.host.ns).toBeCloseTo(vit.examples.hostFreeNsPerStep as number, -3);
  });
});

describe("the GPU's idle in the loop's DataLoader waits (gpuIdleInWaitsNs)", () => {
  const ms = 1e6;
  // The H200 FakeData run (examples/pace/runs/h200-c/fakedata_resnet): 59.4 ms of waiting a step, 94% of it in stalls of
  // 229 ms at every fourth step; the GPU works 142 ms a step, the window's host 68.5 ms outside copies and syncs.
  const window = { examples: { hostFreeNsPerStep: 68.5 * ms } } as unknown as TraceMetrics;
  const stalls: StallPattern = {
    stalledSteps: 35,
    measuredSteps: 143,
    share: 35 / 143,
    meanStallS: 0.229,
    waitShareInStalls: 0.943,
    when: 'periodic',
    everySteps: 4,
  };

  it('a stall idles the GPU only past the work queued ahead of it (the GPU less the host: 73.5 ms)', () => {
    // (229 - 73.5) x 35/143 = 38.1 ms a step; the waits outside stalls (3.4 ms a step) are hidden
    expect(gpuIdleInWaitsNs(59.4 * ms, stalls, window, 142 * ms) / ms).toBeCloseTo(38.1, 1);
  });

  it('waits spread over the steps, shorter than the queued work, idle nothing; a host as slow as the GPU hides none', () => {
    expect(gpuIdleInWaitsNs(20 * ms, null, window, 142 * ms)).toBe(0);
    expect(gpuIdleInWaitsNs(20 * ms, null, window, 60 * ms)).toBe(20 * ms);
  });

  it('without a window the whole wait is idle, as before', () => {
    expect(gpuIdleInWaitsNs(59.4 * ms, stalls, null, 142 * ms)).toBe(59.4 * ms);
  });
});

describe("a loader's epochs from its records (read about once a second)", () => {
  const at = (step: number, epoch: number, epochStartStep: number) =>
    ({ type: 'loader', step, epoch, epochStartStep }) as unknown as Parameters<typeof stepsPerEpochOf>[0][number];

  it('counts steps an epoch over the epochs begun between the records, not over the starts the records happened to see', () => {
    // examples/pace/cpu/epochs.py on the VM: 6-step epochs, records at steps 1, 19, 37, 55 and 66 (every third epoch)
    const records = [at(1, 1, 0), at(19, 4, 18), at(37, 7, 36), at(55, 10, 54), at(66, 11, 60)];
    expect(stepsPerEpochOf(records)).toBe(6);
    expect(stepsPerEpochOf([at(1, 1, 0), at(40, 1, 0)])).toBeNull();
  });

  it('fills in the epoch starts the records skipped, spread evenly between those they saw', () => {
    const records = [at(1, 1, 0), at(19, 4, 18), at(37, 7, 36), at(55, 10, 54), at(66, 11, 60)];
    expect(epochStartsOf(records)).toEqual([0, 6, 12, 18, 24, 30, 36, 42, 48, 54, 60]);
  });

  it("splits the steps at epoch starts: those that took the workers' first batches, one a worker, and the others", () => {
    // 2 workers, epochs of 6 steps: each epoch's first two steps wait for the workers started again
    const steps = Array.from({ length: 18 }, (_, i) => {
      const pos = i % 6;
      return { step: i + 1, timeS: pos === 0 ? 0.36 : pos === 1 ? 0.002 : 0.0085, waitS: pos === 0 ? 0.31 : pos === 1 ? 0 : 0.007 };
    });
    const all = steps.map((s) => ({ step: s.step, batches: 1 }));
    const split = epochStepsOf(steps, [0, 6, 12], all, 2)!;
    expect(split).toMatchObject({ startSteps: 6, otherSteps: 12 });
    expect(split.startMeanS).toBeCloseTo(0.181, 6);
    expect(split.otherMeanS).toBeCloseTo(0.0085, 9);
    expect(split.otherWaitS).toBeCloseTo(0.007, 9);
    // a step of two batches takes both workers' first batches
    expect(epochStepsOf(steps, [0, 6, 12], all.map((s) => ({ ...s, batches: 2 })), 2)).toMatchObject({ startSteps: 3 });
    expect(epochStepsOf(steps, [], all, 2)).toBeNull();
  });
});
