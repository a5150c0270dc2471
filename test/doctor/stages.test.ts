/**
 * buildDoctorReport's stages, each alone, on the real records and windows of the H200 runs (examples/doctor/runs/h200).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { notesOf } from '../../src/doctor/notes.js';
import { type FindingProducer, type ProducerInput, PRODUCERS } from '../../src/doctor/producers.js';
import type { TraceInput } from '../../src/doctor/reportTypes.js';
import { findingsOf } from '../../src/doctor/stages/findings.js';
import { paceOf } from '../../src/doctor/stages/pace.js';
import { groupProcesses } from '../../src/doctor/stages/records.js';
import { runOf } from '../../src/doctor/stages/run.js';
import { whatIfsOf } from '../../src/doctor/stages/whatIfs.js';
import { traceRuleFindings } from '../../src/doctor/traceRules.js';
import { adviceFinding, type Finding, finding } from '../../src/findings/finding.js';
import { wholeStepGain } from '../../src/pace/gain.js';
import { loadTrace } from '../../src/io/loadTrace.js';
import { parseProbeLines, type ProbeRecord, type StepRecord } from '../../src/run/records.js';
import { analyzeTrace } from '../../src/trace/metrics/index.js';
import { doctorInput } from './input.js';

const RUNS = join(__dirname, '..', '..', 'examples', 'doctor', 'runs', 'h200');
const recordsOf = (name: string) => parseProbeLines(readFileSync(join(RUNS, name, 'probe.jsonl'), 'utf8')).records;
/** The run stage on a run's records (and windows), grouped by the records stage unless given. */
const runOfRecords = (records: ProbeRecord[], traces: TraceInput[] = [], processes = groupProcesses(records)) =>
  runOf(doctorInput(records, { traces }), processes);
const producer = (name: string) => PRODUCERS.find((p) => p.name === name) as FindingProducer;

