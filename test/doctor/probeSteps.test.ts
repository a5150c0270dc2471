/**
 * The probe on loops that have no optimizer and no DataLoader (issue 14): steps from backward passes
 * or forward calls of the outermost module, the batch read from the model's own input, the
 * steady-state profiler window, and how a compiled model is known. Run for real with the CPU PyTorch.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { ProbeRecord } from '../../src/run/records.js';
import { SKIP_PYTHON, probeScript } from './helpers.js';

const tmp = mkdtempSync(join(tmpdir(), 'gpuwise-probe-steps-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** Runs a script under the probe (records to files) and returns its records. */
const probe = (script: string[], env: Record<string, string> = {}) => probeScript(tmp, script, env);

// biome-ignore lint/suspicious/noExplicitAny: records are read field by field, as JSON
type Any = any;
const steps = (recs: ProbeRecord[]): Any[] => recs.filter((r) => r.type === 'step');
const model = (recs: ProbeRecord[]): Any => recs.find((r) => r.type === 'model');

describe.skipIf(SKIP_PYTHON)('probe steps without torch.optim or a DataLoader (CPU torch)', () => {
  it('takes steps from backward passes of a hand-written SGD loop, with the batch and tokens from the model input', async () => {
    // word_language_model style: batches sliced from a tensor, parameters updated by hand.
    const { records, stderr, code } = await probe(
      [
        'import torch',
        'model = torch.nn.Sequential(torch.nn.Embedding(100, 8), torch.nn.Flatten(), torch.nn.Linear(8 * 12, 100))',
        'data = torch.randint(0, 100, (30, 6, 12))',
        'crit = torch.nn.CrossEntropyLoss()',
        'for i in range(30):',
        '    x = data[i]',
        '    loss = crit(model(x), x[:, 0])',
        '    model.zero_grad()',
        '    loss.backward()',
        '    for p in model.parameters():',
        '        p.data.add_(p.grad, alpha=-0.1)',
      ],
      { GPUWISE_PROFILE_STEPS: '0' },
    );
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const s = steps(records);
    // The first backward starts the clock: 29 whole steps between 30 backward passes.
    expect(s.length).toBe(29);
    expect(new Set(s.map((x) => x.stepSource))).toEqual(new Set(['backward']));
    for (const x of s) expect([x.samples, x.tokens, x.seqLen, x.batchSource]).toEqual([6, 72, 12, 'model-input']);
    expect(model(records)).toMatchObject({
      name: 'Sequential',
      paramCount: 100 * 8 + 8 * 12 * 100 + 100,
      optimizer: null,
      compiled: false,
      autocastDtype: '',
    });
  });

  it("records the stepping thread's CPU time per step (hostCpuS): Python work counts, a sleep does not", async () => {
    // Each step burns 20 ms of the main thread's CPU time (counted by the thread's own clock, so a busy machine does not
    // change it) and sleeps 20 ms: the step takes 40 ms or more of wall clock, the host's own work is 20 ms.
    const { records, stderr, code } = await probe(
      [
        'import time, torch',
        'model = torch.nn.Linear(4, 4)',
        'opt = torch.optim.SGD(model.parameters(), lr=0.1)',
        'for i in range(12):',
        '    t = time.thread_time()',
        '    while time.thread_time() - t < 0.02:',
        '        pass',
        '    time.sleep(0.02)',
        '    model(torch.ones(2, 4)).sum().backward()',
        '    opt.step()',
        '    opt.zero_grad()',
      ],
      { GPUWISE_PROFILE_STEPS: '0' },
    );
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const s = steps(records).slice(1); // step 1 runs from the first optimizer step's clock start
    expect(s.length).toBeGreaterThanOrEqual(10);
    for (const x of s) {
      expect(x.stepTimeS).toBeGreaterThanOrEqual(0.04);
      expect(x.hostCpuS).toBeGreaterThanOrEqual(0.02);
      // the burn plus a tiny model's step and the probe's own work; the 20 ms asleep is not in it
      expect(x.hostCpuS).toBeLessThan(0.03);
      expect(x.hostCpuS).toBeLessThan(x.stepTimeS - 0.015);
    }
  });

  it('records the time each step spent in backward calls (backwardS): the backward, not the rest of the step', async () => {
    // A backward that burns 15 ms (a custom autograd function), after a forward side that sleeps 20 ms: the backward's
    // call holds the 15 ms and not the 20; two micro-batches a step add up.
    const { records, stderr, code } = await probe(
      [
        'import time, torch',
        'class Slow(torch.autograd.Function):',
        '    @staticmethod',
        '    def forward(ctx, x):',
        '        return x * 2',
        '    @staticmethod',
        '    def backward(ctx, g):',
        '        t = time.perf_counter()',
        '        while time.perf_counter() - t < 0.015:',
        '            pass',
        '        return g * 2',
        'model = torch.nn.Linear(4, 4)',
        'opt = torch.optim.SGD(model.parameters(), lr=0.1)',
        'for i in range(10):',
        '    time.sleep(0.02)',
        '    for micro in range(2):',
        '        Slow.apply(model(torch.ones(2, 4))).sum().backward()',
        '    opt.step()',
        '    opt.zero_grad()',
      ],
      { GPUWISE_PROFILE_STEPS: '0' },
    );
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const s = steps(records).slice(1);
    expect(s.length).toBeGreaterThanOrEqual(8);
    for (const x of s) {
      expect(x.backwardS).toBeGreaterThanOrEqual(0.03);
      expect(x.backwardS).toBeLessThan(x.stepTimeS - 0.015);
    }
  });

  it("reads the CPU clock at every step's end for the first 64 steps, then for one step in 16 (a system call each)", async () => {
    const { records, code } = await probe(
      [
        'import torch',
        'model = torch.nn.Linear(4, 4)',
        'opt = torch.optim.SGD(model.parameters(), lr=0.1)',
        'for i in range(200):',
        '    model(torch.ones(2, 4)).sum().backward()',
        '    opt.step()',
        '    opt.zero_grad()',
      ],
      { GPUWISE_PROFILE_STEPS: '0' },
    );
    expect(code).toBe(0);
    const s = steps(records);
    expect(s.length).toBeGreaterThanOrEqual(190);
    const withCpu = s.filter((x) => typeof x.hostCpuS === 'number').map((x) => x.step);
    // step 1 starts at the clock's start (no CPU reading before it); steps 2-64 each, then 64, 80, 96, ...
    expect(withCpu.filter((n) => n <= 64)).toEqual(Array.from({ length: 63 }, (_, i) => i + 2));
    expect(withCpu.filter((n) => n > 64)).toEqual(s.map((x) => x.step).filter((n) => n > 64 && n % 16 === 0));
  });

  it('takes steps from forward calls of the outermost module in an evaluation loop, not from its submodules or the loss', async () => {
    const { records, stderr } = await probe(
      [
        'import torch',
        'net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)).eval()',
        'crit = torch.nn.MSELoss()',
        'with torch.inference_mode():',
        '    for i in range(20):',
        '        y = net(torch.randn(7, 16))',
        '        crit(y, torch.zeros(7, 4))',
      ],
      { GPUWISE_PROFILE_STEPS: '0' },
    );
    expect(stderr).toBe('');
    const s = steps(records);
    // One per forward of `net` after the first, which starts the clock.
    expect(s.length).toBe(19);
    for (const x of s) expect([x.stepSource, x.samples, x.tokens, x.batchSource]).toEqual(['forward', 7, null, 'model-input']);
    expect(model(records)).toMatchObject({ name: 'Sequential', paramCount: 16 * 32 + 32 + 32 * 4 + 4 });
  });

  it('keeps optimizer steps and reads the batch from the model input when batches come from get_batch() (nanoGPT style)', async () => {
    const { records } = await probe(
      [
        'import torch',
        'emb = torch.nn.Embedding(50, 4)',
        'net = torch.nn.Sequential(emb, torch.nn.Flatten(), torch.nn.Linear(4 * 16, 50))',
        'opt = torch.optim.AdamW(net.parameters())',
        'data = torch.randint(0, 50, (1000,))',
        'def get_batch():',
        '    ix = torch.randint(0, 1000 - 17, (3,))',
        '    return torch.stack([data[i:i + 16] for i in ix]), torch.stack([data[i + 16] for i in ix])',
        'for it in range(12):',
        '    for micro in range(2):  # gradient accumulation',
        '        x, y = get_batch()',
        '        torch.nn.functional.cross_entropy(net(x), y).backward()',
        '    opt.step()',
        '    opt.zero_grad()',
        '    if it % 5 == 0:',
        '        with torch.no_grad():',
        "            net(get_batch()[0])  # an evaluation pass: not the step's work",
      ],
      { GPUWISE_PROFILE_STEPS: '0' },
    );
    const s = steps(records);
    expect(s.map((x) => x.stepSource)).toEqual(Array(12).fill('optimizer'));
    // Two micro-batches of 3 sequences of 16 tokens each step; the no_grad evaluation forwards are not counted.
    for (const x of s) expect([x.samples, x.tokens, x.seqLen, x.batchSource]).toEqual([6, 96, 16, 'model-input']);
  });

  it('opens the profiler window once step times settle, after a slow warm-up, and says why', async () => {
    const { records } = await probe(
      [
        'import time, torch',
        'w = torch.nn.Linear(4, 4)',
        'opt = torch.optim.SGD(w.parameters(), lr=0.01)',
        'for i in range(40):',
        '    time.sleep(max(0.005, 0.05 - 0.003 * i))  # warm-up: steps get faster until step 16 (workers, autotuning)',
        '    w(torch.randn(2, 4)).sum().backward()',
        '    opt.step()',
      ],
      { GPUWISE_PROFILE_STEPS: '3' },
    );
    const start: Any = records.find((r) => r.type === 'profile-start');
    expect(start).toMatchObject({ reason: 'settled', settled: true });
    // Not while steps still get faster: steady steps from step 16 on, five of them at the least (five after five on a
    // quiet machine: step 24 or so; a loaded one's jitter has made two windows alike a step or two sooner).
    expect(start.step).toBeGreaterThanOrEqual(21);
    // How soon after: a quiet machine's steps agree by step 30. Under load (more runnable tasks than cores) their jitter
    // can keep them from agreeing to the loop's end (step 40 seen with a CPU-heavy job beside CI): only held when quiet.
    if ((loadavg()[0] ?? 0) <= cpus().length) expect(start.step).toBeLessThanOrEqual(30);
    expect(start.warmupSteps).toBe(start.step - 1);
    expect(records.some((r) => r.type === 'profile-end')).toBe(true);
  });

  it('opens the window at the step the user named (GPUWISE_PROFILE_AT), settled or not', async () => {
    const { records } = await probe(
      [
        'import time, torch',
        'w = torch.nn.Linear(4, 4)',
        'opt = torch.optim.SGD(w.parameters(), lr=0.01)',
        'for i in range(12):',
        '    time.sleep(0.002 * i)',
        '    w(torch.randn(2, 4)).sum().backward()',
        '    opt.step()',
      ],
      { GPUWISE_PROFILE_AT: '4', GPUWISE_PROFILE_STEPS: '2' },
    );
    expect(records.find((r) => r.type === 'profile-start')).toMatchObject({ step: 4, reason: 'fixed' });
  });

  it('knows a compiled model by its OptimizedModule wrapper and reports the model inside it', async () => {
    // torch.compile's wrapper keeps the model in `_orig_mod`; this torch may predate torch.compile, so a
    // module of that name and shape stands in for it (the probe reads the name and the attribute only).
    const { records } = await probe(
      [
        'import torch',
        'class OptimizedModule(torch.nn.Module):',
        '    def __init__(self, m):',
        '        super().__init__()',
        '        self._orig_mod = m',
        '    def forward(self, *a):',
        '        return self._orig_mod(*a)',
        'class Net(torch.nn.Module):',
        '    def __init__(self):',
        '        super().__init__()',
        '        self.fc = torch.nn.Linear(3, 3)',
        '    def forward(self, x):',
        '        return self.fc(x)',
        'net = OptimizedModule(Net())',
        'opt = torch.optim.SGD(net.parameters(), lr=0.01)',
        'for i in range(3):',
        '    net(torch.randn(5, 3)).sum().backward()',
        '    opt.step()',
      ],
      { GPUWISE_PROFILE_STEPS: '0' },
    );
    expect(model(records)).toMatchObject({ name: 'Net', compiled: true, compiledEvidence: 'OptimizedModule (torch.compile(model))' });
  });
});

