/**
 * A distributed run's profiler window (issue 19): every rank profiles the same steps. Rank 0 chooses as a single
 * process would and writes the first step ahead into the run directory; the other ranks take it from there. On
 * 2x H200 with each rank choosing alone, one rank was profiled while the other was not, and the windows showed
 * the unprofiled rank waiting in NCCL as "communication not hidden: 76%". Run for real with the CPU PyTorch.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BOOT, PROBE_ROOT, PYTHON, SKIP_PYTHON, fallbackRecords, pyEnv, runProcess } from './helpers.js';

const tmp = mkdtempSync(join(tmpdir(), 'gpuwise-window-align-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

// A steady loop: alone, a process settles after 10 steps (two windows of 5 steps within 10%); 60 steps leave a
// loaded machine room to settle late and still open a fallback window 11 steps after.
const LOOP = [
  'import torch, time',
  'm = torch.nn.Linear(32, 32)',
  'opt = torch.optim.SGD(m.parameters(), lr=0.01)',
  'for i in range(60):',
  '    m(torch.randn(8, 32)).sum().backward()',
  '    opt.step(); opt.zero_grad()',
  '    time.sleep(0.005)',
].join('\n');

// biome-ignore lint/suspicious/noExplicitAny: records are read field by field, as JSON
async function run(dir: string, rank: number): Promise<any[]> {
  const env = {
    PYTHONPATH: [BOOT, PROBE_ROOT].join(delimiter),
    GPUWISE_RUN_DIR: dir,
    RANK: String(rank),
    WORLD_SIZE: '2',
    GPUWISE_PROFILE_STEPS: '2',
  };
  const r = await runProcess(PYTHON, ['-c', LOOP], pyEnv(env));
  expect(r.code).toBe(0);
  return fallbackRecords(dir);
}

describe.skipIf(SKIP_PYTHON)('the profiler window of a distributed run', () => {
  it('rank 0 chooses its settled step and announces it ahead; it profiles exactly there', async () => {
    const dir = mkdtempSync(join(tmp, 'r0-'));
    const start = (await run(dir, 0)).find((r) => r.type === 'profile-start');
    const plan = JSON.parse(readFileSync(join(dir, 'profile-window.json'), 'utf8'));
    expect(plan.reason).toBe('settled');
    expect(start.step).toBe(plan.step);
    expect(start.aligned).toBe(true);
    // Announced 3 steps after the step it settled at, so a rank a step or two ahead still reads it in time.
    expect(start.warmupSteps).toBe(plan.step - 1);
    expect(plan.step).toBeGreaterThanOrEqual(10 + 3);
  });

  it("another rank profiles rank 0's step, not the one it would have chosen alone", async () => {
    const alone = mkdtempSync(join(tmp, 'alone-'));
    const r = await runProcess(
      PYTHON,
      ['-c', LOOP],
      pyEnv({ PYTHONPATH: [BOOT, PROBE_ROOT].join(delimiter), GPUWISE_RUN_DIR: alone, GPUWISE_PROFILE_STEPS: '2' }),
    );
    expect(r.code).toBe(0);
    const own = fallbackRecords(alone).find((x) => x.type === 'profile-start') as { step: number };
    const dir = mkdtempSync(join(tmp, 'r1-'));
    const chosen = own.step + 9;
    writeFileSync(join(dir, 'profile-window.json'), JSON.stringify({ step: chosen, reason: 'settled' }));
    const start = (await run(dir, 1)).find((x) => x.type === 'profile-start');
    expect(start).toMatchObject({ step: chosen, reason: 'settled', settled: true, aligned: true });
  });

  it('without a word from rank 0 (no probe there, another node), a rank falls back to its own choice, later', async () => {
    const dir = mkdtempSync(join(tmp, 'r1-none-'));
    const start = (await run(dir, 1)).find((x) => x.type === 'profile-start');
    // It was ready as a process alone is (steps settled, step 10 at the earliest), then waited a settle window and
    // two leads (5 + 6 steps) for a plan. Read from its own record: another process settles at its own step.
    expect(start).toMatchObject({ aligned: false, reason: 'settled' });
    expect(start.ownReadyStep).toBeGreaterThanOrEqual(10);
    expect(start.step).toBeGreaterThanOrEqual(start.ownReadyStep + 11);
  });
});