describe('stages of the doctor report', () => {
  it('groupProcesses and runOf: two DDP ranks, the lowest tells the run', () => {
    const records = recordsOf('accum_no_sync');
    const processes = groupProcesses(records);
    expect(processes.map((p) => [p.rank, p.rankFromEnv, p.steps.length])).toEqual([
      [0, true, 30],
      [1, true, 30],
    ]);
    const run = runOfRecords(records, [], [...processes].reverse());
    expect(run.hello?.rank).toBe(0);
    expect(run.setupRank?.rank).toBe(0);
    expect(run.ranks.map((r) => r.rank)).toEqual([0, 1]);
  });

  it("runOf's rank summaries: steady steps only (no warm-up, no profiler window or the step that wrote the trace)", () => {
    const r = runOfRecords(recordsOf('starved_dataloader')).ranks[0]!;
    expect(r.steps).toMatchObject({ steps: 40, timing: 'gpu', steadyFromStep: 2, settled: true });
    // 40 steps: step 1 (warm-up), 10-14 (profiled) and 15 (1.84 s writing the trace) left out
    expect(r.steps.measuredSteps).toBe(33);
    // the mean is now the steady pace, not pulled up by the trace export: throughput = batch / steady step
    expect(r.steps.meanS! / r.steps.medianS!).toBeLessThan(1.02);
    expect(r.steps.samplesPerS).toBeCloseTo(64 / r.steps.meanS!, 6);
  });

  it("runOf's rank summaries on a sampled list of step records: the count stays the run's", () => {
    const records = recordsOf('host_sync');
    const [p] = groupProcesses(records);
    const sampled = { ...p!, steps: p!.steps.filter((s: StepRecord) => s.step % 3 === 1 || s.step === 40) };
    const r = runOfRecords(records, [], [sampled]).ranks[0]!;
    expect(r.steps.steps).toBe(40);
    expect(r.steps.medianS).toBeCloseTo(runOfRecords(records).ranks[0]!.steps.medianS!, 3);
  });

  it('traceRuleFindings: one number per finding (the gain, judged on the run: its mean step, its waits), the window figures in the evidence', async () => {
    const path = join(RUNS, 'starved_dataloader', 'trace.json.gz');
    const traces: TraceInput[] = [{ rank: 0, path, metrics: analyzeTrace(await loadTrace(path)), collectives: null, error: null }];
    const run = runOfRecords(recordsOf('starved_dataloader'), traces);
    const fs = traceRuleFindings(run, paceOf(run));
    const dl = fs.find((f) => f.id === 'dataloader-bound')!;
    const st = run.ranks[0]!.steps;
    // the title states no share: the expected line gives the run's, the evidence the window's and the run's waits
    expect(dl.title).toBe('The training loop waits on the DataLoader');
    expect(dl.estimatedGain?.stepTimeNs).toBeCloseTo((st.meanS ?? 0) * 1e9, 0);
    expect(dl.evidence[0]).toContain(`(${Math.round((st.dataWaitShare ?? 0) * 100)}% of the mean step`);
    expect(dl.evidence.join('\n')).toMatch(/in the profiled window DataLoader\.__next__ takes [\d.]+ ms per step on the CPU/);
  });

  it('the run-pipeline producer: the DataLoader finding from the run alone, for a rank without a window', () => {
    const run = runOfRecords(recordsOf('starved_dataloader'));
    const pace = paceOf(run);
    const input: ProducerInput = { run, pace, whatIfs: whatIfsOf(run, pace) };
    const [f] = producer('run-pipeline').produce(input, () => []).findings;
    expect(f?.id).toBe('dataloader-bound');
    expect(f?.title).toBe('The training loop waits on the DataLoader');
    // with the rank's window, it is the trace's finding (traceRuleFindings)
    const traces: TraceInput[] = [{ rank: 0, path: 'w', metrics: {} as TraceInput['metrics'], collectives: null, error: null }];
    const windowed = { ...input, run: { ...run, input: { ...run.input, traces } } };
    expect(producer('run-pipeline').produce(windowed, () => []).findings).toEqual([]);
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
    const run = runOfRecords(steps);
    expect(run.ranks[0]?.steps.settled).toBe(false);
    expect(notesOf(run).join('\n')).toMatch(/rank 0: the step times never settled/);
  });

  it('notesOf: says when the profiled window started before the steps settled (protocol 2)', () => {
    const records = recordsOf('host_sync').map((r) =>
      r.type === 'profile-start' ? { ...r, v: 2, reason: 'cap' as const, settled: false, warmupSteps: 9 } : r,
    );
    const notes = notesOf(runOfRecords(records));
    expect(notes.join('\n')).toMatch(/rank 0: the profiled window started at step 10 before the step times settled \(the wait reached its cap, after 9 steps\)/);
  });

  it('findingsOf: most gain first within a severity, advice included (never above high; after a defect of equal gain)', () => {
    const defect = finding({ id: 'host-sync', title: '', ranks: [0], evidence: [], data: {}, recommendation: { summary: '', code: '' }, estimatedGain: wholeStepGain(100, 100 - 20, '') });
    const advice = adviceFinding({ id: 'whatif-bigger-batch', title: '', ranks: [0], evidence: [], data: {}, recommendation: { summary: '', code: '' }, estimatedGain: wholeStepGain(100, 100 - 23, '') });
    const bigAdvice = adviceFinding({ ...advice, id: 'whatif-fsdp', estimatedGain: wholeStepGain(100, 100 - 90, '') });
    const high = finding({ ...defect, id: 'dataloader-bound', estimatedGain: wholeStepGain(100, 100 - 26, '') });
    expect(bigAdvice.severity).toBe('medium');
    const ranked = (trace: Finding[], planner: Finding[]) =>
      findingsOf({} as ProducerInput, [
        { name: 'trace-rules', source: 'trace', needs: [], produce: () => ({ findings: trace }) },
        { name: 'what-ifs', source: 'planner', needs: [], produce: () => ({ findings: planner }) },
      ]).map((f) => `${f.id} (${f.source})`);
    expect(ranked([defect, high], [advice, bigAdvice])).toEqual([
      'dataloader-bound (trace)',
      'whatif-fsdp (planner)',
      'whatif-bigger-batch (planner)',
      'host-sync (trace)',
    ]);
    const tie = adviceFinding({ ...advice, estimatedGain: wholeStepGain(100, 100 - 20, '') });
    expect(ranked([], [tie, defect])).toEqual(['host-sync (planner)', 'whatif-bigger-batch (planner)']);
  });

  it('the producer registry: each producer after those it needs; a revised finding replaces the one it amends', () => {
    const names = PRODUCERS.map((p) => p.name);
    for (const [i, p] of PRODUCERS.entries()) for (const n of p.needs) expect(names.indexOf(n), `${p.name} needs ${n}`).toBeLessThan(i);
    expect(producer('what-ifs').needs).toEqual(['trace-rules']);
    const base = finding({ id: 'gpu-underused', title: '', ranks: [0], evidence: ['busy 50%'], data: {}, recommendation: { summary: '', code: '' }, estimatedGain: wholeStepGain(100, 100 - 30, '') });
    const whatIfs: FindingProducer = {
      name: 'what-ifs',
      source: 'planner',
      needs: ['trace-rules'],
      produce: (_, needed) => ({ findings: [], revised: needed('trace-rules').map((f) => ({ ...f, evidence: [...f.evidence, 'planner what-if'] })) }),
    };
    const trace: FindingProducer = { name: 'trace-rules', source: 'trace', needs: [], produce: () => ({ findings: [base] }) };
    expect(findingsOf({} as ProducerInput, [trace, whatIfs]).map((f) => f.evidence)).toEqual([['busy 50%', 'planner what-if']]);
    expect(() => findingsOf({} as ProducerInput, [whatIfs, trace])).toThrow(/what-ifs needs trace-rules/);
  });
});
