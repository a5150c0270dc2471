/**
 * Decode steps (a generation loop: forward calls of the model on one new token per sequence) counted and named as
 * such, and their levers. No committed run generates yet (examples/levers/hf_generate.py in the corpus will record
 * one); the records here are a real H100 run's (examples/realworld/runs/manual_sgd_lstm: an LSTM whose steps are
 * launch-bound, 2-7 ms of a few hundred small kernels, as a decode step's are), edited to what the probe sends for
 * `generate()`: steps marked by forward calls, the model's input one token for one sequence (`seqLen` 1), and every
 * 129th step a 32-token prompt (the prefill that starts each call of 128 new tokens). Its profiled window is kept.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderDoctorText } from '../../src/doctor/render.js';
import { buildDoctorReport } from '../../src/doctor/report.js';
import { groupProcesses } from '../../src/doctor/stages/records.js';
import type { TraceInput } from '../../src/doctor/reportTypes.js';
import { loadTrace } from '../../src/io/loadTrace.js';
import { parseProbeLines, type ProbeRecord } from '../../src/run/records.js';
import { gpuStepTimesOf, stepStats } from '../../src/run/steps.js';
import { analyzeTrace } from '../../src/trace/metrics/index.js';
import { REPO } from './helpers.js';
import { doctorInput } from './input.js';

const RUN = join(REPO, 'examples', 'realworld', 'runs', 'manual_sgd_lstm');
const real = (): ProbeRecord[] => parseProbeLines(readFileSync(join(RUN, 'probe.jsonl'), 'utf8')).records;

/** The run's records as a generate() loop's: one token a decode step, a 32-token prefill every 129 steps. */
function generating(opts: { framework?: string } = {}): ProbeRecord[] {
  return real().map((r) => {
    if (r.type === 'model') return { ...r, optimizer: null, framework: opts.framework ?? null };
    if (r.type !== 'step') return r;
    const prefill = r.step % 129 === 1;
    return { ...r, stepSource: 'forward', batchSource: 'model-input', samples: 1, tokens: prefill ? 32 : 1, seqLen: prefill ? 32 : 1 };
  });
}

async function window(): Promise<TraceInput> {
  const path = join(RUN, 'trace-pid528.json.gz');
  return { rank: 0, path, metrics: analyzeTrace(await loadTrace(path)), collectives: null, error: null };
}

