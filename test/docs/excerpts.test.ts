/**
 * README.md, docs/ and examples/realworld/README.md say what the tool prints (issue 24 item 17, issue 47 item 8): every
 * quoted output between
 * `<!-- excerpt: ARGS -->` markers equals what `gpuwise ARGS` prints on the shipped input now
 * (`node scripts/updateDocExcerpts.mjs` rewrites them after a change of output); the README's word on each shipped
 * trace is analyze's; and the README says what `npm test` costs and what `.ci/run` installs.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { AnalyzeReport } from '../../src/report/analyzeReport.js';
import { ROOT, docFiles, excerptOf, findExcerpts } from '../../scripts/updateDocExcerpts.mjs';
import { runCli } from '../helpers/cli.js';

const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');
const README = read('README.md');

describe('the docs quote the tool as it prints', () => {
  const excerpts = docFiles().flatMap((f) => findExcerpts(read(f), f));

  it("quotes analyze's plan, a report in each user guide that has one on a shipped input, and doctor's plans on the real-code corpus", () => {
    expect(excerpts.map((x) => [x.file, x.args[0]])).toEqual(
      expect.arrayContaining([
        ['README.md', 'analyze'],
        ['docs/analyze.md', 'analyze'],
        ['docs/doctor.md', 'doctor'],
        ['docs/doctor.md', 'compare'],
        ['docs/memory.md', 'memory'],
        ['docs/planner.md', 'plan'],
        ['docs/telemetry.md', 'smi'],
        ['examples/realworld/README.md', 'doctor'],
      ]),
    );
  });

  for (const x of excerpts)
    it(`${x.file}:${x.line}: gpuwise ${x.args.join(' ')}${x.from ? ` (from "${x.from}")` : ''}`, async () => {
      const r = await runCli(x.args);
      expect([0, 1], r.stderr).toContain(r.code);
      expect(x.quoted, 'an excerpt is one fenced block').not.toBeNull();
      expect(x.quoted, `stale: node scripts/updateDocExcerpts.mjs rewrites ${x.file}`).toBe(excerptOf(r.stdout, x.from, `${x.file}:${x.line}`));
    });

  it('a drifted excerpt is seen, and where it starts and ends', () => {
    const doc = ['text', '<!-- excerpt: analyze t.json.gz | from 1. -->', '```', ' 1. HIGH  old', '```', '<!-- /excerpt -->', 'more'].join('\n');
    const [x] = findExcerpts(doc, 'x.md');
    expect(x).toMatchObject({ args: ['analyze', 't.json.gz'], from: '1.', start: 2, end: 5, quoted: ' 1. HIGH  old' });
    expect(excerptOf('head\n\n 1. HIGH  new\n    how: ...\n\n 2. LOW\n', '1.', 'x')).toBe(' 1. HIGH  new\n    how: ...');
    expect(() => findExcerpts('<!-- excerpt: analyze x -->\n```\n```\n', 'y.md')).toThrow(/y\.md:1: an excerpt without its <!-- \/excerpt -->/);
  });
});

describe("the README's word on the shipped traces is analyze's", () => {
  // `node dist/gpuwise.mjs analyze PATH ...   # what the README says of it`
  const claims = [...README.matchAll(/^node dist\/gpuwise\.mjs analyze (\S+)[^#\n]*# (.+)$/gm)].map((m) => ({ path: m[1]!, says: m[2]! }));

  it('lists the shipped traces it suggests', () => expect(claims.map((c) => c.path)).toContain('examples/traces/ddp_gpt2/'));

  for (const c of claims)
    it(`${c.path}: "${c.says}" names analyze's top finding and its severity (nothing "healthy" with a finding of medium or more)`, async () => {
      const r = JSON.parse((await runCli(['analyze', '--json', join(ROOT, c.path)])).stdout) as AnalyzeReport;
      const top = r.findings[0];
      if (!top || top.severity === 'low' || top.severity === 'info') return;
      expect(c.says).not.toMatch(/healthy/i);
      expect(c.says).toContain(`${top.id} ${top.severity}`);
      // Every `id severity (-N%)` it quotes is a finding analyze prints, with that severity and saving.
      for (const [, id, severity, pct] of c.says.matchAll(/([a-z0-9-]+) (high|medium|low|info) \(-(\d+)%\)/g)) {
        const f = r.findings.find((x) => x.id === id);
        expect(f, `${c.path}: no ${id} finding`).toBeDefined();
        expect(`${id} ${f!.severity} (-${Math.round((f!.estimatedGain?.savedFraction ?? 0) * 100)}%)`).toBe(`${id} ${severity} (-${pct}%)`);
      }
    });
});

describe('the README on testing', () => {
  it('says how long npm test takes and names every package .ci/run installs', () => {
    expect(README).toMatch(/`npm test`[^.]*about \d+(\.\d)? minutes on 2 (quiet )?cores/);
    const installs = [...read('.ci/run').matchAll(/apt-get install -y --no-install-recommends ([^\n]+)/g)].flatMap((m) => m[1]!.split(/\s+/)).filter((p) => p && !p.startsWith('$'));
    const named = [...read('.ci/run').matchAll(/missing="\$missing ([^"]+)"/g)].flatMap((m) => m[1]!.split(/\s+/));
    const packages = [...new Set([...installs, ...named])];
    expect(packages.sort()).toEqual(['chromium', 'python3-ipykernel', 'python3-nbclient', 'python3-torch', 'python3-venv']);
    for (const p of packages) expect(README).toContain(`\`${p}\``);
  });
});
