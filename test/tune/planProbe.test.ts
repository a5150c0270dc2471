/**
 * The probe's side of `tune --plan` (python/gpuwise/probe/trial.py) on Debian's CPU torch, through the probe's direct
 * interface (the boot folder on PYTHONPATH, GPUWISE_* settings): the training loader's arguments are changed and only
 * its; the GPU levers (TF32, cudnn.benchmark, bf16 autocast, channels_last, torch.compile) are not applied without
 * CUDA and leave the program as it runs plainly; the losses are read; and without GPUWISE_TRIAL_SETTINGS nothing of
 * it runs.
 */
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BOOT, PYTHON, REPO, SKIP_PYTHON, pyEnv, runProcess } from '../doctor/helpers.js';

const SCRIPT = join(REPO, 'test', 'fixtures', 'tune', 'trial_probe.py');
const tmp = mkdtempSync(join(tmpdir(), 'gpuwise-plan-probe-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
let n = 0;

interface Out {
  trialEnv: string | null;
  train: [number, boolean, number | null];
  eval: [number, boolean];
  tf32: boolean;
  benchmark: boolean;
  precision: string | null;
  autocast: boolean;
  channelsLast: boolean;
  losses: number[];
}

async function run(
  settings: object | null,
  probe = true,
): Promise<{ out: Out; code: number | null; stderr: string; trial: Record<string, unknown> | null; dir: string }> {
  const dir = join(tmp, `run${n++}`);
  mkdirSync(dir);
  const env = !probe
    ? pyEnv({})
    : pyEnv({
        PYTHONPATH: BOOT,
        GPUWISE_RUN_DIR: dir,
        GPUWISE_PROFILE_STEPS: '0',
        ...(settings !== null ? { GPUWISE_TRIAL_SETTINGS: JSON.stringify(settings) } : {}),
      });
  const r = await runProcess(PYTHON, [SCRIPT], env);
  const line = r.stdout.trim().split('\n').pop() as string;
  const files = readdirSync(dir).filter((f) => /^trial-\d+\.json$/.test(f));
  const trial = files[0] ? (JSON.parse(readFileSync(join(dir, files[0]), 'utf8')) as Record<string, unknown>) : null;
  return { out: JSON.parse(line) as Out, code: r.code, stderr: r.stderr, trial, dir };
}

describe.skipIf(SKIP_PYTHON)('the trial probe on CPU', () => {
  it('changes the training loader only, leaves the GPU levers as the plain run has them, reads the losses', async () => {
    const plain = await run(null, false); // plainly, without the probe
    const probed = await run(null); // under the probe, no trial
    const trial = await run({
      loader: { numWorkers: 2, persistentWorkers: true, prefetchFactor: 3, match: { batchSize: 8, numWorkers: 0 } },
      tf32: true,
      cudnnBenchmark: true,
      autocast: 'bf16',
      channelsLast: true,
      compile: 'default',
    });
    for (const r of [plain, probed, trial]) expect(r.code, r.stderr).toBe(0);
    expect(probed.out).toEqual(plain.out);
    expect(probed.trial).toBeNull(); // no trial settings: trial.py never ran
    // The training loader (batch 8) got the trial's arguments; the evaluation loader (batch 4) did not.
    expect(trial.out.train).toEqual([2, true, 3]);
    expect(trial.out.eval).toEqual(plain.out.eval);
    // Without CUDA, every GPU lever is left as it is: the program runs as plainly, the same losses.
    const { train: _t, ...rest } = trial.out;
    const { train: _p, ...plainRest } = plain.out;
    expect(rest).toEqual(plainRest);
    const t = trial.trial as {
      cuda: boolean;
      applied: { lever: string }[];
      skipped: { lever: string; why: string }[];
      loaders: unknown[];
      firstLosses: number[];
      lastLosses: number[];
    };
    expect(t.cuda).toBe(false);
    expect(t.applied.map((a) => a.lever)).toEqual(['loader']);
    expect(t.skipped.map((s) => s.lever).sort()).toEqual(['autocast', 'channelsLast', 'compile', 'cudnnBenchmark', 'tf32']);
    expect(new Set(t.skipped.map((s) => s.why))).toEqual(new Set(['not applied: no CUDA']));
    expect(t.loaders).toEqual([
      {
        from: { numWorkers: 0, pinMemory: null, persistentWorkers: null, prefetchFactor: null },
        to: { numWorkers: 2, persistentWorkers: true, prefetchFactor: 3 },
      },
    ]);
    // The losses the probe read (at the exit, no sync during the steps) are the script's own.
    expect(t.firstLosses.map((x) => Number(x.toFixed(6)))).toEqual(plain.out.losses.slice(0, 8));
    expect(t.lastLosses.map((x) => Number(x.toFixed(6)))).toEqual(plain.out.losses.slice(8));
  }, 120_000);

  it('persistent_workers and prefetch_factor are dropped where the loader keeps no workers (torch refuses them)', async () => {
    const r = await run({ loader: { numWorkers: 0, persistentWorkers: true, prefetchFactor: 4, match: { batchSize: 8 } } });
    expect(r.code, r.stderr).toBe(0);
    expect(r.out.train).toEqual([0, false, 2]);
  }, 60_000);
});

describe.skipIf(SKIP_PYTHON)('the trial probe’s steadiness stop (steady.py)', () => {
  const PACED = join(REPO, 'test', 'fixtures', 'tune', 'paced.py');
  const CAP = 800;
  /** paced.py under the probe as a trial: its stderr, the steps it recorded, and the stop trial-PID.json says. */
  async function paced(args: string[], stop: object | null) {
    const dir = join(tmp, `run${n++}`);
    mkdirSync(dir);
    const r = await runProcess(
      PYTHON,
      [PACED, ...args],
      pyEnv({
        PYTHONPATH: BOOT,
        GPUWISE_RUN_DIR: dir,
        GPUWISE_PROFILE_STEPS: '0',
        GPUWISE_MAX_STEPS: String(CAP),
        GPUWISE_TRIAL_SETTINGS: '{}',
        ...(stop ? { GPUWISE_TRIAL_STOP: JSON.stringify(stop) } : {}),
      }),
    );
    const file = readdirSync(dir).find((f) => /^trial-\d+\.json$/.test(f)) as string;
    const trial = JSON.parse(readFileSync(join(dir, file), 'utf8')) as { stop: { why: string; step: number; steadySteps: number } | null };
    const steps = readFileSync(join(dir, readdirSync(dir).find((f) => /^probe-\d+\.jsonl$/.test(f)) as string), 'utf8')
      .split('\n')
      .filter((l) => l.includes('"type":"step"')).length;
    return { code: r.code, stderr: r.stderr, stop: trial.stop, steps };
  }
  // 6 s of steady steps: room for the steady loop's mean to reach 1% on a loaded machine, where a sleep's wake-up
  // varies by a few ms (about 10% of a 30 ms step: 1% needs about 100 steps), and far too few for the noisy one's.
  const STOP = { relSpread: 0.01, minSteps: 20, maxSeconds: 6 };

  it('stops a steady loop once its mean is known, a noisy one at its seconds of steady steps, cleanly', async () => {
    // 30 ms sleeps: a few percent of wake-up latency a step, the mean within 1% after a few dozen steps.
    const steady = await paced(['--ms', '30'], STOP);
    // The same mean, each step's sleep anywhere in +-80%: the mean's spread stays several percent for hundreds of steps.
    const noisy = await paced(['--ms', '30', '--jitter', '0.8'], STOP);
    for (const r of [steady, noisy]) {
      expect(r.code, r.stderr).toBe(0); // the clean stop of --steps: exit status 0, the script's own end never reached
      expect(r.stderr).toMatch(/gpuwise probe: stopping after \d+ steps \(tune --plan: /);
    }
    expect(steady.stop?.why, steady.stderr).toBe('steady');
    expect(steady.stop?.steadySteps).toBeGreaterThanOrEqual(STOP.minSteps);
    expect(noisy.stop?.why, noisy.stderr).toBe('seconds');
    // Fewer steps than the cap on the steady loop, and more on the noisy one than on the steady one.
    expect(steady.stop?.step).toBeLessThan(CAP / 4);
    expect(noisy.stop?.step as number).toBeGreaterThan((steady.stop?.step as number) * 1.5);
    expect(steady.steps).toBe(steady.stop?.step); // every step up to the stop recorded, none after
  }, 60_000);

  it('without GPUWISE_TRIAL_STOP a trial runs to its cap (--steps)', async () => {
    const r = await paced(['--ms', '1'], null);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stop).toBeNull();
    expect(r.stderr).toMatch(new RegExp(`stopping after ${CAP} steps \\(--steps\\)`));
  }, 60_000);
});

describe.skipIf(SKIP_PYTHON)("the trial's autocast: the forward wrapped in a with block, taken back at the end", () => {
  // torch.compile traces a `with torch.autocast` block but not one opened and closed across hooks (a compiled Trainer
  // GPT-2 failed with "'autocast' object has no attribute 'prev'" on an H100). On CPU (a torch without CUDA, where
  // autocast("cuda") cannot run) the wrapper's mechanics: the forward's signature kept (the Trainer inspects it), no
  // hook left on the module, and the undo; test/fixtures/tune/gpu_check.sh runs it under torch.compile on a GPU.
  it('keeps the signature, adds no hook, and undoes itself', async () => {
    const code = [
      'import inspect, json, types, warnings',
      'warnings.simplefilter("ignore")',
      'import torch',
      'from gpuwise.probe.trial import Trial',
      'class Net(torch.nn.Module):',
      '    def __init__(self):',
      '        super().__init__(); self.lin = torch.nn.Linear(4, 2); self.seen = None',
      '    def forward(self, x, labels=None):',
      '        self.seen = torch.is_autocast_enabled(); return self.lin(x)',
      'net = Net(); x = torch.ones(3, 4); before = net(x).tolist(); sig = str(inspect.signature(net.forward))',
      'undo = []',
      'p = types.SimpleNamespace(add_undo=lambda name, f: undo.append(f))',
      'me = types.SimpleNamespace(skipped=[], applied=[])',
      'Trial._autocast(me, torch, p, net, "bf16")',
      'wrapped = "forward" in net.__dict__; inside_sig = str(inspect.signature(net.forward))',
      'hooks = len(net._forward_pre_hooks) + len(net._forward_hooks)',
      'undo[0]()',
      'print(json.dumps({"wrapped": wrapped, "sig": sig == inside_sig, "hooks": hooks, "applied": me.applied, "restored": "forward" not in net.__dict__, "same": net(x).tolist() == before}))',
    ].join('\n');
    const r = await runProcess(PYTHON, ['-c', code], pyEnv({ PYTHONPATH: join(REPO, 'python') }));
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout.trim().split('\n').pop() as string);
    expect(out).toEqual({ wrapped: true, sig: true, hooks: 0, applied: [{ lever: 'autocast', dtype: 'bf16' }], restored: true, same: true });
  }, 60_000);
});
