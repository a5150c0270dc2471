/**
 * Runs whose loop offers no step source (issue 14): the probe's time window, started and stopped on the main thread,
 * analysed as one step; CUDA graph replays as steps; and the report that says plainly no step was identified. The
 * probe runs for real with the CPU PyTorch (GPUWISE_TIME_WINDOW_CPU=1 arms the window without CUDA); the report's
 * findings are checked on a real H200 window with its step markers taken out (what a time window holds).
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DoctorReport } from '../../src/doctor/reportTypes.js';
import { analysedWindowEnds } from '../../src/run/records.js';
import { buildBundle } from '../cliBundle.js';
import { runCli } from '../helpers/cli.js';
import { PROBE_ROOT, PYTHON, REPO, SKIP_PYTHON, probeScript, pyEnv, runProcess } from './helpers.js';

const tmp = mkdtempSync(join(tmpdir(), 'gpuwise-time-window-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

// biome-ignore lint/suspicious/noExplicitAny: records are read field by field, as JSON
type Any = any;

/** The knobs of a short time window: armed at `import torch`, opened after 0.5 s without a step, 1 s long. */
const TIME_ENV = { GPUWISE_TIME_WINDOW_CPU: '1', GPUWISE_TIME_WINDOW_AFTER_S: '0.5', GPUWISE_TIME_WINDOW_S: '1' };

/** Runs a script under the probe (records to files) and returns its records and run directory. */
const probe = (script: string[], env: Record<string, string> = {}) => probeScript(tmp, script, env);

/** A loop of torch.nn.functional calls, no module, no optimizer, no DataLoader: for `seconds` of wall clock. */
const FUNCTIONAL_LOOP = (seconds: number) => [
  'import time, torch',
  'import torch.nn.functional as F',
  'w = torch.randn(128, 128)',
  't0 = time.time()',
  `while time.time() - t0 < ${seconds}:`,
  '    y = F.softmax(F.relu(F.linear(torch.randn(32, 128), w)), dim=-1)',
];

/**
 * The same loop until the probe's time window has opened and closed again (its profiler on, then off, on this
 * thread), at most `limitS`: what follows starts after the window on any machine. A loop of fixed length let a loaded
 * machine open or close the window late, so the steps after it began while it was still open, and the step window
 * they should get never came.
 */
const FUNCTIONAL_UNTIL_TIME_WINDOW = (limitS: number) => [
  'import time, torch',
  'import torch.nn.functional as F',
  'w = torch.randn(128, 128)',
  't0 = time.time()',
  'opened = False',
  `while time.time() - t0 < ${limitS}:`,
  '    profiling = torch.autograd._profiler_enabled()',
  '    if opened and not profiling: break',
  '    opened = opened or profiling',
  '    y = F.softmax(F.relu(F.linear(torch.randn(32, 128), w)), dim=-1)',
];

/** Chrome trace events of a file the probe exported. */
const eventsOf = (path: string): Any[] => {
  const d = JSON.parse(readFileSync(path, 'utf8'));
  return Array.isArray(d) ? d : d.traceEvents;
};

