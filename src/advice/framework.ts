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
      // The switch leads the code; the summary stays the why (the switch is not said twice).
      code: [`# ${LABEL[framework]}:`, line, '# the same in plain PyTorch:', f.recommendation.code].join('\n'),
    },
  };
}

/**
 * analyze's path (no probe): the framework the trace itself names (trace/framework.ts: a Python frame of its package,
 * Lightning's profiler labels), with the event that named it in the evidence.
 */
export function inTraceFramework(f: Finding, named: { name: string; evidence: string } | null | undefined): Finding {
  if (!named || !isFramework(named.name)) return f;
  const led = inFramework(f, named.name);
  if (led === f) return f;
  return { ...led, evidence: [...led.evidence, `${LABEL[named.name]} runs this loop: the trace names it (\`${named.evidence}\`).`] };
}

/** The framework the traces of a run name (the first rank that names one). */
export function frameworkNamedBy(
  ranks: readonly { structure: { framework?: { name: string; evidence: string } | null } }[],
): { name: string; evidence: string } | null {
  return ranks.find((m) => m.structure.framework)?.structure.framework ?? null;
}
