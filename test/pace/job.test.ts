/**
 * A job of several ranks (src/pace/job.ts): each rank's own pipeline, the job at its slowest rank's pace, fixes on the
 * ranks their findings name, balancing that moves work; and the invariants (src/pace/invariants.ts) over generated
 * jobs of 1-4 ranks with random stages, serial costs, waits and fixes (fast-check). The shipped traces and runs:
 * jobShipped.test.ts.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Fix, FixOp, GpuWork, HostWork } from '../../src/pace/fix.js';
import { jobGainOf } from '../../src/pace/gain.js';
import { fixViolations, jobViolations, planViolations } from '../../src/pace/invariants.js';
import { applyJobFix, balanced, type Job, jobOf, jobStepOf, ownPipeline, type RankPipeline, soloJob } from '../../src/pace/job.js';
import { calibrated, NO_GPU_PER_STEP, type Pipeline, type SerialCost, type SerialKind, type Stage, stepOf } from '../../src/pace/pipeline.js';
import { type PlanCandidate, planOf } from '../../src/pace/plan.js';

const ms = 1e6;
const stage = (ns: number | null): Stage => ({ ns, how: 'assumed', evidence: 'by hand' });
const cost = (kind: SerialKind, ns: number): SerialCost => ({ kind, ns, perStep: null, how: 'measured', evidence: 'by hand' });

interface PipeSpec {
  input?: number | null;
  host?: number | null;
  gpu: number;
  comm?: number | null;
  serial?: [SerialKind, number][];
  deviceTimed?: boolean;
  /** Measured step / modelled step. */
  stretch?: number;
}

/** A pipeline built by hand, figures in ns, calibrated on a measured step `stretch` times its modelled one. */
function pipe(o: PipeSpec): Pipeline {
  const base: Omit<Pipeline, 'calibration'> = {
    source: o.deviceTimed === false ? 'run' : 'window',
    stepNs: 1,
    stages: { input: stage(o.input ?? null), host: stage(o.host ?? null), gpu: stage(o.gpu), comm: stage(o.comm ?? 0) },
    serial: (o.serial ?? []).filter(([, ns]) => ns > 0).map(([k, ns]) => cost(k, ns)),
    loader: null,
    scale: { gpu: 1, host: 1 },
    work: { gpu: {}, host: {} },
    batchScale: 1,
    gpuPerStep: NO_GPU_PER_STEP,
    deviceTimed: o.deviceTimed ?? true,
    inputWaitNs: 0,
    stalls: null,
  };
  const modelled = stepOf({ ...base, calibration: 1 }).stepNs;
  // Measured at least as long as any stage alone: a stage above the measured step is the model contradicted.
  const longest = Math.max(...Object.values(base.stages).map((x) => x.ns ?? 0));
  return calibrated({ ...base, stepNs: Math.max(longest, modelled * (o.stretch ?? 1)) });
}

describe("a rank's own pipeline", () => {
  it('its wait comes out of the exposed communication, then the GPU idle in collective calls; what they do not hold stays', () => {
    const p = pipe({ gpu: 4 * ms, comm: 3 * ms, serial: [['other', 2 * ms], ['syncs', 1 * ms]] });
    const own = ownPipeline(p, 4 * ms);
    expect(own.stages.comm.ns).toBe(0);
    expect(own.serial.map((c) => [c.kind, c.ns])).toEqual([
      ['other', 1 * ms],
      ['syncs', 1 * ms],
    ]);
    // 10 ms waited: 5 of it found in the stages, the rest stays in the step (never shorter than the evidence allows)
    const all = ownPipeline(p, 10 * ms);
    expect(stepOf(all).stepNs / ms).toBeCloseTo(5, 9);
    expect(ownPipeline(p, 0)).toBe(p);
  });

  it('without a window the whole-step stage holds the wait', () => {
    const p = pipe({ gpu: 100 * ms, deviceTimed: false });
    expect(stepOf(ownPipeline(p, 30 * ms)).stepNs / ms).toBeCloseTo(70, 9);
  });
});

