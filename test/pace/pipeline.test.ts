/**
 * The pace model (src/pace/): how stages combine into the step, what a fix changes, the plan. Hand-built pipelines
 * carry the figures of the runs on an H200 (issue 25), stated where they are used; the real traces and runs
 * are in test/doctor (fixedRuns, hostPace, realworld).
 */
import { describe, expect, it } from 'vitest';
import { dataloaderFinding } from '../../src/advice/rules/input.js';
import { applyFix, type Fix } from '../../src/pace/fix.js';
import { gainOf } from '../../src/pace/gain.js';
import {
  calibrated,
  epochStartNs,
  firstBatchFillNs,
  type LoaderFacts,
  NO_GPU_PER_STEP,
  type Pipeline,
  type Stage,
  stepOf,
} from '../../src/pace/pipeline.js';
import { keptUp } from '../../src/pace/run.js';
import { soloJob } from '../../src/pace/job.js';
import { planLines, planOf } from '../../src/pace/plan.js';

const ms = 1e6;
const stage = (ns: number | null, evidence = 'by hand'): Stage => ({ ns, how: 'assumed', evidence });

/** A run pipeline built by hand: stages in ms, serial syncs in ms, the loader's facts. */
function pipe(o: {
  stepMs: number;
  input?: number | null;
  host?: number | null;
  gpu: number;
  comm?: number;
  syncs?: number;
  loader?: LoaderFacts | null;
}): Pipeline {
  return calibrated({
    source: 'run',
    stepNs: o.stepMs * ms,
    stages: {
      input: stage(o.input === undefined || o.input === null ? null : o.input * ms),
      host: stage(o.host === undefined || o.host === null ? null : o.host * ms),
      gpu: stage(o.gpu * ms),
      comm: stage((o.comm ?? 0) * ms),
    },
    serial: o.syncs ? [{ kind: 'syncs', ns: o.syncs * ms, perStep: 1, how: 'measured', evidence: 'by hand' }] : [],
    loader: o.loader ?? null,
    scale: { gpu: 1, host: 1 },
    work: { gpu: {}, host: {} },
    batchScale: 1,
    gpuPerStep: NO_GPU_PER_STEP,
    deviceTimed: true,
    inputWaitNs: 0,
    stalls: null,
  });
}

/** The ResNet-50 reading JPEGs: 4 workers, each 464 ms a batch (the mean step 116 ms x 4), the GPU 70 ms a step. */
const jpegLoader: LoaderFacts = {
  workers: 4,
  batchNsPerWorker: 464 * ms,
  cpuNsPerBatch: null,
  processCores: null,
  batchesPerStep: 1,
  samplesPerBatch: 256,
  cpuCores: 32,
  persistentWorkers: false,
  prefetchFactor: 2,
  pinMemory: true,
  how: 'measured',
  stepsPerEpoch: null,
  startNs: null,
  epochFillNs: null,
};
// the count the model asks for at the GPU's 70 ms: 464 ms a batch over 70, with 30% to spare (LOADER_HEADROOM)
const workers: Fix = { label: 'num_workers 4 -> 9', ops: [{ kind: 'workers', to: 'enough' }], arithmetic: 'w' };
/** bf16 autocast + channels_last on the run: 116 -> 108 ms followed alone, 50 ms with 12 workers: the GPU ~42 ms. */
const bf16: Fix = {
  label: 'bf16 autocast + channels_last',
  ops: [{ kind: 'gpu', work: 'fp32-matmul', ns: 56 * ms, factor: 0.5 }],
  arithmetic: 'b',
};

