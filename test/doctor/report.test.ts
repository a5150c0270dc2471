/** The pure part of doctor: reading probe lines and building the report. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { doctorInput } from './input.js';
import { describeModel } from '../../src/planner/modelSummary.js';
import { type ModelRecord, type ProbeRecord, type StepRecord, parseProbeLines } from '../../src/run/records.js';
import { buildDoctorReport } from '../../src/doctor/report.js';
import { planModelOf } from '../../src/doctor/runSetup.js';
import { gpuStepTimesOf, stepStats } from '../../src/run/steps.js';
import { renderDoctorText } from '../../src/doctor/render.js';
import { emptyGpu, emptyProcess, type Snapshot } from '../../src/telemetry/sample.js';

const GiB = 1024 ** 3;

function step(stepNo: number, stepTimeS: number | null, dataWaitS: number, extra: Partial<StepRecord> = {}): StepRecord {
  return {
    v: 1,
    type: 'step',
    pid: 100,
    rank: null,
    t: 0,
    step: stepNo,
    stepTimeS,
    dataWaitS,
    batches: 1,
    samples: 8,
    memory: null,
    profiled: false,
    ...extra,
  };
}

const input = doctorInput;

describe('parseProbeLines', () => {
  it('keeps well-formed records and counts a torn last line and unknown types', () => {
    const good = JSON.stringify(step(1, 0.1, 0));
    const text = `${good}\n{"v":1,"type":"future-thing","pid":1}\n\n${good}\n{"v":1,"type":"st`;
    const { records, skippedLines } = parseProbeLines(text);
    expect(records).toHaveLength(2);
    expect(skippedLines).toBe(2);
  });
});

describe('stepStats', () => {
  it('leaves out the first (warm-up) step and steps without a time', () => {
    const s = stepStats([step(3, 0.3, 0.03), step(1, 5.0, 0), step(2, 0.1, 0.01), step(4, null, 0), step(5, 0.2, 0.02)]);
    expect(s).toMatchObject({ steps: 5, measuredSteps: 3, minS: 0.1, maxS: 0.3, medianS: 0.2 });
    expect(s.meanS).toBeCloseTo(0.2, 12);
    expect(s.dataWaitShare).toBeCloseTo(0.1, 12);
    expect(s.samplesPerS).toBeCloseTo(24 / 0.6, 9);
  });

  it('leaves out the profiled steps and the one after the window (it writes the trace), unless they are all there is', () => {
    const p = { profiled: true };
    expect(stepStats([step(1, 1, 0), step(2, 0.1, 0), step(3, 0.9, 0, p), step(4, 0.8, 0, p), step(5, 2.0, 0), step(6, 0.3, 0)])).toMatchObject({
      measuredSteps: 2,
      maxS: 0.3,
    });
    expect(stepStats([step(1, 1, 0), step(2, 0.9, 0, p), step(3, 0.8, 0, p)])).toMatchObject({ measuredSteps: 2, maxS: 0.9 });
  });

  it("leaves out the steps the probe's own work slowed (probeWork: the trace written meanwhile, the model searched), so the figures are the plain program's", () => {
    // As on the H200 ResNet-50: a 1.9 s step while the trace was written, slower steps while it was analysed.
    const w = (probeWork: string) => ({ probeWork });
    const s = stepStats([step(1, 1, 0), step(2, 0.037, 0), step(3, 0.038, 0, w('model')), step(4, 1.9, 0, w('export')), step(5, 0.046, 0, w('export')), step(6, 0.037, 0), step(7, 0.038, 0)]);
    expect(s).toMatchObject({ measuredSteps: 3, maxS: 0.038, minS: 0.037 });
    // Only such steps: they are what there is.
    expect(stepStats([step(1, 1, 0), step(2, 1.9, 0, w('export')), step(3, 0.05, 0, w('export'))])).toMatchObject({ measuredSteps: 2 });
  });

  it('has no figures with fewer than two steps', () => {
    expect(stepStats([step(1, 1, 0)])).toMatchObject({ steps: 1, measuredSteps: 0, medianS: null, dataWaitShare: null });
  });

  it('uses the GPU step times when they cover the steps (the host runs ahead of a GPU-bound loop)', () => {
    // Host timing says 2 ms (launch rate); the GPU's events say 24 ms.
    const steps = [1, 2, 3, 4, 5].map((n) => step(n, 0.002, 0));
    const gpu = gpuStepTimesOf([
      { v: 1, type: 'step', pid: 1, rank: null, t: 0, step: 3, stepTimeS: 0.002, dataWaitS: 0, batches: 1, samples: null, memory: null, profiled: false, gpuStepTimes: [[2, 0.024], [3, 0.025]] },
      { v: 1, type: 'end', pid: 1, rank: null, t: 0, reason: 'exit', steps: 5, exception: null, gpuStepTimes: [[4, 0.024], [5, 0.026], [6, -1]] },
    ]);
    expect(stepStats(steps, gpu)).toMatchObject({ timing: 'gpu', measuredSteps: 4, medianS: 0.024, maxS: 0.026, hostMedianS: 0.002 });
    // Too few GPU times (an interrupted run): host timing for every figure, not a mix.
    expect(stepStats(steps, new Map([[2, 0.024]]))).toMatchObject({ timing: 'host', medianS: 0.002 });
  });
});

describe('buildDoctorReport', () => {
  const steps = [1, 2, 3, 4].map((i) => step(i, 0.1, 0.04));

  it('an out-of-memory error wins over the crash it causes, and the report says so', () => {
    const oom: ProbeRecord = {
      v: 1,
      type: 'oom',
      pid: 100,
      rank: null,
      t: 0,
      step: 5,
      device: 0,
      allocBytes: 2 * GiB,
      deviceAllocatedBytes: 70 * GiB,
      deviceFreeBytes: GiB,
      snapshot: '/runs/x/oom-pid100.pickle',
    };
    const exc: ProbeRecord = {
      v: 1,
      type: 'exception',
      pid: 100,
      rank: null,
      t: 0,
      step: 4,
      exception: 'OutOfMemoryError',
      message: 'CUDA out of memory.',
      outOfMemory: true,
    };
    const r = buildDoctorReport(input([...steps, oom, exc], { exit: { code: 1, signal: null } }));
    expect(r.run.outcome).toBe('out-of-memory');
    expect(r.run.outcomeText).toBe('ran out of GPU memory on rank 0 in step 5 (exit code 1)');
    expect(renderDoctorText(r)).toContain('OUT OF MEMORY in step 5: asked 2.00 GiB with 1.00 GiB free; snapshot /runs/x/oom-pid100.pickle');
  });

  it('a crash before any step (a launcher, say) is not blamed on a training step', () => {
    const exc: ProbeRecord = { v: 1, type: 'exception', pid: 7, rank: null, t: 0, step: 0, exception: 'AttributeError', message: "'NoneType' object has no attribute 'get'", outOfMemory: false };
    const r = buildDoctorReport(input([exc], { exit: { code: 1, signal: null } }));
    expect(r.run.outcomeText).toBe("crashed before the first training step (pid 7): AttributeError: 'NoneType' object has no attribute 'get' (exit code 1)");
    expect(renderDoctorText(r)).toContain('Process 7 (no training step)');
  });

  it('a forwarded signal makes the run interrupted even when the job exits 0', () => {
    expect(buildDoctorReport(input(steps, { forwardedSignal: 'SIGTERM' })).run.outcome).toBe('interrupted');
  });

  it('puts NVML memory beside the allocator: reserved + context = what NVML sees for the process', () => {
    const mem = {
      device: 0,
      allocatedBytes: 20 * GiB,
      reservedBytes: 28 * GiB,
      peakAllocatedBytes: 25 * GiB,
      peakReservedBytes: 30 * GiB,
      allocRetries: 0,
      ooms: 0,
    };
    const gpu = emptyGpu(0, 'GPU-1', 'NVIDIA H200');
    gpu.memoryUsedBytes = 31 * GiB;
    gpu.utilizationGpuPercent = 90;
    const proc = emptyProcess(100, 0);
    proc.usedMemoryBytes = 30.75 * GiB;
    gpu.processes = [proc];
    const sample: Snapshot = {
      schemaVersion: 1,
      source: 'nvml',
      timestampMs: 0,
      hostname: 'h',
      driverVersion: '580.95.05',
      cudaVersion: null,
      gpus: [gpu],
      notes: [],
    };
    const r = buildDoctorReport(
      input([...steps.slice(0, 3), step(4, 0.1, 0.04, { memory: mem })], { gpuSamples: [sample, sample], gpuUnavailableReason: null }),
    );
    expect(r.environment.driver).toBe('580.95.05');
    expect(r.ranks[0]).toMatchObject({ nvmlUsedBytes: 30.75 * GiB, nonAllocatorBytes: 0.75 * GiB });
    expect(r.gpus?.[0]).toMatchObject({ samples: 2, maxUsedBytes: 31 * GiB, meanUtilizationPercent: 90 });
    expect(r.gpus?.[0]?.timeline).toEqual({ tS: [0, 0], usedBytes: [31 * GiB, 31 * GiB], utilizationPercent: [90, 90] });
    expect(r.ranks[0]?.nvmlTimeline).toEqual({ tS: [0, 0], usedBytes: [30.75 * GiB, 30.75 * GiB] });
    expect(renderDoctorText(r)).toContain('seen by NVML: reserved 30.0 GiB + CUDA context and other 768 MiB = 30.8 GiB');
  });

  it('the DataLoader finding comes from the run alone (no window), carries its arithmetic and ranks by gain', () => {
    const r = buildDoctorReport(input(steps));
    expect(r.findings[0]).toMatchObject({ id: 'dataloader-bound', source: 'probe', severity: 'high' });
    // No window tells the host and the GPU apart: with enough workers the step is its time less its wait.
    expect(r.findings[0]?.estimatedGain?.savedFraction).toBeCloseTo(0.4, 12);
    expect(r.findings[0]?.title).toBe('The training loop waits on the DataLoader');
    expect(r.findings[0]?.evidence[0]).toContain('(40% of the mean step');
    expect(r.pace?.plan.steps.map((s) => s.id)).toEqual(['dataloader-bound']);
    // Below 5% of the step, no finding.
    expect(buildDoctorReport(input([1, 2, 3, 4].map((i) => step(i, 0.1, 0.004)))).findings.map((f) => f.id)).not.toContain('dataloader-bound');
  });

  it('says when the probe never reported', () => {
    const r = buildDoctorReport(input([], { exit: { code: 0, signal: null } }));
    expect(r.environment.probeSilent).toBe(true);
    expect(r.notes.join(' ')).toContain('the probe sent nothing');
    expect(r.run.outcome).toBe('completed');
  });
});

describe('planModelOf', () => {
  const base: ModelRecord = {
    v: 1,
    type: 'model',
    pid: 1,
    rank: null,
    t: 0,
    format: 'gpuwise-model/1',
    name: 'GPT2LMHeadModel',
    paramCount: 0,
    totalParamCount: 0,
    paramGroups: [],
    modules: [],
    buffers: { count: 0, bytes: 0, dtypes: {} },
    optimizer: { class: 'AdamW', paramGroups: 1, stateBytes: 0, stateDtypes: {} },
    hfConfig: null,
    found: true,
  };

  it("turns the model's Hugging Face config into a gpuwise-model/1 that plan reads back", () => {
    const cfg = JSON.parse(readFileSync(new URL('../fixtures/planner/configs/gpt2/config.json', import.meta.url), 'utf8'));
    const { model, problem } = planModelOf({ ...base, hfConfig: cfg });
    expect(problem).toBeNull();
    expect(model?.format).toBe('gpuwise-model/1');
    const back = describeModel(JSON.parse(JSON.stringify(model)));
    expect(back.paramCount).toBe(model?.paramCount);
    expect(back).toMatchObject({ family: 'gpt2', layers: 12, hidden: 768, architecture: 'GPT2LMHeadModel' });
  });

  it('says why there is none for a model without a config', () => {
    expect(planModelOf({ ...base, name: 'Sequential' })).toEqual({
      model: null,
      problem: 'Sequential has no Hugging Face config: plan cannot model its architecture yet',
    });
    expect(planModelOf(null).model).toBeNull();
  });
});
