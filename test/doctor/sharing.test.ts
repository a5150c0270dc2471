/**
 * Shared GPUs in doctor's report (src/doctor/gpuProcesses.ts, sharing.ts; DataParallel's NVML memory in the dataparallel rule's RunContext): the processes of
 * each GPU, `gpu-shared` measured by splitting a process's steps on the samples, `ranks-share-gpu`, and DataParallel's
 * GPU 0 imbalance, on runs synthesised from the real H200 doctor runs (sharedRuns.ts) and the real DataParallel trace.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { diagnose } from '../../src/advice/engine.js';
import { ACTIVE_SM_PERCENT } from '../../src/doctor/gpuProcesses.js';
import { renderDoctorHtml } from '../../src/serve/pages/runs.js';
import { inlineAssets } from '../../src/serve/assets.js';
import { renderDoctorMarkdown } from '../../src/doctor/markdown.js';
import { recordedRunInput } from '../../src/doctor/rediagnose.js';
import { renderDoctorText } from '../../src/doctor/render.js';
import { buildDoctorReport } from '../../src/doctor/report.js';
import type { DoctorReport } from '../../src/doctor/reportTypes.js';
import { doctorReportProblem } from '../../src/doctor/reportCheck.js';
import { loadTrace } from '../../src/io/loadTrace.js';
import type { HelloRecord, ProbeRecord, StepRecord } from '../../src/run/records.js';
import { analyzeTrace } from '../../src/trace/metrics/index.js';
import { doctorInput } from './input.js';
import { GiB, recordsOf, samplesOf, T0, tiledProcess } from './sharedRuns.js';

const TRAINER = 5001;
const OTHER = 4242;
/** The other process's SM share while it works, and the time-slicing slowdown it causes the trainer. */
const OTHER_SM = 45;
const SLICED = 1 / (1 - OTHER_SM / 100);

const reportOf = (records: ProbeRecord[], samples: ReturnType<typeof samplesOf>) =>
  buildDoctorReport(doctorInput(records, { gpuSamples: samples, gpuUnavailableReason: null, startedAtMs: T0 * 1000, endedAtMs: (T0 + 30) * 1000 }));

/** host_sync's real steps for 20 s on GPU 0, with a foreign process working on GPU 0 from `fromS` to `toS`. */
function foreignRun(fromS: number, toS: number, otherSm = OTHER_SM) {
  const active = (t: number) => t > T0 + fromS - 1 && t <= T0 + toS;
  const records = tiledProcess('host_sync', { pid: TRAINER, startS: 3, seconds: 20, slowdownAt: (t) => (active(t) && otherSm > ACTIVE_SM_PERCENT ? SLICED : 1) });
  const samples = samplesOf(
    [
      { pid: TRAINER, gpu: 0, fromS: 2, toS: 24, usedBytes: 3 * GiB, smUtil: (s) => (s >= fromS && s <= toS ? 50 : 95) },
      { pid: OTHER, gpu: 0, fromS, toS, usedBytes: 20 * GiB, smUtil: () => otherSm, name: 'python', command: 'python serve.py --port 8000', user: 'alice' },
    ],
    { fromS: 0, toS: 25 },
  );
  return { records, samples };
}

