/** The doctor report as Markdown and HTML, from real probe records of tiny_train.py (CPU torch). */
import { beforeAll, describe, expect, it } from 'vitest';
import { renderDoctorMarkdown, sparkline } from '../../src/doctor/markdown.js';
import type { ProbeRecord, StepRecord } from '../../src/run/records.js';
import type { DoctorReport } from '../../src/doctor/reportTypes.js';
import { STEP_TIMELINE_MAX_POINTS, stepTimelineOf } from '../../src/run/steps.js';
import { doctorReportProblem } from '../../src/doctor/reportCheck.js';
import { inlineAssets } from '../../src/serve/assets.js';
import { dataOf, noscripts } from '../serve/pageParts.js';
import { type RunChartData, renderDoctorHtml, runPage } from '../../src/serve/pages/runs.js';
import { fmtMs } from '../../src/util/format.js';
import { onGpu, probeRecords, reportOf } from '../history/reports.js';
import { SKIP_PYTHON } from './helpers.js';

const fileOf = (r: DoctorReport) => renderDoctorHtml(r, inlineAssets());
/** The chart data a page embeds for its script. */
const chartsOf = (html: string) => dataOf<{ charts: RunChartData }>(html).charts;

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
    // 16 samples x 3 ms of dataset sleep is most of this tiny model's step: the DataLoader's finding, with its code.
    const f = cpu.findings.find((x) => x.id === 'dataloader-bound');
    expect(f).toBeDefined();
    expect(md).toContain(`: ${f?.title}`);
    expect(md).toContain('```python\nloader = DataLoader(dataset');
    expect(md).toContain('No GPU samples (no GPU in the test)');
  });

  it('HTML: the serve run page as one offline file, uPlot inline, the step chart per rank, tables without JS', () => {
    const html = fileOf(cpu);
    expect(html.startsWith('<!doctype html>')).toBe(true);
    // Everything inline: no script, style sheet or link that would need a server or the network.
    expect(html).not.toMatch(/<script[^>]* src=|<link rel="stylesheet"|src="http|href="http/i);
    expect(html).toContain(inlineAssets().uplotJs.slice(0, 200));
    expect(html).toContain('window.gw = ');
    // One point per step after the warm-up step: 11 steps, step time and DataLoader wait.
    const c = chartsOf(html);
    expect(c.steps).toHaveLength(1);
    expect(c.steps[0]?.step).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    expect(c.steps[0]?.stepMs.every((v) => v !== null && v > 0)).toBe(true);
    expect(c.steps[0]?.waitMs.every((v) => v > 0)).toBe(true);
    expect(html).toContain('<div id="chart-steps" class="chart"></div>');
    expect(html).toContain(`<td>${fmtMs((cpu.ranks[0]?.steps.medianS ?? 0) * 1e9)}</td>`);
    // Without JavaScript the chart's figures read as a table: all 11 points (12 at most are shown).
    const [steps] = noscripts(html);
    expect(steps?.match(/<tr><td>\d+<\/td>/g)).toHaveLength(11);
    // The same sections as the dashboard's run page: one design.
    const served = runPage(cpu, { id: 'x' });
    for (const id of ['findings', 'steps', 'environment']) {
      const part = (h: string) => h.slice(h.indexOf(`id="${id}"`), h.indexOf('</', h.indexOf(`id="${id}"`) + 200));
      expect(part(html)).toBe(part(served));
    }
    expect(html).not.toContain('<nav><b>gpuwise</b><a href=');
    expect(served).toContain('<script src="assets/uplot.js">');
  });

  it('with GPUs: memory and utilisation over time per GPU, allocator beside NVML in words', () => {
    const g = onGpu(records, 30);
    const r = reportOf(g.records, { gpuSamples: g.samples, gpuUnavailableReason: null });
    const html = fileOf(r);
    const c = chartsOf(html);
    expect(c.gpus.map((x) => x.label)).toEqual(['GPU 0', 'GPU 1']);
    expect(c.gpus[0]?.tS).toHaveLength(8);
    expect(Math.max(...((c.gpus[0]?.usedGiB ?? []) as number[]))).toBeCloseTo(30.75, 2);
    expect(c.gpus[0]?.util.slice(1).every((v) => v === 93)).toBe(true);
    expect(html).toContain('<td class="num">30.8 GiB of 141.0 GiB</td>');
    expect(html).toContain('id="chart-gpus"');
    expect(noscripts(html).filter((n) => n.includes('over time (the chart needs JavaScript)'))).toHaveLength(2);
    // NVML saw 30.5 GiB for the process at most; the allocator reserved 30 GiB: 512 MiB of context and other.
    const line = 'reserved 30.0 GiB + CUDA context and other 512 MiB = 30.5 GiB seen by NVML';
    expect(html).toContain(line);
    const md = renderDoctorMarkdown(r);
    expect(md).toContain(line);
    expect(md).toMatch(/\| 0 \| NVIDIA H200 \| 8 \| 30\.8 GiB of 141\.0 GiB \| 81% \(93%\) \| `[▁▂▃▄▅▆▇█]{8}` \| `▁█████{3}` \|/);
    expect(md).toMatch(/GPU memory of its process over time \(max 30\.5 GiB\)/);
  });

  it('escapes what the user typed and renders an older report and what-ifs', () => {
    const r = reportOf(records, { command: ['python', 'train.py', '--tag', '<script>alert(1)</script>'] });
    const html = fileOf(r);
    expect(html).not.toContain('<script>alert');
    expect(html).not.toContain('</script>alert');
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    // A report saved before stepTimeline existed, with what-ifs (one malformed entry left out).
    const saved = JSON.parse(JSON.stringify(r)) as Omit<DoctorReport, 'whatIfs'> & { whatIfs: unknown[] };
    for (const x of saved.ranks) delete x.stepTimeline;
    saved.whatIfs = [{ title: 'batch 48 fits', text: 'predicted 71 GiB of 80' }, { title: 3 }];
    const old = saved as unknown as DoctorReport;
    const oldHtml = fileOf(old);
    expect(oldHtml).toContain('no per-step timeline');
    expect(oldHtml).toContain('<td>batch 48 fits</td>');
    expect(oldHtml).toContain('<td>predicted 71 GiB of 80</td>');
    const oldMd = renderDoctorMarkdown(old);
    // the what-ifs, then the set-up's guesses labelled as such (every format shows them)
    expect(oldMd).toContain('### What-ifs (planner, calibrated on this run)\n\n- **batch 48 fits**: predicted 71 GiB of 80\n');
    expect(oldMd).toMatch(/- \*\*batch 48 fits\*\*: predicted 71 GiB of 80\n(- _guessed: [^\n]+_\n)*\n/);
  });
});

describe('chart helpers', () => {
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
