/**
 * What tune --plan measured on this machine, under doctor's plan (issue 46: "where a lever's measured effect on this
 * machine differs from the model's, later predictions on this machine say so"): the history's pairs of the plan's steps
 * reach the report (`measuredHere`) and each rendering says them under the step; pairs of steps the plan does not
 * hold are left out, and the plan's own figures stay the model's.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderDoctorMarkdown } from '../../src/doctor/markdown.js';
import { renderDoctorText } from '../../src/doctor/render.js';
import { recordedRunInput } from '../../src/doctor/rediagnose.js';
import { buildDoctorReport } from '../../src/doctor/report.js';
import { type LeverPair, leverAccuracy } from '../../src/history/leverAccuracy.js';
import { analyseTraceFiles } from '../../src/io/captures.js';
import { readRunDir } from '../../src/io/runDir.js';
import { renderDoctorHtml } from '../../src/serve/pages/runs.js';
import { PLAIN } from '../../src/report/style.js';
import { REPO } from './helpers.js';

const DIR = join(REPO, 'examples', 'doctor', 'runs', 'h200', 'starved_dataloader');

async function inputOf() {
  const run = readRunDir(DIR);
  const traces = await analyseTraceFiles(run.traces.map((f) => ({ rank: f.rank, path: f.path, label: f.path ?? f.recorded, missing: `not in ${DIR}` })));
  return recordedRunInput({ ...run, traces, snapshots: [], version: 'test' });
}

const pair = (stepId: string, predicted: number, measured: number): LeverPair => ({
  hostname: 'gpu-host',
  stepId,
  lever: null,
  predictedFromS: 0.1,
  predictedS: 0.1 * predicted,
  measuredFromS: 0.09,
  measuredS: 0.09 * measured,
  kept: true,
  atMs: 0,
});

describe("doctor's plan with what tune --plan measured on this machine", () => {
  it('the plan steps measured before carry their record; the others, and the figures, are as without it', async () => {
    const input = await inputOf();
    const plain = buildDoctorReport(input);
    const first = plain.pace?.plan.steps[0];
    expect(first?.id).toBe('dataloader-bound');
    const accuracy = leverAccuracy([pair('dataloader-bound', 0.2, 0.3), pair('dataloader-bound', 0.2, 0.34), pair('dataloader-bound', 0.2, 0.32), pair('not-in-this-plan', 0.5, 0.5)], 'gpu-host');
    const r = buildDoctorReport({ ...input, leverAccuracy: accuracy });
    expect(r.measuredHere?.map((a) => a.stepId)).toEqual(['dataloader-bound']);
    expect(r.measuredHere?.[0]?.pairs).toBe(3);
    expect(r.measuredHere?.[0]?.medianPredictedRatio).toBeCloseTo(0.2, 6);
    expect(r.measuredHere?.[0]?.medianMeasuredRatio).toBeCloseTo(0.32, 6);
    expect(r.pace?.plan).toEqual(plain.pace?.plan);
    expect(plain.measuredHere).toBeUndefined();

    const line = /on this machine, tune --plan measured this fix at x0\.32 of the step before it where x0\.20 was predicted \(3 trials\): it gave less than predicted/;
    const text = renderDoctorText(r, PLAIN, 200);
    const lines = text.split('\n');
    const at = lines.findIndex((l) => line.test(l));
    expect(at, text).toBeGreaterThan(0);
    // under the plan's first step, before the second
    expect(lines.findIndex((l) => /^\s+1\. /.test(l))).toBeLessThan(at);
    const second = lines.findIndex((l) => /^\s+2\. /.test(l));
    if (second >= 0) expect(at).toBeLessThan(second);
    expect(renderDoctorText(plain, PLAIN, 200)).not.toMatch(/on this machine, tune --plan/);
    expect(renderDoctorMarkdown(r)).toMatch(new RegExp(`\\n   ${line.source}`));
    expect(renderDoctorHtml(r, { uplotJs: '', uplotCss: '' })).toMatch(new RegExp(`<div class="dim">${line.source}</div>`));
  });
});
