/**
 * The pure side of a multi-rank run's end: which rank failed first (ending.ts, through the report's outcome), which
 * stalled rank is behind (hang.ts), the collector's view of stalls while the run goes, and the per-rank view's
 * probe-timed rank-imbalance (distributed.ts). The same cases run for real in ranks.test.ts (gloo on CPU); here each
 * rule is pinned on records whose times are chosen, including the orders a live run cannot be made to produce.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { probeImbalanceFinding, weighedAgainstProbe } from '../../src/advice/rules/distributed.js';
import { distributedView, probeBalanceOf } from '../../src/doctor/distributed.js';
import { hangAnalysis, openStalls, StallTracker } from '../../src/doctor/hang.js';
import { buildDoctorReport } from '../../src/doctor/report.js';
import { finding, withGain } from '../../src/findings/finding.js';
import { wholeStepGain } from '../../src/pace/gain.js';
import type { ProbeRecord, StallRecord, StepRecord } from '../../src/run/records.js';
import { REPO, rediagnosed } from './helpers.js';
import { doctorInput } from './input.js';

const base = (pid: number, rank: number, t: number) => ({ v: 3, pid, rank, t });
const step = (pid: number, rank: number, n: number, t: number, dataWaitS = 0): StepRecord => ({
  ...base(pid, rank, t),
  type: 'step',
  step: n,
  stepTimeS: 0.1,
  dataWaitS,
  batches: 1,
  samples: 8,
  memory: null,
  profiled: false,
});
const steps = (pid: number, rank: number, upTo: number) => Array.from({ length: upTo }, (_, i) => step(pid, rank, i + 1, 100 + i));
const exception = (pid: number, rank: number, t: number, name: string, message: string, stepsDone = 5): ProbeRecord => ({
  ...base(pid, rank, t),
  type: 'exception',
  step: stepsDone,
  exception: name,
  message,
  outOfMemory: false,
});
const stall = (pid: number, rank: number, n: number, t: number, stack: string[]): StallRecord => ({
  ...base(pid, rank, t),
  type: 'stall',
  step: n,
  sinceStepS: 40,
  thresholdS: 30,
  stack,
});
const GLOO_PEER = '[../third_party/gloo/gloo/transport/tcp/pair.cc:598] Connection closed by peer [127.0.0.1]:29500';
const twoRanks = [...steps(10, 0, 5), ...steps(11, 1, 5)];

describe('the first failure is the cause, the others what followed', () => {
  it('rank 1 raises; rank 0 then fails in its collective: crashed on rank 1, although rank 0 is the lower rank', () => {
    const recs = [...twoRanks, exception(11, 1, 110, 'RuntimeError', 'bad batch'), exception(10, 0, 110.4, 'RuntimeError', GLOO_PEER)];
    const r = buildDoctorReport(doctorInput(recs, { exit: { code: 1, signal: null } }));
    expect(r.run.outcome).toBe('crashed');
    expect(r.run.outcomeText).toMatch(/^crashed on rank 1 in step 6: RuntimeError: bad batch \(exit code 1\); after it rank 0 failed in a collective once its peer was gone/);
    expect(r.run.firstFailure).toMatchObject({ rank: 1, kind: 'exception', step: 6, after: [{ rank: 0 }] });
  });

  it('an own error wins over a peer error even when the clocks put the peer error first', () => {
    const recs = [...twoRanks, exception(10, 0, 109, 'RuntimeError', GLOO_PEER), exception(11, 1, 110, 'ValueError', 'nan loss')];
    expect(buildDoctorReport(doctorInput(recs, { exit: { code: 1, signal: null } })).run.firstFailure?.rank).toBe(1);
  });

  it('rank 1 vanishes (SIGKILL: no end record) and rank 0 fails in its collective: rank 1 is named, outcome failed', () => {
    const recs = [...twoRanks, exception(10, 0, 110, 'RuntimeError', GLOO_PEER)];
    const r = buildDoctorReport(doctorInput(recs, { exit: { code: 1, signal: null } }));
    expect(r.run.outcome).toBe('failed');
    expect(r.run.outcomeText).toMatch(/^rank 1 died in step 6 without an end record \(killed by a signal/);
  });

  it('both vanish (a launcher terminated rank 0): the connection closing first names the rank', () => {
    const disconnectedAtMs = { 10: 111_500, 11: 111_000 };
    const r = buildDoctorReport(doctorInput(twoRanks, { exit: { code: 1, signal: null }, disconnectedAtMs }));
    expect(r.run.firstFailure).toMatchObject({ rank: 1, kind: 'killed', tS: 111 });
    expect(r.run.firstFailure?.after).toEqual([{ rank: 0, pid: 10, how: expect.stringMatching(/terminated by the launcher/) }]);
    expect(r.ranks.map((x) => x.endedAtS)).toEqual([111.5, 111]);
    // The other way round, rank 0.
    const swapped = buildDoctorReport(doctorInput(twoRanks, { exit: { code: 1, signal: null }, disconnectedAtMs: { 10: 111_000, 11: 111_500 } }));
    expect(swapped.run.firstFailure?.rank).toBe(0);
  });

  it('a KeyboardInterrupt the launcher caused after a crash does not make the run "interrupted"', () => {
    const recs = [...twoRanks, exception(11, 1, 110, 'RuntimeError', 'bad batch'), exception(10, 0, 111, 'KeyboardInterrupt', '')];
    const r = buildDoctorReport(doctorInput(recs, { exit: { code: 1, signal: null } }));
    expect(r.run.outcome).toBe('crashed');
    expect(r.run.outcomeText).toMatch(/rank 0 was interrupted \(KeyboardInterrupt/);
  });

  it('a single process that exits 0 without its end record (os._exit) is not a failure', () => {
    expect(buildDoctorReport(doctorInput(steps(10, 0, 5))).run.outcome).toBe('completed');
  });
});

describe('hangs', () => {
  const inSleep = ['/w/train.py:120 <module>', '/w/train.py:91 main'];
  const inAllReduce = [...inSleep.slice(0, 1), '/w/train.py:93 main', '/usr/lib/python3/dist-packages/torch/distributed/distributed_c10d.py:1541 all_reduce'];

  it('same step: the rank outside a collective is behind; doctor stopped the job: outcome hung', () => {
    const recs = [...twoRanks, stall(10, 0, 6, 150, inAllReduce), stall(11, 1, 6, 150, inSleep)];
    const r = buildDoctorReport(doctorInput(recs, { exit: { code: 143, signal: null }, hang: { timeoutS: 600, atMs: 160_000 }, disconnectedAtMs: { 10: 160_100, 11: 160_100 } }));
    expect(r.run.outcome).toBe('hung');
    expect(r.run.hang).toMatchObject({ timeoutS: 600, stoppedAtMs: 160_000, behindRanks: [1] });
    expect(r.run.hang?.ranks.map((x) => [x.rank, x.inCollective])).toEqual([
      [0, true],
      [1, false],
    ]);
    expect(r.run.firstFailure).toBeUndefined(); // stopped by doctor: nobody's fault but the hang's
  });

  it('the lowest step is behind, whatever the stacks say; all in collectives at one step: not told', () => {
    expect(hangAnalysis([stall(10, 0, 7, 1, inAllReduce), stall(11, 1, 6, 1, inAllReduce)], 600)?.behindRanks).toEqual([1]);
    const same = hangAnalysis([stall(10, 0, 6, 1, inAllReduce), stall(11, 1, 6, 1, inAllReduce)], 600);
    expect(same?.behindRanks).toEqual([0, 1]);
    expect(same?.why).toMatch(/do not tell which is behind/);
  });

  it('a rank killed before the others hung is the cause, the hang what followed', () => {
    const recs = [...twoRanks, stall(10, 0, 6, 150, inAllReduce)];
    const r = buildDoctorReport(doctorInput(recs, { exit: { code: 143, signal: null }, hang: { timeoutS: 600, atMs: 160_000 }, disconnectedAtMs: { 10: 160_100, 11: 110_000 } }));
    expect(r.run.outcome).toBe('failed');
    expect(r.run.outcomeText).toMatch(/^rank 1 died in step 6 .*after it rank 0 was stopped by doctor; the others then made no progress and doctor stopped the job after 600 s/);
  });

  it('a stall a step came after is closed: a note, no hang', () => {
    const recs = [...steps(10, 0, 5), stall(10, 0, 6, 150, inSleep), step(10, 0, 6, 151)];
    expect(openStalls(recs)).toEqual([]);
    const r = buildDoctorReport(doctorInput(recs));
    expect(r.run.hang).toBeUndefined();
    expect(r.notes).toContain('rank 0: no progress for 40 s in step 6 (at train.py:91 main), then it went on');
  });

  it('while running: stalled for as long as the last live rank is; a rank still stepping, none', () => {
    const t = new StallTracker();
    for (const r of twoRanks) t.add(r);
    t.add(stall(10, 0, 6, 150, inAllReduce)); // stalled since 110
    expect(t.stalledForS(200)).toBeNull(); // rank 1 has not stalled
    t.add(stall(11, 1, 6, 160, inSleep)); // stalled since 120
    expect(t.stalledForS(200)).toBe(80);
    t.add(step(11, 1, 6, 190)); // rank 1 went on
    expect(t.stalledForS(200)).toBeNull();
    t.gone(11); // and then died: only rank 0 counts
    expect(t.stalledForS(200)).toBe(90);
  });
});

describe('the per-rank view and rank-imbalance', () => {
  const rank = (r: number, medianS: number, dataWaitShare: number) => ({
    rank: r,
    pid: 10 + r,
    medianS,
    p90S: medianS,
    meanS: medianS,
    dataWaitShare,
    samplesPerS: 8 / medianS,
    measuredSteps: 20,
  });
  const noHello = () => null;
  const noWindow = () => null;

  it('skew, slowest rank, the straggler by its DataLoader wait, and a probe finding with the arithmetic', () => {
    const v = distributedView([rank(0, 0.1, 0), rank(1, 0.15, 0.3)], noHello, noWindow);
    expect(v?.skew).toBeCloseTo(0.5, 9);
    expect(v).toMatchObject({ slowestRank: 1, fastestRank: 0, straggler: { rank: 1, by: 'dataloader-wait' } });
    expect(v?.why[0]).toMatch(/^more DataLoader wait: 45\.0 ms a step against 0 ns on rank 0/);
    const probe = probeImbalanceFinding(probeBalanceOf(v)!);
    // The job on the medians alone (pace/job.ts): rank 0 waits in collectives for rank 1's DataLoader, 45 ms (rank 1's
    // wait less its own 0), so its own step is 55 ms; balanced ranks each take the mean of 55 and 150 ms: 102.5 ms.
    expect(probe?.estimatedGain?.savedFraction).toBeCloseTo(1 - 102.5 / 150, 9);
    expect(probe?.fix?.ops).toEqual([{ kind: 'balance' }]);
    expect(probe?.severity).toBe('high');
  });

  it("the waits name the straggler before the medians do (a loaded host moves where each rank's step ends); the skew alone without them", () => {
    // Rank 1 waits 30 ms a step on its DataLoader; rank 0's median came out 20% longer (its boundaries fell late).
    const v = distributedView([rank(0, 0.12, 0), rank(1, 0.1, 0.3)], noHello, noWindow);
    expect(v).toMatchObject({ slowestRank: 0, straggler: { rank: 1, by: 'dataloader-wait' } });
    const noWaits = distributedView([rank(0, 0.12, 0.01), rank(1, 0.1, 0.01)], noHello, noWindow);
    expect(noWaits?.straggler).toEqual({ rank: 0, by: 'step-time' });
  });

  it("balanced ranks: no straggler, no finding; the trace rule's finding gets the probe's figures and loses its gain", () => {
    const v = distributedView([rank(0, 0.1, 0.01), rank(1, 0.101, 0.01)], noHello, noWindow);
    expect(v?.straggler).toBeNull();
    const trace = finding({
      id: 'rank-imbalance',
      title: 't',
      ranks: [0, 1],
      evidence: ['from the trace'],
      data: { straggler: 1 },
      recommendation: { summary: 's', code: '' },
      estimatedGain: null,
    });
    const balance = probeBalanceOf(v)!;
    expect(probeImbalanceFinding(balance)).toBeNull();
    const out = { trace: [weighedAgainstProbe(withGain(trace, wholeStepGain(100e6, 60e6, 'the window: 40 ms of waiting')), balance)] };
    // The run's steps contradict the window (2x H200 DDP: 49.5 ms of window imbalance, medians 2.4% apart):
    // information without a gain.
    expect(out.trace[0]?.estimatedGain).toBeNull();
    expect(out.trace[0]?.severity).toBe('info');
    expect(out.trace[0]?.evidence.at(-1)).toMatch(/the window's imbalance comes from the profiler's own cost/);
    expect(out.trace[0]?.evidence[0]).toBe('from the trace');
    expect(out.trace[0]?.evidence[1]).toMatch(/^probe-timed over the run: skew 1\.0% \(rank 1 slowest\)/);
    expect(out.trace[0]?.data).toMatchObject({ straggler: 1, probeSlowestRank: 1 });
  });

  it("the trace's rank-imbalance takes the probe's gain when the window's is smaller (a profiler-distorted window)", () => {
    const v = distributedView([rank(0, 0.1, 0), rank(1, 0.1, 0.4)], noHello, noWindow);
    const trace = finding({
      id: 'rank-imbalance',
      title: 't',
      ranks: [0, 1],
      evidence: ['from the trace'],
      data: {},
      recommendation: { summary: 's', code: '' },
      estimatedGain: { stepTimeNs: 1e8, expectedStepTimeNs: 1e8, savedFraction: 0, arithmetic: 'window: nothing' },
    });
    const f = weighedAgainstProbe(trace, probeBalanceOf(v)!);
    // Rank 0 waits 40 ms of its 100 for rank 1's DataLoader: own steps 60 and 100 ms, balanced 80 ms each.
    expect(f?.estimatedGain?.savedFraction).toBeCloseTo(0.2, 9);
    expect(f?.severity).toBe('medium');
    expect(f?.estimatedGain?.arithmetic).toMatch(/the window's own estimate was 0%: window: nothing\)\. On the job's 2 ranks/);
  });

  it('one training rank: no view', () => {
    expect(distributedView([rank(0, 0.1, 0), { ...rank(1, 0.1, 0), measuredSteps: 0, medianS: null }], noHello, noWindow)).toBeNull();
  });
});

describe('recorded on 2x H200 under torchrun (examples/doctor/runs/h200-ranks, re-diagnosed with --from)', () => {
  const RUNS = join(REPO, 'examples', 'doctor', 'runs', 'h200-ranks');
  const from = (name: string) => rediagnosed(join(RUNS, name));

  it('rank 1 raised: the cause; rank 0 terminated and torchrun\'s ChildFailedError are what followed', async () => {
    const r = await from('ddp_crash_rank1');
    expect(r.run.outcome).toBe('crashed');
    expect(r.run.outcomeText).toMatch(/^crashed on rank 1 in step 21: RuntimeError: rank 1: a bad batch at step 20 \(drill\) \(exit code 1\); after it rank 0 ended without an end record/);
    expect(r.run.outcomeText).toMatch(/pid \d+ \(the launcher\) reported the failure \(ChildFailedError\)/);
  });

  it('rank 1 killed by SIGKILL, neither it nor rank 0 with an end record: torchrun\'s root cause names rank 1', async () => {
    const r = await from('ddp_kill_rank1');
    expect(r.run.outcome).toBe('failed');
    expect(r.run.firstFailure).toMatchObject({ rank: 1, kind: 'killed', step: 21, error: "the launcher's root cause: exit code -9 (SIGKILL)" });
    expect(r.run.outcomeText).toMatch(/^rank 1 died in step 21 without an end record \(the launcher's root cause: exit code -9 \(SIGKILL\)\); after it rank 0 /);
  });

  it('windows that started at different steps (recorded before the probe aligned them): said, and no wait-based finding from them', async () => {
    const r = await from('ddp_resnet_slow_rank1');
    expect(r.notes).toContain(
      "the ranks' profiler windows cover different steps (rank 0 from step 12, rank 1 from step 13): the profiled rank runs slower and the others wait for it in their collectives, so comm-bound and rank-imbalance from the windows are left out (the per-rank view and the probe's imbalance use every step's timing)",
    );
    expect(r.findings.filter((f) => f.source === 'trace' && (f.id === 'comm-bound' || f.id === 'rank-imbalance'))).toEqual([]);
  });

  it("rank 1's slower DataLoader: equal medians, rank 1 named by its wait; rank-imbalance from the probe", async () => {
    const r = await from('ddp_resnet_slow_rank1');
    const d = r.distributed;
    expect(d?.ranks.map((v) => [v.rank, v.device?.index, v.device?.name, v.window])).toEqual([
      [0, 0, 'NVIDIA H200', null],
      [1, 1, 'NVIDIA H200', null],
    ]);
    expect(d?.skew).toBeLessThan(0.02); // lockstep: both medians 48 ms
    expect(d?.straggler).toEqual({ rank: 1, by: 'dataloader-wait' });
    expect(d?.why).toEqual(['more DataLoader wait: 26.1 ms a step against 3.57 ms on rank 0']);
    const f = r.findings.find((x) => x.id === 'rank-imbalance');
    expect(f).toMatchObject({ source: 'probe', data: { straggler: 1 } });
    // Rank 0's own step is its step less its wait for rank 1's DataLoader (26.1 - 3.57 ms a step); balancing gives each
    // rank the mean of the ranks' own work, and the plan's balance is the finding's. Rank 0's loader keeps up, so its
    // time is not measured: it counts at most the rest of rank 0's own step (99 ms), the least the balance can give.
    const [w0, w1] = (d?.ranks ?? []).map((v) => (v.dataWaitPerStepS ?? 0) * 1e9);
    expect(r.pace?.job?.ranks[0]?.waitNs).toBeCloseTo((w1 ?? 0) - (w0 ?? 0), 0);
    expect(r.pace?.plan.steps[0]).toMatchObject({ id: 'rank-imbalance', expectedStepNs: f?.estimatedGain?.expectedStepTimeNs });
    expect(f?.estimatedGain?.savedFraction).toBeGreaterThan(0.1);
  });
});
