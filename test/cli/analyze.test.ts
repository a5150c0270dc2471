import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { TRACES, tracePath } from '../helpers/fixtures.js';

const tmp = mkdtempSync(join(tmpdir(), 'gpuwise-cli-'));
const starved = tracePath('resnet_starved');

describe('gpuwise analyze', () => {
  it('prints a terminal report with the top finding and exits 0', async () => {
    const r = await runCli(['analyze', starved]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/Findings/);
    expect(r.stdout).toMatch(/1\. HIGH\s+The GPU waits on the DataLoader/);
    expect(r.stdout).toMatch(/idle: waiting for DataLoader/);
  });

  it('--json follows the documented schema', async () => {
    const r = await runCli(['analyze', '--json', starved]);
    const j = JSON.parse(r.stdout);
    expect(j.schemaVersion).toBe(2);
    expect(j.findings[0]).toMatchObject({ id: 'dataloader-bound', severity: 'high' });
    for (const f of j.findings) {
      for (const k of ['id', 'severity', 'title', 'evidence', 'recommendation', 'estimatedGain']) expect(f).toHaveProperty(k);
    }
    expect(j.metrics.ranks[0].steps).toHaveLength(3);
    expect(j.inputs[0].path).toBe(starved);
  });

  it('--fail-on sets exit code 1 only when a finding reaches the severity', async () => {
    expect((await runCli(['analyze', '--fail-on', 'high', starved])).code).toBe(1);
    expect((await runCli(['analyze', '--fail-on', 'high', `${TRACES}scenarios/gpt2_fusion_compiled.trace.json.gz`])).code).toBe(0);
    expect((await runCli(['analyze', '--fail-on', 'medium', `${TRACES}scenarios/gpt2_fusion_compiled.trace.json.gz`])).code).toBe(1);
    expect((await runCli(['analyze', '--fail-on', 'urgent', starved])).code).toBe(2);
  });

  it('analyses a directory of rank traces as one distributed run', async () => {
    const r = await runCli(['analyze', '--json', `${TRACES}ddp_gpt2`]);
    const j = JSON.parse(r.stdout);
    expect(j.metrics.ranks.map((m: { rank: number }) => m.rank)).toEqual([0, 1]);
    expect(j.summary.ranks).toBe(2);
  });

  it('--md and --html render; --html never overwrites an input or a foreign file', async () => {
    const md = await runCli(['analyze', '--md', starved]);
    expect(md.stdout).toMatch(/^## gpuwise analyze/);
    expect(md.stdout).toMatch(/```python/);
    const out = join(tmp, 'report.html');
    const h = await runCli(['analyze', '--html', out, starved]);
    expect(h.code).toBe(0);
    const html = readFileSync(out, 'utf8');
    // The Reports trace page standalone (test/serve/reportPages.test.ts checks its content): uPlot inline, nothing fetched.
    expect(html).toContain('id="chart-steps-0"');
    expect(html).not.toMatch(/<script[^>]* src=|<link rel="stylesheet"|(src|href)="https?:/);
    expect((await runCli(['analyze', '--html', out, starved])).code).toBe(0); // an earlier report may be replaced
    const foreign = join(tmp, 'notes.html');
    writeFileSync(foreign, 'my notes');
    const refused = await runCli(['analyze', '--html', foreign, starved]);
    expect(refused.code).toBe(2);
    expect(readFileSync(foreign, 'utf8')).toBe('my notes');
    expect((await runCli(['analyze', '--html', starved, starved])).code).toBe(2);
  });
});

describe('bad input: one line naming the file, exit 2, no stack trace', () => {
  const cases: [string, () => string, RegExp][] = [
    ['missing file', () => join(tmp, 'nope.json'), /no such file/],
    ['empty file', () => write('empty.json', ''), /is empty/],
    ['not JSON', () => write('text.json', 'hello, world'), /not JSON/],
    ['JSON that is not a trace', () => write('obj.json', '{"a": 1, "b": [1,2]}'), /truncated|no trace|traceEvents/],
    ['random bytes', () => write('rand.json', Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919) % 256))), /not JSON|binary/],
    ['truncated gzip', () => write('cut.json.gz', readFileSync(starved).subarray(0, 200)), /gzip|truncated|not JSON/],
    ['empty directory', () => dir('emptydir'), /no trace files/],
  ];
  for (const [what, make, msg] of cases) {
    it(what, async () => {
      const p = make();
      const r = await runCli(['analyze', p]);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      const lines = r.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(p);
      expect(lines[0]).toMatch(msg);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    });
  }

  it('a truncated JSON trace is analysed with a warning (on the steps it holds whole: none at 60%, so exit 2)', async () => {
    const text = gunzipSync(readFileSync(starved));
    for (const [share, code] of [
      [0.6, 2],
      [0.8, 0],
    ] as const) {
      const p = write(`part${share}.json`, text.subarray(0, Math.floor(text.length * share)));
      const r = await runCli(['analyze', '--json', p]);
      expect(r.code).toBe(code);
      const j = JSON.parse(r.stdout);
      expect(j.inputs[0].warnings.join(' ')).toMatch(/truncated/);
    }
  });

  it('invalid UTF-8 is replaced with a warning', async () => {
    const text = gunzipSync(readFileSync(tracePath('resnet_tuned')));
    const at = text.indexOf('"name": "aten::');
    const bad = Buffer.concat([text.subarray(0, at + 9), Buffer.from([0xff, 0xfe]), text.subarray(at + 9)]);
    const r = await runCli(['analyze', '--json', write('bad-utf8.json.gz', gzipSync(bad))]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).inputs[0].warnings.join(' ')).toMatch(/UTF-8/);
  });

  it('unknown flags are usage errors', async () => {
    const r = await runCli(['analyze', '--frobnicate', starved]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/frobnicate/);
  });
});

function write(name: string, data: string | Buffer): string {
  const p = join(tmp, name);
  writeFileSync(p, data);
  return p;
}

function dir(name: string): string {
  const p = join(tmp, name);
  mkdirSync(p, { recursive: true });
  return p;
}

describe('analyze DIR (issue 47: subfolders were skipped silently)', () => {
  it('reads subfolders where the top has no trace; names them where it has', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gpuwise-dir-'));
    mkdirSync(join(dir, 'run-a', 'rank0'), { recursive: true });
    mkdirSync(join(dir, 'empty', 'deeper'), { recursive: true });
    writeFileSync(join(dir, 'run-a', 'rank0', 'resnet_tuned.trace.json.gz'), readFileSync(tracePath('resnet_tuned')));
    const r = await runCli(['analyze', dir, '--json']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(join('run-a', 'rank0', 'resnet_tuned.trace.json.gz'));
    const none = await runCli(['analyze', join(dir, 'empty')]);
    expect([none.code, none.stderr]).toEqual([
      2,
      `gpuwise analyze: ${join(dir, 'empty')}: directory holds no trace files (*.json, *.json.gz), in it or 3 levels of subfolders\n`,
    ]);
    // a trace at the top: that is what is read, and the subfolder with more is named
    writeFileSync(join(dir, 'top.trace.json.gz'), readFileSync(tracePath('resnet_tuned')));
    const top = await runCli(['analyze', dir, '--json']);
    expect(top.code).toBe(0);
    expect(top.stdout).not.toContain(join('run-a', 'rank0'));
    expect(top.stderr).toContain(`gpuwise analyze: ${dir}: read at its top only; subfolders with traces too: run-a/ (1 trace) (name them to analyze them)`);
  });

  it('a JSON file beside the traces that is no trace (notes, a config) is left out and named, not fatal', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gpuwise-dir-'));
    writeFileSync(join(dir, 'a.trace.json.gz'), readFileSync(tracePath('resnet_tuned')));
    writeFileSync(join(dir, 'notes.json'), '{}');
    mkdirSync(join(dir, 'sub'));
    writeFileSync(join(dir, 'sub', 'config.json'), '{"lr": 0.1}');
    const r = await runCli(['analyze', dir]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe(`gpuwise analyze: ${dir}: left out notes.json: JSON, but not a profiler trace (no traceEvents)\n`);
    expect(r.stdout).toMatch(/^gpuwise analyze · a\.trace\.json\.gz/);
    // named on its own it is still refused, with its reason
    const alone = await runCli(['analyze', join(dir, 'notes.json')]);
    expect(alone.code).toBe(2);
    expect(alone.stderr).toContain('not a torch.profiler trace (no traceEvents)');
  });
});
