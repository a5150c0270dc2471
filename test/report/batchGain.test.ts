/**
 * A fix that changes the batch (issue 47: the what-if "4x larger batch" labelled "per step"): the bigger batch's step
 * is longer, what shrinks is the time per sample. Its figures read per batch of today's size, its speed-up in
 * samples/s, with the bigger batch's own step beside them, in the terminal, Markdown, HTML and --json, on analyze's
 * `gpu-underused` (a shipped trace) and doctor's bigger-batch what-if (a shipped run); a fix of the same batch keeps
 * "per step".
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderDoctorMarkdown } from '../../src/doctor/markdown.js';
import { renderDoctorText } from '../../src/doctor/render.js';
import type { AnalyzeReport } from '../../src/report/analyzeReport.js';
import { inlineAssets } from '../../src/serve/assets.js';
import { renderDoctorHtml } from '../../src/serve/pages/runs.js';
import { REPO, rediagnosed } from '../doctor/helpers.js';
import { runCli } from '../helpers/cli.js';

const MLP = join(REPO, 'examples', 'traces', 'mlp_launch_bound.trace.json.gz');

describe('a batch change is told per sample, not per step', () => {
  it("analyze: gpu-underused's 4x batch and the plan it opens read per batch of today's size", async () => {
    const json = await runCli(['analyze', MLP, '--json']);
    expect(json.code, json.stderr).toBe(0);
    const r = JSON.parse(json.stdout) as AnalyzeReport;
    const under = r.findings.find((f) => f.id === 'gpu-underused')!;
    expect(under.estimatedGain?.batchScale).toBe(4);
    // a fix of the same batch has none, and stays per step
    expect(r.findings.find((f) => f.id === 'launch-bound')?.estimatedGain?.batchScale).toBeUndefined();
    expect(r.pace?.plan.batchScale).toBe(4);

    const text = await runCli(['analyze', MLP]);
    const lines = text.stdout.split('\n');
    expect(lines[2]).toBe("What to do: 17.6 ms -> 1.61 ms per batch of today's size (10.93x the samples/s; likely 1.35-2.02 ms; a step of the 4x batch: 6.46 ms) with these 2 changes, each on top of the ones before");
    // the batch changes the training, so it comes after the fix that leaves it as it is (the plan's end is the same)
    expect(lines[3]).toBe('  1. fewer launches (compile, CUDA graphs): 17.6 ms -> 6.46 ms a step (2.73x; likely 5.87-7.17 ms); then the host sets the pace');
    expect(lines[5]).toBe("  2. batch x4: 6.46 ms -> 1.61 ms per batch of today's size (4.00x the samples/s; likely 1.35-2.02 ms; a step of the 4x batch: 6.46 ms); then the host sets the pace");
    const expected = "17.6 ms -> 4.41 ms per batch of today's size (-75%, 4.00x the samples/s; a step of the 4x batch: 17.6 ms)";
    // the same share of a later step is another figure: the finding says both (issue 47 item 2)
    expect(text.stdout).toContain(`    expected alone: ${expected}`);
    expect(text.stdout).toContain("    in the plan (step 2, after fewer launches (compile, CUDA graphs)): 6.46 ms -> 1.61 ms per batch of today's size (4.00x the samples/s)");
    expect(text.stdout).toContain('    expected: 17.6 ms -> 6.46 ms per step (-63%, 2.73x)');
    const md = await runCli(['analyze', MLP, '--md']);
    expect(md.stdout).toContain(`**expected alone:** ${expected}`);
  });

  it("doctor: the bigger-batch what-if of the fp32 ResNet-50 (batch 64 -> 128) in the terminal, Markdown and HTML", async () => {
    const r = await rediagnosed(join(REPO, 'examples', 'doctor', 'runs', 'h100-host', 'fp32_b64'));
    const f = r.findings.find((x) => x.id === 'whatif-bigger-batch')!;
    expect(f.estimatedGain?.batchScale).toBe(2);
    const expected = "57.7 ms -> 38.6 ms per batch of today's size (-33%, 1.49x the samples/s; a step of the 2x batch: 77.2 ms)";
    expect(renderDoctorText(r)).toContain(`    expected: ${expected}`);
    expect(renderDoctorMarkdown(r)).toContain(`**expected:** ${expected}`);
    expect(renderDoctorHtml(r, inlineAssets())).toContain(`<b>expected:</b> ${expected.replace(/'/g, '&#39;').replace('->', '-&gt;')}`);
  });
});
