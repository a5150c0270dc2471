/**
 * The behaviour-equivalence suite (issues 27 and 43) on Debian's CPU PyTorch: every case of test/equivalence/cases
 * runs plainly and under the bundled `gpuwise doctor` (scripts/equivalence.mjs), with the stdio and command form it
 * declares (pipes with slow, tee'd and closing readers on doctor's own stdout, closed descriptors, launchers), and
 * must behave the same: how it ended, what its streams delivered, files written, and doctor must have seen its
 * steps. The cases today's doctor still breaks are listed, with the way they differ, in known-differences.json; a
 * listed case must still differ that way, so the list shrinks as doctor is fixed (a case that starts passing fails
 * here until it is taken off the list). A few generated programs (scripts/equivalenceGen.mjs, seeds GENERATED_SEEDS;
 * EQUIVALENCE_SEEDS=0-49 runs more) combine behaviours of several families and must run the same; one that differs
 * is kept and its path printed, to be copied into the cases.
 *
 * Two routes by which doctor attaches its probe (run/attach.ts), two passes: every case with a Python that has the
 * site hook (what the wheel installs: doctor then changes nothing in the environment), and the environment and
 * launcher families again with /usr/bin/python3, which has none (a clone: the boot folder on PYTHONPATH). On that
 * route a command that replaces PYTHONPATH or runs `python -I`/`-E` goes unprobed by design: those cases are listed
 * in known-differences.json's `pathRoute`, and doctor must name the process that used torch and why.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Aspect, CaseResult, EquivalenceReport } from '../../scripts/equivalence.mjs';
import { listCases } from '../../scripts/equivalence.mjs';
import { parseSeeds } from '../../scripts/equivalenceGen.mjs';
import { buildBundle } from '../cliBundle.js';
import { PYTHON, REPO, SKIP_PYTHON, hookedPython } from '../doctor/helpers.js';

const CASES = join(REPO, 'test', 'equivalence', 'cases');
const RUNNER = join(REPO, 'scripts', 'equivalence.mjs');
/** The generated programs CI runs (about 4 s each on 2 cores); EQUIVALENCE_SEEDS=A-B runs others. */
const GENERATED_SEEDS = process.env.EQUIVALENCE_SEEDS ?? '0-3';

/** A case today's probe still breaks: the aspects that differ, and a piece of text the differences show. */
interface KnownDifference {
  differs: Aspect[];
  contains: string;
  observed: string;
}
const known = JSON.parse(readFileSync(join(REPO, 'test', 'equivalence', 'known-differences.json'), 'utf8')) as {
  schemaVersion: number;
  cases: Record<string, KnownDifference>;
  pathRoute: { cases: Record<string, KnownDifference> };
};
/** The families the path route (no site hook) runs again: where the environment and the launch decide the route's reach. */
const PATH_ROUTE_FAMILIES = /^(envx|launch)_/;
const names = listCases(CASES).map((c) => c.name);
/** Everything the runner says differs in a case: its lines of details and the lines only one run printed. */
const evidence = (r: CaseResult) =>
  [...r.details, ...Object.values(r.lines).flatMap((l) => [...(l?.doctorOnly ?? []), ...(l?.plainOnly ?? [])])].join('\n');

describe('the known-differences list', () => {
  it('names only cases that exist, each with the aspects that differ and a text to find', () => {
    expect(known.schemaVersion).toBe(2);
    for (const [name, k] of [...Object.entries(known.cases), ...Object.entries(known.pathRoute.cases)]) {
      expect(names, name).toContain(name);
      expect(k.differs.length, name).toBeGreaterThan(0);
      expect(k.contains.length, name).toBeGreaterThan(0);
    }
  });
});

