/**
 * The GPU corpus of issues 25 and 26 (examples/pace, examples/levers), checked on a CPU: each script runs with
 * `--device cpu --smoke` (tiny sizes, a few steps) and must end with its one JSON line, the figures consistent
 * with the steps it ran. A script whose packages the CPU python lacks (torchvision, timm, lightning, transformers
 * on Debian's torch 1.13) exits 77 and is skipped here with its own line saying why; GPUWISE_CORPUS_PYTHON
 * points the test at a fuller python to run them all.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BOOT, REPO, pyEnv, runProcess } from '../doctor/helpers.js';

const PY = process.env.GPUWISE_CORPUS_PYTHON ?? '/usr/bin/python3';
const HAS_TORCH = spawnSync(PY, ['-c', 'import torch'], { stdio: 'ignore' }).status === 0;
// CI installs python3-torch: there a missing torch fails the tests instead of skipping them.
const SKIP = !HAS_TORCH && !process.env.CI;
const SKIP_EXIT = 77;

const data = mkdtempSync(join(tmpdir(), 'gpuwise-corpus-'));
afterAll(() => rmSync(data, { recursive: true, force: true }));

interface Line {
  script: string;
  args: Record<string, unknown>;
  steps: number;
  mean_step_ms: number;
  median_step_ms: number;
  p90_step_ms: number;
  samples_per_s: number | null;
  samples_per_step?: number;
  profiled_steps_left_out?: number;
  [k: string]: unknown;
}

async function smoke(script: string, flags: string[], env: Record<string, string> = {}) {
  const r = await runProcess(
    PY,
    [join(REPO, 'examples', script), '--device', 'cpu', '--smoke', ...flags],
    pyEnv({ GPUWISE_CORPUS_DATA: data, ...env }),
  );
  const json = r.stdout.split('\n').filter((l) => l.startsWith('{'));
  return { ...r, json, line: json.length ? (JSON.parse(json[json.length - 1] as string) as Line) : null };
}

/** A smoke run's figures: its one line, the steps after the warm-up, percentiles in order. */
function expectSane(r: Awaited<ReturnType<typeof smoke>>, name: string, steps: number) {
  expect(r.code, r.stderr.slice(-2000)).toBe(0);
  expect(r.json).toHaveLength(1);
  const l = r.line as Line;
  expect(l.script).toBe(name);
  expect(l.steps).toBe(steps);
  expect(l.mean_step_ms).toBeGreaterThan(0);
  expect(l.median_step_ms).toBeGreaterThan(0);
  expect(l.p90_step_ms).toBeGreaterThanOrEqual(l.median_step_ms);
  expect(l.samples_per_s).toBeGreaterThan(0);
  return l;
}

// Each script as run.sh starts it, then with the flags of its plan's steps that a CPU can take (no compile).
const CASES: { script: string; flags: string[] }[] = [
  { script: 'pace/jpeg_resnet.py', flags: [] },
  {
    script: 'pace/jpeg_resnet.py',
    flags: ['--workers', '2', '--pin-memory', '--persistent-workers', '--prefetch-factor', '4', '--amp', 'bf16', '--channels-last'],
  },
  { script: 'pace/timm_style.py', flags: [] },
  { script: 'pace/timm_style.py', flags: ['--persistent-workers', '--channels-last', '--amp', 'none'] },
  { script: 'pace/lightning_datamodule.py', flags: [] },
  {
    script: 'pace/lightning_datamodule.py',
    flags: ['--precision', 'bf16-mixed', '--channels-last', '--persistent-workers', '--prefetch-factor', '4'],
  },
  { script: 'pace/fakedata_resnet.py', flags: [] },
  { script: 'pace/fakedata_resnet.py', flags: ['--amp', 'bf16', '--channels-last'] },
  { script: 'pace/memmap_gpt.py', flags: [] },
  { script: 'pace/memmap_gpt.py', flags: ['--log-every', '10', '--accum', '2'] },
  { script: 'pace/gpu_bound.py', flags: [] },
  { script: 'pace/gpu_bound.py', flags: ['--amp', 'bf16', '--tf32'] },
  { script: 'levers/gpt_attention.py', flags: [] },
  { script: 'levers/gpt_attention.py', flags: ['--attn', 'sdpa'] },
  { script: 'levers/hf_generate.py', flags: [] },
  { script: 'levers/hf_generate.py', flags: ['--batch', '4', '--static-cache'] },
  { script: 'levers/compiled_cnn.py', flags: ['--no-compile'] },
  { script: 'levers/decode_loop.py', flags: [] },
  { script: 'levers/decode_loop.py', flags: ['--grad-mode', 'inference'] },
];

