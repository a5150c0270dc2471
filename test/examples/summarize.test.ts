/**
 * examples/pace/summarize.py, the table of doctor's plan against the measured steps, on the H100 corpus: a plan step is
 * scored against the measured run of the same place only when that run made the change the step's fix stands for
 * (run.sh's PLAN followed the expectations written before the runs; doctor's plan may order the fixes otherwise).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { REPO, rediagnosed } from '../doctor/helpers.js';
import { cleanScratch, makeScratch } from '../telemetry/scratch.js';

afterAll(cleanScratch);

/**
 * summarize.py over one run: its doctor report (rediagnosed from `runDir`) and the lines of `measuredFile` for `run`,
 * in a scratch directory laid out as run.sh leaves OUT.
 */
async function summarize(run: string, measuredFile: string, runDir: string) {
  const out = makeScratch(`summarize-${run}`);
  const measured = readFileSync(join(REPO, measuredFile), 'utf8').split('\n');
  writeFileSync(join(out, 'measured.jsonl'), measured.filter((l) => l.includes(`"run": "${run}"`)).join('\n'));
  mkdirSync(join(out, run));
  const report = await rediagnosed(join(REPO, runDir));
  writeFileSync(join(out, run, 'report.json'), JSON.stringify(report));
  const r = spawnSync('python3', [join(REPO, 'examples/pace/summarize.py'), out], { encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  return { report, stdout: r.stdout };
}

describe('summarize.py', () => {
  it('scores a plan step only against a measured run that made its change', async () => {
    const { report, stdout } = await summarize('jpeg_resnet', 'examples/pace/measured/h100-2026-11-28.jsonl', 'examples/pace/runs/h100/jpeg_resnet');
    const rows = stdout.split('\n').filter((l) => /^\| \d /.test(l));
    const plan = report.pace!.plan.steps;
    expect(rows.length).toBeGreaterThanOrEqual(plan.length);
    // step 1 is more workers, and the run measured at that place added --workers: scored
    expect(plan[0]!.id).toBe('dataloader-bound');
    expect(rows[0]).toMatch(/`--workers 12` \| [\d.]+ \| [+-]\d+% \|$/);
    // a later step whose fix the run at its place did not make (it added bf16) is marked, not scored
    const unmatched = plan.findIndex((s, i) => i > 0 && s.id !== 'mixed-precision' && s.id !== 'no-tensor-cores');
    expect(unmatched).toBeGreaterThan(0);
    expect(rows[unmatched]).toMatch(/not the measured change \|$/);
  });

  it('takes the mean of every run of a configuration (REPEAT, or two calls in one file), and lists them', async () => {
    // The H200 ViT of examples/pace/runs/h200-b: its plan measured in calls E and F (66.66 and 66.145 ms with bf16).
    const { stdout } = await summarize('gpu_bound', 'examples/pace/measured/h200-2026-11-29.jsonl', 'examples/pace/runs/h200-b/gpu_bound');
    const bf16 = stdout.split('\n').find((l) => l.startsWith('| 1 '))!;
    expect(bf16).toContain('`--amp bf16` (2 runs: 66.66, 66.14)');
    // the mean of the two runs, and the error of the prediction against that mean
    const [, predicted, mean, error] = bf16.match(/\| ([\d.]+) \| plan1 .* \| (66\.4\d*) \| ([+-]\d+)% \|$/)!;
    expect(Number(error)).toBe(Math.round(((Number(predicted) - Number(mean)) / Number(mean)) * 100));
  });
});
