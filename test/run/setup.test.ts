/**
 * The run's precision (run/setup.ts): read off how the run was launched (accelerate's state, a launcher's or script's
 * flag) and the profiled window's kernels before it is guessed, each with its evidence; and the precision rules, which
 * read what the run asked for: a run that asks for bf16 is never told to use bf16. On the real-code corpus recorded on
 * an H100 (examples/realworld/runs).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { diagnose } from '../../src/advice/engine.js';
import { loadTrace } from '../../src/io/loadTrace.js';
import { parseProbeLines, type ModelRecord } from '../../src/run/records.js';
import { askedPrecision, inferPrecision, modelBytes, precisionFlag } from '../../src/run/setup.js';
import { analyzeTrace } from '../../src/trace/metrics/index.js';
import { REPO } from '../doctor/helpers.js';

const RUNS = join(REPO, 'examples', 'realworld', 'runs');
const modelOf = (name: string): ModelRecord =>
  parseProbeLines(readFileSync(join(RUNS, name, 'probe.jsonl'), 'utf8')).records.find((r): r is ModelRecord => r.type === 'model')!;
const fp32Window = (async () => analyzeTrace(await loadTrace(join(RUNS, 'accelerate_gpt2', 'trace-pid483.json.gz'))))();

describe('precisionFlag: the precision a command line asks for', () => {
  const cases: [string, string | null, string | null][] = [
    ['accelerate launch --mixed_precision bf16 train.py', 'amp-bf16', '--mixed_precision bf16'],
    ['accelerate launch --mixed_precision=fp16 --num_processes 2 train.py', 'amp-fp16', '--mixed_precision=fp16'],
    ['accelerate launch --mixed_precision no train.py', 'fp32', '--mixed_precision no'],
    ['python accelerate_gpt2.py --mixed-precision bf16', 'amp-bf16', '--mixed-precision bf16'],
    ['torchrun --nproc_per_node 2 run_clm.py --bf16 --per_device_train_batch_size 8', 'amp-bf16', '--bf16'],
    ['python run_clm.py --bf16 True', 'amp-bf16', '--bf16 True'],
    ['python run_clm.py --fp16=true', 'amp-fp16', '--fp16=true'],
    ['python run_clm.py --bf16 False --fp16_opt_level O1', null, null],
    ['python lightning_resnet.py --precision bf16-mixed --channels-last', 'amp-bf16', '--precision bf16-mixed'],
    ['python main.py fit --trainer.precision=32-true', 'fp32', '--trainer.precision=32-true'],
    ['python train.py --dtype=bfloat16 --compile=False', 'amp-bf16', '--dtype=bfloat16'],
    ['python train.py --dtype float32 --lr 1e-4', null, null],
    ['python train.py --batch-size 64', null, null],
  ];
  for (const [cmd, value, flag] of cases)
    it(`${cmd}: ${value ?? 'none'}`, () => {
      const f = precisionFlag(cmd.split(' '));
      expect(f === null ? [null, null] : [f.value, f.flag]).toEqual([value, flag]);
    });
});

describe('askedPrecision: accelerate state first (measured), then a flag (guessed)', () => {
  it("accelerate's own state in the training process is measured, and wins over a flag", () => {
    const a = askedPrecision({ command: ['python', 'train.py', '--mixed-precision', 'no'], argv: [], acceleratePrecision: 'bf16' });
    expect(a).toMatchObject({ value: 'amp-bf16', how: 'measured' });
    expect(a.evidence).toMatch(/accelerate was set up with mixed_precision bf16/);
  });
  it('a flag of the command, or of a training process (under a launcher), is a guess that names the flag', () => {
    expect(askedPrecision({ command: ['torchrun', 'train.py'], argv: [['train.py', '--bf16']], acceleratePrecision: null })).toEqual({
      value: 'amp-bf16',
      how: 'guessed',
      evidence: 'the command asks for it: --bf16',
    });
    expect(askedPrecision({ command: ['python', 'train.py'], argv: [['train.py']], acceleratePrecision: null })).toMatchObject({ value: null, how: 'unknown' });
  });
});

describe('inferPrecision: parameters, autocast record, kernels, then the launch, before a guess', () => {
  it('accelerate_gpt2_bf16 (fp32 weights, autocast entered inside the forward, no window): bf16 from its flag, not "fp32"', () => {
    const model = modelOf('accelerate_gpt2_bf16');
    expect(model.autocastDtype).toBe(''); // the forward pre-hook runs before accelerate's autocast wrapper
    const asked = askedPrecision({ command: ['python', 'examples/realworld/accelerate_gpt2.py', '--mixed-precision', 'bf16'], argv: [], acceleratePrecision: null });
    const p = inferPrecision(modelBytes(model), model.autocastDtype, null, asked);
    expect(p).toMatchObject({ value: 'amp-bf16', how: 'guessed', candidates: ['amp-bf16', 'fp32'] });
    expect(p.evidence).toMatch(/--mixed-precision bf16/);
    // without the launch: the old guess, which now says why it is one
    expect(inferPrecision(modelBytes(model), model.autocastDtype, null)).toMatchObject({ value: 'fp32', how: 'guessed' });
  });

  it('the kernels outrank the launch: fp32 matmuls in a run that asks for bf16 are fp32, measured, and say autocast does not reach them', async () => {
    const m = await fp32Window;
    const model = modelOf('accelerate_gpt2');
    const asked = askedPrecision({ command: [], argv: [], acceleratePrecision: 'bf16' });
    const p = inferPrecision(modelBytes(model), model.autocastDtype, m, asked);
    expect(p).toMatchObject({ value: 'fp32', how: 'measured' });
    expect(p.evidence).toMatch(/^accelerate was set up with mixed_precision bf16 .*, yet the window's matmuls ran in fp32\/TF32: autocast does not reach them$/);
  });
});

describe('the precision rules read what the run asked for', () => {
  it('no-tensor-cores on a run that asks for bf16: autocast does not reach the matmuls, not "use bf16"; the same gain', async () => {
    const m = await fp32Window;
    const plain = diagnose([m]).find((f) => f.id === 'no-tensor-cores')!;
    expect(plain.recommendation.frameworks?.accelerate).toMatch(/--mixed_precision bf16/);
    const asked = diagnose([m], [], [{ askedHalf: { dtype: 'bfloat16', evidence: 'the command asks for it: --mixed_precision bf16' } }]).find(
      (f) => f.id === 'no-tensor-cores',
    )!;
    expect(asked.title).toBe('The run asks for bf16 mixed precision, yet its matmuls run in fp32/TF32: autocast does not reach them');
    expect(asked.evidence[0]).toBe('bf16 asked for: the command asks for it: --mixed_precision bf16');
    // it does not recommend what the run already asks for: no framework switch, no "bf16 autocast (best)"
    expect(asked.recommendation.frameworks).toBeUndefined();
    expect(asked.recommendation.summary).not.toMatch(/bf16 autocast \(best\)/);
    expect(asked.recommendation.code).toMatch(/accelerator\.prepare/);
    expect(asked.estimatedGain).toEqual(plain.estimatedGain);
  });
});
