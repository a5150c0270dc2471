/** A fix phrased in the framework's own switch when doctor knows which framework's loop ran. */
import { describe, expect, it } from 'vitest';
import { diagnose } from '../../src/advice/engine.js';
import { inFramework } from '../../src/advice/framework.js';
import { loadTrace } from '../../src/io/loadTrace.js';
import { analyzeTrace } from '../../src/trace/metrics/index.js';
import { TRACES } from '../helpers/fixtures.js';

describe('framework-aware fixes', async () => {
  const m = analyzeTrace(await loadTrace(`${TRACES}scenarios/resnet50.trace.json.gz`));
  const f = diagnose([m]).find((x) => x.id === 'mixed-precision')!;

  it('leads with the Trainer switch and keeps the plain PyTorch code beside it', () => {
    const hf = inFramework(f, 'transformers');
    expect(hf.recommendation.code.split('\n').slice(0, 3)).toEqual(['# Hugging Face Trainer:', 'TrainingArguments(..., bf16=True)', '# the same in plain PyTorch:']);
    expect(hf.recommendation.code).toContain(f.recommendation.code);
    expect(inFramework(f, 'lightning').recommendation.code).toMatch(/^# PyTorch Lightning:\nTrainer\(\.\.\., precision="bf16-mixed"\)/);
    // the switch is said once, in the code it leads; the summary stays the why
    expect(inFramework(f, 'lightning').recommendation.summary).toBe(f.recommendation.summary);
    expect(inFramework(f, 'accelerate').recommendation.code).toMatch(/--mixed_precision bf16/);
  });

  it('changes nothing for plain PyTorch, an unknown framework, or a fix without a switch', () => {
    expect(inFramework(f, null)).toBe(f);
    expect(inFramework(f, 'keras')).toBe(f);
    const noSwitch = { ...f, recommendation: { summary: 's', code: 'c' } };
    expect(inFramework(noSwitch, 'lightning')).toBe(noSwitch);
  });
});
