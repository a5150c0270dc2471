/**
 * The levers of issue 26 on the GPU: the scripts of examples/levers (and memmap_gpt of examples/pace), each run once
 * under doctor on an H200 (examples/levers/runs/h200, examples/pace/runs/h200: probe records and profiled window),
 * then plainly with doctor's fixes applied (examples/levers/measured/h200-2026-11-28.jsonl: each run's mean step from
 * the script's own clock). Each plan step's expected step, from `doctor --from` on the run directory, against the
 * measured mean of the run that made that change. The bounds hold what the model reached: a change that loses
 * accuracy fails here. The table is printed (the closing note's).
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { launchBound } from '../../src/advice/rules/host.js';
import type { DoctorReport } from '../../src/doctor/reportTypes.js';
import { loadTrace } from '../../src/io/loadTrace.js';
import { analyzeTrace } from '../../src/trace/metrics/index.js';
import { REPO, rediagnosed } from '../doctor/helpers.js';
import { corpusRows, type Measured, measuredMs as measuredOf, readMeasured } from './corpus.js';

const LEVERS = join(REPO, 'examples', 'levers', 'runs', 'h200');
const MEASURED = [
  join(REPO, 'examples', 'levers', 'measured', 'h200-2026-11-28.jsonl'),
  join(REPO, 'examples', 'pace', 'measured', 'h200-2026-11-28.jsonl'),
];

const measured: Measured[] = readMeasured(...MEASURED);
const measuredMs = (run: string, ...labels: string[]) => measuredOf(measured, run, ...labels);

const reports = new Map<string, DoctorReport>();
const rows: string[] = [];
const planOf = (name: string) => reports.get(name)!.pace!.plan!.steps;

function row(script: string, step: string, predictedMs: number, measuredLabel: string, measuredValueMs: number): number {
  const err = (predictedMs - measuredValueMs) / measuredValueMs;
  rows.push(
    `| ${script} | ${step} | ${predictedMs.toFixed(2)} | ${measuredLabel} | ${measuredValueMs.toFixed(2)} | ${err >= 0 ? '+' : ''}${(err * 100).toFixed(0)}% |`,
  );
  return err;
}

describe('doctor on the levers of issue 26 (H200; predicted vs measured mean step)', () => {
  beforeAll(async () => {
    for (const name of [
      'gpt_attention',
      'gpt_attention_sdpa',
      'hf_generate_probe2',
      'gan_fakedata',
      'compiled_cnn',
      'compiled_cnn_probe2',
      'compiled_cnn_detached',
    ])
      reports.set(name, await rediagnosed(join(LEVERS, name)));
    reports.set('memmap_gpt', await rediagnosed(join(REPO, 'examples', 'pace', 'runs', 'h200', 'memmap_gpt')));
  }, 240_000);

  it('hand-written attention: SDPA first, then compile, each step within 15%', () => {
    const r = reports.get('gpt_attention')!;
    expect(r.findings[0]!.id).toBe('attention');
    const plan = planOf('gpt_attention');
    expect(plan.map((s) => s.id)).toEqual(['attention', 'fusion']);
    expect(
      Math.abs(row('gpt_attention', '1. SDPA', plan[0]!.expectedStepNs / 1e6, 'sdpa', measuredMs('gpt_attention', 'sdpa'))),
    ).toBeLessThan(0.15);
    expect(
      Math.abs(
        row('gpt_attention', '2. + compile', plan[1]!.expectedStepNs / 1e6, 'sdpa_compile', measuredMs('gpt_attention', 'sdpa_compile')),
      ),
    ).toBeLessThan(0.15);
  });

  it('compile on a model already on SDPA, and on the eager GPT of the memmap loader, within 15%', () => {
    const sdpa = planOf('gpt_attention_sdpa');
    expect(sdpa[0]!.id).toBe('fusion');
    expect(
      Math.abs(
        row(
          'gpt_attention --attn sdpa',
          '1. compile',
          sdpa[0]!.expectedStepNs / 1e6,
          'sdpa_compile',
          measuredMs('gpt_attention', 'sdpa_compile'),
        ),
      ),
    ).toBeLessThan(0.15);
    const memmap = planOf('memmap_gpt');
    expect(memmap[0]!.id).toBe('fusion');
    expect(
      Math.abs(row('memmap_gpt', '1. compile', memmap[0]!.expectedStepNs / 1e6, 'compile', measuredMs('memmap_gpt', 'compile'))),
    ).toBeLessThan(0.15);
  });

  it('generate(): decode steps named and counted; batching within 15%, a static cache with CUDA graphs within 20%', () => {
    const r = reports.get('hf_generate_probe2')!;
    const decode = r.ranks[0]!.steps!.decode!;
    expect(decode.batch).toBe(1);
    expect(decode.decodeSteps).toBeGreaterThan(1000);
    expect(decode.tokensPerS).toBeGreaterThan(100);
    const batching = r.findings.find((f) => f.id === 'decode-batching')!;
    // 8 prompts a call: the decode step measured per batch of the run's size (one prompt)
    const batch8 = measured.find((m) => m.run === 'hf_generate' && m.label === 'batch8')!;
    const perSequenceMs = batch8.mean_step_ms / 8;
    expect(
      Math.abs(row('hf_generate', 'batch 8 (per prompt)', batching.estimatedGain!.expectedStepTimeNs / 1e6, 'batch8 / 8', perSequenceMs)),
    ).toBeLessThan(0.15);
    const graphs = planOf('hf_generate_probe2')[0]!;
    expect(graphs.id).toBe('launch-bound');
    // -10% against three runs (2.53, 2.65 and 1.87 ms: a host-bound decode loop moves that much between runs)
    expect(
      Math.abs(
        row(
          'hf_generate',
          '1. static cache + CUDA graphs',
          graphs.expectedStepNs / 1e6,
          'static_cache_alone',
          measuredMs('hf_generate', 'static_cache_alone'),
        ),
      ),
    ).toBeLessThan(0.15);
  });

  it('generate() already on a static cache replaying CUDA graphs: not told to use them, nor autocast nor to log its loss (fp32, batches 1 and 8)', async () => {
    // examples/levers/generation_dtype.sh, 2026-11-29: each decode step ends at CUDAGraph.replay; the launches the GPU
    // waits for are generate()'s own around the replay (54 kernels a step at batch 8, the sampling and stopping check).
    for (const name of ['hf_generate_fp32_static_b8', 'hf_generate_fp32_static_b1']) {
      const r = await rediagnosed(join(LEVERS, name));
      expect(r.ranks[0]!.steps!.stepSource).toBe('graph');
      const launch = r.findings.find((f) => f.id === 'launch-bound')!;
      expect(launch.title).toMatch(/around a CUDA graph/);
      expect(launch.estimatedGain).toBeNull();
      expect(launch.recommendation.summary).toMatch(/already replays a CUDA graph/);
      const labels = (r.pace?.plan?.steps ?? []).map((s) => s.label);
      expect(labels.some((l) => /CUDA graphs|static KV cache/.test(l))).toBe(false);
      // It trains nothing (every forward under inference_mode, no optimizer): bf16 weights, not autocast, though the
      // graph's GEMMs carry no shapes to cost (bf16 measured 2.51 -> 2.05 ms at batch 8: not predicted); its syncs are
      // its own loop's, not a loss to log.
      const ids = r.findings.map((f) => f.id);
      expect(ids).not.toContain('no-tensor-cores');
      expect(ids).not.toContain('mixed-precision');
      const weights = r.findings.find((f) => f.id === 'bf16-weights')!;
      expect(weights.title).toMatch(/^Inference steps run fp32 matmuls .*: load the weights in bf16$/);
      expect(weights.estimatedGain).toBeNull();
      expect(weights.recommendation.code).toMatch(/torch_dtype=torch\.bfloat16/);
      const sync = r.findings.find((f) => f.id === 'host-sync')!;
      expect(sync.recommendation.summary).toMatch(/trains nothing/);
      expect(sync.recommendation.code).not.toMatch(/running_loss/);
    }
    // The trace alone tells it (analyze, no probe): one graph launch a step in the window.
    const dir = join(LEVERS, 'hf_generate_fp32_static_b8');
    const m = analyzeTrace(await loadTrace(join(dir, readdirSync(dir).find((f) => f.startsWith('trace-'))!)));
    expect(m.launch.graphLaunchesPerStep).toBeCloseTo(1, 5);
    const alone = launchBound(m, undefined)!;
    expect(alone.title).toMatch(/around a CUDA graph/);
    expect(alone.estimatedGain).toBeNull();
    // A trace without graphs keeps the fix with its gain.
    const eager = analyzeTrace(await loadTrace(join(LEVERS, 'hf_generate_probe2', 'trace-pid596.json.gz')));
    expect(eager.launch.graphLaunchesPerStep).toBe(0);
    expect(launchBound(eager, undefined)!.estimatedGain).not.toBeNull();
  });

  it('the GAN: the batch of the full batches, the partial one said, persistent workers within 15%', async () => {
    const r = reports.get('gan_fakedata')!;
    expect(r.ranks[0]!.steps!.samplesPerStep).toBe(64);
    expect(r.notes.join('\n')).toMatch(/partial batch \(40 samples; the full batches hold 64\), every 16 steps/);
    // The loader's fix takes both of its causes: 2 workers deliver a batch every 27 ms, 5 make one every 10.9 ms, within
    // the rest of the step within the epochs (15.2 ms: the steps that took an epoch's first batches, whose iter() forks
    // the workers, left out) with 30% to spare; and they start again at every epoch. What was measured is persistence
    // alone: that fix alone on the run's pipeline.
    const first = planOf('gan_fakedata')[0]!;
    expect(first.id).toBe('dataloader-bound');
    expect(first.label).toMatch(/num_workers 2 -> 5, persistent/);
    const { rows: gan } = await corpusRows(LEVERS, MEASURED[0]!, ['gan_fakedata']);
    const alone = gan.find((x) => x.label === 'persistent_alone')!;
    expect(
      Math.abs(
        row(
          'gan_fakedata',
          'persistent workers alone',
          alone.predictedMs,
          'persistent_alone',
          measuredMs('gan_fakedata', 'persistent_alone'),
        ),
      ),
    ).toBeLessThan(0.15);
  });

  it('a compiled CNN: no compile finding; the steps CUPTI slowed after the window left out; CUDA graphs within 15%', () => {
    for (const name of ['compiled_cnn', 'compiled_cnn_probe2', 'compiled_cnn_detached'])
      expect(reports.get(name)!.findings.map((f) => f.id)).not.toContain('fusion');
    // compiled_cnn_probe2: CUPTI stayed attached after the window and the steps after it ran 32% slower (33.7 ms against
    // 25.5 before it; 26-27 plainly). The statistics are the steady steps before the window.
    const r = reports.get('compiled_cnn_probe2')!;
    const slowed = r.ranks[0]!.steps!.slowedAfterWindow!;
    expect(slowed.slowdown).toBeGreaterThan(0.25);
    expect(r.notes.join('\n')).toMatch(/the steps after the profiler window ran 3\d% slower than the \d+ steady steps before it/);
    expect(Math.abs((r.ranks[0]!.steps!.meanS! * 1e3) / measuredMs('compiled_cnn', 'cnn_plain') - 1)).toBeLessThan(0.1);
    const graphs = planOf('compiled_cnn_probe2')[0]!;
    expect(graphs.label).toMatch(/CUDA graphs/);
    expect(
      Math.abs(
        row(
          'compiled_cnn',
          '1. CUDA graphs (reduce-overhead)',
          graphs.expectedStepNs / 1e6,
          'reduce_overhead',
          measuredMs('compiled_cnn', 'reduce_overhead'),
        ),
      ),
    ).toBeLessThan(0.15);
    // compiled_cnn_detached: a run whose window's stop detached CUPTI (the record says so): no slowdown to take away,
    // the same plan within 15%.
    const detached = reports.get('compiled_cnn_detached')!;
    expect(detached.ranks[0]!.steps!.slowedAfterWindow).toBeNull();
    expect(
      Math.abs(
        row(
          'compiled_cnn (CUPTI detached)',
          '1. CUDA graphs (reduce-overhead)',
          planOf('compiled_cnn_detached')[0]!.expectedStepNs / 1e6,
          'reduce_overhead',
          measuredMs('compiled_cnn', 'reduce_overhead'),
        ),
      ),
    ).toBeLessThan(0.15);
    console.log(
      ['| script | plan step | predicted ms | measured | measured ms | error |', '|---|---|---|---|---|---|', ...rows].join('\n'),
    );
  });
});

/** The 2026-11-29 levers file's plain runs of `run` labelled `label` (in call `call` when given). */
const measured1129 = readMeasured(join(REPO, 'examples', 'levers', 'measured', 'h200-2026-11-29.jsonl'));
const plainRuns = (run: string, label: string, call?: string) =>
  measured1129.filter((m) => m.run === run && m.under === 'plain' && m.label === label && (call === undefined || m.call === call));