describe('processes on each GPU', () => {
  it('lists the run\'s own process and the foreign one, each with memory, SM share and time present', () => {
    const { records, samples } = foreignRun(9, 16);
    const r = reportOf(records, samples);
    const procs = r.gpus?.[0]?.processes ?? [];
    expect(procs.map((p) => [p.pid, p.job, p.rank])).toEqual([
      [TRAINER, true, null],
      [OTHER, false, null],
    ]);
    const other = procs[1]!;
    expect(other).toMatchObject({ name: 'python', command: 'python serve.py --port 8000', user: 'alice', samples: 8, firstS: 9, lastS: 16, presentS: 8 });
    expect(other.peakUsedBytes).toBe(20 * GiB);
    expect(other.meanSmUtilPercent).toBe(OTHER_SM);
    expect(other.activeSamples).toBe(8);
    // the trainer: mean SM share over its 23 samples (8 shared at 50%, 15 alone at 95%)
    expect(procs[0]!.meanSmUtilPercent).toBeCloseTo((8 * 50 + 15 * 95) / 23, 6);
    expect(r.gpus?.[1]?.processes).toEqual([]);
    expect(r.gpus?.[0]?.firstSampleAtMs).toBe(T0 * 1000);
  });

  it('every format shows the process table; HTML without script', () => {
    const { records, samples } = foreignRun(9, 16);
    const r = reportOf(records, samples);
    const text = renderDoctorText(r);
    expect(text).toMatch(/pid 4242 python serve\.py --port 8000 \(alice\), not this run: 8 s \(9-16 s\), memory peak 20(\.0)? GiB/);
    const md = renderDoctorMarkdown(r);
    expect(md).toContain('#### Processes on the GPUs');
    expect(md).toMatch(/\| 0 \| pid 5001 \(this run\) \| 23 s \(2-24 s\) \|/);
    const html = renderDoctorHtml(r, inlineAssets());
    expect(html).toContain('<h3>Processes on the GPUs</h3>');
    expect(html).toContain('<td>pid 4242 python serve.py --port 8000 (alice), not this run</td>');
    expect(doctorReportProblem(JSON.parse(JSON.stringify(r)))).toBeNull();
  });

  it('a report read back with damaged process rows: the rows are skipped, every format and --from still work', () => {
    const { records, samples } = foreignRun(9, 16);
    const saved = JSON.parse(JSON.stringify(reportOf(records, samples))) as DoctorReport;
    (saved.gpus![0]!.processes as unknown[]).push(null, { pid: 'x' }, { pid: 1, samples: 1, activeSamples: 1, timeline: null });
    expect(renderDoctorMarkdown(saved).match(/^\| 0 \| pid /gm)).toHaveLength(2);
    expect(() => renderDoctorHtml(saved, inlineAssets())).not.toThrow();
    const again = buildDoctorReport(
      recordedRunInput({ dir: '/runs/x', records, skippedLines: 0, recordNotes: [], traces: [], snapshots: [], savedReport: saved, savedReportProblem: null, modelJson: null,
        version: 'test' }),
    );
    expect(again.gpus?.[0]?.processes?.map((p) => p.pid)).toEqual([TRAINER, OTHER]);
  });

  it('a command line with terminal control characters is printed without them', () => {
    const { records, samples } = foreignRun(9, 16);
    for (const s of samples) for (const p of s.gpus[0]!.processes) if (p.pid === OTHER) p.command = 'python \u001b]0;pwned\u0007evil.py';
    const text = renderDoctorText(reportOf(records, samples));
    expect(text).not.toContain('\u001b');
    expect(text).toContain('pid 4242 python ]0;pwnedevil.py');
  });
});

