/**
 * The pace model against the GPU (issue 25) on an H200 with this build's model: examples/pace's fakedata_resnet
 * (FakeData made in 4 workers), jpeg_resnet (JPEGs decoded in 4 workers), gpu_bound (a ViT-B/16 in fp32), timm_style
 * (timm's transforms in 4 workers) and lightning_datamodule (a LightningDataModule over a memmap, fp32), each run once
 * under doctor (examples/pace/runs/h200) and then plainly with fixes applied one after another
 * (examples/pace/measured/h200-2026-11-28.jsonl, device calls S, U, V, W, X and Z; timm_style's and
 * lightning_datamodule's plan steps are doctor's own plan as follow_plan.py turned it into flags). The table is printed
 * (the closing note's); the bounds hold what the model reached, so a change that loses accuracy fails here.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { PacePlan } from '../../src/pace/plan.js';
import { REPO } from '../doctor/helpers.js';
import { corpusRows, type Row, runReport } from './corpus.js';

let rows: Row[] = [];
let planFirst = new Map<string, string | undefined>();
const row = (run: string, label: string) => rows.find((r) => r.run === run && r.label === label)!;

describe('the pace model on the H200 corpus (predicted vs measured mean step)', () => {
  beforeAll(async () => {
    ({ rows, planFirst } = await corpusRows(
      join(REPO, 'examples', 'pace', 'runs', 'h200'),
      join(REPO, 'examples', 'pace', 'measured', 'h200-2026-11-28.jsonl'),
      ['fakedata_resnet', 'jpeg_resnet', 'gpu_bound', 'timm_style', 'lightning_datamodule'],
      (call) => call !== 'Y',
    ));
  }, 120_000);

  it('covers the measured configurations of the five scripts', () => {
    expect(new Set(rows.map((r) => r.run)).size).toBe(5);
    expect(rows.length).toBe(24);
  });

  it('leads the GPU-bound Lightning run with bf16, and predicts that step within 15%', () => {
    expect(planFirst.get('lightning_datamodule')).toBe('mixed-precision');
    expect(Math.abs(row('lightning_datamodule', 'plan1').error)).toBeLessThan(0.15);
  });

  it('puts more workers first where the loader binds, and predicts that step within 15%', () => {
    expect(planFirst.get('timm_style')).toBe('dataloader-bound');
    for (const [run, label] of [
      ['timm_style', 'plan1'],
      ['timm_style', 'plan2'],
      ['timm_style', 'plan3'],
      ['timm_style', 'plan4'],
    ] as const)
      expect(Math.abs(row(run, label).error), `${run} ${label}`).toBeLessThan(0.15);
    for (const run of ['jpeg_resnet', 'fakedata_resnet']) {
      expect(planFirst.get(run), run).toBe('dataloader-bound');
      const workers = row(run, 'workers12');
      expect(Math.abs(workers.error), `${run} workers12`).toBeLessThan(0.15);
    }
  });

  // This run's probe did not time the backward calls: the profiler's cost stays in the host (see runs/h200-b below).
  it("leads the ViT's plan with bf16, a known miss: after it the host binds at the window's time, which holds the profiler's cost", () => {
    expect(planFirst.get('gpu_bound')).toBe('no-tensor-cores');
    // +26% against the two plain bf16 runs (66.0, 64.9 ms): the host stage after bf16 is 81 ms a step, read from the
    // window outside syncs, copies and the DataLoader; the bf16 run's thread used 46 ms of CPU a step.
    const bf16 = row('gpu_bound', 'bf16');
    expect(bf16.bound).toBe('host');
    expect(bf16.error).toBeGreaterThan(0.15);
    expect(bf16.error).toBeLessThan(0.35);
  });

  it('predicts every fixed configuration within 30%, and these within 15%', () => {
    for (const r of rows.filter((x) => x.label !== 'base')) expect(Math.abs(r.error), `${r.run} ${r.label}`).toBeLessThan(0.3);
    // jpeg_resnet's bf16 and persistence after 12 workers: the host binds at about 40 ms in the model.
    for (const [run, label] of [
      ['fakedata_resnet', 'bf16_cl'],
      ['jpeg_resnet', 'workers12'],
      ['jpeg_resnet', 'bf16_cl'],
    ] as const)
      expect(Math.abs(row(run, label).error), `${run} ${label}`).toBeLessThan(0.15);
  });
});

describe("doctor's plan followed on the H200: each step predicted by the run whose report gave the plan (call Y)", () => {
  let yRows: Row[] = [];
  let yFirst = new Map<string, string | undefined>();
  beforeAll(async () => {
    // jpeg_resnet and fakedata_resnet run under doctor again with this build's model (examples/pace/runs/h200-y), the
    // plan of each report then run plainly, step by step, as follow_plan.py turned it into flags.
    ({ rows: yRows, planFirst: yFirst } = await corpusRows(
      join(REPO, 'examples', 'pace', 'runs', 'h200-y'),
      join(REPO, 'examples', 'pace', 'measured', 'h200-2026-11-28.jsonl'),
      ['fakedata_resnet', 'jpeg_resnet'],
      (call) => call === 'Y',
    ));
  }, 120_000);

  it('leads both plans with the DataLoader, and predicts the first steps within 16%', () => {
    expect(yRows.length).toBe(7);
    for (const run of ['jpeg_resnet', 'fakedata_resnet']) expect(yFirst.get(run), run).toBe('dataloader-bound');
    for (const r of yRows.filter((x) => x.label !== 'plan3')) expect(Math.abs(r.error), `${r.run} ${r.label}`).toBeLessThan(0.165);
  });

  it('misses the last FakeData step by a quarter (a known miss)', () => {
    // The model expects the GPU to bind at 67.5 ms after bf16, channels_last and pinned memory with 11 workers; the
    // plain run took 87.4 ms (with 12 workers: 76.1 in call U, 65.9 in call Z). The two doctor runs of the script put
    // the fp32 GPU stage at 122 and 141 ms a step, and its plain baselines measured 176 to 241 ms: this script varies
    // by 15-25% between runs on the H200 VM. The plan's 11 workers just kept up; this build asks for 14
    // (LOADER_HEADROOM), and call G's plan, below, came within 15% at every step.
    const last = yRows.find((r) => r.run === 'fakedata_resnet' && r.label === 'plan3')!;
    expect(last.error).toBeLessThan(-0.15);
    expect(last.error).toBeGreaterThan(-0.3);
  });
});

describe("doctor's plan where the loader, bf16 and channels_last are done (jpeg_resnet at 12 workers, 2026-11-29)", () => {
  // examples/pace/runs/h200-w12: the configuration the plans above ended at, under doctor; its plan then run plainly
  // (examples/pace/measured/h200-2026-11-29.jsonl, call D). The plain runs had no --drop-last flag yet: each recompiled
  // once at its first epoch's partial batch (48 s with an empty Inductor cache), so the steps after that recompile are
  // what the plan's step, which asks for drop_last=True, is set against.
  let plan: PacePlan;
  let report: Awaited<ReturnType<typeof runReport>>['report'];
  let measured: { label: string; mean_step_ms: number; step_ms: number[] }[];
  beforeAll(async () => {
    ({ report } = await runReport(join(REPO, 'examples', 'pace', 'runs', 'h200-w12', 'jpeg_resnet'), 'jpeg_resnet'));
    plan = report.pace!.plan;
    measured = readFileSync(join(REPO, 'examples', 'pace', 'measured', 'h200-2026-11-29.jsonl'), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l))
      .filter((m) => m.under === 'plain' && m.call === 'D');
  }, 120_000);

  it('leads with fewer launches (compile with CUDA graphs), asks for drop_last=True and 15 workers with it, and says what compiling costs first', () => {
    const first = plan.steps[0]!;
    expect(first.id).toBe('launch-bound');
    expect(first.dropLast).toBe(true);
    // 13 keep up; 15 with 30% to spare (LOADER_HEADROOM), what the 16 cores leave beside the loop
    expect(first.workersNeeded).toBe(15);
    expect(first.text).toContain('with DataLoader(drop_last=True): the loader ends each epoch on a batch of 32 samples');
    // The model is not compiled yet: the finding says what compiling costs first, and after how many steps it pays
    const f = report.findings.find((x) => x.id === 'launch-bound')!;
    const savedNs = f.estimatedGain!.stepTimeNs - f.estimatedGain!.expectedStepTimeNs;
    expect(f.recommendation.summary).toContain(`paid back after about ${Math.ceil((32 * 1e9) / savedNs).toLocaleString('en-US')} steps`);
  });

  it('predicts that step within 15% of the steps after the one-time recompile, which beat the base runs by more than 5 ms', () => {
    const run = measured.find((m) => m.label === 'plan1')!;
    const worst = run.step_ms.indexOf(Math.max(...run.step_ms));
    const after = run.step_ms.slice(worst + 6);
    const steadyMs = after.reduce((a, b) => a + b, 0) / after.length;
    const predictedMs = plan.steps[0]!.expectedStepNs / 1e6;
    expect(Math.abs(predictedMs / steadyMs - 1)).toBeLessThan(0.15); // 31.0 against 31.5
    // The raw mean holds the recompile: why the plan asks for drop_last
    expect(run.mean_step_ms).toBeGreaterThan(3 * steadyMs);
    const base = measured.filter((m) => m.label === 'base').map((m) => m.mean_step_ms);
    for (const b of base) expect(b - steadyMs).toBeGreaterThan(5);
  });
});

describe("the profiler's cost taken off the window's host (2026-11-29, calls E and F: examples/pace/runs/h200-b)", () => {
  // gpu_bound run under doctor by the probe that times the backward calls in the window's steps and outside them
  // (`backwardS`, call F); lightning_datamodule by the probe of the hour before, whose DataLoader loops had no backward
  // timed (call E). Each plan then run plainly, step by step (examples/pace/measured/h200-2026-11-29.jsonl).
  let bRows: Row[] = [];
  let bFirst = new Map<string, string | undefined>();
  beforeAll(async () => {
    ({ rows: bRows, planFirst: bFirst } = await corpusRows(
      join(REPO, 'examples', 'pace', 'runs', 'h200-b'),
      join(REPO, 'examples', 'pace', 'measured', 'h200-2026-11-29.jsonl'),
      ['gpu_bound', 'lightning_datamodule'],
      (call) => call === 'E' || call === 'F',
    ));
  }, 120_000);

  it("the ViT's host is the window's over the backward's slowdown in it: bf16's step within 15%, the GPU binding", async () => {
    const { pace } = await runReport(join(REPO, 'examples', 'pace', 'runs', 'h200-b', 'gpu_bound'), 'gpu_bound');
    const host = pace.stages.host;
    expect(host.evidence).toMatch(/the backward calls took [\d.]+ ms a step in the window against [\d.]+ ms outside it/);
    expect(host.ns!).toBeLessThan(30e6); // the window's 56 ms, profiler included, over 3.7
    expect(bFirst.get('gpu_bound')).toBe('no-tensor-cores');
    const bf16 = bRows.find((r) => r.run === 'gpu_bound' && r.label === 'plan1')!;
    expect(bf16.bound).toBe('gpu');
    expect(Math.abs(bf16.error)).toBeLessThan(0.15); // 70.7 against 66.7 and 66.1
    const pinned = bRows.find((r) => r.run === 'gpu_bound' && r.label === 'plan2')!;
    expect(Math.abs(pinned.error)).toBeLessThan(0.15); // 66.5 against 59.6 and 60.0
  });

  it("Lightning's plan: pinned memory within 15%, bf16 short by a fifth in this run (its 2 workers stalled the loop)", () => {
    expect(bFirst.get('lightning_datamodule')).toBe('mixed-precision');
    const plan2 = bRows.find((r) => r.run === 'lightning_datamodule' && r.label === 'plan2')!;
    expect(Math.abs(plan2.error)).toBeLessThan(0.15);
    // 59.0 predicted (the GPU binding, the 2 workers' capacity from their CPU a batch at 54.6 ms just under it), 71.1
    // measured: the plain run stalled on its loader (median 64.9, p90 90.5). The earlier run of the script (runs/h200,
    // call X) had the loader at 64.2 ms and predicted that step at 67.3 against 66.8. This build's plan asks for 3
    // workers with bf16 (LOADER_HEADROOM); followed in call G, below, that step came within 4%.
    const plan1 = bRows.find((r) => r.run === 'lightning_datamodule' && r.label === 'plan1')!;
    expect(plan1.error).toBeLessThan(-0.15);
    expect(plan1.error).toBeGreaterThan(-0.25);
  });
});

describe("doctor's plan with the GPU's idle in the loader's waits and the workers' headroom (2026-11-29, calls G and H: examples/pace/runs/h200-c)", () => {
  // fakedata_resnet and lightning_datamodule (call G) under doctor with the probe that times the backward calls, the
  // plan of each report then run plainly, twice per step (examples/pace/measured/h200-2026-11-29.jsonl; REPEAT=2). Their
  // reports were made by the build before gpuIdleInWaitsNs; the rows are this build's predictions for the flags the
  // plan gave then. jpeg_resnet (call H) ran under this build, its plan as its report gives it; timm_style's doctor run
  // and baseline were measured before the call's time ran out, its plan was not.
  let gRows: Row[] = [];
  let gFirst = new Map<string, string | undefined>();
  beforeAll(async () => {
    ({ rows: gRows, planFirst: gFirst } = await corpusRows(
      join(REPO, 'examples', 'pace', 'runs', 'h200-c'),
      join(REPO, 'examples', 'pace', 'measured', 'h200-2026-11-29.jsonl'),
      ['fakedata_resnet', 'lightning_datamodule', 'jpeg_resnet'],
      (call) => call === 'G' || call === 'H',
    ));
  }, 120_000);

  it('counts the GPU busy through the loader waits: every FakeData step within 15%, where the whole wait had left no room for the copies', async () => {
    const { pace } = await runReport(join(REPO, 'examples', 'pace', 'runs', 'h200-c', 'fakedata_resnet'), 'fakedata_resnet');
    // the pageable copies' serial cost is back in the chain (it was 0 when the whole 59 ms wait came off the step)
    expect(pace.serial.find((c) => c.kind === 'copy')!.ns).toBeGreaterThan(10e6);
    // and the input stage says how much of the 59.4 ms of waiting the GPU idled: (229 - (142 - 68.5)) x 35 / 143
    expect(pace.stages.input.evidence).toMatch(/; the GPU idles 3[78]\.\d ms a step of it and runs work queued before the waits through the rest$/);
    expect(gFirst.get('fakedata_resnet')).toBe('dataloader-bound');
    const fake = gRows.filter((r) => r.run === 'fakedata_resnet' && r.label !== 'base');
    expect(fake.map((r) => r.label)).toEqual(['plan1', 'plan2', 'plan3']);
    for (const r of fake) expect(Math.abs(r.error), `fakedata_resnet ${r.label}`).toBeLessThan(0.15);
  });

  it("Lightning's plan with the workers bf16 needs (3) and pinned memory's (5): both within 15%, bf16 first", () => {
    expect(gFirst.get('lightning_datamodule')).toBe('mixed-precision');
    const light = gRows.filter((r) => r.run === 'lightning_datamodule' && r.label !== 'base');
    expect(light.map((r) => r.label)).toEqual(['plan1', 'plan2']);
    for (const r of light) expect(Math.abs(r.error), `lightning_datamodule ${r.label}`).toBeLessThan(0.15);
  });

  it("jpeg_resnet's plan as this build gives it: workers with headroom first, every step within 15%", () => {
    expect(gFirst.get('jpeg_resnet')).toBe('dataloader-bound');
    const jpeg = gRows.filter((r) => r.run === 'jpeg_resnet' && r.label !== 'base');
    // 4 -> 8 workers and persistence, pinned memory (11), bf16 + channels_last (13): 53.7, 39.5, 34.0 against 50.3,
    // 38.4, 38.4 (two runs each)
    expect(jpeg.map((r) => r.label)).toEqual(['plan1', 'plan2', 'plan3']);
    for (const r of jpeg) expect(Math.abs(r.error), `jpeg_resnet ${r.label}`).toBeLessThan(0.15);
  });
});
