/**
 * The probe's sampled steady loop (issue 27, its cost): past the first GPUWISE_FULL_STEPS steps, once the window is
 * done and an optimizer marks the steps, only the bursts (step % 1024 < 32) are recorded; every step is still counted
 * (the end record, the beacon), the DataLoader's batches too, and the first step of each burst is timed from its own
 * start, not from the last burst. Run for real with the CPU PyTorch.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildDoctorReport } from '../../src/doctor/report.js';
import { doctorInput } from './input.js';
import { spawnAsync } from '../helpers/spawnAsync.js';
import { fallbackRecords, PROBE_ROOT, PYTHON, SKIP_PYTHON, probeScript, pyEnv } from './helpers.js';

const tmp = mkdtempSync(join(tmpdir(), 'gpuwise-probe-sampling-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

// biome-ignore lint/suspicious/noExplicitAny: records are read field by field, as JSON
type Any = any;

async function probe(script: string[], env: Record<string, string>): Promise<{ records: Any[]; stderr: string; dir: string }> {
  const r = await probeScript(tmp, script, { GPUWISE_PROFILE_STEPS: '0', ...env });
  expect(r.code).toBe(0);
  return { records: r.records as Any[], stderr: r.stderr, dir: r.dir };
}

const STEPS = 2600;
/** A DataLoader loop of 2,600 steps of batch 8 (the last batch has 4 samples), and SGD. */
const dataLoaderLoop = [
  'import torch',
  'from torch.utils.data import DataLoader, TensorDataset',
  'torch.manual_seed(0)',
  'm = torch.nn.Linear(16, 16)',
  'opt = torch.optim.SGD(m.parameters(), lr=1e-3)',
  `xs, ys = torch.randn(${(STEPS - 1) * 8 + 4}, 16), torch.randn(${(STEPS - 1) * 8 + 4}, 16)`,
  'for x, y in DataLoader(TensorDataset(xs, ys), batch_size=8):',
  '    loss = torch.nn.functional.mse_loss(m(x), y)',
  '    opt.zero_grad()',
  '    loss.backward()',
  '    opt.step()',
];
/** The steps recorded with GPUWISE_FULL_STEPS=300: the head, then the two bursts this run reaches. */
const range = (a: number, b: number) => Array.from({ length: b - a + 1 }, (_, i) => a + i);
const SAMPLED = [...range(1, 299), ...range(1024, 1055), ...range(2048, 2079)];

