/**
 * The training framework a trace names, for `analyze` (doctor learns it from the probe, which reads the call stack).
 * Only what names the framework counts, never a fingerprint of its ops:
 *   - Python frames (`with_stack=True`, category python_function, named "path(line): function" with the path from the
 *     package on): `transformers/trainer.py` is the Hugging Face Trainer (its models alone, in a plain loop, are not),
 *     `lightning/pytorch/...` or `pytorch_lightning/...` Lightning's Trainer, `accelerate/...` Accelerate;
 *   - Lightning's own labels, which its PyTorchProfiler (`Trainer(profiler="pytorch")`) records around every hook:
 *     `[LightningModule]Model.training_step`, `[Strategy]...`, `[Callback]...`, `[LightningDataModule]...`.
 * A trace recorded by a plain `torch.profiler.profile` without `with_stack` names none (doctor's windows among them).
 */

export type TraceFramework = 'transformers' | 'lightning' | 'accelerate';

/** Most specific first: the Trainer runs on Accelerate, so a Trainer's frames name both. */
export const FRAMEWORK_PRECEDENCE: readonly TraceFramework[] = ['transformers', 'lightning', 'accelerate'];

const PYTHON_FRAME = /(?:^|[\\/])(?:(transformers[\\/]trainer\.py\()|(lightning[\\/]pytorch[\\/]|pytorch_lightning[\\/])|(accelerate[\\/]))/;
export const LIGHTNING_LABEL = /^\[(?:LightningModule|LightningDataModule|Strategy|Callback)\]\S/;

/** The framework a python_function event's name names, or null. */
export function frameworkOfFrame(name: string): TraceFramework | null {
  const m = PYTHON_FRAME.exec(name);
  if (m === null) return null;
  return m[1] !== undefined ? 'transformers' : m[2] !== undefined ? 'lightning' : 'accelerate';
}

/** The framework a CPU op or annotation's name (a record_function label) names, or null. */
export function frameworkOfLabel(name: string): TraceFramework | null {
  return name.charCodeAt(0) === 91 /* [ */ && LIGHTNING_LABEL.test(name) ? 'lightning' : null;
}

/** The first event that named each framework seen. */
export interface FrameworkEvidence {
  framework: TraceFramework;
  name: string;
}

/** The framework whose switch a fix should use, with the event that named it; null when none was named. */
export function pickFramework(seen: readonly FrameworkEvidence[]): { name: TraceFramework; evidence: string } | null {
  for (const f of FRAMEWORK_PRECEDENCE) {
    const e = seen.find((s) => s.framework === f);
    if (e) return { name: f, evidence: e.name };
  }
  return null;
}
