/**
 * A GPU named on the command line, looked up in the catalogue (gpus/catalogue.ts); the catalogue returns null for an
 * unknown GPU and this shell words the error: the flag, the closest names, the known ids, and what to give instead.
 */
import { closeGpuMatches, GPUS, type GpuSpec, lookupGpu } from '../gpus/catalogue.js';
import { UsageError } from './usage.js';

export function gpuFromArg(name: string, flag: string, instead: string | null = null): GpuSpec {
  const gpu = lookupGpu(name);
  if (gpu) return gpu;
  const close = closeGpuMatches(name);
  throw new UsageError(
    `${flag}: unknown GPU '${name}'${close.length ? ` (did you mean ${close.join(', ')}?)` : ''} (known: ${GPUS.map((g) => g.id).join(', ')}${instead ? `; or ${instead}` : ''})`,
  );
}