describe('gpu-shared', () => {
  it('measured: steps while the other process worked against steps alone', () => {
    const { records, samples } = foreignRun(9, 16);
    const r = reportOf(records, samples);
    const f = r.findings.find((x) => x.id === 'gpu-shared');
    expect(f).toBeDefined();
    expect(f?.source).toBe('telemetry');
    expect(f?.data.basis).toBe('measured');
    // the injected time-slicing slowdown comes back from the medians of real step times
    expect(f?.data.slowdown as number).toBeGreaterThan((SLICED - 1) * 0.95);
    expect(f?.data.slowdown as number).toBeLessThan((SLICED - 1) * 1.05);
    // ~7 s contended of ~20 s: about a third of the steps, counted on both sides
    const nC = f?.data.contendedSteps as number;
    const nA = f?.data.aloneSteps as number;
    const steps = records.filter((x) => x.type === 'step').length;
    expect(nC).toBeGreaterThan(100);
    expect(nA).toBeGreaterThan(nC);
    expect(nC + nA).toBeLessThan(steps); // warm-up, change-overs and steps past the last sample left out
    expect(f?.title).toMatch(/^GPU 0 is shared: pid 5001's steps took \d+% longer while pid 4242 python serve\.py --port 8000 \(alice\) ran work on it$/);
    expect(f?.evidence.join('\n')).toMatch(/median step .* over \d+ steps while the other process\(es\) ran work on the GPU, .* over \d+ steps while they did not/);
    // the gain: what the run saves alone, i.e. the contended steps at the alone pace: the alone median over the steps'
    // mean, a whole-step ratio made on the run's pipeline (its step the pace section's and the plan's)
    const g = f?.estimatedGain;
    const mean = (nC * (f?.data.contendedMedianS as number) + nA * (f?.data.aloneMedianS as number)) / (nC + nA);
    const ratio = (f?.data.aloneMedianS as number) / mean;
    expect(g?.stepTimeNs).toBeCloseTo(r.pace?.stepNs as number, 0);
    expect(g?.expectedStepTimeNs).toBeCloseTo((r.pace?.stepNs as number) * ratio, 0);
    expect(g?.savedFraction).toBeCloseTo(1 - ratio, 6);
    expect(r.pace?.plan.steps.find((s) => s.id === 'gpu-shared')?.expectedStepNs).toBeCloseTo(g?.expectedStepTimeNs as number, 0);
    expect(f?.severity).toBe(g!.savedFraction >= 0.25 ? 'high' : 'medium');
    expect(f?.recommendation.code).toContain('gpuwise select -n 1');
    expect(f?.recommendation.summary).toMatch(/MPS.*MIG/);
  });

  it('no alone step: says so, gives the other process\'s SM share and a time-slicing estimate with its basis', () => {
    const { records, samples } = foreignRun(0, 25);
    const f = reportOf(records, samples).findings.find((x) => x.id === 'gpu-shared');
    expect(f?.data.basis).toBe('time-slicing');
    expect(f?.data.slowdown).toBeNull();
    expect(f?.data.aloneSteps).toBe(0);
    expect(f?.data.othersSmSharePercent).toBe(OTHER_SM);
    expect(f?.title).toContain('no step ran alone to compare');
    expect(f?.evidence.join('\n')).toContain('the slowdown cannot be measured on this run; in those seconds the other process(es) took 45% of the SM time, this process 50%');
    expect(f?.estimatedGain?.arithmetic).toMatch(/^time-slicing estimate, not a measurement/);
    expect(f?.estimatedGain?.savedFraction).toBeCloseTo(OTHER_SM / 100, 6);
  });

  it('another process that holds memory but runs no work: listed, no finding', () => {
    const { records, samples } = foreignRun(9, 16, 0);
    const r = reportOf(records, samples);
    expect(r.findings.find((x) => x.id === 'gpu-shared')).toBeUndefined();
    expect(r.gpus?.[0]?.processes?.find((p) => p.pid === OTHER)?.activeSamples).toBe(0);
  });

  it('two processes of one run on GPU 0 (sh -c "python a.py & python b.py"), staggered: each measured, fix: one GPU each', () => {
    // a (host_sync) runs 3-23 s, b (fp32_matmul) 10-30 s: each slowed while the other works, each alone part of the time
    const bActive = (t: number) => t > T0 + 9 && t <= T0 + 30;
    const aActive = (t: number) => t > T0 + 2 && t <= T0 + 23;
    const a = tiledProcess('host_sync', { pid: 6001, startS: 3, seconds: 20, slowdownAt: (t) => (bActive(t) ? 2 : 1) });
    const b = tiledProcess('fp32_matmul', { pid: 6002, startS: 10, seconds: 20, slowdownAt: (t) => (aActive(t) ? 2 : 1) });
    const samples = samplesOf(
      [
        { pid: 6001, gpu: 0, fromS: 3, toS: 23, usedBytes: 3 * GiB, smUtil: (s) => (s >= 10 ? 48 : 96) },
        { pid: 6002, gpu: 0, fromS: 10, toS: 30, usedBytes: 3 * GiB, smUtil: (s) => (s <= 23 ? 48 : 96) },
      ],
      { fromS: 0, toS: 31 },
    );
    const r = reportOf([...a, ...b], samples);
    const fs = r.findings.filter((x) => x.id === 'gpu-shared');
    expect(fs).toHaveLength(1);
    const f = fs[0]!;
    expect(f.data.sameRun).toBe(true);
    expect(f.evidence.filter((e) => /^pid 600[12]: median step/.test(e))).toHaveLength(2);
    for (const e of f.evidence.filter((x) => /^pid 600[12]: median step/.test(x))) expect(e).toMatch(/: \+(9\d|10\d)%/);
    expect(f.recommendation.code).toBe('CUDA_VISIBLE_DEVICES=0 python examples/train/host_sync.py &\nCUDA_VISIBLE_DEVICES=1 python examples/train/fp32_matmul.py &\nwait');
    expect(r.gpus?.[0]?.processes?.map((p) => [p.pid, p.job])).toEqual([
      [6001, true],
      [6002, true],
    ]);
  });

  it('doctor --from: a saved report.json with its process timelines gives the same finding', () => {
    const { records, samples } = foreignRun(9, 16);
    const live = reportOf(records, samples);
    const saved = JSON.parse(JSON.stringify(live)) as DoctorReport;
    const again = buildDoctorReport(
      recordedRunInput({ dir: '/runs/x', records, skippedLines: 0, recordNotes: [], traces: [], snapshots: [], savedReport: saved, savedReportProblem: null, modelJson: null,
        version: 'test' }),
    );
    const pick = (r: DoctorReport) => r.findings.find((f) => f.id === 'gpu-shared');
    expect(pick(again)?.data).toEqual(pick(live)?.data);
    expect(pick(again)?.estimatedGain).toEqual(pick(live)?.estimatedGain);
  });
});

describe('ranks-share-gpu', () => {
  const ddp = () => recordsOf('accum_no_sync');
  const [r0, r1] = [1450, 1451];
  const ddpSamples = (rank1Gpu: number) =>
    samplesOf(
      [
        { pid: r0, gpu: 0, fromS: 0, toS: 5, usedBytes: 11 * GiB, smUtil: () => (rank1Gpu === 0 ? 48 : 95), rank: 0 },
        { pid: r1, gpu: rank1Gpu, fromS: 0, toS: 5, usedBytes: 11 * GiB, smUtil: () => (rank1Gpu === 0 ? 47 : 95), rank: 1 },
      ],
      { fromS: 0, toS: 5 },
    );

  it('NVML: both ranks on GPU 0, GPU 1 empty: high, naming ranks, GPU, idle GPU and the fix', () => {
    const r = buildDoctorReport(doctorInput(ddp(), { gpuSamples: ddpSamples(0), gpuUnavailableReason: null }));
    const f = r.findings.find((x) => x.id === 'ranks-share-gpu');
    expect(f?.title).toBe('Ranks 0, 1 all run on GPU 0 while GPU 1 stays idle');
    expect(f?.ranks).toEqual([0, 1]);
    expect(f?.severity).toBe('high');
    expect(f?.data).toMatchObject({ gpu: 0, idleGpus: '1', source: 'nvml' });
    expect(f?.evidence[0]).toBe('NVML: rank 0 (pid 1450) holds 11.0 GiB on GPU 0, SM share 48%; rank 1 (pid 1451) holds 11.0 GiB on GPU 0, SM share 47%');
    expect(f?.evidence[1]).toMatch(/^GPU 1 \(cuda:1\): no process of this run, utilisation mean 0%$/);
    // each rank waits for the other's kernels: the step loses at least the other's 47%
    expect(f?.estimatedGain?.savedFraction).toBeCloseTo(0.47, 6);
    expect(f?.recommendation.code).toContain('torch.cuda.set_device(local_rank)');
    expect(f?.recommendation.code).toContain('device_ids=[local_rank]');
    // DDP peers are not "another process" to time against
    expect(r.findings.find((x) => x.id === 'gpu-shared')).toBeUndefined();
  });

  it('NVML: each rank on its own GPU: nothing, even though a stray context would not count', () => {
    const r = buildDoctorReport(doctorInput(ddp(), { gpuSamples: ddpSamples(1), gpuUnavailableReason: null }));
    expect(r.findings.find((x) => x.id === 'ranks-share-gpu')).toBeUndefined();
  });

  it('without NVML: the probe\'s current devices (the real run: cuda:0 and cuda:1) say nothing is shared', () => {
    expect(buildDoctorReport(doctorInput(ddp())).findings.find((x) => x.id === 'ranks-share-gpu')).toBeUndefined();
  });

  /** The real DDP records with rank 1 reporting cuda:0 as its current device (no set_device); `allocated`: its tensors there. */
  const onCuda0 = (allocated: boolean) =>
    ddp().map((x): ProbeRecord => {
      if (x.pid !== r1) return x;
      if (x.type === 'hello') return { ...x, cuda: { ...(x as HelloRecord).cuda, currentDevice: 0 } };
      if (x.type === 'step' && x.memory)
        return { ...x, memory: { ...(x as StepRecord).memory!, device: 0, ...(allocated ? {} : { allocatedBytes: 0, peakAllocatedBytes: 0, reservedBytes: 0, peakReservedBytes: 0 }) } };
      return x;
    });

  it('without NVML: current device cuda:0 but nothing allocated there (model placed with .to(local_rank)): nothing', () => {
    expect(buildDoctorReport(doctorInput(onCuda0(false))).findings.find((x) => x.id === 'ranks-share-gpu')).toBeUndefined();
  });

  it('without NVML: rank 1 reporting cuda:0 of 2 visible (no set_device) is found from the probe', () => {
    const f = buildDoctorReport(doctorInput(onCuda0(true))).findings.find((x) => x.id === 'ranks-share-gpu');
    expect(f?.title).toBe('Ranks 0, 1 all run on cuda:0 while cuda:1 stays idle');
    expect(f?.data.source).toBe('probe');
    expect(f?.evidence[0]).toBe('probe: rank 0 (LOCAL_RANK 0) on cuda:0 of 2 visible, rank 1 (LOCAL_RANK 1) on cuda:0 of 2 visible');
    expect(f?.estimatedGain?.arithmetic).toMatch(/2 ranks on one GPU each get about 1\/2 of it/);
    expect(f?.severity).toBe('high');
  });
});

describe('DataParallel: GPU 0 imbalance', () => {
  it('the trace rule gives each GPU\'s busy share in the window (real 2x H200 DataParallel trace)', async () => {
    const m = analyzeTrace(await loadTrace(join(__dirname, '..', '..', 'examples', 'traces', 'scenarios', 'dataparallel.trace.json.gz')));
    const f = diagnose([m], []).find((x) => x.id === 'dataparallel');
    const dur = m.steps.reduce((a, s) => a + s.durNs, 0);
    const busy = (d: number) => m.steps.reduce((a, s) => a + (s.devices.find((x) => x.device === d)?.busyNs ?? 0), 0) / dur;
    expect(f?.data.busyShareDevice0).toBeCloseTo(busy(0), 9);
    expect(f?.data.busyShareDevice1).toBeCloseTo(busy(1), 9);
    // GPU 0 also runs the gather, the loss and the optimizer: busier than GPU 1
    expect(busy(0)).toBeGreaterThan(busy(1) * 1.1);
    const ev = f?.evidence.join('\n') ?? '';
    expect(ev).toMatch(/busy per GPU in the window: GPU 0 \d+(\.\d)?% \(.* a step\), GPU 1 .*; GPU 0 works 1\.\d\dx the others' mean/);
    expect(ev).toMatch(/GPU 0's extra kernel time a step, by kind: optimizer \+/);
  });

  it('doctor adds the process\'s NVML peak memory per GPU (the real doctor run, synthesised samples)', async () => {
    const dir = join(__dirname, '..', '..', 'examples', 'doctor', 'runs', 'h200', 'dataparallel');
    const records = recordsOf('dataparallel');
    const pid = records[0]!.pid;
    const t = records[0]!.t;
    const path = join(dir, 'trace.json.gz');
    const samples = samplesOf(
      [
        { pid, gpu: 0, fromS: 0, toS: 3, usedBytes: 2.1 * GiB, smUtil: () => 20 },
        { pid, gpu: 1, fromS: 0, toS: 3, usedBytes: 1.2 * GiB, smUtil: () => 15 },
      ],
      { fromS: 0, toS: 3 },
    ).map((s, i) => ({ ...s, timestampMs: (t + i) * 1000 }));
    const r = buildDoctorReport(
      doctorInput(records, { gpuSamples: samples, gpuUnavailableReason: null, traces: [{ rank: 0, path, metrics: analyzeTrace(await loadTrace(path)), collectives: null, error: null }] }),
    );
    const f = r.findings.find((x) => x.id === 'dataparallel');
    expect(f?.data.peakUsedBytesGpu0).toBe(2.1 * GiB);
    expect(f?.data.peakUsedBytesGpu1).toBe(1.2 * GiB);
    expect(f?.data.memoryImbalance).toBeCloseTo(2.1 / 1.2, 9);
    expect(f?.evidence.at(-1)).toBe(
      "NVML peak memory of the process per GPU: GPU 0 (cuda:0) 2.10 GiB, GPU 1 (cuda:1) 1.20 GiB; GPU 0 (cuda:0) holds 1.75x the others' mean (the gathered outputs, the loss, the optimizer state and the master weights live there), so it runs out of memory first",
    );
    // one process on two GPUs is not "another process" sharing either of them
    expect(r.findings.find((x) => x.id === 'gpu-shared')).toBeUndefined();
  });
});
