/** summarizeTrial: one trial's probe records reduced to outcome, steady peak memory and throughput. */
import { describe, expect, it } from 'vitest';
import type { ProbeRecord } from '../../src/run/records.js';
import type { Snapshot } from '../../src/telemetry/sample.js';
import { OOM_TEXT, type TrialInput, modelFacts, summarizeTrial } from '../../src/tune/trial.js';

const GiB = 1024 ** 3;
const base = (pid: number, rank: number | null) => ({ v: 1, pid, rank, t: 0 });

function hello(pid: number, rank: number | null): ProbeRecord {
  return {
    ...base(pid, rank),
    type: 'hello',
    probeVersion: '0.2.0',
    python: '3.11',
    torch: '2.5.0',
    cudnn: null,
    cuda: {
      available: true,
      initialized: true,
      version: '12.4',
      devices: [{ index: 0, name: 'NVIDIA H100 80GB HBM3', totalMemoryBytes: 80 * GiB, capability: '9.0' }],
      currentDevice: 0,
    },
    hostname: 'h',
    argv: [],
    localRank: rank,
    worldSize: rank === null ? null : 2,
    stepHook: 'optimizer-step-post-hook',
    profileAt: 10,
    profileSteps: 0,
    maxSteps: 8,
  };
}

function step(pid: number, rank: number | null, n: number, peakGiB: number, timeS: number, samples = 16): ProbeRecord {
  return {
    ...base(pid, rank),
    type: 'step',
    step: n,
    stepTimeS: timeS,
    dataWaitS: 0,
    batches: 1,
    samples,
    tokens: samples * 512,
    seqLen: 512,
    stepSource: 'optimizer',
    memory: {
      device: 0,
      allocatedBytes: 2 * GiB,
      reservedBytes: peakGiB * 1.05 * GiB,
      peakAllocatedBytes: peakGiB * GiB,
      peakReservedBytes: peakGiB * 1.05 * GiB,
      allocRetries: 0,
      ooms: 0,
    },
    profiled: false,
  };
}

function model(pid: number, rank: number | null, stateBytes: number): ProbeRecord {
  return {
    ...base(pid, rank),
    type: 'model',
    format: 'gpuwise-model/1',
    name: 'GPT2LMHeadModel',
    paramCount: 1000,
    totalParamCount: 1000,
    paramGroups: [],
    modules: [
      { name: 'transformer', class: 'GPT2Model', paramCount: 900, trainableParamCount: 900, dtypes: { float32: 900 } },
      { name: 'head', class: 'Linear', paramCount: 100, trainableParamCount: 100, dtypes: { bfloat16: 100 } },
    ],
    buffers: { count: 1, bytes: 64, dtypes: { float32: 64 } },
    optimizer: { class: 'AdamW', paramGroups: 1, stateBytes, stateDtypes: { float32: stateBytes } },
    hfConfig: null,
    found: true,
  };
}

/** Rank `rank` (pid 100 + rank) stepping `n` steps: step 1 at 10 GiB, later steps at 12 GiB (optimizer state). */
function rankSteps(rank: number, n: number, timeS: number, peakGiB = 12): ProbeRecord[] {
  const pid = 100 + rank;
  const out: ProbeRecord[] = [hello(pid, rank), model(pid, rank, 8000)];
  for (let i = 1; i <= n; i++) out.push(step(pid, rank, i, i === 1 ? 10 : peakGiB, i <= 2 ? 5 * timeS : timeS));
  return out;
}

const input = (records: ProbeRecord[], extra: Partial<TrialInput> = {}): TrialInput => ({
  value: 16,
  records,
  exit: { code: 0, signal: null },
  forwardedSignal: null,
  stoppedBy: null,
  stderrOom: false,
  stderrTail: [],
  gpuSamples: null,
  ...extra,
});

