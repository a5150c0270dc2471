/**
 * The serve pages say a figure the way the CLI says it: the Compare page's figures are `gpuwise compare`'s
 * ("15,221", "-90 points", not "15221.4" and "-100%"), and a verdict's gain is the step before and after, never a
 * saving of "−100%" (a loop that waits on its DataLoader 99.9% of the step: a real CPU run).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { DoctorReport } from '../../src/doctor/reportTypes.js';
import { compareRuns } from '../../src/history/compare.js';
import type { AnalyzeReport } from '../../src/report/analyzeReport.js';
import { analyzeVerdict } from '../../src/serve/pages/analyze.js';
import { comparePage, verdictText } from '../../src/serve/pages/runs.js';
import { fmtMs } from '../../src/util/format.js';
import { rediagnosed } from '../doctor/helpers.js';
import { runCli } from '../helpers/cli.js';
import { ROOT, RUNS, TRACES } from './fixtures.js';

/** The text of each cell of each row of the table `id` (tags removed, entities of the escaping undone). */
function rowsOf(html: string, id: string): string[][] {
  const t = html.slice(html.indexOf(`id="${id}"`), html.indexOf('</table>', html.indexOf(`id="${id}"`)));
  const text = (s: string) => s.replace(/<[^>]+>/g, '').replace(/&amp;/g, '&').replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&#39;/g, "'").replace(/&quot;/g, '"').trim();
  return [...t.matchAll(/<tr>([\s\S]*?)<\/tr>/g)].map((m) => [...(m[1] ?? '').matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)].map((c) => text(c[1] ?? ''))).filter((r) => r.length > 0);
}

describe('the Compare page says each figure as gpuwise compare does', () => {
  it('two shipped H200 runs: every step-time and memory line of the CLI is a row of the page, same numbers, same change', async () => {
    const dirs = [join(RUNS, 'starved_dataloader'), join(RUNS, 'fp32_matmul')] as const;
    const [a, b] = dirs.map((d) => JSON.parse(readFileSync(join(d, 'report.json'), 'utf8')) as DoctorReport) as [DoctorReport, DoctorReport];
    const cli = await runCli(['compare', ...dirs]);
    expect(cli.code, cli.stderr).toBe(0);
    const section = (title: string) => {
      const lines = cli.stdout.split('\n');
      const i = lines.indexOf(title);
      const end = lines.findIndex((l, j) => j > i && !l.startsWith('  '));
      return lines.slice(i + 1, end).map((l) => l.trim());
    };
    const cliLines = [...section('Step time'), ...section('Memory')];
    expect(cliLines.length).toBeGreaterThan(5);
    expect(cliLines).toContain('samples/s 315 -> n/a');
    expect(cliLines).toContain('DataLoader wait 90% -> 0% of step time (-90 points)');
    const html = comparePage(compareRuns({ label: dirs[0], id: null, report: a }, { label: dirs[1], id: null, report: b }), a, b);
    // A row: figure (its unit in brackets), A, B, change; read back as the CLI's sentence.
    const sentences = rowsOf(html, 'compare-figures').map(([label = '', before, after, change]) => {
      const unit = /^(.*) \((.+)\)$/.exec(label);
      return `${unit ? unit[1] : label} ${before} -> ${after}${unit ? ` ${unit[2]}` : ''}${change ? ` (${change})` : ''}`;
    });
    expect(sentences).toEqual(cliLines);
  });
});

describe('a verdict says what the fix gives as the step before and after', () => {
  it('a DataLoader that holds the loop 99.9% of the step (a real CPU run): the expected step, not "−100% step time"', async () => {
    const r = await rediagnosed(join(ROOT, 'test', 'fixtures', 'doctor', 'cpu_loader_bound'));
    const g = r.findings[0]?.estimatedGain;
    expect(g?.savedFraction).toBeGreaterThanOrEqual(0.99); // a share that rounds to 99-100% (the model claims 100x at most)
    const v = verdictText(r);
    expect(v).toBe(`${r.findings[0]!.title} (fixing it: ${fmtMs(g!.stepTimeNs)} → ${fmtMs(g!.expectedStepTimeNs)} per step)`);
    expect(v).not.toMatch(/100%\s*step time/);
  });

  it("analyze's verdict in the same words", async () => {
    const cli = await runCli(['analyze', '--json', join(TRACES, 'resnet_starved.trace.json.gz')]);
    const r = JSON.parse(cli.stdout) as AnalyzeReport;
    const g = r.findings[0]!.estimatedGain!;
    expect(analyzeVerdict(r)).toBe(`${r.findings[0]!.title} (fixing it: ${fmtMs(g.stepTimeNs)} → ${fmtMs(g.expectedStepTimeNs)} per step)`);
  });
});