describe('the job: the slowest rank\'s own step, calibrated on the slowest rank\'s measured step', () => {
  // ddp_small_buckets' shape: rank 0 GPU-bound on paper, its communication waiting for rank 1, whose host binds.
  const r0 = pipe({ gpu: 3.7 * ms, comm: 35.2 * ms, serial: [['syncs', 7 * ms]] });
  const r1 = pipe({ host: 36.5 * ms, gpu: 3.2 * ms, comm: 1.2 * ms, serial: [['other', 5.5 * ms]], stretch: 42 / 42 });
  const job = jobOf([
    { rank: 0, pipeline: r0, waitNs: 33.8 * ms },
    { rank: 1, pipeline: r1, waitNs: 0 },
  ]) as Job;

  it("rank 1's own work binds; the job's step is rank 0's measured step", () => {
    const s = jobStepOf(job);
    expect(s.rank).toBe(1);
    expect(s.bound).toBe('host');
    expect(job.slowestRank).toBe(0);
    expect(s.stepNs / ms).toBeCloseTo(45.9, 9);
    expect(job.calibration).toBeCloseTo(45.9 / 42, 9);
    expect(jobViolations(job)).toEqual([]);
  });

  it("a fix on rank 0 alone leaves rank 1's host: the job's step stays", () => {
    const overlap: Fix = { label: 'communication overlapped', ops: [{ kind: 'comm', ns: 35.2 * ms }], arithmetic: '' };
    expect(jobStepOf(applyJobFix(job, overlap, [0])).stepNs / ms).toBeCloseTo(45.9, 9);
    const graphs: Fix = { label: 'CUDA graphs', ops: [{ kind: 'host', work: 'launches', factor: 0.3 }], arithmetic: '' };
    const after = jobStepOf(applyJobFix(job, graphs, [1]));
    // rank 1's host 36.5 -> 11 ms: rank 1's 16.5 ms step; rank 0's own 3.7 + 1.4 + 7 = 12.1 ms; x 45.9 / 42
    expect(after.rank).toBe(1);
    expect(after.stepNs / ms).toBeCloseTo((36.5 * 0.3 + 5.5) * (45.9 / 42), 6);
  });

  it('a plan over the job says which rank binds after each step', () => {
    const plan = planOf(job, [
      { id: 'comm-bound', fix: { label: 'overlap', ops: [{ kind: 'comm', ns: 35.2 * ms }], arithmetic: '' }, ranks: [0] },
      { id: 'launch-bound', fix: { label: 'CUDA graphs', ops: [{ kind: 'host', work: 'launches', factor: 0.3 }], arithmetic: '' }, ranks: [1] },
    ]);
    expect(plan.rank).toBe(1);
    expect(plan.steps.map((s) => [s.id, s.rank, s.ranks])).toEqual([['launch-bound', 1, [1]]]);
    expect(plan.steps[0]?.text).toMatch(/^CUDA graphs: 45\.9 ms -> 18\.0 ms a step \(2\.55x; likely [\d.]+(?: [mu]?s)?-[\d.]+ [mu]?s\); then the host sets the pace \(rank 1\)$/);
  });

  it('one rank: a job of one, its plan the pipeline\'s as before', () => {
    const one = soloJob(r1);
    expect(one.calibration).toBe(1);
    expect(jobStepOf(one).stepNs).toBe(stepOf(r1).stepNs);
    const plan = planOf(one, [{ id: 'launch-bound', fix: { label: 'half host', ops: [{ kind: 'host', work: 'launches', factor: 0.5 }], arithmetic: '' } }]);
    expect(plan.rank).toBeUndefined();
    expect(plan.steps[0]?.text).toMatch(/then the host sets the pace$/);
  });
});