describe.skipIf(SKIP_PYTHON)('the sampled steady loop (CPU torch)', () => {
  it('records the head and the bursts, counts every step and batch, and times each burst from its own start', async () => {
    const { records, stderr, dir } = await probe(dataLoaderLoop, { GPUWISE_FULL_STEPS: '300' });
    expect(stderr).toBe('');
    const steps = records.filter((r) => r.type === 'step');
    expect(steps.map((s) => s.step)).toEqual(SAMPLED);
    const end = records.find((r) => r.type === 'end');
    expect(end.steps).toBe(STEPS);
    const loaders = records.filter((r) => r.type === 'loader');
    expect(loaders.at(-1).batches).toBe(STEPS); // counted between the bursts too: the workers' CPU a batch stays right
    // The beacon holds the count a SIGKILL would leave.
    const beacon = readFileSync(join(dir, `beacon-${end.pid}`));
    expect(Number(beacon.readBigUInt64LE(0))).toBe(STEPS);
    const burst = steps.filter((s) => s.step >= 1024);
    expect(burst.every((s) => s.batches === 1 && s.samples === 8 && s.stepSource === 'optimizer' && s.stepTimeS > 0)).toBe(true);
    // A burst's first step is one step: not the 700 and more counted since the head or the last burst, which would take
    // longer than the head's 299 steps together. Against half of those (not a multiple of the median step): a loaded
    // machine that preempts the one step for a while must not fail it.
    const headS = steps.filter((s) => s.step < 300).reduce((a, s) => a + s.stepTimeS, 0);
    for (const first of [1024, 2048]) expect(steps.find((s) => s.step === first).stepTimeS).toBeLessThan(headS / 2);
    expect(steps.find((s) => s.step === 1024).hostCpuS).toBeNull(); // its start's CPU clock was not read
    // The report counts the run's steps, not its records, and times the steps from the records it has.
    const report = buildDoctorReport(doctorInput(records));
    expect(report.ranks[0]!.steps).toMatchObject({ steps: STEPS, stepSource: 'optimizer' });
    expect(report.ranks[0]!.steps.meanS).toBeGreaterThan(0);
  });

  it("counts every epoch's batches and an evaluation loader's while the DataLoader is not watched between bursts", async () => {
    // 7 epochs of 400 steps, each followed by 10 evaluation batches; the head is 300 steps. Between bursts the batches
    // are read off the iterator's own count; a new epoch's or the evaluation's iterator ends the pause (its step is
    // recorded, marked as the probe's so the statistics leave it out).
    const { records } = await probe(
      [
        'import torch',
        'from torch.utils.data import DataLoader, TensorDataset',
        'torch.manual_seed(0)',
        'm = torch.nn.Linear(16, 16)',
        'opt = torch.optim.SGD(m.parameters(), lr=1e-3)',
        'xs, ys = torch.randn(3200, 16), torch.randn(3200, 16)',
        'train = DataLoader(TensorDataset(xs, ys), batch_size=8, shuffle=True)',
        'evaluation = DataLoader(TensorDataset(xs[:80], ys[:80]), batch_size=8)',
        'for epoch in range(7):',
        '    for x, y in train:',
        '        loss = torch.nn.functional.mse_loss(m(x), y)',
        '        opt.zero_grad()',
        '        loss.backward()',
        '        opt.step()',
        '    with torch.no_grad():',
        '        for x, y in evaluation:',
        '            m(x)',
      ],
      { GPUWISE_FULL_STEPS: '300' },
    );
    expect(records.find((r) => r.type === 'end').steps).toBe(2800);
    const last = (i: number) => records.filter((r) => r.type === 'loader' && r.loader === i).at(-1);
    expect(last(0)).toMatchObject({ batches: 2800, epoch: 7 });
    expect(last(1)).toMatchObject({ batches: 70, epoch: 7 });
    const steps = records.filter((r) => r.type === 'step');
    for (const s of SAMPLED)
      expect(
        steps.some((r) => r.step === s),
        `step ${s}`,
      ).toBe(true);
    // The epochs that began between bursts: their first step is recorded and left out of the statistics.
    const resumed = steps.filter((r) => r.probeWork === 'sampling').map((r) => r.step);
    expect(resumed.length).toBeGreaterThan(0);
    expect(resumed.every((n) => n % 400 === 1)).toBe(true);
  });

  it('records every step with GPUWISE_FULL_STEPS=all', async () => {
    const { records } = await probe(dataLoaderLoop, { GPUWISE_FULL_STEPS: 'all' });
    expect(records.filter((r) => r.type === 'step').map((s) => s.step)).toEqual(range(1, STEPS));
  });

  it('reads the batch off the model input again at each burst (a loop without a DataLoader)', async () => {
    const { records } = await probe(
      [
        'import torch',
        'torch.manual_seed(0)',
        'm = torch.nn.Linear(16, 16)',
        'opt = torch.optim.SGD(m.parameters(), lr=1e-3)',
        'data = torch.randn(64, 16)',
        `for i in range(${STEPS}):`,
        '    x = data[(i % 8) * 8:(i % 8) * 8 + 8]',
        '    loss = m(x).square().mean()',
        '    opt.zero_grad()',
        '    loss.backward()',
        '    opt.step()',
      ],
      { GPUWISE_FULL_STEPS: '300' },
    );
    const steps = records.filter((r) => r.type === 'step');
    // The first optimizer step starts the clock (no DataLoader): steps 1-299 then the bursts.
    expect(steps.map((s) => s.step)).toEqual(SAMPLED);
    const burst = steps.filter((s) => s.step >= 1024);
    expect(burst.every((s) => s.batchSource === 'model-input' && s.samples === 8)).toBe(true);
    expect(records.find((r) => r.type === 'end').steps).toBe(STEPS);
  });

  it("counts through torch 2's global post-step hook too (simulated on this torch: the hook is the probe's method)", async () => {
    // CI's torch 1.13 has no global optimizer hooks, so the probe takes its torch 1 path there. Here torch 2's
    // registration and its call after each step (hook(optimizer, args, kwargs)) are put in before the probe starts,
    // and the loop runs past the head: every step counted, the head and two bursts recorded, the hook removed at the end.
    const dir = mkdtempSync(join(tmp, 'torch2-'));
    const script = [
      'import glob, json, sys',
      'import torch, torch.optim.optimizer as optmod',
      'hooks = {}',
      'class Handle:',
      '    def __init__(self, k): self.k = k',
      '    def remove(self): hooks.pop(self.k, None)',
      'def register_optimizer_step_post_hook(fn):',
      '    hooks[len(hooks) + 1] = fn',
      '    return Handle(len(hooks))',
      'optmod.register_optimizer_step_post_hook = register_optimizer_step_post_hook',
      'plain_step = torch.optim.SGD.step',
      'def step(self, *a, **k):',
      '    out = plain_step(self, *a, **k)',
      '    for h in list(hooks.values()):',
      '        h(self, a, k)',
      '    return out',
      'torch.optim.SGD.step = step',
      `sys.path.insert(0, ${JSON.stringify(PROBE_ROOT)})`,
      'from gpuwise import probe as probe_mod',
      `p = probe_mod.start({"GPUWISE_RUN_DIR": ${JSON.stringify(dir)}, "GPUWISE_PROFILE_STEPS": "0", "GPUWISE_STALL_S": "0", "GPUWISE_FULL_STEPS": "300"})`,
      'm = torch.nn.Linear(16, 16)',
      'opt = torch.optim.SGD(m.parameters(), lr=0.01)',
      `dl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(${STEPS} * 8, 16)), batch_size=8)`,
      'for (x,) in dl:',
      '    opt.zero_grad()',
      '    m(x).sum().backward()',
      '    opt.step()',
      'p.sender.flush()',
      'p.switch_off()',
      'print(json.dumps({"hook": p.step_hook, "counted": p.steps.step, "left": len(hooks)}))',
    ].join('\n');
    const r = await spawnAsync(PYTHON, ['-c', script], { env: pyEnv({}), timeout: 120_000 });
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout.trim().split('\n').at(-1)!)).toEqual({ hook: 'optimizer-step-post-hook', counted: STEPS, left: 0 });
    const steps = fallbackRecords(dir).filter((r) => r.type === 'step');
    expect(steps.map((r) => (r as { step: number }).step)).toEqual(SAMPLED);
  });
});
