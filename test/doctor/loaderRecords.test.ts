/**
 * What a DataLoader's workers cost (the `loader` record, run/records.ts): the CPU a batch costs in the workers and the
 * cores the training process keeps busy, read by the probe from /proc. With them the input stage is measured, the
 * report states the loader's capacity, recommends a worker count for the demand (capped by the cores left), and tells
 * stalls at epoch starts. These records are SYNTHETIC, appended to copies of real run directories, with costs chosen
 * to match what the real runs measured (stated in each test); test/doctor/probe.test.ts checks the probe sends them.
 */
import { copyFileSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parseProbeLines } from '../../src/run/records.js';
import { cleanScratch, makeScratch } from '../telemetry/scratch.js';
import { REPO, rediagnosed } from './helpers.js';

afterAll(cleanScratch);

/** A copy of a committed run directory with `loader` records appended to its probe file. */
function withLoaderRecords(run: string, records: object[]): string {
  const src = join(REPO, 'examples', run);
  const dir = makeScratch('loader');
  for (const f of readdirSync(src)) copyFileSync(join(src, f), join(dir, f));
  const probe = join(dir, 'probe.jsonl');
  writeFileSync(probe, readFileSync(probe, 'utf8') + records.map((r) => `${JSON.stringify(r)}\n`).join(''));
  return dir;
}

/** A record as the probe sends it: counts cumulative since the loader's first iterator, at `stepS` a step. */
const loader = (o: { pid: number; step: number; stepS: number; epoch?: number; epochStartStep?: number; workers: number; cpuPerBatchS: number; processCores?: number; cpuCores?: number; persistent?: boolean; batchSize?: number }) => ({
  v: 3,
  type: 'loader',
  pid: o.pid,
  rank: null,
  t: 1_800_000_000 + o.step * o.stepS,
  step: o.step,
  loader: 0,
  epoch: o.epoch ?? 1,
  epochStartStep: o.epochStartStep ?? 0,
  workers: o.workers,
  persistentWorkers: o.persistent ?? false,
  prefetchFactor: 2,
  pinMemory: true,
  batchSize: o.batchSize ?? 128,
  cpuCores: o.cpuCores ?? 8,
  batches: o.step,
  workerCpuS: o.step * o.cpuPerBatchS,
  processCpuS: o.step * o.stepS * (o.processCores ?? 0.8),
});

