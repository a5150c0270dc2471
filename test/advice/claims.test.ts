/**
 * No finding claims what its own figures contradict, on every shipped trace (analyze's rules) and every committed run
 * directory (doctor --from): a share of the step in the title is the share its evidence states, and a finding that
 * calls kernels slow or slower shows them slower than what it compares them with (a misaligned-GEMM finding once said
 * "run on slow kernels" over evidence of 50 against 47 TFLOP/s for the aligned ones).
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { diagnose } from '../../src/advice/engine.js';
import type { Finding } from '../../src/findings/finding.js';
import { REPO, rediagnosed } from '../doctor/helpers.js';
import { contradictions } from '../helpers/claims.js';
import { rankOf, TRACES } from '../helpers/fixtures.js';

const traceNames = (): string[] => {
  const names: string[] = [];
  for (const f of readdirSync(TRACES)) if (f.endsWith('.trace.json.gz')) names.push(f.replace('.trace.json.gz', ''));
  for (const f of readdirSync(join(TRACES, 'scenarios'))) if (f.endsWith('.trace.json.gz')) names.push(`scenarios/${f.replace('.trace.json.gz', '')}`);
  for (const f of readdirSync(join(TRACES, 'ddp_gpt2'))) if (f.endsWith('.trace.json.gz')) names.push(f.replace('.trace.json.gz', ''));
  return names.sort();
};

const runDirs = (): string[] =>
  [join(REPO, 'examples', 'realworld', 'runs'), join(REPO, 'examples', 'doctor', 'runs', 'h200')].flatMap((root) =>
    readdirSync(root)
      .map((d) => join(root, d))
      .filter((d) => statSync(d).isDirectory()),
  );

describe('no finding contradicts its own evidence', () => {
  it('catches a "slower" claim over faster figures and a title share the evidence does not state', () => {
    const base: Finding = {
      id: 'fusion',
      severity: 'info',
      title: 'GEMMs run slower than the aligned ones (20% of the step)',
      ranks: [0],
      evidence: ['misaligned GEMMs: 12 ms per step, 20% of the step', 'aten::mm 8192x768x50257: 12.7 ms per step at 50 TFLOP/s vs 47 TFLOP/s for aligned GEMMs here'],
      data: {},
      recommendation: { summary: '', code: '' },
      estimatedGain: null,
    };
    expect(contradictions(base)).toHaveLength(1);
    expect(contradictions({ ...base, evidence: ['misaligned GEMMs: 8.9% of each step'] })).toHaveLength(1);
    expect(contradictions({ ...base, evidence: ['misaligned GEMMs: 20% of the step', 'at 40 TFLOP/s vs 47 TFLOP/s'] })).toEqual([]);
  });

  it('on every shipped trace', async () => {
    const problems: string[] = [];
    for (const name of traceNames()) {
      const { metrics } = await rankOf(name);
      for (const f of diagnose([metrics])) problems.push(...contradictions(f).map((p) => `${name}: ${p}`));
    }
    expect(problems).toEqual([]);
  }, 240_000);

  it('on every committed run directory (doctor --from)', async () => {
    const problems: string[] = [];
    for (const dir of runDirs()) {
      const r = await rediagnosed(dir);
      for (const f of r.findings) problems.push(...contradictions(f).map((p) => `${dir.slice(REPO.length + 1)}: ${p}`));
    }
    expect(problems).toEqual([]);
  }, 600_000);
});