describe('stepOf: overlapped stages take their max, serial costs add', () => {
  it('the slowest stage binds, and says so against the others', () => {
    const p = pipe({ stepMs: 131, input: 50, host: 55, gpu: 120, comm: 8, syncs: 3 });
    const s = stepOf(p);
    expect(s.bound).toBe('gpu');
    expect(s.stepNs / ms).toBeCloseTo(131, 6);
    // 120 + 8 on the device, + 3 of syncs: the modelled step, so nothing left unexplained
    expect(p.calibration).toBeCloseTo(131 / 131, 9);
    expect(s.why).toMatch(
      /^the GPU sets the pace: the GPU and its exposed communication 128 ms > the host 55\.0 ms > the DataLoader 50\.0 ms; blocking waits add 3\.00 ms/,
    );
  });

  it('a stage the evidence cannot time never binds, and is named as such', () => {
    const s = stepOf(pipe({ stepMs: 40, gpu: 38 }));
    expect(s.bound).toBe('gpu');
    expect(s.why).toMatch(/the DataLoader and the host were not timed(;|$)/);
  });

  it('says how the figures are taken where they do not add up to the measured step (the cold read: a host of 18.2 ms "sets the pace" of a plan at 16.2)', () => {
    const off = stepOf(pipe({ stepMs: 40, gpu: 38 }));
    expect(off.why).toMatch(/these give a step of 38\.0 ms where 40\.0 ms was measured \(part of the step is in no timed stage\), so the plan's times are scaled by 1\.05 to start from the measured step$/);
    // within 3% the figures add up as printed: nothing said
    expect(stepOf(pipe({ stepMs: 40, gpu: 39.5 })).why).not.toMatch(/add up to/);
  });

  it('what the stages leave unexplained is kept in proportion through a fix (the calibration)', () => {
    const p = pipe({ stepMs: 44, gpu: 40 });
    expect(p.calibration).toBeCloseTo(1.1, 9);
    expect(stepOf(applyFix(p, bf16)).stepNs / ms).toBeCloseTo((40 - 28) * 1.1, 6);
  });
});

describe("serial costs lengthen the host and GPU's side, not the DataLoader's period", () => {
  it('a loader that binds hides the syncs; once it keeps up, they add to the GPU', () => {
    // the loader delivers a batch every 100 ms; the GPU works 60 ms and the syncs drain its queue for 20 ms a step
    const p = pipe({ stepMs: 100, input: 100, host: 40, gpu: 60, syncs: 20 });
    const s = stepOf(p);
    expect(s.bound).toBe('input');
    expect(p.calibration).toBeCloseTo(1, 9);
    expect(s.why).toMatch(
      /blocking waits 20\.0 ms \(syncs 20\.0 ms\) lengthen the host and GPU's side to 80\.0 ms, inside the DataLoader's period/,
    );
    // the loader twice as fast: 50 ms, under the GPU's side, which now binds with its syncs
    const faster = calibrated({ ...p, stepNs: 100 * ms, stages: { ...p.stages, input: stage(50 * ms) } });
    expect(stepOf(faster).stepNs / ms).toBeCloseTo(80 * faster.calibration, 6);
    expect(stepOf(faster).bound).toBe('gpu');
  });

  it("launch gaps lengthen the GPU's side only: a host that binds has them in its own time", () => {
    const p = calibrated({
      ...pipe({ stepMs: 60, host: 50, gpu: 40 }),
      serial: [{ kind: 'gaps', ns: 8 * ms, perStep: null, how: 'measured', evidence: 'by hand' }],
    });
    // max(host 50, GPU 40 + gaps 8) = 50: the host binds, the gaps are inside its time
    expect(stepOf(p).bound).toBe('host');
    expect(stepOf(p).stepNs / ms).toBeCloseTo(60, 6);
    expect(p.calibration).toBeCloseTo(60 / 50, 9);
  });
});

describe("a sync at the end of every step (the issue's eager GPT-2 that calls loss.item())", () => {
  // 0 steps in flight at every step end, whatever bounds the step: the host's own time is 55 ms, the GPU's 128 ms.
  const p = pipe({ stepMs: 131, host: 55, gpu: 128, syncs: 3 });
  const compile: Fix = {
    label: 'torch.compile',
    ops: [
      { kind: 'gpu', work: 'memory-bound', ns: 40 * ms, factor: 0.375 },
      { kind: 'host', work: 'launches', factor: 0.7 },
    ],
    arithmetic: 'c',
  };

  it('is GPU-bound, and fusion keeps its gain (measured 128 -> 103 ms)', () => {
    expect(stepOf(p).bound).toBe('gpu');
    const g = gainOf(p, compile)!;
    expect(g.expectedStepTimeNs / ms).toBeCloseTo(131 - 25, 6);
    expect(g.boundAfter).toBe('gpu');
    expect(Math.abs(g.expectedStepTimeNs / ms / (103 + 3) - 1)).toBeLessThan(0.05);
  });

  it('removing the sync removes the serial drain, not the GPU work', () => {
    const g = gainOf(p, { label: 'no .item()', ops: [{ kind: 'serial', cost: 'syncs', factor: 0 }], arithmetic: 's' })!;
    expect(g.expectedStepTimeNs / ms).toBeCloseTo(128, 6);
  });
});

describe('fixes compose', () => {
  it('two fixes of the same work item: the second acts on what the first left', () => {
    const p = pipe({ stepMs: 100, gpu: 100 });
    const half: Fix = { label: 'bf16', ops: [{ kind: 'gpu', work: 'memory-bound', ns: 40 * ms, factor: 0.5 }], arithmetic: '' };
    const fuse: Fix = { label: 'compile', ops: [{ kind: 'gpu', work: 'memory-bound', ns: 40 * ms, factor: 0.3 }], arithmetic: '' };
    // bf16 leaves 20 ms of it; fusion then removes 70% of those 20 ms, not of the 40
    expect(stepOf(applyFix(applyFix(p, half), fuse)).stepNs / ms).toBeCloseTo(100 - 20 - 14, 6);
    expect(stepOf(applyFix(applyFix(p, fuse), half)).stepNs / ms).toBeCloseTo(100 - 28 - 6, 6);
  });

  it("an op's onceFixed factor applies only after a fix of its GPU item: compile after SDPA fuses the chains attention's kernels no longer split", () => {
    const p = pipe({ stepMs: 100, host: 60, gpu: 100 });
    const sdpa: Fix = {
      label: 'SDPA',
      ops: [
        { kind: 'gpu', work: 'attention', ns: 30 * ms, factor: 0.1 },
        { kind: 'host', work: 'launches', factor: 0.8 },
      ],
      arithmetic: '',
    };
    const compile: Fix = {
      label: 'compile',
      ops: [
        { kind: 'gpu', work: 'memory-bound', ns: 40 * ms, factor: 0.3, onceFixed: { gpu: 'attention', factor: 0.2 } },
        { kind: 'host', work: 'launches', factor: 0.5, onceFixed: { gpu: 'attention', factor: 0.6 } },
      ],
      arithmetic: '',
    };
    // alone: 70% of the 40 ms; after SDPA (27 ms gone): 80% of them, and the host keeps 0.8 x 0.6 of its work
    expect(applyFix(p, compile).stages.gpu.ns! / ms).toBeCloseTo(100 - 28, 6);
    const both = applyFix(applyFix(p, sdpa), compile);
    expect(both.stages.gpu.ns! / ms).toBeCloseTo(100 - 27 - 32, 6);
    expect(both.stages.host.ns! / ms).toBeCloseTo(60 * 0.8 * 0.6, 6);
    // compile first: its own factors; SDPA's after it are unchanged
    expect(applyFix(applyFix(p, compile), sdpa).stages.gpu.ns! / ms).toBeCloseTo(100 - 28 - 27, 6);
  });

  it("a bigger batch: per-sample work grows, the host's per-step work does not (a host-bound step gains all of it)", () => {
    const p = pipe({ stepMs: 16.5, host: 16.5, gpu: 2.8 });
    const g = gainOf(p, { label: 'batch x4', ops: [{ kind: 'batch', k: 4 }], arithmetic: '' })!;
    // per batch of the run's size: max(16.5, 4 x 2.8) / 4
    expect(g.expectedStepTimeNs / ms).toBeCloseTo(16.5 / 4, 6);
    expect(g.arithmetic).toMatch(/per batch of today's size \(16\.5 ms a step of the 4\.0x batch\)/);
  });

  it('a whole-step change (measured elsewhere, another layout) scales every stage', () => {
    const p = pipe({ stepMs: 50, input: 20, host: 30, gpu: 45, syncs: 5 });
    const q = applyFix(p, { label: 'x', ops: [{ kind: 'step', factor: 0.5 }], arithmetic: '' });
    expect(stepOf(q).stepNs / ms).toBeCloseTo(25, 6);
    expect(q.stages.host.ns! / ms).toBeCloseTo(15, 6);
  });
});

describe("the plan (the issue's ResNet-50 reading JPEGs through 4 workers, H200)", () => {
  // Measured: mean 116 ms; 12 workers alone 70 ms; bf16 alone 108 ms; both 50 ms.
  const p = pipe({ stepMs: 116, input: 116, gpu: 70, loader: jpegLoader });

  it("the DataLoader binds: bf16 alone gains nothing, more workers take the step to the GPU's", () => {
    expect(stepOf(p).bound).toBe('input');
    expect(gainOf(p, bf16)!.savedFraction).toBe(0);
    const w = gainOf(p, workers)!;
    expect(w.expectedStepTimeNs / ms).toBeCloseTo(70, 6);
    expect(w.boundAfter).toBe('gpu');
  });

  it('orders the fixes by what each gains on top of the ones before it, and says what binds after each', () => {
    const plan = planOf(soloJob(p), [
      { id: 'mixed-precision', fix: bf16 },
      { id: 'dataloader-bound', fix: workers },
    ]);
    expect(plan.steps.map((s) => s.id)).toEqual(['dataloader-bound', 'mixed-precision']);
    expect(plan.steps.map((s) => Math.round(s.expectedStepNs / ms))).toEqual([70, 42]);
    expect(planLines(plan)).toEqual([
      // the host is not timed in this pipeline: said once, at the first step it holds for
      '1. num_workers 4 -> 9: 116 ms -> 70.0 ms a step (1.66x; likely 58.3-87.5 ms); then the GPU sets the pace, unless the host binds first (its time was not measured)',
      // 464 ms a batch in a worker over a 42 ms step: 12 workers keep up, 15 with 30% to spare (LOADER_HEADROOM)
      '2. bf16 autocast + channels_last: 70.0 ms -> 42.0 ms a step (1.67x; likely 35.0-52.5 ms); then the GPU sets the pace; needs about 15 DataLoader workers, up from 9',
    ]);
    expect(plan.expectedStepNs / ms).toBeCloseTo(42, 6);
  });

  it("asks for drop_last=True with a fix that compiles the model where the loader keeps a partial last batch, and only there", () => {
    const partial = { ...p, partialBatch: { samples: [32], fullSamples: 64, everySteps: 63 } };
    const compiled: Fix = { ...bf16, label: 'torch.compile', compiles: true };
    const plan = planOf(soloJob(partial), [
      { id: 'fusion', fix: compiled },
      { id: 'dataloader-bound', fix: workers },
    ]);
    expect(plan.steps.map((s) => [s.id, s.dropLast])).toEqual([
      ['dataloader-bound', false],
      ['fusion', true],
    ]);
    expect(plan.steps[1]!.text).toMatch(
      /; with DataLoader\(drop_last=True\): the loader ends each epoch on a batch of 32 samples \(every 63 steps, the others hold 64\)/,
    );
    // every batch full: no such condition
    expect(
      planOf(soloJob(p), [
        { id: 'fusion', fix: compiled },
        { id: 'dataloader-bound', fix: workers },
      ]).steps.map((s) => s.dropLast),
    ).toEqual([false, false]);
  });

  it('the cores cap the workers: past them the DataLoader binds again', () => {
    const few = pipe({ stepMs: 116, input: 116, gpu: 70, loader: { ...jpegLoader, cpuCores: 8 } });
    const plan = planOf(soloJob(few), [
      { id: 'dataloader-bound', fix: workers },
      { id: 'mixed-precision', fix: bf16 },
    ]);
    // 7 workers (8 cores, one for the loop): 464 / 7 = 66.3 ms a batch, below the GPU's 70; with bf16 the loader binds
    expect(plan.steps.map((s) => [s.id, Math.round(s.expectedStepNs / ms), s.bound])).toEqual([
      ['dataloader-bound', 70, 'gpu'],
      ['mixed-precision', 66, 'input'],
    ]);
  });

  it('a step that leaves the loader short, where the host bound before it, is expected with the workers it says it needs', () => {
    // 2 workers at 128 ms a batch: 64 ms a step; the host binds at 68. Halving the host's work leaves the GPU's 50 ms,
    // which 2 workers cannot feed: 3 keep up, and the step is expected with the 4 it needs with 30% to spare
    // (LOADER_HEADROOM; the H200 Lightning run: 42.1 ms with 3)
    const two = pipe({ stepMs: 68, host: 68, gpu: 50, loader: { ...jpegLoader, workers: 2, batchNsPerWorker: 128 * ms } });
    const halfHost: Fix = { label: 'half the host', ops: [{ kind: 'host', work: 'launches', factor: 0.5 }], arithmetic: '' };
    expect(stepOf(applyFix(two, halfHost)).bound).toBe('input');
    const plan = planOf(soloJob(two), [{ id: 'launch-bound', fix: halfHost }]);
    expect(plan.steps.map((s) => [Math.round(s.expectedStepNs / ms), s.bound, s.workersNeeded])).toEqual([[50, 'gpu', 4]]);
    // where the loader binds already, more workers are the DataLoader finding's gain: bf16 alone gains nothing
    expect(planOf(soloJob(p), [{ id: 'mixed-precision', fix: bf16 }]).steps).toEqual([]);
  });

  it('stops when no fix left shortens the step', () => {
    expect(planOf(soloJob(pipe({ stepMs: 100, host: 100, gpu: 50 })), [{ id: 'mixed-precision', fix: bf16 }]).steps).toEqual([]);
  });
});

describe('the DataLoader finding on a pipeline whose waits show no stall pattern', () => {
  it("takes the workers' start-up at epoch starts and says so without a period it does not have", () => {
    // 4 workers started again every 20 steps, 400 ms each time (20 ms a step); the loop waits 40 ms a step, no stalls
    const p: Pipeline = {
      ...pipe({ stepMs: 116, input: 116, gpu: 70, loader: { ...jpegLoader, stepsPerEpoch: 20, startNs: 400 * ms } }),
      inputWaitNs: 40 * ms,
    };
    const f = dataloaderFinding(p, null, 0)!;
    expect(f.fix!.ops.map((o) => o.kind)).toEqual(['workers', 'persistent-workers']);
    expect(f.title).toBe('The training loop waits on the DataLoader');
    expect(f.recommendation.summary).toMatch(/^The loop waits on the DataLoader: 4 workers cannot keep up/);
    expect(`${f.title} ${f.recommendation.summary}`).not.toMatch(/undefined/);
  });
});

/** The CPU case (2 cores): 2 workers whose batch waits 30.2 ms on I/O with 5.0 ms of CPU; the loop waits 93%. */
const ioLoader: LoaderFacts = {
  ...jpegLoader,
  workers: 2,
  batchNsPerWorker: 30.2 * ms,
  cpuNsPerBatch: 5.0 * ms,
  processCores: 0.3,
  samplesPerBatch: 16,
  cpuCores: 2,
};

describe('a DataLoader whose workers wait on I/O (issue 44)', () => {
  const p = { ...pipe({ stepMs: 15.1, input: 15.1, host: 1.0, gpu: 0.1, loader: ioLoader }), inputWaitNs: 14.0 * ms };
  const workersAdvised = (f: ReturnType<typeof dataloaderFinding>) => Number(/num_workers=(\d+)/.exec(f?.recommendation.code ?? '')?.[1]);

  it('gets more workers than the cores, never fewer than it has, and the step they give', () => {
    const f = dataloaderFinding(p, null, 0);
    // one core left to the workers (one for the loop): 5.0 ms of CPU a batch is the floor, reached with 7 workers
    expect(workersAdvised(f)).toBe(7);
    expect(f?.fix?.label).toBe('num_workers 2 -> 7');
    expect(f?.estimatedGain?.expectedStepTimeNs ?? 0).toBeLessThan(0.4 * 15.1 * ms);
    expect(f?.evidence.join('\n')).toMatch(/more than the 1 core\(s\) left to the workers: waiting workers hold no core; a worker spends 5\.00 ms of CPU/);
  });

  it('worker counts around the run: the model gives the measured order (27.4, 14.3, 4.4 ms at 1, 2, 8 workers on the VM)', () => {
    const at = (w: number) => stepOf(applyFix(p, { label: `${w}`, ops: [{ kind: 'workers', to: w }], arithmetic: '' })).stepNs / ms;
    expect(at(1)).toBeGreaterThan(at(2));
    expect(at(2)).toBeGreaterThan(at(8));
    expect(Math.abs(at(8) - 4.4) / 4.4).toBeLessThan(0.2);
  });

  it('a loader bound by CPU is told the cores cap it, and never fewer workers than it has', () => {
    const cpu = { ...pipe({ stepMs: 15.1, input: 15.1, host: 1.0, gpu: 0.1, loader: { ...ioLoader, cpuNsPerBatch: 30.2 * ms } }), inputWaitNs: 14.0 * ms };
    const f = dataloaderFinding(cpu, null, 0);
    expect(workersAdvised(f)).toBe(2);
    expect(f?.evidence.join('\n')).toMatch(/no count keeps up: the CPU a batch costs/);
  });
});

describe('a loader the loop does not wait on keeps up (issue 44: timm train.py on an H100)', () => {
  // 4 workers x 329 ms of CPU a batch put the loader at 82.2 ms, above the GPU's 71.0 ms, while the loop waited 1.6% of
  // its 78.8 ms step; bf16 + channels_last with 12 workers measured 43.1 ms.
  const timmLoader: LoaderFacts = { ...jpegLoader, workers: 4, batchNsPerWorker: 329 * ms, cpuNsPerBatch: 329 * ms, cpuCores: 16, processCores: 1.2 };
  const { calibration: _c, ...uncalibrated } = pipe({ stepMs: 78.8, input: 82.2, host: 30, gpu: 71.0, loader: timmLoader });
  const p = calibrated(keptUp(uncalibrated));
  const halfGpu: Fix = { label: 'bf16 autocast + channels_last', ops: [{ kind: 'gpu', work: 'fp32-matmul', ns: 66 * ms, factor: 0.5 }], arithmetic: '' };

  it('never binds: its period is at most the rest of the step, and its evidence says the run won', () => {
    expect(stepOf(p).bound).toBe('gpu');
    expect(p.stages.input.ns).toBeCloseTo(71.0 * ms, -3);
    expect(p.stages.input.evidence).toMatch(/the loader keeps up, so its period is taken as at most 71\.0 ms/);
  });

  it('leaves bf16 its gain, with the workers the faster step needs', () => {
    const plan = planOf(soloJob(p), [{ id: 'mixed-precision', fix: halfGpu }]);
    expect(plan.steps.map((s) => s.id)).toEqual(['mixed-precision']);
    const step = plan.steps[0];
    expect(Math.abs((step?.expectedStepNs ?? 0) / ms - 43.1) / 43.1).toBeLessThan(0.15);
    expect(step?.workersNeeded).toBeGreaterThanOrEqual(8);
    expect(step?.workersNeeded).toBeLessThanOrEqual(12);
  });
});

describe("an epoch start's fill (issue 44: examples/pace/cpu/epochs.py, 2 workers sleeping 16 ms a batch, 6-step epochs)", () => {
  const epochs: LoaderFacts = {
    ...jpegLoader,
    workers: 2,
    batchNsPerWorker: 16.9 * ms,
    cpuNsPerBatch: 6.6 * ms,
    processCores: 0.08,
    cpuCores: 2,
    samplesPerBatch: 8,
    stepsPerEpoch: 6,
    startNs: 320 * ms,
    persistentWorkers: false,
  };

  it('shares the cores only for the CPU a batch costs: a worker waiting on I/O holds none', () => {
    // 2 workers and the loop on 2 cores: the CPU part takes 1.5x as long, the 10.3 ms of waiting does not
    expect(firstBatchFillNs(epochs, 2) / ms).toBeCloseTo(10.3 + 6.6 * 1.5, 6);
    expect(firstBatchFillNs({ ...epochs, cpuNsPerBatch: null }, 2) / ms).toBeCloseTo(16.9 * 1.5, 6);
  });

  it('where the loader binds, the steady steps hide the fill less the chain: only the rest and the start-up are the epoch start\'s', () => {
    const fill = firstBatchFillNs(epochs, 2);
    // the loader's period 8.45 ms against a 2 ms chain: 2 x 6.45 ms of the fill would have passed waiting anyway
    expect(epochStartNs(epochs, 2, 1, 8.45 * ms, 2 * ms) / ms).toBeCloseTo((fill / ms - 2 * 6.45 + 320) / 6, 6);
    // where the chain binds, all of the fill is the epoch start's
    expect(epochStartNs(epochs, 2, 1, 8.45 * ms, 20 * ms) / ms).toBeCloseTo((fill / ms + 320) / 6, 6);
    // persistent workers keep the fill, lose the start-up
    expect(epochStartNs({ ...epochs, persistentTo: true }, 2, 1, 8.45 * ms, 2 * ms) / ms).toBeCloseTo((fill / ms - 2 * 6.45) / 6, 6);
  });
});
