/**
 * The order vitest starts the test files in: the longest first, so that the two workers of a 2-core machine run dry
 * together. Vitest orders by the durations of the previous run, which a fresh clone (CI) has not got: it then starts
 * the largest files first, and the equivalence suite (a small file that runs 170 cases, a third of the suite's work)
 * started 49th, holding one worker for minutes after the other had finished.
 */
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The files that run longest, longest first (their share of the suite's work on the 2-core CI VM, 2026-12-07: the
 * equivalence suite about 250-630 s by load, each of the others 40-90 s). test/architecture/sequencer.test.ts checks
 * that each still exists.
 */
export const LONGEST_FIRST = [
  'test/equivalence/equivalence.test.ts',
  'test/pace/cpuGroundTruth.test.ts',
  'test/doctor/probeSteps.test.ts',
  'test/doctor/cli.test.ts',
  'test/doctor/timeWindow.test.ts',
  'test/doctor/noHarm.test.ts',
  'test/tune/planCli.test.ts',
  'test/doctor/probe.test.ts',
  'test/serve/tableLayout.test.ts',
];

export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rest = await super.sort(files);
    const root = this.ctx.config.root;
    const rank = (f: TestSpecification) => {
      const i = LONGEST_FIRST.indexOf(relative(root, f.moduleId).split('\\').join('/'));
      return i < 0 ? LONGEST_FIRST.length : i;
    };
    // Array.prototype.sort is stable: the files not listed keep vitest's own order after the listed ones.
    return rest.sort((a, b) => rank(a) - rank(b));
  }
}
