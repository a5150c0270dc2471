/**
 * A derivation's parts (issue 47 item 3: the `how:` lines were run-on chains): split at "; " and sentence ends only
 * outside parentheses, losing nothing, over every finding of the shipped scenario traces.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadTrace } from '../../src/io/loadTrace.js';
import { buildAnalyzeReport } from '../../src/report/analyzeReport.js';
import { howParts } from '../../src/report/findingText.js';
import { analyzeTrace } from '../../src/trace/metrics/index.js';
import { REPO } from '../doctor/helpers.js';

const SCENARIOS = join(REPO, 'examples', 'traces', 'scenarios');
const balanced = (s: string) => [...s].reduce((d, c) => (d < 0 ? d : d + (c === '(' ? 1 : c === ')' ? -1 : 0)), 0) === 0;

describe('howParts', () => {
  it('splits every shipped finding\'s arithmetic between whole parts and loses nothing', async () => {
    let split = 0;
    for (const f of readdirSync(SCENARIOS).filter((x) => x.endsWith('.trace.json.gz') && !x.includes('.rank'))) {
      const m = analyzeTrace(await loadTrace(join(SCENARIOS, f)));
      const r = buildAnalyzeReport('test', [{ path: f, rank: 0, events: 1, warnings: [] }], [m]);
      for (const finding of r.findings) {
        const how = finding.estimatedGain?.arithmetic;
        if (!how) continue;
        const parts = howParts(how);
        if (parts.length > 1) split++;
        for (const p of parts) expect(balanced(p), `${f} ${finding.id}: ${p}`).toBe(balanced(how));
        expect(parts.join('').replace(/[\s;]/g, ''), `${f} ${finding.id}`).toBe(how.replace(/[\s;]/g, ''));
      }
    }
    expect(split).toBeGreaterThan(3);
  }, 120_000);

  it('keeps decimals and parenthesised lists whole', () => {
    expect(howParts('a 0.78 x b (c; d). Then e; f')).toEqual(['a 0.78 x b (c; d).', 'Then e', 'f']);
  });
});