describe('summarizeTrial', () => {
  it('two ranks that ran: the tighter rank binds memory, the slower paces the step, throughput adds up', () => {
    const s = summarizeTrial(input([...rankSteps(0, 8, 0.1, 12), ...rankSteps(1, 8, 0.2, 13)]));
    expect(s).toMatchObject({
      outcome: 'ok',
      detail: '8 steps',
      ranks: 2,
      steps: 8,
      worldSize: 2,
      peakFromFirstStep: false,
      deviceTotalBytes: 80 * GiB,
    });
    expect(s.peakAllocatedBytes).toBe(13 * GiB);
    // Steps 1-2 are warm-up (5x slower here) and left out.
    expect(s.stepTimeS).toBeCloseTo(0.2);
    expect(s.samplesPerS).toBeCloseTo(16 / 0.1 + 16 / 0.2);
    expect(s.tokensPerS).toBeCloseTo((16 * 512) / 0.1 + (16 * 512) / 0.2);
    expect(s.samplesPerStep).toBe(16);
    expect(s.seqLen).toBe(512);
  });

  it("takes the GPU's own step times when the probe measured every counted step", () => {
    const recs = rankSteps(0, 6, 0.1);
    // Events lag: steps 2-4 reported with step 5, steps 5-6 with the end record (as the probe sends them).
    const withGpu = recs.map((r) =>
      r.type === 'step' && r.step === 5
        ? {
            ...r,
            gpuStepTimes: [
              [2, 0.5],
              [3, 0.08],
              [4, 0.09],
            ] as [number, number][],
          }
        : r,
    );
    const end: ProbeRecord = {
      ...base(100, 0),
      type: 'end',
      reason: 'max-steps',
      steps: 6,
      exception: null,
      gpuStepTimes: [
        [5, 0.07],
        [6, 0.085],
      ],
    };
    const s = summarizeTrial(input([...withGpu, end]));
    expect(s.stepTimeFrom).toBe('gpu');
    // Steps 3-6 are steady (step 2's 0.5 s is warm-up); their median by the nearest-rank rule of run/steps.ts, the one
    // definition doctor uses too (tune used to average the two middle values: 0.085).
    expect(s.stepTimeS).toBeCloseTo(0.08);
    // Without the end record steps 2-4 have GPU times, 3 of the 5 timed steps: the one rule (GPU times when they cover
    // at least half the steps, as doctor) keeps the GPU's pace; too few steps to tell warm-up apart.
    expect(summarizeTrial(input(withGpu))).toMatchObject({ stepTimeFrom: 'gpu', stepTimeS: 0.09 });
    // With GPU times for under half the steps: host timing for all.
    const fewGpu = recs.map((r) => (r.type === 'step' && r.step === 5 ? { ...r, gpuStepTimes: [[3, 0.08]] as [number, number][] } : r));
    expect(summarizeTrial(input(fewGpu))).toMatchObject({ stepTimeFrom: 'host', stepTimeS: 0.1 });
  });

  it('out of memory on rank 1 makes the whole trial out of memory, whatever rank 0 did', () => {
    const oom: ProbeRecord = {
      ...base(101, 1),
      type: 'exception',
      step: 2,
      exception: 'OutOfMemoryError',
      message: 'CUDA out of memory. Tried to allocate 2.00 GiB',
      outOfMemory: true,
    };
    const s = summarizeTrial(
      input([...rankSteps(0, 8, 0.1), ...rankSteps(1, 2, 0.1), oom], { exit: { code: 143, signal: null }, stoppedBy: 'oom' }),
    );
    expect(s).toMatchObject({ outcome: 'oom', detail: 'out of memory on rank 1 in step 3' });
  });

  it('out of memory said only on stderr, or an oom record followed by a failure', () => {
    expect(summarizeTrial(input([], { exit: { code: 1, signal: null }, stderrOom: true })).detail).toBe(
      'out of memory (the command said so on stderr)',
    );
    const rec: ProbeRecord = {
      ...base(100, null),
      type: 'oom',
      step: 4,
      device: 0,
      allocBytes: 1,
      deviceAllocatedBytes: 1,
      deviceFreeBytes: 0,
      snapshot: null,
    };
    expect(summarizeTrial(input([rec], { exit: { code: 1, signal: null } }))).toMatchObject({
      outcome: 'oom',
      detail: 'out of memory on rank 0 in step 4',
    });
    // The same record, but the command went on and finished: it ran (cuDNN retried, or the script caught it).
    expect(summarizeTrial(input([...rankSteps(0, 8, 0.1), rec]))).toMatchObject({ outcome: 'ok', recoveredOom: true });
  });

  it('a failure that is not out of memory: the exception, else the last stderr line', () => {
    const exc: ProbeRecord = {
      ...base(100, null),
      type: 'exception',
      step: 0,
      exception: 'KeyError',
      message: "'labels'",
      outOfMemory: false,
    };
    expect(summarizeTrial(input([exc], { exit: { code: 1, signal: null } }))).toMatchObject({
      outcome: 'failed',
      detail: "exit code 1: KeyError: 'labels'",
    });
    expect(
      summarizeTrial(
        input([], { exit: { code: 2, signal: null }, stderrTail: ['usage: train.py', 'train.py: error: unrecognized arguments: --bs'] }),
      ).detail,
    ).toBe('exit code 2: train.py: error: unrecognized arguments: --bs');
    expect(summarizeTrial(input([], { exit: { code: 130, signal: null }, forwardedSignal: 'SIGINT' })).outcome).toBe('interrupted');
    expect(summarizeTrial(input([], { exit: { code: 143, signal: null }, stoppedBy: 'timeout' })).outcome).toBe('timeout');
  });

  it("flags a peak set in step 1 (the optimizer's first step, not the batch)", () => {
    const recs = rankSteps(0, 4, 0.1).map((r) =>
      r.type === 'step' && r.memory ? { ...r, memory: { ...r.memory, peakAllocatedBytes: 10 * GiB } } : r,
    );
    expect(summarizeTrial(input(recs)).peakFromFirstStep).toBe(true);
  });

  it('memory outside the allocator: NVML per process minus peak reserved', () => {
    const sample = { gpus: [{ processes: [{ pid: 100, usedMemoryBytes: 13.5 * GiB }] }] } as unknown as Snapshot;
    const s = summarizeTrial(input(rankSteps(0, 4, 0.1), { gpuSamples: [sample] }));
    expect(s.nonAllocatorBytes).toBeCloseTo(13.5 * GiB - 12 * 1.05 * GiB);
  });

  it('model facts: weights and buffers at their dtype sizes, trainable bytes, optimizer state, main dtype', () => {
    const m = model(1, null, 8000);
    if (m.type !== 'model') throw new Error('not a model record');
    expect(modelFacts(m)).toEqual({
      name: 'GPT2LMHeadModel',
      weightBytes: 900 * 4 + 100 * 2 + 64,
      // the gradients of the trainable parameters are resident too (run/setup.ts, one definition with doctor)
      trainableBytes: expect.any(Number),
      optimizerClass: 'AdamW',
      optimizerStateBytes: 8000,
      mainDtype: 'float32',
      autocastDtype: null,
      compiled: null,
      hfConfig: null,
    });
  });

  it('recognises the out-of-memory messages of PyTorch, cuBLAS and NCCL, not a warning that mentions memory', () => {
    expect(OOM_TEXT.test('torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB')).toBe(true);
    expect(OOM_TEXT.test('RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`')).toBe(true);
    expect(OOM_TEXT.test("NCCL WARN Cuda failure 'out of memory'")).toBe(true);
    expect(OOM_TEXT.test('UserWarning: to save memory, set pin_memory=False')).toBe(false);
  });
});
