/**
 * A fix phrased in the training framework's own switch. doctor knows which framework's loop ran (the
 * probe reads it off the call stack); a Trainer user changes TrainingArguments, not a training loop they
 * never wrote. The plain PyTorch code stays beside it, for whoever wants to see what the switch does.
 */
import type { Finding, Framework } from '../findings/finding.js';

/** bf16 mixed precision in each framework's own switch (the fixes of no-tensor-cores and mixed-precision). */
export const BF16_AUTOCAST_SWITCHES: Partial<Record<Framework, string>> = {
  transformers: 'TrainingArguments(..., bf16=True)',
  lightning: 'Trainer(..., precision="bf16-mixed")',
  accelerate: 'accelerate launch --mixed_precision bf16 train.py   # or Accelerator(mixed_precision="bf16")',
};

const LABEL: Record<Framework, string> = {
  transformers: 'Hugging Face Trainer',
  lightning: 'PyTorch Lightning',
  accelerate: 'Accelerate',
};

export function isFramework(name: string | null | undefined): name is Framework {
  return name === 'transformers' || name === 'lightning' || name === 'accelerate';
}

/** The finding with its code led by the framework's switch, when the framework is known and has one. */
export function inFramework(f: Finding, framework: string | null | undefined): Finding {
  if (!isFramework(framework)) return f;
  const line = f.recommendation.frameworks?.[framework];
  if (!line) return f;
  return {
    ...f,
    recommendation: {
      ...f.recommendation,
      summary: `${f.recommendation.summary} With ${LABEL[framework]}: ${line}`,
      code: [`# ${LABEL[framework]}:`, line, '# the same in plain PyTorch:', f.recommendation.code].join('\n'),
    },
  };
}
