/**
 * Reports from outside (issue 20 items 10 and 11): a mutated report.json read by `runs show` and `compare` is one
 * line and exit 2, never an internal error (before: 34 of 400 mutations), and terminal control sequences inside a
 * report never reach the terminal.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DoctorReport } from '../../src/doctor/reportTypes.js';
import { runCli } from '../helpers/cli.js';
import { SKIP_PYTHON } from '../doctor/helpers.js';
import { onGpu, probeRecords, reportOf } from './reports.js';

const tmp = mkdtempSync(join(tmpdir(), 'gpuwise-hostile-reports-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
let report: DoctorReport;
beforeAll(async () => {
  if (SKIP_PYTHON) return;
  const { records, samples } = onGpu(await probeRecords(['--steps', '12']));
  report = reportOf(records, { gpuSamples: samples });
}, 120_000);

const VALUES: unknown[] = [null, 0, -1, 1e308, 'x', [], {}, true, [1, 2], { a: 1 }];

/** Every path of a JSON value (the root excluded). */
function pathsOf(v: unknown, at: string[] = [], out: string[][] = []): string[][] {
  if (at.length > 0) out.push(at);
  if (typeof v === 'object' && v !== null) for (const k of Object.keys(v)) pathsOf((v as Record<string, unknown>)[k], [...at, k], out);
  return out;
}

describe.skipIf(SKIP_PYTHON)('hostile doctor reports', () => {
  it('400 mutated report.json files: runs show and compare answer or refuse in one line, never crash', async () => {
    const paths = pathsOf(report);
    let seed = 20;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const good = join(tmp, 'good.json');
    writeFileSync(good, JSON.stringify(report));
    const bad = join(tmp, 'report.json');
    const store = join(tmp, 'store');
    let refused = 0;
    for (let i = 0; i < 200; i++) {
      const r = structuredClone(report) as unknown as Record<string, unknown>;
      for (let m = 0; m < 3; m++) {
        const p = paths[rnd(paths.length)] as string[];
        let o: unknown = r;
        for (const k of p.slice(0, -1)) o = (o as Record<string, unknown> | null)?.[k];
        // a copy: a later mutation that walks into it must not change VALUES (a shared {} once held itself: a cycle)
        if (typeof o === 'object' && o !== null) (o as Record<string, unknown>)[p[p.length - 1] as string] = structuredClone(VALUES[rnd(VALUES.length)]);
      }
      writeFileSync(bad, JSON.stringify(r));
      for (const args of [
        ['runs', 'show', bad, '--store', store],
        ['compare', bad, good, '--store', store],
      ]) {
        const out = await runCli(args);
        expect([0, 2], `${args.join(' ')}: ${out.stderr}`).toContain(out.code);
        if (out.code === 2) {
          refused++;
          expect(out.stderr.trim().split('\n')).toHaveLength(1);
        }
      }
    }
    expect(refused).toBeGreaterThan(0);
  }, 120_000);

  it('escape sequences in a report never reach the terminal', async () => {
    const evil = structuredClone(report);
    evil.run.command = ['python', '\u001b]0;pwned\u0007train.py', '\u001b[2J'];
    evil.notes = ['\u001b[31mred\u001b[0m note', 'bell\u0007'];
    const file = join(tmp, 'evil.json');
    writeFileSync(file, JSON.stringify(evil));
    for (const args of [
      ['runs', 'show', file],
      ['runs', 'show', file, '--md'],
      ['compare', file, file],
    ]) {
      const out = await runCli([...args, '--store', join(tmp, 'store')]);
      expect(out.code).toBe(0);
      // biome-ignore lint/suspicious/noControlCharactersInRegex: the characters that must not appear
      expect(out.stdout).not.toMatch(/[\u0007\u001b]/);
    }
    const shown = await runCli(['runs', 'show', file, '--store', join(tmp, 'store')]);
    expect(shown.stdout).toContain('red[0m note');
  });
});