/** Their mean steps, ms. */
const callRuns = (run: string, label: string, call: string): number[] => plainRuns(run, label, call).map((m) => m.mean_step_ms);
const meanOf = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const pct = (e: number) => `${e >= 0 ? '+' : ''}${(e * 100).toFixed(0)}%`;

describe('a decoding loop of one\'s own without no_grad (H200, examples/levers/runs/h200/decode_loop, 2026-11-29)', () => {
  let report: DoctorReport;
  beforeAll(async () => {
    report = await rediagnosed(join(LEVERS, 'decode_loop'));
  }, 120_000);

  /** The plain runs' mean step after each run's first sequence (its new cache shapes: measured/README.md), ms. */
  const afterFirstSequenceMs = (label: string): number[] =>
    plainRuns('decode_loop', label).map((m) => meanOf((m as Measured & { step_ms: number[] }).step_ms.slice(118)));

  it('names the decode steps, leads with the static cache (inference_mode in it), and says what the prefill steps show', () => {
    const r = report.ranks[0]!.steps!;
    expect(r.decode?.decodeSteps).toBeGreaterThan(300);
    expect(r.decode!.prefillStepS! / r.decode!.decodeStepS!).toBeGreaterThan(10); // 74 ms against 6.4
    const plan = report.pace!.plan.steps;
    expect(plan[0]!.id).toBe('launch-bound');
    // The static cache's fix generates under inference_mode: the autograd finding does not count it again.
    expect(plan.map((s) => s.id)).not.toContain('decode-autograd');
    const f = report.findings.find((x) => x.id === 'decode-autograd')!;
    expect(f.evidence.join('\n')).toMatch(/a prefill step \(a sequence's first forward\) takes 74\.\d ms, 11\.\dx a decode step/);
  });

  it("inference_mode's step within 15% of the plain runs (4.77 and 4.87 ms after their first sequence)", () => {
    const f = report.findings.find((x) => x.id === 'decode-autograd')!;
    const predicted = f.estimatedGain!.expectedStepTimeNs / 1e6;
    const runs = afterFirstSequenceMs('inference');
    expect(runs.length).toBe(2);
    const measuredMean = meanOf(runs);
    const err = (predicted - measuredMean) / measuredMean;
    console.log(`| decode_loop | inference_mode | ${predicted.toFixed(2)} | --grad-mode inference (${runs.map((x) => x.toFixed(2)).join(', ')}) | ${measuredMean.toFixed(2)} | ${pct(err)} |`);
    expect(Math.abs(err)).toBeLessThan(0.15);
  });
});

describe('inference_mode on decode loops held out of its ratio (H200, 2026-11-29, examples/levers/decode_levers.sh)', () => {
  // doctor ran each in call L3 (examples/levers/runs/h200/decode_loop_llama, decode_loop_b4), the plain runs in L1;
  // L4 ran both again in one call, its host slowing by 40% within it (its bench: bench/doctor/results/
  // h200-2026-11-29-decode-grad-modes.txt), so its rows are printed, not held to the bound.
  const cases = [
    { run: 'decode_loop_llama', dir: 'decode_loop_llama', call: 'L1', bound: true },
    { run: 'decode_loop_b4', dir: 'decode_loop_b4', call: 'L1', bound: true },
    { run: 'decode_loop_llama', dir: 'decode_loop_llama_d', call: 'L4', bound: false },
    { run: 'decode_loop_b4', dir: 'decode_loop_b4_d', call: 'L4', bound: false },
  ];
  const predicted = new Map<string, number>();
  beforeAll(async () => {
    for (const c of cases) {
      const r = await rediagnosed(join(LEVERS, c.dir));
      const f = r.findings.find((x) => x.id === 'decode-autograd')!;
      predicted.set(c.dir, f.estimatedGain!.expectedStepTimeNs / 1e6);
    }
  }, 240_000);

  it.each(cases)('$dir: the step under inference_mode against call $call', ({ run, dir, call, bound }) => {
    const runs = callRuns(run, 'inference', call);
    expect(runs.length).toBeGreaterThan(0);
    const measuredMean = meanOf(runs);
    const p = predicted.get(dir)!;
    const err = (p - measuredMean) / measuredMean;
    console.log(`| ${dir} | inference_mode | ${p.toFixed(2)} | ${call}: ${runs.map((x) => x.toFixed(2)).join(', ')} | ${measuredMean.toFixed(2)} | ${pct(err)} |`);
    if (bound) expect(Math.abs(err)).toBeLessThan(0.15);
  });
});

describe('a static-cache generate() under doctor: decode steps replayed from a CUDA graph (H200, 2026-11-29, call L3)', () => {
  let b8: DoctorReport;
  beforeAll(async () => {
    b8 = await rediagnosed(join(LEVERS, 'hf_generate_static_b8_fp32'));
  }, 120_000);

  it('counts the replays as decode steps of the prompts\' batch, with the time to the first token', () => {
    const st = b8.ranks[0]!.steps!;
    expect(st.stepSource).toBe('graph');
    const d = st.decode!;
    expect(d.batch).toBe(8);
    expect(d.promptLen).toBe(32);
    expect(d.decodeStepsPerPrefill).toBeCloseTo(127, 0); // 128 new tokens: the prompt's forward makes the first
    expect(d.decodeSteps).toBeGreaterThan(2000);
    expect(d.tokensPerS! * d.decodeStepS!).toBeGreaterThan(8 * 0.8);
    expect(d.tokensPerS! * d.decodeStepS!).toBeLessThan(8 * 1.25);
  });

  it('says the thread spun in the drains, and bf16 weights within 15% of the plain bf16 runs of call L2', () => {
    const p = b8.pace!;
    expect(p.stages.host.evidence).toMatch(/spun waiting for the GPU/);
    expect(p.serial.map((c) => c.kind)).toContain('refill');
    const f = b8.findings.find((x) => x.id === 'bf16-weights')!;
    const predictedMs = f.estimatedGain!.expectedStepTimeNs / 1e6;
    const bf16 = callRuns('hf_generate_static', 'b8-bf16', 'L2');
    const fp32 = callRuns('hf_generate_static', 'b8-fp32', 'L2');
    const err = (predictedMs - meanOf(bf16)) / meanOf(bf16);
    console.log(
      `| hf_generate_static_b8_fp32 | bf16 weights | ${predictedMs.toFixed(2)} (doctor's run ${(f.estimatedGain!.stepTimeNs / 1e6).toFixed(2)}) | L2: fp32 ${fp32.map((x) => x.toFixed(2)).join(', ')}, bf16 ${bf16.map((x) => x.toFixed(2)).join(', ')} | ${meanOf(bf16).toFixed(2)} | ${pct(err)} |`,
    );
    expect(Math.abs(err)).toBeLessThan(0.15);
  });
});
