/**
 * Every report ends with what sets the pace and the plan (issue 25): doctor's terminal, Markdown and HTML and its JSON
 * `pace`, and analyze's, on the real H200 starved ResNet-50 (a doctor run and an analyze trace).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { renderDoctorMarkdown } from '../../src/doctor/markdown.js';
import { renderDoctorText } from '../../src/doctor/render.js';
import { buildDoctorReport } from '../../src/doctor/report.js';
import type { DoctorReport } from '../../src/doctor/reportTypes.js';
import { loadTrace } from '../../src/io/loadTrace.js';
import { type AnalyzeReport, buildAnalyzeReport } from '../../src/report/analyzeReport.js';
import { renderMarkdown } from '../../src/report/markdown.js';
import { renderTerminal } from '../../src/report/terminal.js';
import { parseProbeLines } from '../../src/run/records.js';
import { inlineAssets } from '../../src/serve/assets.js';
import { renderAnalyzeHtml } from '../../src/serve/pages/analyze.js';
import { renderDoctorHtml } from '../../src/serve/pages/runs.js';
import { analyzeTrace } from '../../src/trace/metrics/index.js';
import { doctorInput } from '../doctor/input.js';
import { TRACES } from '../helpers/fixtures.js';

const RUN = join(__dirname, '..', '..', 'examples', 'doctor', 'runs', 'h200', 'starved_dataloader');
const plain = { bold: (s: string) => s, severity: (_: string, s: string) => s, dim: (s: string) => s } as unknown as Parameters<typeof renderTerminal>[1];

let doctor: DoctorReport;
let analyze: AnalyzeReport;
beforeAll(async () => {
  const metrics = analyzeTrace(await loadTrace(join(RUN, 'trace.json.gz')));
  const { records } = parseProbeLines(readFileSync(join(RUN, 'probe.jsonl'), 'utf8'));
  doctor = buildDoctorReport(doctorInput(records, { traces: [{ rank: 0, path: 'trace', metrics, collectives: null, error: null }] }));
  const m = analyzeTrace(await loadTrace(`${TRACES}resnet_starved.trace.json.gz`));
  analyze = buildAnalyzeReport('test', [{ path: 'resnet_starved.trace.json.gz', rank: 0, events: 1, warnings: [] }], [m]);
}, 60_000);

describe('doctor: the pace and the plan', () => {
  it('JSON: the stages, the bound and the plan on the run\'s mean step', () => {
    const p = doctor.pace!;
    expect(p.stepNs).toBeCloseTo(doctor.ranks[0]!.steps.meanS! * 1e9, 0);
    expect(p.bound).toBe('input');
    expect(p.stages.gpu.how).toBe('measured');
    expect(p.stages.input.how).toBe('assumed');
    expect(p.plan.steps[0]).toMatchObject({ id: 'dataloader-bound', bound: 'gpu' });
    // each step of the plan starts where the one before it ended
    p.plan.steps.slice(1).forEach((s, i) => {
      expect(s.fromStepNs).toBe(p.plan.steps[i]!.expectedStepNs);
    });
  });

  it('every format opens with the plan and ends with what sets the pace', () => {
    const text = renderDoctorText(doctor);
    expect(text).toMatch(/\nWhat sets the pace: mean step 203 ms: the DataLoader sets the pace: /);
    expect(text).toMatch(/^gpuwise doctor: .*\n.*\n.*\n\nWhat to do: the run's mean step 203 ms -> [\d.]+ ms \(.*\n {2}1\. more DataLoader workers: 203 ms -> [\d.]+ ms a step \([\d.]+x; likely [\d.]+-[\d.]+ ms\); then the GPU sets the pace/);
    expect(text.trimEnd().split('\n').at(-1)).toMatch(/^ {2}(DataLoader|host|GPU|blocking wait)/);
    const md = renderDoctorMarkdown(doctor);
    expect(md).toMatch(/### What sets the pace\n\nmean step 203 ms/);
    expect(md).toMatch(/\*\*What to do: the run's mean step 203 ms -> [\d.]+ ms \([^*]*\*\*\n\n1\. more DataLoader workers/);
    const html = renderDoctorHtml(doctor, inlineAssets());
    expect(html).toMatch(/<h2>What sets the pace<\/h2>/);
    expect(html).toMatch(/<ol id="plan"><li>more DataLoader workers: 203 ms -&gt; /);
  });
});

describe('analyze: the pace and the plan from the window alone', () => {
  it('JSON and every format', () => {
    const p = analyze.pace!;
    expect(p.bound).toBe('input');
    // the window cannot tell the host's time when the GPU never waits for it: it says so
    expect(p.stages.host.ns).toBeNull();
    expect(p.stages.host.evidence).toMatch(/the window cannot tell its own time/);
    expect(p.plan.steps[0]?.id).toBe('dataloader-bound');
    expect(renderTerminal(analyze, plain)).toMatch(/^gpuwise analyze · .*\n\nWhat to do: 625 ms -> [\d.]+ ms a step .*\n {2}1\. more DataLoader workers: 625 ms -> 42\.8 ms a step \(14\.61x; likely [\d.]+(?: [mu]?s)?-[\d.]+ [mu]?s\); then the GPU sets the pace[\s\S]*What sets the pace: mean step 625 ms: the DataLoader sets the pace/);
    expect(renderMarkdown(analyze)).toMatch(/\*\*What to do: 625 ms -> [^*]*\*\*\n\n1\. more DataLoader workers/);
    expect(renderAnalyzeHtml(analyze, inlineAssets())).toMatch(/<ol id="plan"><li>more DataLoader workers/);
  });
});
