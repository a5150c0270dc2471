/** The model-FLOPs split names every part in a unit that shows it (issue 47: "GEMMs 0.00" where 786 MFLOP ran). */
import { describe, expect, it } from 'vitest';
import { loadTrace } from '../../src/io/loadTrace.js';
import { flopsSplit } from '../../src/report/flopsText.js';
import { analyzeTrace } from '../../src/trace/metrics/index.js';
import { TRACES } from '../helpers/fixtures.js';

describe('flopsSplit', () => {
  it('a ResNet-50 whose GEMMs are its classifier alone: the part in MFLOP, never 0.00', async () => {
    const m = analyzeTrace(await loadTrace(`${TRACES}resnet_starved.trace.json.gz`));
    const text = flopsSplit(m.modelFlops!);
    expect(text).toMatch(/^1\.56 TFLOP: convolutions 1\.55, GEMMs \d+ MFLOP$/);
    expect(text).not.toMatch(/\b0\.00\b/);
  });
});
