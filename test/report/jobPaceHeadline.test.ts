/**
 * A job of several ranks names one stage that sets its pace (issue 47: the third cold reader saw a DDP report call
 * communication binding and rank 1's host binding in the same line). Where another rank's own work binds, the
 * headline says that, and the slowest rank's wait for it as a wait, not as its own communication binding.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO } from '../doctor/helpers.js';
import { runCli } from '../helpers/cli.js';

const SCENARIOS = join(REPO, 'examples', 'traces', 'scenarios');

describe("a job's pace headline", () => {
  for (const name of ['ddp_small_buckets', 'ddp_imbalance', 'ddp_comm_bound', 'ddp_accum_no_sync'])
    it(`${name}: one binding stage, and the waiting rank's wait said as a wait`, async () => {
      const r = await runCli([
        'analyze',
        '--no-color',
        join(SCENARIOS, `${name}.rank0.trace.json.gz`),
        join(SCENARIOS, `${name}.rank1.trace.json.gz`),
      ]);
      expect(r.code, r.stderr).toBe(0);
      const head = r.stdout.split('\n').find((l) => l.startsWith('What sets the pace:')) as string;
      expect(head, name).toBeDefined();
      expect(head.slice('What sets the pace:'.length).match(/sets the (job's )?pace|binding/g)?.length, head).toBe(2); // "X's own work sets the job's pace (..., Y binding)"
      // the GPU stage is said as the arithmetic it is: busy less the exposed communication, the stage's own figure
      const gpu = /\n {2}GPU: ([\d.]+) ms \(measured\): kernels, copies and memsets ([\d.]+) ms a step less the ([\d.]+) ms of communication no compute hides \(the communication stage\): ([\d.]+) ms\n/.exec(r.stdout);
      expect(gpu, r.stdout).not.toBeNull();
      expect(gpu![1]).toBe(gpu![4]);
      expect(Math.abs(Number(gpu![2]) - Number(gpu![3]) - Number(gpu![1]))).toBeLessThan(0.06 * Number(gpu![2]));
      expect(head).toMatch(
        /rank (\d)'s own work sets the job's pace \([\d.]+ m?s a step, [a-zA-Z ]+ binding\); rank (?!\1)(\d)'s own step is [\d.]+ m?s and it waits [\d.]+ (ms|us) a step for the others in collectives.*; the stages below are rank \2's$/,
      );
    });
});
