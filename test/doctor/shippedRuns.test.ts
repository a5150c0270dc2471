/**
 * Every run directory shipped with the project (examples/doctor/runs/*, examples/realworld/runs), re-diagnosed with
 * `doctor --from` as a new user would: its findings in the documented order (docs/reference/doctor.md, "The order of
 * findings"), each in the one format of a finding (report/findingText.ts: the expected step first, then how, the
 * evidence, the fix with its code), and nothing in the report that points at what the directory does not hold (a
 * recording machine's path as a file, a report.json said to be missing, a plan command on a model.json that is not
 * there).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { DoctorReport } from '../../src/doctor/reportTypes.js';
import { SEVERITIES } from '../../src/findings/finding.js';
import { runCli } from '../helpers/cli.js';
import { REPO } from './helpers.js';

const withProbe = (dir: string) => existsSync(join(dir, 'probe.jsonl'));
const RUN_DIRS = [
  ...readdirSync(join(REPO, 'examples', 'doctor', 'runs')).flatMap((group) => {
    const g = join(REPO, 'examples', 'doctor', 'runs', group);
    return existsSync(g) && !g.endsWith('.json') ? readdirSync(g).map((d) => join(g, d)) : [];
  }),
  ...readdirSync(join(REPO, 'examples', 'realworld', 'runs')).map((d) => join(REPO, 'examples', 'realworld', 'runs', d)),
].filter(withProbe);

/** The documented order, restated: severity; the step saved, largest first; the memory freed; a defect before an advice. */
const orderKey = (f: DoctorReport['findings'][number]): number[] => [
  SEVERITIES.indexOf(f.severity),
  -(f.estimatedGain?.savedFraction ?? 0),
  -(f.memoryGain?.savedFraction ?? 0),
  f.kind === 'advice' ? 1 : 0,
];
const notAfter = (a: number[], b: number[]): boolean => {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return (a[i] as number) < (b[i] as number);
  return true;
};

async function fromDir(dir: string): Promise<{ report: DoctorReport; text: string }> {
  const json = await runCli(['doctor', '--from', dir, '--json']);
  expect(json.code, json.stderr).toBe(0);
  const text = await runCli(['doctor', '--from', dir]);
  return { report: JSON.parse(json.stdout) as DoctorReport, text: text.stdout };
}