describe.skipIf(SKIP_PYTHON)('plain run and doctor run behave the same (CPU torch)', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'gpuwise-equivalence-test-'));
  let report: EquivalenceReport;
  let runnerCode: number | null = null;
  let byName: Map<string, CaseResult>;

  let pathReport: EquivalenceReport;

  beforeAll(async () => {
    const bundle = await buildBundle('gpuwise-equivalence-test');
    const site = await runSuite(bundle, hookedPython(tmp), 'site', ['--generate', GENERATED_SEEDS], 'site');
    runnerCode = site.code;
    report = site.report;
    byName = new Map(report.cases.map((c) => [c.name, c]));
    pathReport = (await runSuite(bundle, PYTHON, 'path', ['--only', names.filter((n) => PATH_ROUTE_FAMILIES.test(n)).join(',')], 'path')).report;
  }, 1_800_000);

  /** The runner over the cases with `python`, doctor attaching by `route`; its JSON report and exit status. */
  async function runSuite(bundle: string, python: string, route: string, extra: string[], tag: string) {
    const json = join(tmp, `equivalence-${tag}.json`);
    const args = [RUNNER, '--python', python, '--cli', bundle, '--cases', CASES, '--jobs', '2', '--json', json, '--attach', route, ...extra];
    const code = await new Promise<number | null>((ok, fail) => {
      const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'ignore'] });
      child.once('error', fail);
      child.once('close', (c) => ok(c));
    });
    return { code, report: JSON.parse(readFileSync(json, 'utf8')) as EquivalenceReport };
  }
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('ran every case and the generated programs, and exits 1 exactly when one differs', () => {
    expect(report.schemaVersion).toBe(1);
    expect(report.cases.filter((c) => !c.generated).map((c) => c.name)).toEqual(names);
    expect(report.cases.filter((c) => c.generated).length).toBe(parseSeeds(GENERATED_SEEDS).length);
    expect(runnerCode).toBe(report.summary.differ > 0 ? 1 : 0);
  });

  it('ran the probe for real: every case that is not skipped here had its steps recorded by doctor (the launchers too)', () => {
    const unprobed = (name: string) => known.cases[name]?.differs.includes('steps') ?? false;
    const silent = report.cases
      .filter((c) => c.skipped === null && !((c.doctor.probe?.steps ?? 0) > 0) && !unprobed(c.name))
      .map((c) => c.name);
    expect(silent).toEqual([]);
  });

  it("doctor's own stdout and stderr were tried as the script's: a slow reader, tee, a reader that closes, closed descriptors", () => {
    const kinds = new Set(report.cases.flatMap((c) => [c.stdio.stdout, c.stdio.stderr]));
    for (const k of ['slow', 'tee', 'closing', 'closed', 'pipe', 'file'] as const) expect(kinds, k).toContain(k);
  });

  it('torchrun: both ranks had their steps recorded', () => {
    expect(byName.get('launch_torchrun_gloo')?.doctor.probe?.probed).toBe(2);
  });

  it.each(parseSeeds(GENERATED_SEEDS).map((s) => `gen_${s}`))('%s (generated): the same under doctor', (name) => {
    const r = byName.get(name) as CaseResult;
    expect(r.details, `${r.generated}: copy it into test/equivalence/cases to keep it as a case`).toEqual([]);
    expect(r.equal).toBe(true);
  });

  it('a training thread that outlives the main thread has every step recorded (the probe ends after it)', () => {
    expect(byName.get('thread_main_returns_first')?.doctor.probe?.steps).toBe(64);
  });

  it.each(names.filter((n) => !(n in known.cases)))('%s: the same under doctor', (name) => {
    const r = byName.get(name) as CaseResult;
    expect(r.details, name).toEqual([]);
    expect(r.equal).toBe(true);
  });

  it.each(Object.keys(known.cases))('%s: still differs as recorded (take it off known-differences.json once fixed)', (name) => {
    const r = byName.get(name) as CaseResult;
    const k = known.cases[name] as KnownDifference;
    expect(r.equal, `${name} now runs the same under doctor: remove it from known-differences.json`).toBe(false);
    expect(r.differs, r.details.join('\n')).toEqual(k.differs);
    expect(evidence(r)).toContain(k.contains);
  });

  describe('without the site hook (the boot folder on PYTHONPATH)', () => {
    const pathCases = () => pathReport.cases;
    it('ran the environment and launcher families again', () => {
      expect(pathCases().map((c) => c.name)).toEqual(names.filter((n) => PATH_ROUTE_FAMILIES.test(n)));
    });

    it.each(names.filter((n) => PATH_ROUTE_FAMILIES.test(n) && !(n in known.pathRoute.cases)))('%s: the same under doctor', (name) => {
      const r = pathCases().find((c) => c.name === name) as CaseResult;
      expect(r.details, name).toEqual([]);
    });

    it.each(Object.keys(known.pathRoute.cases))('%s: differs as recorded, and a process it did not reach is named with why', (name) => {
      const r = pathCases().find((c) => c.name === name) as CaseResult;
      const k = known.pathRoute.cases[name] as KnownDifference;
      expect(r.equal, `${name} now runs the same without the site hook: remove it from known-differences.json's pathRoute`).toBe(false);
      expect(r.differs, r.details.join('\n')).toEqual(k.differs);
      expect(evidence(r)).toContain(k.contains);
      if (k.differs.includes('steps')) {
        // Named with why: the command replaced PYTHONPATH, or ran python -I / -E (run/attach.ts), in the report's
        // fields and its notes.
        const unprobed = r.doctor.probe?.unprobed ?? [];
        expect(unprobed, name).not.toEqual([]);
        for (const u of unprobed) expect(u, name).toMatch(/^pid \d+: .*(PYTHONPATH|python -[IE])/);
        expect(r.doctor.probe?.unprobedNoted, name).toBe(true);
      }
    });
  });
});