describe.skipIf(SKIP_PYTHON)('the time window of a run without steps (CPU torch)', () => {
  it('profiles a functional loop for the set time, from the main thread, and records it without a step', async () => {
    const { records, stderr, code, dir } = await probe(FUNCTIONAL_LOOP(3), TIME_ENV);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(records.map((r) => r.type)).toEqual(['hello', 'profile-start', 'profile-end', 'end']);
    const start = records[1] as Any;
    const end = records[2] as Any;
    expect(start).toMatchObject({ step: null, steps: 0, reason: 'time', durationS: 1 });
    expect(start.quietS).toBeGreaterThanOrEqual(0.5);
    expect(end).toMatchObject({ firstStep: null, lastStep: null, reason: 'time', trace: join(dir, `trace-pid${end.pid}-time.json`) });
    expect(end.durationS).toBeGreaterThanOrEqual(1);
    expect(records[3]).toMatchObject({ reason: 'exit', steps: 0 });
    // The main thread's own ops are in it: a profiler started from a watcher thread records none of them (torch 1.13).
    const names = new Set(eventsOf(end.trace).map((e) => e.name));
    for (const op of ['aten::linear', 'aten::relu', 'aten::softmax']) expect(names).toContain(op);
  });

  it('takes no time window when steps come first, nor when the knob is off (no CUDA)', async () => {
    const loop = [
      'import time, torch',
      'model = torch.nn.Linear(64, 8)',
      'opt = torch.optim.SGD(model.parameters(), lr=0.01)',
      't0 = time.time()',
      'while time.time() - t0 < 2:',
      '    opt.zero_grad(); model(torch.randn(16, 64)).sum().backward(); opt.step()',
    ];
    const stepped = await probe(loop, { ...TIME_ENV, GPUWISE_PROFILE_STEPS: '0' });
    expect(stepped.records.filter((r) => r.type === 'step').length).toBeGreaterThan(10);
    expect(stepped.records.some((r) => r.type === 'profile-start')).toBe(false);
    const off = await probe(FUNCTIONAL_LOOP(1.5), { GPUWISE_TIME_WINDOW_AFTER_S: '0.5', GPUWISE_TIME_WINDOW_S: '0.5' });
    expect(off.records).toEqual([]); // CPU only and no step: the probe stays silent, as before
  });

  it('installs no signal handler and takes no signal of the script, and leaves the profiler to a script that profiles itself', async () => {
    // The script's own SIGRTMAX handler, sent to itself while the time window is open (0.5 s quiet, then 1 s).
    const taken = await probe(
      [
        'import os, signal',
        ...FUNCTIONAL_LOOP(0).slice(0, 1),
        'print("default at import torch:", signal.getsignal(signal.SIGRTMAX) is signal.SIG_DFL)',
        'got = []',
        'signal.signal(signal.SIGRTMAX, lambda s, f: got.append(s))',
        ...FUNCTIONAL_LOOP(2).slice(1),
        '    if not got and time.time() - t0 > 1.1: os.kill(os.getpid(), signal.SIGRTMAX)',
        'print("handled", len(got))',
      ],
      TIME_ENV,
    );
    expect([taken.stderr, taken.code]).toEqual(['', 0]);
    expect(taken.stdout).toBe('default at import torch: True\nhandled 1\n');
    expect(taken.records.find((r) => r.type === 'profile-end')).toMatchObject({ reason: 'time', firstStep: null });
    const own = await probe(
      [...FUNCTIONAL_LOOP(0).slice(0, 3), 'with torch.profiler.profile() as p:', ...FUNCTIONAL_LOOP(2).slice(3).map((l) => `    ${l}`)],
      TIME_ENV,
    );
    expect([own.stderr, own.code]).toEqual(['', 0]);
    expect(own.records.some((r) => r.type === 'profile-start' || r.type === 'probe-error')).toBe(false);
  });

  it('keeps the step window when the steps start after a time window (set-up before the training)', async () => {
    const { records, stderr } = await probe(
      [
        ...FUNCTIONAL_UNTIL_TIME_WINDOW(60),
        'model = torch.nn.Linear(64, 8)',
        'opt = torch.optim.SGD(model.parameters(), lr=0.01)',
        'for i in range(30):',
        '    opt.zero_grad(); model(torch.randn(16, 64)).sum().backward(); opt.step()',
      ],
      { ...TIME_ENV, GPUWISE_PROFILE_AT: '5', GPUWISE_PROFILE_STEPS: '2' },
    );
    expect(stderr).toBe('');
    const ends = records.filter((r) => r.type === 'profile-end') as Any[];
    expect(ends.map((e) => [e.reason ?? 'steps', e.firstStep])).toEqual([
      ['time', null],
      ['steps', 5],
    ]);
    expect(existsSync(ends[0].trace) && existsSync(ends[1].trace) && ends[0].trace !== ends[1].trace).toBe(true);
    // Only the step window is analysed; the model record of the training (with its optimizer) is the last one sent.
    expect(analysedWindowEnds(records)).toEqual([ends[1]]);
    const models = records.filter((r) => r.type === 'model') as Any[];
    expect(models[models.length - 1]).toMatchObject({ name: 'Linear', optimizer: { class: 'SGD' } });
  });

  it('counts CUDA graph replays as steps: a replay loop alone, and one that takes over from a captured optimizer step', async () => {
    // No CUDA here: the C graph's replay is replaced by CPU work, so torch.cuda.CUDAGraph.replay (the method the
    // probe wraps) runs as on a GPU; the calls torch queues for CUDA's initialisation are run as it would (the probe
    // installs its wrapper there). The second graph is replayed too and must not add steps.
    const fakeGraph = [
      'import torch',
      'for call, _ in torch.cuda._queued_calls: call()',
      'w = torch.randn(128, 128)',
      'torch.cuda.CUDAGraph.__mro__[1].replay = lambda self: torch.mm(w, w)',
      'graph = lambda: torch.cuda.CUDAGraph.__new__(torch.cuda.CUDAGraph)',
    ];
    const alone = await probe([...fakeGraph, 'g, h = graph(), graph()', 'for i in range(20):', '    g.replay(); h.replay()'], { GPUWISE_PROFILE_STEPS: '0' });
    expect(alone.stderr).toBe('');
    const s1 = alone.records.filter((r) => r.type === 'step') as Any[];
    expect(s1.length).toBe(19); // the first replay starts the clock
    expect(new Set(s1.map((x) => x.stepSource))).toEqual(new Set(['graph']));
    // torch's whole-network capture: a few eager optimizer steps (warm-up, capture), then only replays.
    const captured = await probe(
      [
        ...fakeGraph,
        'model = torch.nn.Linear(64, 8)',
        'opt = torch.optim.SGD(model.parameters(), lr=0.01)',
        'for i in range(3):',
        '    opt.zero_grad(); model(torch.randn(16, 64)).sum().backward(); opt.step()',
        'g = graph()',
        'for i in range(30):',
        '    g.replay()',
      ],
      { GPUWISE_PROFILE_STEPS: '0' },
    );
    const s2 = captured.records.filter((r) => r.type === 'step') as Any[];
    // 3 optimizer steps; after 8 replays with no optimizer step the graph takes over: replays 9..30 end 22 steps.
    expect(s2.map((x) => x.stepSource)).toEqual([...Array(3).fill('optimizer'), ...Array(22).fill('graph')]);
    // A generation loop whose decoding forward is a graph (a static-cache generate()): each prompt's forward runs
    // eagerly, then a graph of its own (recorded again for a new cache) replays once a new token.
    const generating = await probe(
      [
        ...fakeGraph,
        'model = torch.nn.Sequential(torch.nn.Embedding(100, 8), torch.nn.Linear(8, 100))',
        'for prompt in range(3):',
        '    with torch.no_grad(): model(torch.randint(0, 100, (2, 16)))',
        '    g = graph()',
        '    for t in range(20):',
        '        g.replay()',
      ],
      { GPUWISE_PROFILE_STEPS: '0' },
    );
    expect(generating.stderr).toBe('');
    const s3 = generating.records.filter((r) => r.type === 'step') as Any[];
    // The first prompt's forward and 8 replays go to the take-over; after it a prompt's forward is a step of its own,
    // ended by the first replay of its graph, its input read (2 sequences of 16 tokens); the replay before it ends at it.
    expect(s3.map((x) => x.stepSource)).toEqual([
      ...Array(13).fill('graph'),
      'forward',
      ...Array(20).fill('graph'),
      'forward',
      ...Array(19).fill('graph'),
    ]);
    for (const x of s3.filter((y) => y.stepSource === 'forward')) expect([x.samples, x.seqLen]).toEqual([2, 16]);
  });
});