const nameOf = (script: string) => script.replace(/^.*\//, '').replace(/\.py$/, '');

describe.skipIf(SKIP)(`corpus smoke runs (${PY})`, () => {
  for (const c of CASES) {
    it(`${c.script} ${c.flags.join(' ')}`, async (ctx) => {
      const r = await smoke(c.script, c.flags);
      if (r.code === SKIP_EXIT) {
        ctx.skip(r.stderr.trim().split('\n').pop());
        return;
      }
      const l = expectSane(r, nameOf(c.script), 3); // 4 smoke steps, 1 of warm-up
      // A constant batch: the throughput is the batch over the mean step.
      if (l.samples_per_step && !c.script.includes('hf_generate'))
        expect(l.samples_per_s).toBeCloseTo((l.samples_per_step * 1000) / l.mean_step_ms, -1);
      for (let i = 0; i < c.flags.length; i++) {
        const f = c.flags[i] as string;
        if (!f.startsWith('--')) continue;
        const key = f.slice(2).replaceAll('-', '_');
        const next = c.flags[i + 1];
        if (key in l.args && (next === undefined || next.startsWith('--'))) expect(l.args[key], f).toBe(true);
      }
    });
  }

  it('gan_fakedata reads the batch from the full batches: 18 images in 4s end each epoch with 2, unless --drop-last', async (ctx) => {
    const r = await smoke('levers/gan_fakedata.py', []);
    if (r.code === SKIP_EXIT) return ctx.skip(r.stderr.trim().split('\n').pop());
    const l = expectSane(r, 'gan_fakedata', 7); // 8 iterations, 1 of warm-up: two epochs of 5
    expect([l.batches_per_epoch, l.last_batch, l.epochs]).toEqual([5, 2, 2]);
    expect(l.samples_per_step).toBe(4);
    // The partial batches make the throughput less than 4 images a mean step.
    expect(l.samples_per_s as number).toBeLessThan((4 * 1000) / l.mean_step_ms);
    const d = await smoke('levers/gan_fakedata.py', ['--drop-last', '--persistent-workers']);
    const ld = expectSane(d, 'gan_fakedata', 7);
    expect([ld.batches_per_epoch, ld.last_batch]).toEqual([4, null]);
    expect(ld.samples_per_s).toBeCloseTo((4 * 1000) / ld.mean_step_ms, -1);
  });

  it("leaves the steps of doctor's profiler window out of the figures (the probe on, window at steps 4-6)", async () => {
    const r = await smoke('pace/memmap_gpt.py', ['--steps', '12'], {
      PYTHONPATH: BOOT,
      GPUWISE_SOCKET: join(data, 'nobody-listens.sock'),
      GPUWISE_RUN_DIR: mkdtempSync(join(data, 'run-')),
      GPUWISE_PROFILE_AT: '4',
      GPUWISE_PROFILE_STEPS: '3',
    });
    // 11 steps after the warm-up; the window's 3 and the steps either side of its start and end go.
    const l = expectSane(r, 'memmap_gpt', (r.line?.steps as number) ?? -1);
    expect(l.profiled_steps_left_out).toBeGreaterThanOrEqual(3);
    expect(l.profiled_steps_left_out).toBeLessThanOrEqual(5);
    expect(l.steps + (l.profiled_steps_left_out as number)).toBe(11);
  });
});

describe('run.sh', () => {
  it('refuses a name that is neither a script, a part nor a command, before running anything', () => {
    const out = join(data, 'run-sh-out');
    const r = spawnSync('bash', [join(REPO, 'examples', 'pace', 'run.sh'), out, 'no_such_script'], { encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('no_such_script: not a script of the corpus');
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(spawnSync('test', ['-e', out]).status).toBe(1); // nothing made
  });
});

describe("follow_plan.py: doctor's plan as the scripts' flags", () => {
  const plan = (steps: { id: string; label: string; workersNeeded?: number | null; dropLast?: boolean }[], name: string) => {
    const report = join(data, `report-${name}.json`);
    writeFileSync(report, JSON.stringify({ schemaVersion: 1, pace: { plan: { steps } } }));
    return spawnSync('python3', [join(REPO, 'examples', 'pace', 'follow_plan.py'), report, name], { encoding: 'utf8' });
  };

  it('carries each step into the next, gives a later step the workers it needs, and stops at a fix without a flag', () => {
    const r = plan(
      [
        { id: 'dataloader-bound', label: 'num_workers 4 -> 7, persistent DataLoader workers' },
        { id: 'pageable-h2d', label: 'pinned memory, non-blocking copies', workersNeeded: 8 },
        { id: 'mixed-precision', label: 'bf16 autocast + channels_last', workersNeeded: 10 },
        { id: 'whatif-bigger-batch', label: 'batch 256 -> 512' },
        { id: 'fusion', label: 'torch.compile' },
      ],
      'jpeg_resnet',
    );
    expect(r.status).toBe(0);
    expect(r.stdout.trim().split('\n')).toEqual([
      'base=',
      'plan1=--workers 7 --persistent-workers',
      'plan2=--workers 8 --persistent-workers --pin-memory',
      'plan3=--workers 10 --persistent-workers --pin-memory --amp bf16 --channels-last',
    ]);
    expect(r.stderr).toContain('step 4 (batch 256 -> 512) has no flag in the script');
  });

  it("gives a generation loop's static cache and bf16 weights hf_generate.py's flags", () => {
    const r = plan(
      [
        { id: 'launch-bound', label: 'static KV cache + CUDA graphs' },
        { id: 'bf16-weights', label: 'bf16 weights' },
      ],
      'hf_generate',
    );
    expect(r.status).toBe(0);
    expect(r.stdout.trim().split('\n')).toEqual(['base=', 'plan1=--static-cache', 'plan2=--static-cache --dtype bf16']);
    // generate()'s own syncs (its stopping check at every token): no flag of the script takes them out
    const syncs = plan(
      [
        { id: 'launch-bound', label: 'static KV cache + CUDA graphs' },
        { id: 'host-sync', label: 'syncs out of the decoding loop (a loop of your own)' },
      ],
      'hf_generate',
    );
    expect(syncs.stdout.trim().split('\n')).toEqual(['base=', 'plan1=--static-cache']);
    expect(syncs.stderr).toContain('has no flag in the script');
  });

  it("follows launch-bound's fewer launches with the compile mode its code shows (CUDA graphs), where the script has it", () => {
    const steps = [{ id: 'launch-bound', label: 'fewer launches (compile, CUDA graphs)', workersNeeded: 13 }];
    expect(plan(steps, 'jpeg_resnet').stdout.trim().split('\n')).toEqual(['base=', 'plan1=--compile --compile-mode reduce-overhead --workers 13']);
    // a compiling step over a loader that keeps its partial last batch asks for drop_last=True
    const dropping = plan([{ id: 'launch-bound', label: 'fewer launches (compile, CUDA graphs)', dropLast: true }], 'jpeg_resnet');
    expect(dropping.stdout.trim().split('\n')).toEqual(['base=', 'plan1=--compile --compile-mode reduce-overhead --drop-last']);
    // memmap_gpt's --compile has no mode: the plan stops there rather than run another fix
    const r = plan(steps, 'memmap_gpt');
    expect(r.stdout.trim().split('\n')).toEqual(['base=']);
    expect(r.stderr).toContain('has no flag in the script');
  });

  it("follows a batch in the CPU scripts (examples/pace/cpu) and 'more DataLoader workers' with the count of the finding's code", () => {
    const report = join(data, 'report-cpu.json');
    const write = (steps: { id: string; label: string }[], findings: unknown[] = []) =>
      writeFileSync(report, JSON.stringify({ schemaVersion: 1, ranks: [{ steps: { samplesPerStep: 8 } }], findings, pace: { plan: { steps } } }));
    const follow = (name: string) => spawnSync('python3', [join(REPO, 'examples', 'pace', 'follow_plan.py'), report, name], { encoding: 'utf8' });
    write([
      { id: 'whatif-bigger-batch', label: 'batch x4' },
      { id: 'whatif-bigger-batch', label: 'batch 8 -> 64' },
    ]);
    expect(follow('host_loop').stdout.trim().split('\n')).toEqual(['base=', 'plan1=--batch 32', 'plan2=--batch 64']);
    expect(follow('jpeg_resnet').stdout.trim().split('\n')).toEqual(['base=']); // the GPU corpus has no --batch
    write(
      [{ id: 'dataloader-bound', label: 'more DataLoader workers' }],
      [{ id: 'dataloader-bound', data: {}, recommendation: { code: 'DataLoader(dataset, num_workers=8, pin_memory=True)' } }],
    );
    expect(follow('cpu_loader').stdout.trim().split('\n')).toEqual(['base=', 'plan1=--workers 8']);
  });

  it("says bf16 in Lightning's words, and names an unreadable report in one line", () => {
    expect(plan([{ id: 'mixed-precision', label: 'bf16 autocast + channels_last' }], 'lightning_datamodule').stdout).toContain(
      'plan1=--precision bf16-mixed --channels-last',
    );
    const r = spawnSync('python3', [join(REPO, 'examples', 'pace', 'follow_plan.py'), join(data, 'none.json'), 'jpeg_resnet'], {
      encoding: 'utf8',
    });
    expect(r.status).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain('none.json: cannot read the report');
  });
});