describe('balancing moves work, it removes none', () => {
  // ddp_imbalance's shape: rank 1 computes 8.3 ms, rank 0 3.5 ms and waits 4.8 ms of it in its all-reduces.
  const r0 = pipe({ gpu: 3.54 * ms, comm: 4.43 * ms, serial: [['syncs', 1.02 * ms]] });
  const r1 = pipe({ gpu: 8.27 * ms, comm: 0.2 * ms, serial: [['syncs', 0.47 * ms]] });
  const job = jobOf([
    { rank: 0, pipeline: r0, waitNs: 4.84 * ms },
    { rank: 1, pipeline: r1, waitNs: 0 },
  ]) as Job;
  const balance: Fix = { label: 'balanced', ops: [{ kind: 'balance' }], arithmetic: 'b' };

  it('each rank takes the mean of the stages and the serial costs: the mean of the work, not a whole-step factor', () => {
    const after = applyJobFix(job, balance, [0, 1]);
    for (const r of after.ranks) {
      expect((r.pipeline.stages.gpu.ns as number) / ms).toBeCloseTo((3.54 + 8.27) / 2, 9);
      expect((r.pipeline.stages.comm.ns as number) / ms).toBeCloseTo(0.1, 9);
    }
    const g = jobGainOf(job, balance, [0, 1]);
    // (3.54 + 8.27) / 2 + 0.1 + (1.02 + 0.47) / 2 = 6.75 ms
    expect((g?.expectedStepTimeNs ?? 0) / ms).toBeCloseTo(6.75 * job.calibration, 6);
    expect(g?.arithmetic).toMatch(/rank 0: the GPU 3\.54 ms -> 5\.91 ms/);
  });

  it('work some rank cannot time does not move', () => {
    const a = pipe({ host: 36.5 * ms, gpu: 3 * ms });
    const b = pipe({ gpu: 4 * ms, serial: [['syncs', 7 * ms]] });
    const j = jobOf([
      { rank: 0, pipeline: b, waitNs: 0 },
      { rank: 1, pipeline: a, waitNs: 0 },
    ]) as Job;
    const [, moved] = balanced(j.ranks);
    expect(moved?.pipeline.stages.host.ns).toBe(36.5 * ms);
    expect(moved?.pipeline.serial).toEqual([]);
    expect(jobStepOf(applyJobFix(j, balance)).stepNs).toBeCloseTo(jobStepOf(j).stepNs, 0);
  });
});

// ---- properties over generated jobs ----

const KINDS: SerialKind[] = ['syncs', 'copy', 'gaps', 'other', 'refill', 'epoch-starts'];
const msArb = (max: number) => fc.double({ min: 0, max: max * ms, noNaN: true });

/** One rank's pipeline; `timed` says which of the DataLoader, host and communication stages it times. */
const rankArb = (timed: { input: boolean; host: boolean; comm: boolean }) =>
  fc.record({
    input: timed.input ? msArb(80) : fc.constant(null),
    host: timed.host ? msArb(80) : fc.constant(null),
    gpu: fc.double({ min: 0.1 * ms, max: 80 * ms, noNaN: true }),
    comm: timed.comm ? msArb(40) : fc.constant(null),
    serial: fc.array(fc.tuple(fc.constantFrom(...KINDS), msArb(20)), { maxLength: 3 }),
    deviceTimed: fc.boolean(),
    stretch: fc.double({ min: 0.7, max: 1.6, noNaN: true }),
    waitShare: fc.double({ min: 0, max: 1, noNaN: true }),
  });

const timingArb = fc.record({ input: fc.boolean(), host: fc.boolean(), comm: fc.boolean() });

/** Fix ops that only take work away (or move it): what the rules emit. */
const opArb: fc.Arbitrary<FixOp> = fc.oneof(
  fc.record({ kind: fc.constant('gpu' as const), work: fc.constantFrom<GpuWork>('fp32-matmul', 'memory-bound'), ns: msArb(40), factor: fc.double({ min: 0, max: 1, noNaN: true }) }),
  fc.record({ kind: fc.constant('host' as const), work: fc.constantFrom<HostWork>('launches', 'autograd'), factor: fc.double({ min: 0, max: 1, noNaN: true }) }),
  fc.record({ kind: fc.constant('host' as const), work: fc.constant<HostWork>('dataparallel'), ns: msArb(40) }),
  fc.record({ kind: fc.constant('serial' as const), cost: fc.constantFrom<SerialKind | 'all'>(...KINDS, 'all'), factor: fc.double({ min: 0, max: 1, noNaN: true }) }),
  fc.record({ kind: fc.constant('comm' as const), ns: msArb(40) }),
  fc.record({ kind: fc.constant('step' as const), factor: fc.double({ min: 0, max: 1, noNaN: true }) }),
  fc.record({ kind: fc.constant('batch' as const), k: fc.constantFrom(2, 4) }),
  fc.constant({ kind: 'balance' as const }),
);

/** A job of 1-4 ranks, every rank timing the same stages (`sameTiming`) or each its own. */
const jobArb = (sameTiming: boolean) =>
  fc.integer({ min: 1, max: 4 }).chain((n) =>
    fc.record({
      specs: sameTiming ? timingArb.chain((t) => fc.array(rankArb(t), { minLength: n, maxLength: n })) : fc.array(timingArb.chain(rankArb), { minLength: n, maxLength: n }),
      fixes: fc.array(fc.record({ ops: fc.array(opArb, { minLength: 1, maxLength: 2 }), ranks: fc.subarray([0, 1, 2, 3]) }), { maxLength: 5 }),
    }),
  );

