/**
 * The Python probe, run for real with Debian's CPU PyTorch: injection through sitecustomize,
 * steps through the optimizer, the socket protocol, the file fallback, fail-open, --steps.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { type Socket, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type ProbeRecord, parseProbeLines } from '../../src/run/records.js';
import { BOOT, PROBE_ROOT, PYTHON, REPO, SKIP_PYTHON, TINY, fallbackRecords, pyEnv, rediagnosed, runProcess, stepsOf } from './helpers.js';

const tmp = mkdtempSync(join(tmpdir(), 'gpuwise-probe-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
let n = 0;
/** A loop whose "backward" runs on a thread named as autograd's device thread while the stepping thread waits. */
const AUTOGRAD_THREAD = join(REPO, 'test', 'fixtures', 'doctor', 'threads', 'autograd_thread.py');
const freshDir = () => mkdtempSync(join(tmp, `run${n++}-`));
// As doctor sets it: the boot folder alone (the probe package is loaded from beside it).
const probePath = (...more: string[]) => [BOOT, ...more].join(delimiter);

describe('python files', () => {
  it.skipIf(SKIP_PYTHON)('compile (py_compile)', () => {
    const files = [
      ...['gpuwise', join('gpuwise', 'probe')].flatMap((d) =>
        readdirSync(join(PROBE_ROOT, d))
          .filter((f) => f.endsWith('.py'))
          .map((f) => join(PROBE_ROOT, d, f)),
      ),
      join(BOOT, 'sitecustomize.py'),
      ...readdirSync(join(REPO, 'examples', 'doctor'))
        .filter((f) => f.endsWith('.py'))
        .map((f) => join(REPO, 'examples', 'doctor', f)),
    ];
    const r = spawnSync(PYTHON, ['-m', 'py_compile', ...files], {
      env: { ...process.env, PYTHONPYCACHEPREFIX: join(tmp, 'pycache') },
      encoding: 'utf8',
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  });
});

describe.skipIf(SKIP_PYTHON)('probe (CPU torch)', () => {
  it('falls back to files when no collector listens, finding every optimizer step', async () => {
    const dir = freshDir();
    const r = await runProcess(
      PYTHON,
      [TINY, '--steps', '12', '--loader-delay-ms', '2'],
      pyEnv({
        PYTHONPATH: probePath(),
        GPUWISE_SOCKET: join(dir, 'nobody-listens.sock'),
        GPUWISE_RUN_DIR: dir,
        GPUWISE_PROFILE_AT: '4',
        GPUWISE_PROFILE_STEPS: '3',
      }),
    );
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('tiny_train: done after 12 steps');
    expect(r.stderr).toBe('');
    const recs = fallbackRecords(dir);
    expect(stepsOf(recs)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    const hello = recs.find((x) => x.type === 'hello');
    // A CPU run never initialises CUDA, and the probe does not ask (asking initialises the driver).
    expect(hello).toMatchObject({ cuda: { available: null, initialized: false }, cudnn: null, rank: null });
    const model = recs.find((x) => x.type === 'model');
    // Linear(64,256) + LayerNorm(256) + Linear(256,10)
    expect(model).toMatchObject({
      format: 'gpuwise-model/1',
      name: 'Sequential',
      paramCount: 64 * 256 + 256 + 512 + 256 * 10 + 10,
      found: true,
    });
    if (model?.type === 'model') {
      expect(model.optimizer?.class).toBe('AdamW');
      expect(model.optimizer?.stateDtypes.float32).toBeGreaterThan(0);
      expect(model.modules.map((m) => m.class)).toEqual(['Linear', 'LayerNorm', 'Linear']);
    }
    // Batches are 16 samples, and 16 x 2 ms of sleeping in the dataset is DataLoader wait.
    const steps = recs.filter((x) => x.type === 'step');
    for (const s of steps) {
      expect(s.samples).toBe(16);
      expect(s.batches).toBe(1);
      expect(s.dataWaitS).toBeGreaterThan(0.016 * 2 * 0.9);
      if (s.step > 1) expect(s.stepTimeS).toBeGreaterThanOrEqual(s.dataWaitS);
    }
    const end = recs.find((x) => x.type === 'end');
    expect(end).toMatchObject({ reason: 'exit', steps: 12 });
    // The profiler window: steps 4..6 as the ProfilerStep#N spans analyze reads as steps. (Debian's
    // torch 1.13 writes its CPU-only trace in the legacy format without categories, which analyze's
    // parser does not take for CPU ops; torch 2 writes Kineto traces. So the spans are checked here.)
    const prof = recs.find((x) => x.type === 'profile-end');
    expect(prof).toMatchObject({ firstStep: 4, lastStep: 6 });
    if (prof?.type !== 'profile-end' || prof.trace === null) throw new Error('no trace');
    const events = JSON.parse(readFileSync(prof.trace, 'utf8')) as { name: string }[] | { traceEvents: { name: string }[] };
    const names = (Array.isArray(events) ? events : events.traceEvents).map((e) => e.name).filter((x) => x.startsWith('ProfilerStep#'));
    expect(names).toEqual(['ProfilerStep#4', 'ProfilerStep#5', 'ProfilerStep#6']);
    // The trace was written off the training thread: the step where the profiler stopped, and those that ran while the
    // trace was written, say so (the step statistics leave them out).
    expect(steps.find((s) => s.step === 7)?.probeWork).toBe('window-end');
    expect(steps.filter((s) => s.step < 7).every((s) => s.probeWork === null)).toBe(true);
    // What the window's end cost, timed where it was paid: the stop on this thread, the writes on the probe's.
    expect(prof.stopS).toBeGreaterThan(0);
    expect(prof.stopS).toBeLessThan(30);
    expect(prof.exportS?.trace).toBeGreaterThan(0);
    expect(prof.exportS?.snapshot).toBe(0); // no CUDA: no snapshot
  });

  it('reads what the DataLoader workers cost from /proc, without running anything in them (the loader record)', async () => {
    const dir = freshDir();
    const script = join(dir, 'workers_train.py');
    // Each sample costs the worker about 2 ms of CPU (a busy loop), 8 samples a batch: ~16 ms of CPU a batch.
    writeFileSync(
      script,
      [
        'import time, torch',
        'class Busy(torch.utils.data.Dataset):',
        '    def __len__(self): return 320',
        '    def __getitem__(self, i):',
        '        t = time.thread_time()',
        '        while time.thread_time() - t < 0.002: pass',
        '        return torch.randn(16), torch.randn(1)',
        'model = torch.nn.Linear(16, 1)',
        'opt = torch.optim.SGD(model.parameters(), lr=0.01)',
        'loader = torch.utils.data.DataLoader(Busy(), batch_size=8, num_workers=2)',
        'for epoch in range(2):',
        '    for x, y in loader:',
        '        loss = torch.nn.functional.mse_loss(model(x), y)',
        '        opt.zero_grad(); loss.backward(); opt.step()',
        'print("done")',
      ].join('\n'),
    );
    const r = await runProcess(PYTHON, [script], pyEnv({ PYTHONPATH: probePath(), GPUWISE_SOCKET: join(dir, 'none.sock'), GPUWISE_RUN_DIR: dir, GPUWISE_PROFILE_STEPS: '0' }));
    expect(r.code).toBe(0);
    expect(r.stderr).toBe('');
    const loaders = fallbackRecords(dir).filter((x): x is Extract<ProbeRecord, { type: 'loader' }> => x.type === 'loader');
    expect(loaders.length).toBeGreaterThanOrEqual(2);
    const last = loaders[loaders.length - 1]!;
    expect(last).toMatchObject({ loader: 0, epoch: 2, workers: 2, batchSize: 8, persistentWorkers: false, prefetchFactor: 2, pinMemory: false, batches: 80 });
    expect(last.cpuCores).toBeGreaterThanOrEqual(1);
    // 80 batches of about 16 ms of CPU each in the workers, 1.28 s, and their start-up (each epoch's ended workers
    // are counted from the reaped children's CPU)
    expect(last.workerCpuS!).toBeGreaterThan(1.1);
    expect(last.workerCpuS!).toBeLessThan(4);
    expect(last.processCpuS!).toBeGreaterThan(0);
    // The second epoch waited for its first batch: its workers forked again, then one worker's whole batch (8 items of
    // 2 ms of CPU each) before the loop got it
    expect(last.epochFillS!).toBeGreaterThan(0.016);
    expect(last.epochFillS!).toBeLessThan(5);
    expect(loaders[0]!.epochFillS).toBeNull();
    // counts only grow
    for (let i = 1; i < loaders.length; i++) expect(loaders[i]!.batches).toBeGreaterThanOrEqual(loaders[i - 1]!.batches);
  });

  it("reads the process's CPU by thread from /proc (the cpu record): a backward on autograd's thread is the host's work too", async () => {
    const dir = freshDir();
    const r = await runProcess(PYTHON, [AUTOGRAD_THREAD], pyEnv({ PYTHONPATH: probePath(), GPUWISE_SOCKET: join(dir, 'none.sock'), GPUWISE_RUN_DIR: dir, GPUWISE_PROFILE_STEPS: '0' }));
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const cpu = fallbackRecords(dir).filter((x): x is Extract<ProbeRecord, { type: 'cpu' }> => x.type === 'cpu');
    // One reading a second for about 3 s of steps, and one at the end.
    expect(cpu.length).toBeGreaterThanOrEqual(3);
    for (let i = 1; i < cpu.length; i++) {
      expect(cpu[i]!.steppingCpuS).toBeGreaterThanOrEqual(cpu[i - 1]!.steppingCpuS);
      expect(cpu[i]!.autogradCpuS).toBeGreaterThanOrEqual(cpu[i - 1]!.autogradCpuS);
    }
    const last = cpu[cpu.length - 1]!;
    // The stepping thread and the thread named pt_autograd_0 do the same work a step: about half each.
    const share = last.autogradCpuS / (last.autogradCpuS + last.steppingCpuS);
    expect(share).toBeGreaterThan(0.35);
    expect(share).toBeLessThan(0.65);
    expect(last.processCpuS!).toBeGreaterThanOrEqual(last.autogradCpuS + last.steppingCpuS);
    // The stepping thread and pt_autograd_0: a CPU process has no thread of the probe's (its work runs inline).
    expect(last.threads).toBeGreaterThanOrEqual(2);
    // The pace model's host stage is both threads' work, not the stepping thread's alone.
    const report = await rediagnosed(dir);
    const host = report.pace?.stages.host;
    expect(host?.evidence).toMatch(/autograd's backward thread/);
    const stepping = report.ranks[0]?.steps.medianHostCpuS ?? 0;
    expect(host?.ns ?? 0).toBeGreaterThan(1.6 * stepping * 1e9);
  });

  it('streams JSON lines over the Unix socket when a collector listens', async () => {
    const dir = freshDir();
    const sock = join(dir, 'c.sock');
    let text = '';
    const server = createServer((c) => c.on('data', (d) => (text += d)));
    await new Promise<void>((ok) => server.listen(sock, ok));
    const r = await runProcess(
      PYTHON,
      [TINY, '--steps', '6', '--optimizer', 'sgd'],
      pyEnv({ PYTHONPATH: probePath(), GPUWISE_SOCKET: sock, GPUWISE_RUN_DIR: dir }),
    );
    await new Promise<void>((ok) => server.close(() => ok()));
    expect(r.code).toBe(0);
    const { records, skippedLines } = parseProbeLines(text);
    expect(skippedLines).toBe(0);
    // The periodic `loader` and `cpu` records (at least the ones read at the end) come between, at their own times.
    expect(records.filter((x) => x.type !== 'loader' && x.type !== 'cpu').map((x) => x.type)).toEqual(['hello', 'model', 'step', 'step', 'step', 'step', 'step', 'step', 'end']);
    expect(records.findLast((x) => x.type === 'loader')).toMatchObject({ batches: 6 });
    expect(records.every((x) => x.v === 3 && x.pid === records[0]?.pid)).toBe(true);
    expect(fallbackRecords(dir)).toEqual([]);
  });

  it('keeps going in files when the collector dies mid-run', async () => {
    const dir = freshDir();
    const sock = join(dir, 'c.sock');
    let text = '';
    const conns: Socket[] = [];
    const server = createServer((c) => {
      conns.push(c);
      c.on('data', (d) => {
        text += d;
        if (text.includes('"type":"step"')) {
          // The collector goes away after the first step.
          for (const x of conns) x.destroy();
          server.close();
        }
      });
    });
    await new Promise<void>((ok) => server.listen(sock, ok));
    const r = await runProcess(
      PYTHON,
      [TINY, '--steps', '10', '--step-sleep-ms', '20', '--exit-code', '4'],
      pyEnv({ PYTHONPATH: probePath(), GPUWISE_SOCKET: sock, GPUWISE_RUN_DIR: dir }),
    );
    expect(r.code).toBe(4);
    expect(r.stdout).toContain('tiny_train: done after 10 steps');
    const got = [...stepsOf(parseProbeLines(text).records), ...stepsOf(fallbackRecords(dir))];
    expect(got.at(-1)).toBe(10);
    expect(stepsOf(fallbackRecords(dir)).length).toBeGreaterThan(5);
  });

  it('finds the trained model (unwraps DataParallel, ignores a frozen teacher and a loss module) and the steps of an optimizer subclass', async () => {
    const dir = freshDir();
    const script = [
      'import torch',
      'class Student(torch.nn.Module):',
      '    def __init__(self):',
      '        super().__init__()',
      '        self.body = torch.nn.Linear(8, 8)',
      '        self.head = torch.nn.Linear(8, 2).to(torch.float64)',
      '        self.register_buffer("scale", torch.ones(4, dtype=torch.float16))',
      '    def forward(self, x):',
      '        return self.head(self.body(x).double())',
      'teacher = torch.nn.Linear(8, 1000)  # larger, frozen, not in the optimizer',
      'teacher.requires_grad_(False)',
      'model = torch.nn.DataParallel(Student())',
      'loss_fn = torch.nn.MSELoss()',
      'class MySGD(torch.optim.SGD):  # inherits step()',
      '    pass',
      'opt = MySGD(model.parameters(), lr=0.1)',
      'for _ in range(2):',
      '    x = torch.randn(4, 8)',
      '    loss = loss_fn(model(x), torch.zeros(4, 2, dtype=torch.float64)) + teacher(x).sum() * 0',
      '    loss.backward()',
      '    opt.step()',
    ].join('\n');
    const r = await runProcess(PYTHON, ['-c', script], pyEnv({ PYTHONPATH: probePath(), GPUWISE_RUN_DIR: dir }));
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const model = fallbackRecords(dir).find((x) => x.type === 'model');
    expect(model).toMatchObject({
      name: 'Student',
      paramCount: 8 * 8 + 8 + 8 * 2 + 2,
      modules: [
        { name: 'body', class: 'Linear', dtypes: { float32: 72 } },
        { name: 'head', class: 'Linear', dtypes: { float64: 18 } },
      ],
      buffers: { count: 1, bytes: 8, dtypes: { float16: 8 } },
      optimizer: { class: 'MySGD' },
    });
    expect(stepsOf(fallbackRecords(dir))).toEqual([1, 2]);
  });

  it('counts tokens of token-id batches (dict input_ids, or the first 2-D integer tensor)', async () => {
    const dir = freshDir();
    const script = [
      'import torch',
      'from torch.utils.data import DataLoader',
      'emb = torch.nn.Embedding(50, 8)',
      'opt = torch.optim.SGD(emb.parameters(), lr=0.1)',
      'dicts = [{"input_ids": torch.randint(0, 50, (12,)), "labels": torch.tensor(1)} for _ in range(12)]',
      'pairs = [(torch.randn(3), torch.randint(0, 50, (7,))) for _ in range(8)]',
      'for loader in (DataLoader(dicts, batch_size=4), DataLoader(pairs, batch_size=2)):',
      '    for b in loader:',
      '        ids = b["input_ids"] if isinstance(b, dict) else b[1]',
      '        emb(ids).sum().backward()',
      '        opt.step()',
    ].join('\n');
    const r = await runProcess(PYTHON, ['-c', script], pyEnv({ PYTHONPATH: probePath(), GPUWISE_RUN_DIR: dir }));
    expect(r.stderr).toBe('');
    const steps = fallbackRecords(dir).filter((x) => x.type === 'step');
    // 3 dict batches of 4 x 12 tokens, then 4 tuple batches whose 2-D integer tensor is 2 x 7.
    expect(steps.map((s) => [s.samples, s.tokens, s.seqLen, s.stepSource])).toEqual([
      ...Array(3).fill([4, 48, 12, 'optimizer']),
      ...Array(4).fill([2, 14, 7, 'optimizer']),
    ]);
  });

  it('takes steps from gpuwise.step() when the loop has no optimizer', async () => {
    const dir = freshDir();
    const script = [
      'import time, torch, gpuwise',
      'w = torch.nn.Linear(4, 4)',
      'for i in range(6):',
      '    time.sleep(0.01)',
      '    w(torch.randn(2, 4)).sum().backward()',
      '    with torch.no_grad():',
      '        for p in w.parameters(): p -= 0.1 * p.grad',
      '    gpuwise.step()',
    ].join('\n');
    const r = await runProcess(PYTHON, ['-c', script], pyEnv({ PYTHONPATH: probePath(), GPUWISE_RUN_DIR: dir, GPUWISE_IMPORTABLE: '1' }));
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const recs = fallbackRecords(dir);
    // The first mark starts the clock (there is no DataLoader to do it): 5 timed steps.
    const steps = recs.filter((x) => x.type === 'step');
    expect(steps.map((s) => s.stepSource)).toEqual(Array(5).fill('marker'));
    for (const s of steps) expect(s.stepTimeS).toBeGreaterThan(0.009);
    expect(recs.find((x) => x.type === 'model')).toMatchObject({ name: 'Linear', paramCount: 20, optimizer: null });
  });

  it('falls back to one step per DataLoader batch when no optimizer exists (inference)', async () => {
    const dir = freshDir();
    const script = [
      'import torch',
      'from torch.utils.data import DataLoader',
      'net = torch.nn.Linear(5, 3)',
      'with torch.no_grad():',
      '    for x in DataLoader(torch.randn(40, 5), batch_size=8):',
      '        net(x)',
      '# Then training starts: optimizer steps take over from the batch fallback.',
      'opt = torch.optim.SGD(net.parameters(), lr=0.1)',
      'for x in DataLoader(torch.randn(16, 5), batch_size=8):',
      '    net(x).sum().backward()',
      '    opt.step()',
    ].join('\n');
    const r = await runProcess(PYTHON, ['-c', script], pyEnv({ PYTHONPATH: probePath(), GPUWISE_RUN_DIR: dir, GPUWISE_PROFILE_STEPS: '0' }));
    expect(r.stderr).toBe('');
    const steps = fallbackRecords(dir).filter((x) => x.type === 'step');
    // A batch's step ends when the next one is fetched.
    expect(steps.map((s) => [s.step, s.samples, s.stepSource])).toEqual([
      [1, 8, 'batch'],
      [2, 8, 'batch'],
      [3, 8, 'batch'],
      [4, 8, 'batch'],
      [5, 8, 'batch'], // closed by the first training fetch
      [6, 8, 'optimizer'],
      [7, 8, 'optimizer'],
    ]);
  });

  it('keeps a sitecustomize that was already on PYTHONPATH working', async () => {
    const dir = freshDir();
    const userSite = join(dir, 'usersite');
    const marker = join(dir, 'marker.txt');
    spawnSync('mkdir', ['-p', userSite]);
    writeFileSync(
      join(userSite, 'sitecustomize.py'),
      'import os\nopen(os.environ["MARKER"], "w").write("user sitecustomize ran")\nUSER_FLAG = 42\n',
    );
    const r = await runProcess(
      PYTHON,
      [
        '-c',
        `import sitecustomize, runpy, sys; print("flag", sitecustomize.USER_FLAG); sys.argv = ["tiny", "--steps", "3"]; runpy.run_path(${JSON.stringify(TINY)}, run_name="__main__")`,
      ],
      pyEnv({ PYTHONPATH: probePath(userSite), GPUWISE_RUN_DIR: dir, MARKER: marker }),
    );
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(readFileSync(marker, 'utf8')).toBe('user sitecustomize ran');
    expect(r.stdout).toContain('flag 42');
    expect(stepsOf(fallbackRecords(dir))).toEqual([1, 2, 3]);
  });

  it.each(['step', 'batch'])(
    'is fail-open: an error inside the %s hook is logged once and training finishes with its own exit code',
    async (where) => {
      const dir = freshDir();
      const r = await runProcess(
        PYTHON,
        [TINY, '--steps', '8', '--exit-code', '3'],
        pyEnv({ PYTHONPATH: probePath(), GPUWISE_RUN_DIR: dir, GPUWISE_PROBE_FAULT: where }),
      );
      expect(r.code).toBe(3);
      expect(r.stdout).toContain('tiny_train: done after 8 steps');
      expect(r.stderr.match(/gpuwise probe: internal error/g)).toHaveLength(1);
      expect(r.stderr).toContain(`fault injected by GPUWISE_PROBE_FAULT=${where}`);
      const recs = fallbackRecords(dir);
      expect(recs.some((x) => x.type === 'probe-error')).toBe(true);
      // Switched off: no step after the fault is reported.
      expect(Math.max(0, ...stepsOf(recs))).toBeLessThanOrEqual(2);
    },
  );

  it('GPUWISE_MAX_STEPS stops the loop cleanly at the step boundary with status 0', async () => {
    const dir = freshDir();
    const r = await runProcess(
      PYTHON,
      [TINY, '--steps', '50', '--exit-code', '5'],
      pyEnv({ PYTHONPATH: probePath(), GPUWISE_RUN_DIR: dir, GPUWISE_MAX_STEPS: '4' }),
    );
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain('done after');
    expect(r.stderr).toContain('gpuwise probe: stopping after 4 steps');
    const recs = fallbackRecords(dir);
    expect(stepsOf(recs)).toEqual([1, 2, 3, 4]);
    expect(recs.find((x) => x.type === 'end')).toMatchObject({ reason: 'max-steps', steps: 4 });
  });

  it('records a crash of the training as an exception record, with the exit status unchanged', async () => {
    const dir = freshDir();
    const r = await runProcess(
      PYTHON,
      [TINY, '--steps', '10', '--crash-at', '4'],
      pyEnv({ PYTHONPATH: probePath(), GPUWISE_RUN_DIR: dir }),
    );
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('RuntimeError: tiny_train: crash requested at step 4');
    const recs: ProbeRecord[] = fallbackRecords(dir);
    expect(recs.find((x) => x.type === 'exception')).toMatchObject({ exception: 'RuntimeError', step: 3, outOfMemory: false });
    expect(recs.find((x) => x.type === 'end')).toMatchObject({ reason: 'exception', steps: 3 });
  });

  it('stays silent and changes nothing in a Python program that does not use torch', async () => {
    const dir = freshDir();
    const r = await runProcess(
      PYTHON,
      ['-c', 'import sys; print("plain"); sys.exit(7)'],
      pyEnv({ PYTHONPATH: probePath(), GPUWISE_RUN_DIR: dir }),
    );
    expect(r).toMatchObject({ code: 7, stdout: 'plain\n', stderr: '' });
    expect(readdirSync(dir)).toEqual([]);
  });

  it('imports and stays inert under a Python without torch', async () => {
    // The pyenv python3 first on PATH has no torch; any python3 without it will do.
    const bare = spawnSync('python3', ['-c', 'import torch'], { stdio: 'ignore', env: pyEnv({}) });
    if (bare.status === 0 || bare.error) return; // every python3 here has torch: nothing to check
    const dir = freshDir();
    const r = await runProcess(
      'python3',
      ['-c', 'import gpuwise.probe as p; print("probe", p._PROBE is not None)'],
      pyEnv({ PYTHONPATH: probePath(), GPUWISE_RUN_DIR: dir, GPUWISE_IMPORTABLE: '1' }),
    );
    expect(r).toMatchObject({ code: 0, stdout: 'probe True\n', stderr: '' });
    expect(existsSync(dir)).toBe(true);
  });
});
