/** tune --md (issue 16): the same answer as the terminal, first; every trial. The --html page: test/serve/tuneSmiPages.test.ts. */
import { describe, expect, it } from 'vitest';
import { renderTuneMarkdown } from '../../src/tune/markdown.js';
import { conclude } from '../../src/tune/predict.js';
import { buildTuneReport } from '../../src/tune/report.js';
import { CARDS, measuredCurves, runSearch, simulateTrial } from './simulate.js';

const space = { name: 'batch_size', lo: 1, hi: 1024, start: 4, multipleOf: 1, maxTrials: 3 };

function report() {
  const gpt2 = measuredCurves().find((c) => c.id === 'gpt2 amp_bf16 adamw')!;
  const r = runSearch(space, (b) => simulateTrial(gpt2, CARDS[2]!, { fragmentation: 1.03, nvml: true }, b));
  const trials = r.trials.map((t, i) => ({ ...t, index: i + 1, kind: 'search' as const, reason: 'r', command: ['python', 't.py'], runDir: `/runs/${i}` }));
  return buildTuneReport({ version: '0', space, stepsPerTrial: 8, margin: 0.1, maxTrials: 3, outDir: '/runs', trials, stopReason: 'done', result: conclude(space, trials, 0.1), interrupted: false });
}

describe('tune --md', () => {
  it('Markdown: the answer first, then one row per trial', () => {
    const rep = report();
    const md = renderTuneMarkdown(rep);
    expect(md).toMatch(/^## gpuwise tune: batch_size in 1\.\.1024 on NVIDIA H100 80GB HBM3/);
    expect(md.indexOf(`**Largest that fits: batch_size=${rep.result.largestOk}`)).toBeLessThan(md.indexOf('| # |'));
    expect(md.match(/^\| \d+c? \| \d+ \| (ok|oom)/gm)).toHaveLength(rep.trials.length);
  });
});