describe.skipIf(SKIP_PYTHON)('half-precision master weights (CPU torch)', () => {
  const script = (toHalf: boolean) => [
    'import torch',
    `net = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 2))${toHalf ? '.to(torch.bfloat16)' : ''}`,
    'opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)',
    'for i in range(4):',
    `    net(torch.randn(4, 8${toHalf ? ', dtype=torch.bfloat16' : ''})).float().sum().backward()`,
    '    opt.step()',
  ];

  it('a model cast to bf16 with a plain optimizer gets the word; fp32 weights do not', async () => {
    const { halfMasterWeights } = await import('../../src/advice/rules/precision.js');
    const half = model((await probe(script(true), { GPUWISE_PROFILE_STEPS: '0' })).records);
    expect(half.optimizer.stateDtypes).toHaveProperty('bfloat16');
    const f = halfMasterWeights(half);
    expect(f).toMatchObject({ id: 'half-master-weights', severity: 'info' });
    expect(f!.title).toMatch(/SGD's state are bfloat16/);
    expect(halfMasterWeights(model((await probe(script(false), { GPUWISE_PROFILE_STEPS: '0' })).records))).toBeNull();
  });
});

describe.skipIf(SKIP_PYTHON)("the precision accelerate was set up with (CPU torch; accelerate's state stood in for)", () => {
  // accelerate enters autocast inside the prepared model's forward, after the probe's forward pre-hook, so the model
  // record's autocastDtype says "" for an accelerate or Trainer bf16 run (examples/realworld/runs/*_bf16). Its own
  // state says what the run asked for. accelerate is not installed here: the script puts a module with accelerate's
  // AcceleratorState (a shared-state class whose `_mixed_precision` holds the setting) where accelerate keeps it.
  const loop = [
    'model = torch.nn.Linear(4, 4)',
    'opt = torch.optim.SGD(model.parameters(), lr=0.1)',
    'for i in range(4):',
    '    model(torch.ones(2, 4)).sum().backward(); opt.step(); opt.zero_grad()',
  ];
  const accelerateState = (shared: string) => [
    'import sys, types, torch',
    "st = types.ModuleType('accelerate.state')",
    `st.AcceleratorState = type('AcceleratorState', (), {'_shared_state': ${shared}})`,
    "sys.modules['accelerate.state'] = st",
  ];
  it("reads accelerate's state into the model record (acceleratePrecision), its environment when the state is not built yet", async () => {
    const built = await probe([...accelerateState("{'_mixed_precision': 'bf16'}"), ...loop], { GPUWISE_PROFILE_STEPS: '0' });
    expect(built.stderr).toBe('');
    expect(model(built.records)).toMatchObject({ autocastDtype: '', acceleratePrecision: 'bf16' });
    const launched = await probe([...accelerateState('{}'), ...loop], { GPUWISE_PROFILE_STEPS: '0', ACCELERATE_MIXED_PRECISION: 'fp16' });
    expect(model(launched.records)).toMatchObject({ acceleratePrecision: 'fp16' });
  });
  it('says nothing without accelerate, whatever the environment', async () => {
    const none = await probe(['import torch', ...loop], { GPUWISE_PROFILE_STEPS: '0', ACCELERATE_MIXED_PRECISION: 'bf16' });
    expect(model(none.records).acceleratePrecision).toBeNull();
  });
});