describe.skipIf(SKIP_PYTHON)('gpuwise doctor on a loop without steps (CPU torch, the CLI as a process)', () => {
  // The bundle lives in node_modules (koffi resolves there), which may be another checkout's: the probe is this one's.
  const bundle = join(REPO, 'node_modules', '.cache', 'gpuwise-doctor-time', 'gpuwise.mjs');
  beforeAll(async () => {
    await buildBundle('gpuwise-doctor-time');
  });

  it('ends with the window analysed and a report that says no step was identified, not "nothing to report"', async () => {
    const script = join(tmp, 'functional_loop.py');
    writeFileSync(script, `${FUNCTIONAL_LOOP(3).join('\n')}\n`);
    const out = join(tmp, 'doctor-run');
    const r = await runProcess(process.execPath, [bundle, 'doctor', '--no-serve', '--out', out, '--', PYTHON, script], pyEnv({ GPUWISE_STORE: join(tmp, 'store'), GPUWISE_PROBE_DIR: PROBE_ROOT, ...TIME_ENV }));
    expect(r.code).toBe(0);
    const rep = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8')) as DoctorReport;
    expect(rep.environment.probeSilent).toBe(false);
    expect(rep.ranks.map((x) => x.steps.steps)).toEqual([0]);
    expect(rep.profile.traces).toHaveLength(1);
    expect(rep.profile.traces[0]).toMatchObject({ error: null });
    expect(rep.profile.traces[0]?.path).toMatch(/trace-pid\d+-time\.json$/);
    expect(rep.notes[0]).toMatch(/no training step was identified .* profiled a \d+\.\d s time window .* Call gpuwise\.step\(\) at the end of each iteration/);
    expect(r.stdout).toMatch(/steps: no step identified \(see the notes\)/);
    expect(r.stdout).not.toMatch(/probe did not report/);
  });
});

