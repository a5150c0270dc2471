/**
 * buildDoctorReport's stages, each alone, on the real records and windows of the H200 runs (examples/doctor/runs/h200).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  groupProcesses,
  notesOf,
  pacesOf,
  probeFindingsOf,
  rankFindings,
  runIdentity,
  summarizeRank,
  traceFindingsOf,
  type TraceInput,
} from '../../src/doctor/report.js';
import { adviceFinding, finding } from '../../src/findings/finding.js';
import { wholeStepGain } from '../../src/pace/gain.js';
import { loadTrace } from '../../src/io/loadTrace.js';
import { parseProbeLines, type StepRecord } from '../../src/run/records.js';
import { analyzeTrace } from '../../src/trace/metrics/index.js';
import { doctorInput } from './input.js';

const RUNS = join(__dirname, '..', '..', 'examples', 'doctor', 'runs', 'h200');
const recordsOf = (name: string) => parseProbeLines(readFileSync(join(RUNS, name, 'probe.jsonl'), 'utf8')).records;

describe('stages of the doctor report', () => {
  it('groupProcesses and runIdentity: two DDP ranks, the lowest tells the run', () => {
    const processes = groupProcesses(recordsOf('accum_no_sync'));
    expect(processes.map((p) => [p.rank, p.rankFromEnv, p.steps.length])).toEqual([
      [0, true, 30],
      [1, true, 30],
    ]);
    const id = runIdentity([...processes].reverse());
    expect(id.hello?.rank).toBe(0);
    expect(id.stepsOf?.rank).toBe(0);
  });

  it('summarizeRank: steady steps only (no warm-up, no profiler window or the step that wrote the trace)', () => {
    const [p] = groupProcesses(recordsOf('starved_dataloader'));
    const r = summarizeRank(p!, null);
    expect(r.steps).toMatchObject({ steps: 40, timing: 'gpu', steadyFromStep: 2, settled: true });
    // 40 steps: step 1 (warm-up), 10-14 (profiled) and 15 (1.84 s writing the trace) left out
    expect(r.steps.measuredSteps).toBe(33);
    // the mean is now the steady pace, not pulled up by the trace export: throughput = batch / steady step
    expect(r.steps.meanS! / r.steps.medianS!).toBeLessThan(1.02);
    expect(r.steps.samplesPerS).toBeCloseTo(64 / r.steps.meanS!, 6);
  });

  it("summarizeRank on a sampled list of step records: the count stays the run's", () => {
    const [p] = groupProcesses(recordsOf('host_sync'));
    const sampled = { ...p!, steps: p!.steps.filter((s: StepRecord) => s.step % 3 === 1 || s.step === 40) };
    const r = summarizeRank(sampled, null);
    expect(r.steps.steps).toBe(40);
    expect(r.steps.medianS).toBeCloseTo(summarizeRank(p!, null).steps.medianS!, 3);
  });

  it('traceFindingsOf: one number per finding (the gain, judged on the run: its mean step, its waits), the window figures in the evidence', async () => {
    const path = join(RUNS, 'starved_dataloader', 'trace.json.gz');
    const traces: TraceInput[] = [{ rank: 0, path, metrics: analyzeTrace(await loadTrace(path)), collectives: null, error: null }];
    const processes = groupProcesses(recordsOf('starved_dataloader'));
    const ranks = processes.map((p) => summarizeRank(p, null));
    const fs = traceFindingsOf(traces, ranks, { paces: pacesOf(processes, ranks, traces) });
    const dl = fs.find((f) => f.id === 'dataloader-bound')!;
    const st = ranks[0]!.steps;
    // the title states no share: the expected line gives the run's, the evidence the window's and the run's waits
    expect(dl.title).toBe('The training loop waits on the DataLoader');
    expect(dl.estimatedGain?.stepTimeNs).toBeCloseTo((st.meanS ?? 0) * 1e9, 0);
    expect(dl.evidence[0]).toContain(`(${Math.round((st.dataWaitShare ?? 0) * 100)}% of the mean step`);
    expect(dl.evidence.join('\n')).toMatch(/in the profiled window DataLoader\.__next__ takes [\d.]+ ms per step on the CPU/);
  });

  it('probeFindingsOf: the DataLoader finding from the run alone, for a rank without a window', () => {
    const processes = groupProcesses(recordsOf('starved_dataloader'));
    const ranks = processes.map((p) => summarizeRank(p, null));
    const [f] = probeFindingsOf(null, ranks, [], pacesOf(processes, ranks, []));
    expect(f?.id).toBe('dataloader-bound');
    expect(f?.title).toBe('The training loop waits on the DataLoader');
    // with the rank's window, it is the trace's finding (traceFindingsOf)
    const traces: TraceInput[] = [{ rank: 0, path: 'w', metrics: {} as TraceInput['metrics'], collectives: null, error: null }];
    expect(probeFindingsOf(null, ranks, traces, pacesOf(processes, ranks, []))).toEqual([]);
  });

  it('notesOf: says when step times never settled', () => {
    const steps = Array.from({ length: 12 }, (_, i) => i + 1).map((n) => ({
      v: 1,
      type: 'step' as const,
      pid: 9,
      rank: null,
      t: n,
      step: n,
      stepTimeS: 0.8 ** n, // 20% faster every step to the end: never at the pace of its second half
      dataWaitS: 0,
      batches: 1,
      samples: 8,
      memory: null,
      profiled: false,
    }));
    const processes = groupProcesses(steps);
    const ranks = processes.map((p) => summarizeRank(p, null));
    expect(ranks[0]?.steps.settled).toBe(false);
    expect(notesOf(doctorInput(steps), processes, ranks).join('\n')).toMatch(/rank 0: the step times never settled/);
  });

  it('notesOf: says when the profiled window started before the steps settled (protocol 2)', () => {
    const records = recordsOf('host_sync').map((r) =>
      r.type === 'profile-start' ? { ...r, v: 2, reason: 'cap' as const, settled: false, warmupSteps: 9 } : r,
    );
    const processes = groupProcesses(records);
    const notes = notesOf(doctorInput(records), processes, processes.map((p) => summarizeRank(p, null)));
    expect(notes.join('\n')).toMatch(/rank 0: the profiled window started at step 10 before the step times settled \(the wait reached its cap, after 9 steps\)/);
  });

  it('rankFindings: most gain first within a severity, advice included (never above high; after a defect of equal gain)', () => {
    const defect = finding({ id: 'host-sync', title: '', ranks: [0], evidence: [], data: {}, recommendation: { summary: '', code: '' }, estimatedGain: wholeStepGain(100, 100 - 20, '') });
    const advice = adviceFinding({ id: 'whatif-bigger-batch', title: '', ranks: [0], evidence: [], data: {}, recommendation: { summary: '', code: '' }, estimatedGain: wholeStepGain(100, 100 - 23, '') });
    const bigAdvice = adviceFinding({ ...advice, id: 'whatif-fsdp', estimatedGain: wholeStepGain(100, 100 - 90, '') });
    const high = finding({ ...defect, id: 'dataloader-bound', estimatedGain: wholeStepGain(100, 100 - 26, '') });
    expect(bigAdvice.severity).toBe('medium');
    const order = rankFindings([defect, high], [], [], [advice, bigAdvice]).map((f) => f.id);
    expect(order).toEqual(['dataloader-bound', 'whatif-fsdp', 'whatif-bigger-batch', 'host-sync']);
    const tie = adviceFinding({ ...advice, estimatedGain: wholeStepGain(100, 100 - 20, '') });
    expect(rankFindings([], [], [], [tie, defect]).map((f) => f.id)).toEqual(['host-sync', 'whatif-bigger-batch']);
  });
});
