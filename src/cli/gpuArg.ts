/**
 * A GPU named on the command line, looked up in the catalogue (gpus/catalogue.ts); the catalogue returns null for an
 * unknown GPU and this shell words the error: the flag, the closest names, the known ids, and what to give instead.
 * A name that fits several entries, or none by name, is read as one of them and the report says so (`assumption`).
 */
import { closeGpuMatches, GPUS, type GpuMatch, matchGpu } from '../gpus/catalogue.js';
import { UsageError } from './usage.js';

export function gpuFromArg(name: string, flag: string, instead: string | null = null): GpuMatch {
  const match = matchGpu(name);
  if (match) return match;
  const close = closeGpuMatches(name);
  throw new UsageError(
    `${flag}: unknown GPU '${name}'${close.length ? ` (did you mean ${close.join(', ')}?)` : ''} (known: ${GPUS.map((g) => g.id).join(', ')}${instead ? `; or ${instead}` : ''})`,
  );
}

/** What a report lists under "assumed" for a GPU the name did not pin down; null for an exact match. */
export function gpuAssumption(name: string, flag: string, m: GpuMatch): string | null {
  if (m.how === 'exact') return null;
  const reading =
    m.how === 'usual' ? `'${name}' read as ${m.gpu.name}, its usual meaning` : `'${name}' is not in the catalogue by name: read as the closest, ${m.gpu.name}`;
  return `${flag} ${m.gpu.id} (${reading}${m.alternatives.length ? `; also ${m.alternatives.join(', ')}: give the id that matches` : ''})`;
}
