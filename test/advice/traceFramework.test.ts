/**
 * The training framework from the trace alone (`gpuwise analyze`, no probe): what the real-code corpus's traces name,
 * and the same traces with the events a framework leaves when its user profiles with Python stacks or with Lightning's
 * own profiler, written as torch and Lightning write them (python_function "path(line): function" from the package on;
 * Lightning's `[LightningModule]Class.hook` record_function labels around each hook).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { buildAnalyzeReport } from '../../src/report/analyzeReport.js';
import { frameworkOfFrame, frameworkOfLabel } from '../../src/trace/framework.js';
import { REPO } from '../doctor/helpers.js';
import type { TraceEventJson } from '../helpers/fixtures.js';
import { rankOfText } from '../helpers/synth.js';

const RUNS = join(REPO, 'examples', 'realworld', 'runs');
const TRACE = {
  hf_trainer_gpt2: 'trace-pid1325.json.gz',
  lightning_resnet: 'trace-pid1052.json.gz',
  accelerate_gpt2: 'trace-pid483.json.gz',
  nanogpt_style: 'trace-pid734.json.gz',
} as const;

type Ev = TraceEventJson;

function traceOf(run: keyof typeof TRACE): { traceEvents: Ev[] } & Record<string, unknown> {
  return JSON.parse(gunzipSync(readFileSync(join(RUNS, run, TRACE[run]))).toString('utf8'));
}

/** The trace with `names` added inside every step, on the main thread, in the category given. */
function withEvents(run: keyof typeof TRACE, cat: 'python_function' | 'user_annotation', names: string[]): string {
  const t = traceOf(run);
  const steps = t.traceEvents.filter((e) => e.cat === 'user_annotation' && /^ProfilerStep#/.test(e.name ?? ''));
  for (const s of steps)
    for (const [i, name] of names.entries())
      t.traceEvents.push({ ph: 'X', cat, name, pid: s.pid, tid: s.tid, ts: s.ts! + 1 + i, dur: 10, args: cat === 'python_function' ? { 'Python id': i } : {} });
  return JSON.stringify(t);
}

function report(text: string) {
  const { metrics } = rankOfText(text);
  return { metrics, report: buildAnalyzeReport('test', [], [metrics]) };
}

describe('the framework named by the real-code corpus traces', () => {
  it('doctor\'s windows name none: the probe profiles without Python stacks, and Lightning adds its labels only with its own profiler', () => {
    for (const run of ['hf_trainer_gpt2', 'lightning_resnet', 'accelerate_gpt2', 'nanogpt_style'] as const) {
      const { metrics, report: r } = report(JSON.stringify(traceOf(run)));
      expect(metrics.structure.framework, run).toBeNull();
      for (const f of r.findings) expect(f.recommendation.code, run).not.toMatch(/^# (Hugging Face Trainer|PyTorch Lightning|Accelerate):/);
    }
  });

  it('Lightning\'s profiler labels: the mixed-precision fix in Trainer(precision="bf16-mixed")', () => {
    const { metrics, report: r } = report(
      withEvents('lightning_resnet', 'user_annotation', ['[LightningModule]ResNetModule.training_step', '[Strategy]SingleDeviceStrategy.training_step']),
    );
    expect(metrics.structure.framework).toEqual({ name: 'lightning', evidence: '[LightningModule]ResNetModule.training_step' });
    const top = r.findings[0]!;
    expect(top.id).toBe('mixed-precision');
    expect(top.recommendation.code).toMatch(/^# PyTorch Lightning:\nTrainer\(\.\.\., precision="bf16-mixed"\)\n# the same in plain PyTorch:/);
    expect(top.evidence.join('\n')).toMatch(/PyTorch Lightning runs this loop: the trace names it \(`\[LightningModule\]ResNetModule\.training_step`\)/);
  });

  it('a Trainer traced with Python stacks: TrainingArguments(bf16=True), though accelerate/ frames are there too', () => {
    const { metrics, report: r } = report(
      withEvents('hf_trainer_gpt2', 'python_function', [
        'accelerate/accelerator.py(2540): backward',
        'transformers/trainer.py(2560): _inner_training_loop',
        'transformers/models/gpt2/modeling_gpt2.py(1062): forward',
      ]),
    );
    expect(metrics.structure.framework?.name).toBe('transformers');
    expect(r.findings[0]!.id).toBe('no-tensor-cores');
    expect(r.findings[0]!.recommendation.code).toMatch(/^# Hugging Face Trainer:\nTrainingArguments\(\.\.\., bf16=True/);
  });

  it('an Accelerate loop traced with Python stacks: accelerate launch --mixed_precision bf16 (a transformers model is not the Trainer)', () => {
    const { metrics, report: r } = report(
      withEvents('accelerate_gpt2', 'python_function', [
        '/home/u/.venv/lib/python3.12/site-packages/transformers/models/gpt2/modeling_gpt2.py(1062): forward',
        '/home/u/.venv/lib/python3.12/site-packages/accelerate/accelerator.py(2540): backward',
      ]),
    );
    expect(metrics.structure.framework?.name).toBe('accelerate');
    expect(r.findings[0]!.recommendation.code).toMatch(/^# Accelerate:\naccelerate launch --mixed_precision bf16/);
  });

  it('a plain loop with Python stacks names none', () => {
    const { metrics } = report(
      withEvents('nanogpt_style', 'python_function', ['train.py(210): <module>', 'torch/nn/modules/module.py(1751): _call_impl', 'model.py(180): forward']),
    );
    expect(metrics.structure.framework).toBeNull();
  });
});

describe('names that name a framework', () => {
  it('reads package paths and Lightning labels, nothing looser', () => {
    expect(frameworkOfFrame('transformers/trainer.py(2560): _inner_training_loop')).toBe('transformers');
    expect(frameworkOfFrame('C:\\venv\\Lib\\site-packages\\transformers\\trainer.py(2560): train')).toBe('transformers');
    expect(frameworkOfFrame('transformers/trainer_pt_utils.py(100): f')).toBeNull();
    expect(frameworkOfFrame('lightning/pytorch/loops/fit_loop.py(205): run')).toBe('lightning');
    expect(frameworkOfFrame('pytorch_lightning/trainer/trainer.py(544): fit')).toBe('lightning');
    expect(frameworkOfFrame('lightning/fabric/fabric.py(100): backward')).toBeNull();
    expect(frameworkOfFrame('accelerate/accelerator.py(2540): backward')).toBe('accelerate');
    expect(frameworkOfFrame('my_accelerate/x.py(1): f')).toBeNull();
    expect(frameworkOfLabel('[LightningModule]Net.training_step')).toBe('lightning');
    expect(frameworkOfLabel('[Callback]ModelCheckpoint.on_train_batch_end')).toBe('lightning');
    expect(frameworkOfLabel('[memory]')).toBeNull();
    expect(frameworkOfLabel('aten::mm')).toBeNull();
  });
});