describe('the loader record', () => {
  it('is read and checked like every record', () => {
    const good = loader({ pid: 1, step: 10, stepS: 0.1, workers: 2, cpuPerBatchS: 0.17 });
    expect(parseProbeLines(JSON.stringify(good)).records).toHaveLength(1);
    const bad = parseProbeLines(JSON.stringify({ ...good, workerCpuS: -1 }));
    expect(bad.records).toHaveLength(0);
    expect(bad.notes[0]).toMatch(/'loader' record of pid 1: workerCpuS/);
  });

  // The torchvision-style ResNet-50 of the real-code corpus (H100): 2 workers, the loop stalls every 4 steps, mean step
  // 92.1 ms, the GPU 71.4 ms a step. Synthetic costs: 170 ms of CPU a batch in the workers, the process 0.8 cores.
  const dp = (cpuCores = 8) =>
    withLoaderRecords('realworld/runs/dataparallel_resnet', [
      ...[10, 20, 30, 40, 50, 60].map((step) => loader({ pid: 636, step, stepS: 0.0921, workers: 2, cpuCores, cpuPerBatchS: 0.17 })),
    ]);

  it('makes the input stage measured: the capacity in words, a worker count for the demand, the plan', async () => {
    const r = await rediagnosed(dp());
    const p = r.pace!;
    expect(p.stages.input.how).toBe('measured');
    expect(p.stages.input.ns! / 1e6).toBeCloseTo(92, 0);
    expect(p.loader).toMatchObject({ workers: 2, cpuCores: 8, how: 'measured' });
    const f = r.findings.find((x) => x.id === 'dataloader-bound')!;
    // 128 samples per 184 ms in a worker: 696 a second each, 1,391 for both; the GPU takes 128 per 71.4 ms
    expect(f.evidence.join('\n')).toMatch(/\n2 worker\(s\) deliver 1,3\d\d samples\/s, 69\d per worker; the rest of the step takes 1,79\d\/s\n/);
    // 3 keep up; 4 with 30% to spare (LOADER_HEADROOM)
    expect(f.evidence.join('\n')).toMatch(/about 4 workers keep up with the rest of the step with 30% to spare \(a batch takes 18\d ms in a worker/);
    expect(f.recommendation.code).toMatch(/num_workers=4/);
    expect(f.fix?.label).toBe('num_workers 2 -> 4');
    // the plan: the workers first, then bf16 speeds the GPU up and the loader needs more of them
    expect(p.plan.steps.map((s) => s.id)).toEqual(['dataloader-bound', 'mixed-precision']);
    expect(p.plan.steps[0]?.text).toMatch(/^num_workers 2 -> 4: 92\.1 ms -> 72\.\d ms a step \(1\.2\dx; likely [\d.]+(?: [mu]?s)?-[\d.]+ [mu]?s\); then the GPU sets the pace, unless the host binds first \(its time was not measured\)$/);
    expect(p.plan.steps[1]?.text).toMatch(/^bf16 autocast \+ channels_last: 72\.\d ms -> 3\d\.\d ms a step \(\d\.\d\dx; likely [\d.]+(?: [mu]?s)?-[\d.]+ [mu]?s\); then the GPU sets the pace; needs about 7 DataLoader workers, up from 4$/);
  });

  it('counts the workers against the cores the training process leaves them, and says what then', async () => {
    const r = await rediagnosed(dp(3));
    const f = r.findings.find((x) => x.id === 'dataloader-bound')!;
    // 170 ms of CPU in a worker's 184 ms a batch, 2 cores left to the workers (3, less the 0.8 the process keeps busy):
    // 85 ms a batch at the most, which a third worker reaches (its wait holds no core); no count keeps up with the GPU
    expect(f.evidence.join('\n')).toMatch(/about 3 workers come closest to keeping up .*more than the 2 core\(s\) left to the workers/);
    expect(f.evidence.join('\n')).toMatch(/no count keeps up: the CPU a batch costs over the 2 core\(s\) left to the workers sets the loader's pace, so then decode on the GPU/);
    expect(f.fix?.label).toBe('num_workers 2 -> 3');
    expect(f.estimatedGain!.expectedStepTimeNs / 1e6).toBeCloseTo(85, 0);
  });

  // ResNet-50 fp32 at batch 64 on an H100 (h100-host/fp32_b64): the loop stalls about 100 ms every 32 steps. Synthetic
  // records say an epoch (2,048 images) began every 32 steps, and the workers keep up between them (30 ms a batch).
  it('tells stalls at epoch starts: persistent workers, not more of them', async () => {
    const epochs = Array.from({ length: 11 }, (_, e) =>
      loader({ pid: 500, step: 32 * (e + 1), stepS: 0.047, epoch: e + 1, epochStartStep: 32 * e, workers: 4, batchSize: 64, cpuPerBatchS: 0.03 }),
    );
    const pid = parseProbeLines(readFileSync(join(REPO, 'examples/doctor/runs/h100-host/fp32_b64/probe.jsonl'), 'utf8')).records[0]!.pid;
    const r = await rediagnosed(withLoaderRecords('doctor/runs/h100-host/fp32_b64', epochs.map((x) => ({ ...x, pid }))));
    expect(r.ranks[0]?.steps.stalls).toMatchObject({ when: 'epoch-starts' });
    const f = r.findings.find((x) => x.id === 'dataloader-bound')!;
    expect(f.title).toBe('The training loop waits on the DataLoader at the start of each epoch');
    expect(f.recommendation.summary).toMatch(/persistent_workers=True/);
    expect(f.fix?.ops).toEqual([{ kind: 'persistent-workers' }]);
    // The records say an epoch lasts 32 steps: the epoch starts are the loader's own cost (the first batch's fill plus
    // the workers' start-up, which the stalls there measured), not a serial cost read off the stalls alone.
    expect(r.pace?.serial.find((c) => c.kind === 'epoch-starts')).toBeUndefined();
    expect(r.pace?.loader).toMatchObject({ stepsPerEpoch: 32 });
    expect(r.pace?.loader?.startNs ?? 0).toBeGreaterThan(0);
    expect(f.fix?.arithmetic).toMatch(/the workers start again at each epoch start: .* every 32 steps/);
    // persistent workers take the start-up away: the step is shorter after the fix
    expect(f.estimatedGain!.expectedStepTimeNs).toBeLessThan(r.pace!.stepNs);
    // 4 workers at 30 ms a batch: the loader keeps up between the stalls (7.5 ms a batch against a 47 ms step)
    expect((r.pace?.stages.input.ns ?? 0) / 1e6).toBeCloseTo(7.5, 1);
  });

  it('takes the measured wait for an epoch\'s first batch: the start-up persistent workers save, the fill they keep', async () => {
    // The same run, with the probe's epochFillS: each epoch after the first waited 400 ms for its first batch.
    const epochs = Array.from({ length: 11 }, (_, e) => ({
      ...loader({ pid: 0, step: 32 * (e + 1), stepS: 0.047, epoch: e + 1, epochStartStep: 32 * e, workers: 4, batchSize: 64, cpuPerBatchS: 0.03 }),
      epochFillS: e === 0 ? null : 0.4,
    }));
    const pid = parseProbeLines(readFileSync(join(REPO, 'examples/doctor/runs/h100-host/fp32_b64/probe.jsonl'), 'utf8')).records[0]!.pid;
    const r = await rediagnosed(withLoaderRecords('doctor/runs/h100-host/fp32_b64', epochs.map((x) => ({ ...x, pid }))));
    const l = r.pace!.loader!;
    expect(l).toMatchObject({ stepsPerEpoch: 32 });
    expect(l.epochFillNs! / 1e6).toBeCloseTo(400, 0);
    // the start-up is the wait less one worker's batch (30 ms of CPU): 370 ms
    expect(l.startNs! / 1e6).toBeCloseTo(370, -1);
    const f = r.findings.find((x) => x.id === 'dataloader-bound')!;
    expect(f.fix?.ops).toEqual([{ kind: 'persistent-workers' }]);
    expect(f.fix?.arithmetic).toMatch(/measured/);
    // persistent workers save the start-up, 370 ms every 32 steps, about 11.6 ms a step, in proportion to the step
    const saved = (r.pace!.stepNs - f.estimatedGain!.expectedStepTimeNs) / 1e6;
    expect(saved).toBeGreaterThan(8);
    expect(saved).toBeLessThan(15);
  });
});

// A real run (H200, torch 2.11, 16 cores): examples/pace/jpeg_resnet.py as shipped (4 workers decoding JPEGs, fp32),
// under doctor with this probe; its probe.jsonl alone (the window's trace is not kept). Measured the same day without
// doctor: 4 workers 89.6 ms a step (mean), 8 workers 58.5 and 58.6, 12 workers 54.6 and 57.4; the workers used 299 ms
// of CPU a batch in a separate run sampled from outside (/proc, twice a second).
describe('the loader record of a real run', () => {
  it('measures the CPU a batch costs and the cores in use, and predicts the step more workers give', async () => {
    const r = await rediagnosed(join(REPO, 'examples/pace/runs/jpeg_resnet_w4_h200'));
    const p = r.pace!;
    expect(p.stages.input.how).toBe('measured');
    expect(p.loader).toMatchObject({ workers: 4, cpuCores: 16, persistentWorkers: false, samplesPerBatch: 64, how: 'measured' });
    expect(p.loader!.cpuNsPerBatch! / 1e6).toBeGreaterThan(270);
    expect(p.loader!.cpuNsPerBatch! / 1e6).toBeLessThan(320);
    expect(p.loader!.processCores!).toBeGreaterThan(0.4);
    expect(p.loader!.processCores!).toBeLessThan(1.2);
    const first = p.plan.steps[0]!;
    expect(first.id).toBe('dataloader-bound');
    // 8 and 12 workers measured 54.6-58.6 ms: the prediction within 15% of their mean (57.0 ms)
    expect(Math.abs(first.expectedStepNs / 1e6 - 57.0) / 57.0).toBeLessThan(0.15);
  });
});

// A real run (the 2-core VM, Debian's CPU torch 1.13): examples/pace/cpu/epochs.py as shipped (2 workers sleeping 2 ms a
// sample, started again every 6-step epoch, 300 ms opening the data set), under doctor; the ground-truth suite's run
// (test/pace/cpuGroundTruth.test.ts). Measured plainly after it (3 runs each, load 4-9): as run 64.7 ms a step (64.4-70.3),
// persistent workers 12.4 (10.6-13.9); 3 persistent workers, the plan's step, 9.66 (8.75-9.67).
describe('short epochs whose workers start again (issue 44)', () => {
  it("reads the loader's period within the epochs: the loader binds, the fork in iter() is the epoch starts' cost, not the host's", async () => {
    const r = await rediagnosed(join(REPO, 'examples/pace/runs/cpu/epochs'));
    const p = r.pace!;
    const within = r.ranks[0]!.steps.epochSteps!;
    expect(within.startSteps + within.otherSteps).toBe(r.ranks[0]!.steps.measuredSteps);
    // the steps within the epochs wait most of their time: the loader binds there, at their mean step
    expect(within.otherWaitS / within.otherMeanS).toBeGreaterThan(0.5);
    expect(p.bound).toBe('input');
    expect(p.stages.input.ns! / 1e9).toBeCloseTo(within.otherMeanS, 6);
    // the host is the stepping thread's CPU time, not the step less its waits (which held the workers' fork)
    expect(p.stages.host.how).toBe('measured');
    expect(p.stages.host.ns! / 1e6).toBeLessThan(3);
    expect(p.calibration).toBeGreaterThan(0.95);
    expect(p.calibration).toBeLessThan(1.05);
    // persistent workers first; the step followed plainly measured 9.66 ms with 3 of them
    const first = p.plan.steps[0]!;
    expect(first.label).toMatch(/persistent/);
    expect(first.bound).toBe('input');
    expect(Math.abs(first.expectedStepNs / 1e6 - 9.66) / 9.66).toBeLessThan(0.2);
  });
});
