/**
 * doctor's terminal report says the basis of its figures and no more than the run holds (issue 47 item 4): the step
 * count beside the number of steps timed, no GPU wording on a CPU run, an exception raised before any step is not
 * "in step 1". On shipped run directories (doctor --from) and on CPU runs of the CPU PyTorch.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { PYTHON, REPO, SKIP_PYTHON, TINY } from './helpers.js';

const RUNS = join(REPO, 'examples', 'doctor', 'runs');
const tmp = mkdtempSync(join(tmpdir(), 'gpuwise-figures-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const text = async (dir: string) => {
  const r = await runCli(['doctor', '--from', dir]);
  expect(r.code, r.stderr).toBe(0);
  return r.stdout;
};

describe('doctor: figures with their basis', () => {
  it('the steps line says how many of the steps were timed when it is fewer than were run', async () => {
    const out = await text(join(RUNS, 'h200', 'fp32_matmul'));
    expect(out).toMatch(/^ {2}steps: 40 steps \(33 timed on the GPU\), median 25\.0 ms/m);
    const two = await text(join(RUNS, 'h200', 'accum_no_sync'));
    expect(two.match(/steps: 30 steps \(23 timed on the GPU\), median/g)).toHaveLength(2);
  });

  it('an exception raised before any step is "before the first training step", not "in step 1"', async () => {
    const out = await text(join(RUNS, 'h100-onegpu', 'gloo_crash_rank1'));
    // The launcher ran no step; the ranks raised in step 21.
    expect(out).toMatch(/^ {2}exception before the first training step: ChildFailedError/m);
    expect(out).not.toMatch(/exception in step 1:/);
    expect(out.match(/^ {2}exception in step 21: RuntimeError/gm)).toHaveLength(2);
  });
});

describe.skipIf(SKIP_PYTHON)('doctor on a CPU run: no GPU wording', () => {
  it('the what-if basis and the pace say the run is on the CPU, not that a GPU idles', async () => {
    const out = join(tmp, 'cpu');
    const prev = process.env.GPUWISE_STORE;
    process.env.GPUWISE_STORE = join(tmp, 'store');
    try {
      const r = await runCli(['doctor', '--out', out, '--profile-at', '3', '--profile-steps', '2', '--', PYTHON, TINY, '--steps', '12', '--loader-delay-ms', '2']);
      expect(r.code, r.stderr).toBe(0);
    } finally {
      if (prev === undefined) delete process.env.GPUWISE_STORE;
      else process.env.GPUWISE_STORE = prev;
    }
    const report = await text(out);
    expect(report).not.toMatch(/GPU\(s\) of 0 visible/);
    expect(report).not.toMatch(/the GPU idles|idles \d+% of it/);
    // The DataLoader's finding (the loop waits on it) says nothing of a GPU's busy share either.
    expect(report).toMatch(/\[dataloader-bound, /);
    expect(report).not.toMatch(/the GPU is busy \d+% of the time/);
    // The pace names no GPU stage of 0 ns: the chain is the DataLoader's and the host's.
    expect(report).not.toMatch(/the GPU 0 ns|^ {2}GPU: 0 ns/m);
    const pace = report.split('\n').find((l) => l.startsWith('What sets the pace: '));
    expect(pace).toMatch(/ sets the pace: the (DataLoader|host) /);
    expect(pace).not.toContain('GPU');
    expect(report).toMatch(/^ {2}run: batch 16, fp32, AdamW, on the CPU \(no GPU visible\)$/m);
  });
});

describe('analyze: figures over the GPUs one process drives (issue 47 item 4)', () => {
  it("a pipelined model on 2 GPUs: each GPU's mean wait and the union of their work said as such, never summed past the step", async () => {
    const r = await runCli(['analyze', '--no-color', join(REPO, 'examples', 'traces', 'scenarios', 'model_parallel_pipelined.trace.json.gz')]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain("Where a step goes (mean per step and per GPU, over this rank's 2 GPUs)");
    const host = /host: [\d.]+ ms \(assumed\): its 2 GPUs each waited ([\d.]+) ms a step on average for the host's next launch \(\d+% of the step\), and at least one of them worked ([\d.]+) ms/.exec(r.stdout);
    expect(host, r.stdout).not.toBeNull();
    const step = Number(/What sets the pace: mean step ([\d.]+) ms/.exec(r.stdout)?.[1]);
    // the two figures are on different bases: their sum passes the step, which is why the words say so
    expect(Number(host![1]) + Number(host![2])).toBeGreaterThan(step);
    // no fix in the plan: the opening says what binds, the stage the pace section names, not a bare "no fix found"
    expect(r.stdout.split('\n')[2]).toBe("What to do: no fix found that shortens the step: the host sets the pace (below), and no finding's fix shortens it");
    expect(r.stdout).toMatch(/What sets the pace: mean step [\d.]+ ms: the host sets the pace/);
  });
});

describe("doctor: a run's ranks are not its GPUs (issue 47 item 4)", () => {
  it('two gloo ranks on one GPU: "2 ranks, 1 GPU(s) visible to each", not "2 GPU(s) of 1 visible"', async () => {
    const r = await runCli(['doctor', '--from', join(REPO, 'examples', 'doctor', 'runs', 'h100-onegpu', 'gloo_crash_rank1'), '--no-color']);
    expect(r.stdout).toMatch(/ {2}run: batch 64, fp32, SGD, 2 ranks, 1 GPU\(s\) visible to each\n/);
    expect(r.stdout).not.toMatch(/GPU\(s\) of \d+ visible/);
  });
});