describe('doctor --from on every shipped run directory', () => {
  it('finds them all', () => expect(RUN_DIRS.length).toBeGreaterThanOrEqual(30));

  for (const dir of RUN_DIRS)
    it(`${dir.slice(REPO.length + 1)}: findings in the documented order and format; nothing named that the directory lacks`, async () => {
      const { report: r, text } = await fromDir(dir);
      const ids = r.findings.map((f) => `${f.severity} ${f.id} ${f.estimatedGain?.savedFraction.toFixed(4) ?? '-'}`).join(', ');
      for (let i = 1; i < r.findings.length; i++) expect(notAfter(orderKey(r.findings[i - 1]!), orderKey(r.findings[i]!)), ids).toBe(true);

      const lines = text.split('\n');
      r.findings.forEach((f, i) => {
        // a title states no share of the step (the expected line does), and any share it states is the evidence's
        expect(f.title).not.toMatch(/% of (the|each) step|of the time\b/);
        for (const pct of f.title.match(/\d+(\.\d+)?%/g) ?? []) expect(f.evidence.join('\n'), f.title).toContain(pct);
        const head = lines.findIndex((l) => l.startsWith(`${String(i + 1).padStart(2)}. ${f.severity.toUpperCase()}`));
        expect(head, f.id).toBeGreaterThan(0);
        expect(lines[head]).not.toMatch(/\(about [\d.]+% of the step\)/);
        if (f.estimatedGain) {
          // its gain alone, and where the plan gives it another after the fixes before it, that too (issue 47)
          const alone = /^ {4}expected alone: /.test(lines[head + 1] ?? '');
          // a batch change reads per batch of today's size, its speed-up in samples/s, its own step beside them
          const perStep = f.estimatedGain.batchScale
            ? / per batch of today's size \(-[\d.]+%, [\d.]+x the samples\/s; a step of the [\d.]+x batch: \S+ \S+\)$/
            : / per step \(-[\d.]+%, [\d.]+x\)$/;
          expect(lines[head + 1]).toMatch(/^ {4}expected( alone)?: \S+ \S+ -> \S+ \S+ /);
          expect(lines[head + 1]).toMatch(perStep);
          if (alone) expect(lines[head + 2]).toMatch(/^ {4}in the plan \(step \d+(, after [^)]+(\)[^)]*)*)?\): \S+ \S+ -> \S+ \S+ (a step|per batch of today's size) \([\d.]+x( the samples\/s)?\)(: .+)?$/);
          expect(lines[head + (alone ? 3 : 2)]).toMatch(/^ {4}how:( |$)/);
        }
        const fix = lines.findIndex((l, k) => k > head && l.startsWith('    fix: '));
        expect(fix, f.id).toBeGreaterThan(head);
        if (f.recommendation.code) expect(lines[fix + 1]).toMatch(/^ {6}\| /);
      });

      // windows and snapshots: a file of the directory, or named by file name and said to be elsewhere
      for (const c of [...r.profile.traces, ...r.profile.snapshots]) {
        if (c.error === null) expect(existsSync(c.path), c.path).toBe(true);
        else if (/^not in this run directory/.test(c.error)) expect(c.path, c.error).not.toContain('/');
      }
      // the GPU samples: from the report.json, or why there are none, true to the directory
      const hasReport = existsSync(join(dir, 'report.json'));
      const savedGpus = hasReport ? (JSON.parse(readFileSync(join(dir, 'report.json'), 'utf8')) as DoctorReport).gpus : null;
      if (savedGpus) expect(r.gpus?.length).toBe(savedGpus.length);
      else expect(r.gpuUnavailableReason).toMatch(hasReport ? /report was itself made by doctor --from/ : /holds the probe's records but no such report/);
      // no words of the tool's own insides a user cannot act on (issue 47)
      expect(text).not.toMatch(/report\.json holds none|older probe|the probe that ran/);
      // a suggested command's input exists
      for (const m of text.matchAll(/gpuwise plan --model (\S+?)`/g)) expect(existsSync(m[1] as string), m[0]).toBe(true);
    });
});

// 184 ms: the run's mean step, the throughput the pace model judges every fix on (its median is 183 ms)
describe('one format of a finding in doctor, as in analyze (hf_trainer_gpt2, the issue\'s run)', () => {
  const dir = join(REPO, 'examples', 'realworld', 'runs', 'hf_trainer_gpt2');
  const trace = join(dir, 'trace-pid1325.json.gz');

  it('the terminal says what the fix gives, how, the evidence and the code, the framework switch first', async () => {
    const { text } = await fromDir(dir);
    const block = text.slice(text.indexOf(' 1. HIGH'), text.indexOf('\n 2. ', text.indexOf(' 1. HIGH')));
    expect(block.split('\n').slice(0, 4).join('\n')).toMatch(
      /^ 1\. HIGH {3}Matrix multiplies run in fp32 without tensor cores {2}\[no-tensor-cores, from the trace\]\n {4}expected: 184 ms -> 75\.2 ms per step \(-59%, 2\.44x\)\n {4}how:\n {6}1\. fp32 GEMMs 125 ms a step -> about 22\.3 ms in bf16 \(their 6\.07 TFLOP at /,
    );
    expect(block).toContain("    · fp32 (SIMT) matmul kernels: 125 ms per step (66% of the profiled window's 189 ms step)");
    expect(block).toMatch(/ {4}fix: Run matmuls on tensor cores[^\n]*\n {6}\| # Hugging Face Trainer:\n {6}\| TrainingArguments\(\.\.\., bf16=True\)\n/);
  });

  it("analyze's terminal has the same parts in the same order for the same finding", async () => {
    const a = (await runCli(['analyze', '--no-color', trace])).stdout;
    const head = a.split('\n').find((l) => l.startsWith(' 1. '));
    expect(head).toBe(' 1. HIGH   Matrix multiplies run in fp32 without tensor cores  [no-tensor-cores]');
    const parts = (t: string) => {
      const b = t.slice(t.indexOf('\n 1. ') + 1, t.indexOf('\n 2. '));
      return b.split('\n').filter((l) => l.trim() !== '' && !/^ {4}in the plan /.test(l)).map((l) => /^ {4}(expected|how|·|fix)/.exec(l)?.[1] ?? (/^ {6}\|/.test(l) ? '|' : /^ {6}\d+\. /.test(l) ? 'how' : 'head'));
    };
    const dedupe = (xs: string[]) => xs.filter((x, i) => x !== xs[i - 1]);
    expect(dedupe(parts(a))).toEqual(['head', 'expected', 'how', '·', 'fix', '|']);
    expect(dedupe(parts((await fromDir(dir)).text))).toEqual(['head', 'expected', 'how', '·', 'fix', '|']);
  });

  it('Markdown and HTML put the parts in the same order', async () => {
    const md = (await runCli(['doctor', '--from', dir, '--md'])).stdout;
    const f1 = md.slice(md.indexOf('#### 1.'), md.indexOf('#### 2.'));
    const at = (s: string) => f1.indexOf(s);
    expect(at('**expected:** 184 ms -> 75')).toBeGreaterThan(0);
    expect([at('**expected:**'), at('_how:_'), at('- fp32 (SIMT)'), at('**fix:**'), at('```python')]).toEqual(
      [...[at('**expected:**'), at('_how:_'), at('- fp32 (SIMT)'), at('**fix:**'), at('```python')]].sort((x, y) => x - y),
    );
    const { renderDoctorHtml } = await import('../../src/serve/pages/runs.js');
    const { inlineAssets } = await import('../../src/serve/assets.js');
    const { report } = await fromDir(dir);
    const html = renderDoctorHtml(report, inlineAssets());
    const card = html.slice(html.indexOf('data-id="no-tensor-cores"'));
    const h = (s: string) => card.indexOf(s);
    expect(h('<b>expected:</b> 184 ms -&gt; 75')).toBeGreaterThan(0);
    const order = [h('<b>expected:</b>'), h('how: fp32 GEMMs'), h('<li>fp32 (SIMT)'), h('<b>fix:</b>'), h('<pre><code># Hugging Face Trainer:')];
    expect(order.every((x) => x > 0)).toBe(true);
    expect(order).toEqual([...order].sort((x, y) => x - y));
  });
});