type Generated = { specs: (PipeSpec & { waitShare: number })[]; fixes: { ops: FixOp[]; ranks: number[] }[] };

function inputsOf(g: Generated, rankOf: (i: number) => number = (i) => i): RankPipeline[] {
  return g.specs.map((s, i) => {
    const p = pipe({ ...s, serial: s.serial?.map(([k, ns]) => [k, ns] as [SerialKind, number]) });
    return { rank: rankOf(i), pipeline: p, waitNs: s.waitShare * p.stepNs };
  });
}

function candidatesOf(g: Generated, rankOf: (i: number) => number = (i) => i): PlanCandidate[] {
  return g.fixes.map((f, i) => ({ id: `whatif-f${i}` as const, fix: { label: `fix ${i}`, ops: f.ops, arithmetic: '' }, ranks: f.ranks.map(rankOf) }));
}

const RUNS = { numRuns: 300, seed: 44 };

describe('invariants over generated jobs of 1-4 ranks', () => {
  it("the job's step is the slowest rank's measured step, no own step above its measured one, no stage above its step", () => {
    fc.assert(
      fc.property(jobArb(false), (g) => {
        expect(jobViolations(jobOf(inputsOf(g as Generated)) as Job)).toEqual([]);
      }),
      RUNS,
    );
  });

  it('a plan starts at the job\'s step, each step gains, and none goes below what its fixes leave of any rank\'s work', () => {
    fc.assert(
      fc.property(jobArb(false), (g) => {
        const job = jobOf(inputsOf(g as Generated)) as Job;
        const cands = candidatesOf(g as Generated);
        expect(planViolations(job, cands, planOf(job, cands))).toEqual([]);
      }),
      RUNS,
    );
  });

  it('a fix never makes the step longer (balancing too, where every rank times the same stages)', () => {
    fc.assert(
      fc.property(jobArb(true), (g) => {
        const job = jobOf(inputsOf(g as Generated)) as Job;
        expect(fixViolations(job, candidatesOf(g as Generated))).toEqual([]);
      }),
      RUNS,
    );
    // Where ranks time different stages, every fix but balancing still never lengthens it.
    fc.assert(
      fc.property(jobArb(false), (g) => {
        const job = jobOf(inputsOf(g as Generated)) as Job;
        const cands = candidatesOf(g as Generated).filter((c) => !c.fix.ops.some((o) => o.kind === 'balance'));
        expect(fixViolations(job, cands)).toEqual([]);
      }),
      RUNS,
    );
  });

  it('ranks given in another order, or named otherwise, give the same plan', () => {
    fc.assert(
      fc.property(jobArb(false), fc.integer({ min: 0, max: 23 }), (g0, k) => {
        const g = g0 as Generated;
        const n = g.specs.length;
        const cands = candidatesOf(g);
        const plan = planOf(jobOf(inputsOf(g)) as Job, cands);
        expect(planOf(jobOf([...inputsOf(g)].reverse()) as Job, cands)).toEqual(plan);
        // a permutation of the rank numbers (k-th of n!): the same figures, the ranks renamed
        const perm = nthPermutation(n, k);
        const renamed = planOf(jobOf(inputsOf(g, (i) => perm[i] as number)) as Job, candidatesOf(g, (i) => perm[i] as number));
        expect(renamed.steps.map((s) => s.id)).toEqual(plan.steps.map((s) => s.id));
        renamed.steps.forEach((s, i) => {
          expect(s.expectedStepNs).toBeCloseTo(plan.steps[i]?.expectedStepNs as number, -1);
        });
        expect(renamed.stepNs).toBeCloseTo(plan.stepNs, -1);
      }),
      RUNS,
    );
  });
});

function nthPermutation(n: number, k: number): number[] {
  const left = Array.from({ length: n }, (_, i) => i);
  const out: number[] = [];
  for (let m = n; m > 0; m--) {
    const f = factorial(m - 1);
    out.push(left.splice(Math.floor(k / f) % m, 1)[0] as number);
    k %= f;
  }
  return out;
}

function factorial(n: number): number {
  return n <= 1 ? 1 : n * factorial(n - 1);
}