describe('a time window of real GPU work through doctor --from (an H200 window without its step markers)', () => {
  it('analyses the window as one step: findings, and the note that says what to add', async () => {
    // A time window is a profiler trace without ProfilerStep spans: the real launch-bound MLP window, spans removed.
    // (29 MB inflated: zlib off the test's thread, so a loaded machine does not stall the worker's replies to vitest.)
    const trace = JSON.parse((await promisify(gunzip)(readFileSync(join(REPO, 'examples', 'traces', 'mlp_launch_bound.trace.json.gz')))).toString('utf8'));
    const events = (trace.traceEvents as Any[]).filter((e) => !String(e.name ?? '').startsWith('ProfilerStep#'));
    expect(events.length).toBeLessThan(trace.traceEvents.length);
    const dir = join(tmp, 'from-time-window');
    mkdirSync(dir);
    writeFileSync(join(dir, 'trace-pid4242-time.json.gz'), await promisify(gzip)(JSON.stringify({ ...trace, traceEvents: events })));
    const base = { v: 2, pid: 4242, rank: null };
    const t = 1_790_000_000;
    const records = [
      {
        ...base,
        type: 'hello',
        t,
        probeVersion: '0.2.0',
        python: '3.12.3',
        torch: '2.11.0+cu130',
        cudnn: 91000,
        cuda: { available: true, initialized: true, version: '13.0', devices: [{ index: 0, name: 'NVIDIA H200', totalMemoryBytes: 150_000_000_000, capability: '9.0' }], currentDevice: 0 },
        hostname: 'gpu-host',
        argv: ['loop.py'],
        localRank: null,
        worldSize: null,
        stepHook: 'optimizer-step-post-hook',
        profileAt: 10,
        profileSteps: 5,
        maxSteps: null,
      },
      { ...base, type: 'profile-start', t: t + 20, step: null, steps: 0, cuda: true, reason: 'time', durationS: 5, quietS: 20.1 },
      { ...base, type: 'profile-end', t: t + 25, firstStep: null, lastStep: null, reason: 'time', durationS: 5.2, trace: '/gpu/run/trace-pid4242-time.json', snapshot: null },
      { ...base, type: 'end', t: t + 40, reason: 'exit', steps: 0, exception: null, gpuStepTimes: [] },
    ];
    writeFileSync(join(dir, 'probe.jsonl'), `${records.map((x) => JSON.stringify(x)).join('\n')}\n`);
    const { code, stdout, stderr } = await runCli(['doctor', '--from', dir, '--json']);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    const r = JSON.parse(stdout) as DoctorReport;
    expect(r.profile.traces).toEqual([expect.objectContaining({ path: join(dir, 'trace-pid4242-time.json.gz'), error: null })]);
    expect(r.findings.length).toBeGreaterThan(0);
    expect(r.findings.every((f) => f.source === 'trace')).toBe(true);
    expect(r.notes.some((x) => /no training step was identified .* a 5\.2 s time window after 20 s of device work without one/.test(x))).toBe(true);
    const text = await runCli(['doctor', '--from', dir]);
    expect(text.stdout).toMatch(/no step identified/);
  });
});