describe('decode steps', () => {
  it('are counted: tokens generated per second, the decode step, the time to the first token', () => {
    const p = groupProcesses(generating())[0]!;
    const st = stepStats(p.steps, gpuStepTimesOf(p.records));
    const d = st.decode!;
    expect(d.batch).toBe(1);
    expect(d.promptLen).toBe(32);
    expect(d.prefillSteps).toBeGreaterThan(0);
    expect(d.decodeSteps / d.prefillSteps).toBeGreaterThan(100);
    // one token per decode step and one per prefill, over their time: about one token per median step
    expect(d.tokensPerS! * d.decodeStepS!).toBeGreaterThan(0.8);
    expect(d.tokensPerS! * d.decodeStepS!).toBeLessThan(1.25);
    expect(d.prefillStepS).toBeGreaterThan(0);
  });

  it('are counted where a CUDA graph replays them: each replay after a prompt decodes one token of its sequences', () => {
    // A static-cache generate() at batch 1 on an H200 (examples/levers/runs/h200/hf_generate_static_b1): the prompt's
    // forward is a step of its own, each new token a replay of the compiled decoding forward.
    const runOf = (name: string) =>
      groupProcesses(parseProbeLines(readFileSync(join(REPO, 'examples', 'levers', 'runs', 'h200', name, 'probe.jsonl'), 'utf8')).records)[0]!;
    const p = runOf('hf_generate_static_b1');
    const st = stepStats(p.steps, gpuStepTimesOf(p.records));
    expect(st.stepSource).toBe('graph');
    const d = st.decode!;
    expect(d.batch).toBe(1);
    expect(d.promptLen).toBe(32);
    expect(d.decodeStepsPerPrefill).toBeCloseTo(127, 0);
    expect(d.tokensPerS! * d.decodeStepS!).toBeGreaterThan(0.8);
    expect(d.tokensPerS! * d.decodeStepS!).toBeLessThan(1.25);
    // An older probe's run (hf_generate_fp32_static_b8) lost the prompt's forward to the replays: no batch to give them.
    const old = runOf('hf_generate_fp32_static_b8');
    expect(stepStats(old.steps, gpuStepTimesOf(old.records)).decode).toBeNull();
  });

  it('are not what a training run or an inference run over whole inputs has', () => {
    const train = groupProcesses(real())[0]!;
    expect(stepStats(train.steps, gpuStepTimesOf(train.records)).decode).toBeNull();
    const evalRun = groupProcesses(
      parseProbeLines(readFileSync(join(REPO, 'examples', 'realworld', 'runs', 'eval_inference', 'probe.jsonl'), 'utf8')).records,
    )[0]!;
    expect(stepStats(evalRun.steps, gpuStepTimesOf(evalRun.records)).decode).toBeNull();
  });

  it('are named in the report: decode steps and tokens/s generated, not samples/s of seq 1', async () => {
    const r = buildDoctorReport(doctorInput(generating(), { traces: [await window()] }));
    const text = renderDoctorText(r);
    expect(text).toMatch(
      /decode steps: [\d,]+ tokens\/s generated, [\d.]+ ms a decode step at batch 1; [\d.]+ ms to the first token \(a 32-token prompt, then 1\d\d decode steps\)/,
    );
    expect(text).not.toMatch(/samples\/s/);
    expect(text).not.toMatch(/\(seq 1\)/);
    expect(text).toMatch(/^Generating process \(pid 528\)$/m);
  });

  it('get their levers: more sequences per step (advice), and a static KV cache with CUDA graphs for the launches', async () => {
    const r = buildDoctorReport(doctorInput(generating({ framework: 'transformers' }), { traces: [await window()] }));
    const batching = r.findings.find((f) => f.id === 'decode-batching')!;
    expect(batching.kind).toBe('advice');
    expect(batching.title).toMatch(
      /Decode steps run 1 sequence at a time on a GPU busy \d+% of each: [248]x the sequences per step would give about [248]x the tokens\/s/,
    );
    expect(batching.recommendation.code).toMatch(/padding_side = "left"/);
    const k = batching.data.batchScale as number;
    expect(batching.estimatedGain!.savedFraction).toBeCloseTo(1 - 1 / k, 6);
    const launch = r.findings.find((f) => f.id === 'launch-bound')!;
    // generate()'s own switch, not the Trainer's
    expect(launch.recommendation.code).toMatch(
      /^# Hugging Face generate\(\): a static KV cache.*\nout = model\.generate\(\*\*inputs, max_new_tokens=128, cache_implementation="static"\)/,
    );
    expect(launch.recommendation.code).toMatch(/mode="reduce-overhead"/);
    expect(launch.recommendation.code).not.toMatch(/TrainingArguments/);
    expect(launch.evidence.join('\n')).toMatch(/the steps are decode steps/);
    // a generation loop gets no training framework's switch (TrainingArguments) in any fix
    for (const f of r.findings) expect(`${f.recommendation.summary}\n${f.recommendation.code}`).not.toMatch(/TrainingArguments|Trainer/);
  });

  it('get bf16 weights, not autocast, for their fp32 matmuls: no gain while launches set the pace', async () => {
    const r = buildDoctorReport(doctorInput(generating(), { traces: [await window()] }));
    const ids = r.findings.map((f) => f.id);
    expect(ids).not.toContain('mixed-precision');
    expect(ids).not.toContain('no-tensor-cores');
    const weights = r.findings.find((f) => f.id === 'bf16-weights')!;
    expect(weights.recommendation.code).toMatch(/torch_dtype=torch\.bfloat16/);
    expect(weights.recommendation.code).not.toMatch(/autocast/);
    // The LSTM's GEMMs (700 x 200 x 33278) are compute-bound: they move to the tensor cores.
    expect(weights.evidence.join('\n')).toMatch(/compute-bound GEMMs .* bf16 runs them on the tensor cores/);
    expect(weights.fix!.ops[0]).toMatchObject({ kind: 'gpu', work: 'fp32-matmul' });
    // The host binds (launches): GPU work saved is no step saved, until the static cache takes the launches away.
    expect(weights.estimatedGain!.savedFraction).toBeLessThan(0.01);
    expect(r.pace!.plan.steps.map((s) => s.id)).toEqual(['launch-bound']);
    // The same window as a training run's: autocast, as before.
    const train = buildDoctorReport(doctorInput(real(), { traces: [await window()] }));
    expect(train.findings.map((f) => f.id)).not.toContain('bf16-weights');
  });

  it('get no training batch advice (a learning rate to scale): more sequences per step is decode-batching', async () => {
    // The window with its memory known: 490 MiB of 80 GiB, on a GPU busy 17% of the step.
    const w = await window();
    const metrics = {
      ...w.metrics!,
      memory: [{ device: 0, peakAllocatedBytes: 490 * 2 ** 20, peakReservedBytes: 582 * 2 ** 20, deviceTotalBytes: 80 * 2 ** 30 }],
    };
    const traces = [{ ...w, metrics }];
    expect(buildDoctorReport(doctorInput(real(), { traces })).findings.map((f) => f.id)).toContain('gpu-underused');
    const ids = buildDoctorReport(doctorInput(generating(), { traces })).findings.map((f) => f.id);
    expect(ids).toContain('decode-batching');
    expect(ids).not.toContain('gpu-underused');
  });
});
