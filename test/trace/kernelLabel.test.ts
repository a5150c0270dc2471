/**
 * A kernel's name in an evidence line is never cut inside a word (issue 47: `cutlass_80_simt_sgemm_2...`): over every
 * kernel of the shipped traces whose names are long, the label is the name, the name without its parameter list, a
 * name of its own (a functor, a cast), or a prefix that ends where a name part or template argument ends.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadTrace } from '../../src/io/loadTrace.js';
import { kernelLabel } from '../../src/trace/kernelClass.js';
import { analyzeTrace } from '../../src/trace/metrics/index.js';
import { REPO } from '../doctor/helpers.js';

const SCENARIOS = join(REPO, 'examples', 'traces', 'scenarios');

describe('kernel labels', () => {
  it('cut only between name parts, on every long kernel name of the shipped scenario traces', async () => {
    const names = new Set<string>();
    for (const f of readdirSync(SCENARIOS).filter((x) => x.endsWith('.trace.json.gz'))) {
      const m = analyzeTrace(await loadTrace(join(SCENARIOS, f)));
      for (const k of [...m.topKernels, ...m.precision.topFp32Kernels]) names.add(k.name);
    }
    const long = [...names].filter((n) => n.replace(/^void /, '').length > 70);
    expect(long.length).toBeGreaterThan(10);
    for (const name of long) {
      const label = kernelLabel(name);
      expect(label.length, label).toBeLessThanOrEqual(74);
      if (!label.endsWith('...')) continue; // a name of its own (a functor, a cast) or the name without its arguments
      const kept = label.slice(0, -3);
      const bare = name.replace(/^void /, '');
      expect(bare.startsWith(kept), label).toBe(true);
      // what follows the cut starts a new part: a separator, or the kept part ends with one
      expect(/^(,|<|>| |::|_|\()/.test(bare.slice(kept.length)) || /[<,]$/.test(kept), `${label} <- ${bare.slice(0, 90)}`).toBe(true);
    }
  }, 120_000);
});
