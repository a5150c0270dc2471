/** The doctor report as Markdown and HTML, from real probe records of tiny_train.py (CPU torch). */
import { beforeAll, describe, expect, it } from 'vitest';
import { byteUnit, niceStep, renderDoctorHtml, thin } from '../../src/doctor/html.js';
import { renderDoctorMarkdown, sparkline } from '../../src/doctor/markdown.js';
import type { ProbeRecord, StepRecord } from '../../src/run/records.js';
import type { DoctorReport } from '../../src/doctor/report.js';
import { STEP_TIMELINE_MAX_POINTS, stepTimelineOf } from '../../src/run/steps.js';
import { doctorReportProblem } from '../../src/doctor/reportCheck.js';
import { fmtMs } from '../../src/util/format.js';
import { onGpu, probeRecords, reportOf } from '../history/reports.js';
import { SKIP_PYTHON } from './helpers.js';

const svgs = (html: string) => html.match(/<svg[^>]*aria-label="([^"]+)"/g)?.map((s) => /aria-label="([^"]+)"/.exec(s)?.[1]) ?? [];

describe.skipIf(SKIP_PYTHON)('doctor report as Markdown and HTML (real probe records)', () => {
  let records: ProbeRecord[];
  let cpu: DoctorReport;
  beforeAll(async () => {
    records = await probeRecords(['--steps', '12', '--loader-delay-ms', '3']);
    cpu = reportOf(records);
  }, 120_000);

  it('the report carries every step in its step timeline', () => {
    const tl = cpu.ranks[0]?.stepTimeline;
    expect(tl?.step).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    const times = records.filter((r): r is StepRecord => r.type === 'step').map((s) => s.stepTimeS);
    expect(tl?.stepTimeS).toEqual(times);
    expect(tl?.dataWaitS.every((w) => w > 0)).toBe(true);
    expect(doctorReportProblem(JSON.parse(JSON.stringify(cpu)))).toBeNull();
  });

  it('Markdown: every section, the figures of the report, the findings with their fix', () => {
    const md = renderDoctorMarkdown(cpu);
    for (const h of ['## gpuwise doctor: `/usr/bin/python3', '### Environment', '### Step time', '### GPUs over time', '### Findings', '### Captured window'])
      expect(md).toContain(h);
    const s = cpu.ranks[0]?.steps;
    expect(md).toContain(`| ${s?.steps} | ${s?.measuredSteps} | ${fmtMs((s?.medianS ?? 0) * 1e9)} |`);
    expect(md).toContain(`| torch | ${cpu.environment.torch} |`);
    expect(md).toMatch(/step time over the run \(steps 2\.\.12\) `[▁▂▃▄▅▆▇█]{11}`/);
    // 16 samples x 3 ms of dataset sleep is most of this tiny model's step: the probe's finding, with its code.
    const f = cpu.findings.find((x) => x.id === 'dataloader-wait');
    expect(f).toBeDefined();
    expect(md).toContain(`: ${f?.title}`);
    expect(md).toContain('```python\nDataLoader(dataset');
    expect(md).toContain('Not sampled (no GPU in the test)');
  });

  it('HTML: one offline page, no script, the step chart per rank', () => {
    const html = renderDoctorHtml(cpu);
    expect(html.startsWith('<!doctype html>')).toBe(true);
    expect(html).not.toMatch(/<script|src="http|href="http/i);
    expect(svgs(html)).toEqual(['step time per step']);
    // One point per step after the warm-up step: 11 steps, a path of 11 points for the step time and 11 for the wait.
    const paths = [...html.matchAll(/<path d="([^"]+)"/g)].map((m) => (m[1]?.match(/[ML]/g) ?? []).length);
    expect(paths).toEqual([11, 11]);
    expect(html).toContain(`<td>${fmtMs((cpu.ranks[0]?.steps.medianS ?? 0) * 1e9)}</td>`);
  });

  it('with GPUs: memory and utilisation over time, allocator beside NVML in words and as levels', () => {
    const g = onGpu(records, 30);
    const r = reportOf(g.records, { gpuSamples: g.samples, gpuUnavailableReason: null });
    const html = renderDoctorHtml(r);
    expect(svgs(html)).toEqual(['step time per step', 'GPU memory used over time', 'GPU utilisation over time']);
    expect(html).toContain('GPU 0 used (NVML)');
    expect(html).toContain('GPU 1 used (NVML)');
    expect(html).toMatch(/pid \d+ process \(NVML\)/);
    expect(html).toMatch(/pid \d+ peak reserved: 30\.0 GiB/);
    // Round memory ticks up to the GPU's 141 GiB: 0, 50, 100, 150 GiB, and the total as a level.
    const memSvg = html.slice(html.indexOf('aria-label="GPU memory used over time"'));
    for (const tick of ['>0<', '>50 GiB<', '>100 GiB<', '>150 GiB<']) expect(memSvg).toContain(tick);
    expect(memSvg).toContain('GPU total 141 GiB');
    // NVML saw 30.5 GiB for the process at most; the allocator reserved 30 GiB: 512 MiB of context and other.
    const line = 'reserved 30.0 GiB + CUDA context and other 512 MiB = 30.5 GiB seen by NVML';
    expect(html).toContain(line);
    const md = renderDoctorMarkdown(r);
    expect(md).toContain(line);
    expect(md).toMatch(/\| 0 \| NVIDIA H200 \| 8 \| 30\.8 GiB of 141 GiB \| 81% \(93%\) \| `[▁▂▃▄▅▆▇█]{8}` \| `▁█████{3}` \|/);
    expect(md).toMatch(/GPU memory of its process over time \(max 30\.5 GiB\)/);
  });

  it('escapes what the user typed and renders an older report and what-ifs', () => {
    const r = reportOf(records, { command: ['python', 'train.py', '--tag', '<script>alert(1)</script>'] });
    const html = renderDoctorHtml(r);
    expect(html).not.toContain('<script>');
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    // A report saved before stepTimeline existed, with what-ifs (one malformed entry left out).
    const saved = JSON.parse(JSON.stringify(r)) as Omit<DoctorReport, 'whatIfs'> & { whatIfs: unknown[] };
    for (const x of saved.ranks) delete x.stepTimeline;
    saved.whatIfs = [{ title: 'batch 48 fits', text: 'predicted 71 GiB of 80' }, { title: 3 }];
    const old = saved as unknown as DoctorReport;
    const oldHtml = renderDoctorHtml(old);
    expect(oldHtml).toContain('no per-step timeline');
    expect(oldHtml).toContain('<li><b>batch 48 fits</b>: predicted 71 GiB of 80</li>');
    const oldMd = renderDoctorMarkdown(old);
    // the what-ifs, then the set-up's guesses labelled as such (every format shows them)
    expect(oldMd).toContain('### What-ifs (planner, calibrated on this run)\n\n- **batch 48 fits**: predicted 71 GiB of 80\n');
    expect(oldMd).toMatch(/- \*\*batch 48 fits\*\*: predicted 71 GiB of 80\n(- _guessed: [^\n]+_\n)*\n/);
  });
});

describe('chart helpers', () => {
  it('thinning keeps every spike and the order of the points', () => {
    const xs = Array.from({ length: 10_000 }, (_, i) => i);
    const ys = xs.map((i) => (i === 7777 ? 500 : i % 7));
    const t = thin(xs, ys, 900);
    expect(t.xs).toHaveLength(900);
    expect(Math.max(...(t.ys as number[]))).toBe(500);
    expect([...t.xs].sort((a, b) => a - b)).toEqual(t.xs);
  });

  it('axis steps are round numbers, memory in its binary unit', () => {
    expect([niceStep(141, 4), niceStep(0.118, 4), niceStep(59, 5), niceStep(9, 4)]).toEqual([50, 0.05, 20, 2.5]);
    expect([byteUnit(500), byteUnit(3 * 1024 ** 2), byteUnit(141 * 1024 ** 3)]).toEqual([1, 1024 ** 2, 1024 ** 3]);
  });

  it('a sparkline is the maximum of each bucket, scaled to the top', () => {
    expect(sparkline([0, 1, 2, 3, 4, 5, 6, 7])).toBe('▁▂▃▄▅▆▇█');
    expect(sparkline([null, 10, null], 48, 10)).toBe('·█·');
    expect(sparkline([1, 9, 1, 1], 2)).toBe('█▂');
  });

  it('a long run keeps at most STEP_TIMELINE_MAX_POINTS steps, first step first', () => {
    const steps: StepRecord[] = Array.from({ length: 12_001 }, (_, i) => ({
      v: 1,
      type: 'step',
      pid: 1,
      rank: null,
      t: i,
      step: i + 1,
      stepTimeS: 0.1,
      dataWaitS: 0,
      batches: 1,
      samples: 1,
      memory: null,
      profiled: false,
    }));
    const tl = stepTimelineOf(steps);
    expect(tl.step.length).toBeLessThanOrEqual(STEP_TIMELINE_MAX_POINTS);
    expect(tl.step.length).toBeGreaterThan(STEP_TIMELINE_MAX_POINTS / 2);
    expect(tl.step[0]).toBe(1);
    expect(tl.step[1]).toBe(4);
  });
});
