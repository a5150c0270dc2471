/**
 * `gpuwise doctor` end to end, as a user runs it: the CLI is bundled once (as `npm run build`
 * does) and started as its own process, so signals and exit codes are real.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBundle } from '../cliBundle.js';
import type { DoctorReport } from '../../src/doctor/reportTypes.js';
import { PYTHON, REPO, SKIP_PYTHON, TINY, pyEnv, runProcess } from './helpers.js';

const tmp = mkdtempSync(join(tmpdir(), 'gpuwise-doctor-'));
// Inside the repository so that koffi resolves and the probe is found as in a package.
const bundle = join(REPO, 'node_modules', '.cache', 'gpuwise-doctor-test', 'gpuwise.mjs');
let n = 0;
const outDir = () => join(tmp, `run${n++}`);

beforeAll(async () => {
  await buildBundle('gpuwise-doctor-test');
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const doctor = (args: string[], onStart?: Parameters<typeof runProcess>[3]) =>
  runProcess(process.execPath, [bundle, 'doctor', ...args], pyEnv({ GPUWISE_STORE: join(tmp, 'store') }), onStart);
const reportOf = (dir: string) => JSON.parse(readFileSync(join(dir, 'report.json'), 'utf8')) as DoctorReport;

describe('gpuwise doctor: usage', () => {
  it('a command that does not exist: one line, exit 2, no run directory left', async () => {
    const out = outDir();
    const r = await doctor(['--out', out, '--', 'no-such-command-gpuwise']);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('gpuwise doctor: no-such-command-gpuwise: command not found\n');
    expect(existsSync(out)).toBe(false);
    // An empty directory the user made is theirs: left in place.
    const mine = outDir();
    mkdirSync(mine);
    expect((await doctor(['--out', mine, '--', 'no-such-command-gpuwise'])).code).toBe(2);
    expect(existsSync(mine)).toBe(true);
  });

  it('no command, or arguments before --: exit 2 with one line', async () => {
    for (const args of [[], ['python', 'train.py']]) {
      const r = await doctor(args);
      expect(r.code).toBe(2);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    }
  });

  it('never writes into a non-empty --out', async () => {
    const out = outDir();
    mkdirSync(out);
    writeFileSync(join(out, 'keep.txt'), 'mine');
    const r = await doctor(['--out', out, '--', 'true']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('is not empty');
    expect(readdirSync(out)).toEqual(['keep.txt']);
  });

  it('runs a non-Python command unchanged and returns its exit code', async () => {
    const out = outDir();
    const r = await doctor(['--out', out, '--', 'sh', '-c', 'echo hello from the job; exit 6']);
    expect(r.code).toBe(6);
    expect(r.stdout.startsWith('hello from the job\n')).toBe(true);
    const rep = reportOf(out);
    expect(rep.run).toMatchObject({ exitCode: 6, outcome: 'failed' });
    expect(rep.environment.probeSilent).toBe(true);
  });

  it('a Python without PyTorch: the report says so in one line, naming that Python', async () => {
    // A real Python environment without torch: a venv of the system's Python, without its site-packages.
    const venv = join(tmp, 'venv-no-torch');
    execFileSync(PYTHON, ['-m', 'venv', '--without-pip', venv]);
    const script = join(tmp, 'train_needs_torch.py');
    writeFileSync(script, 'import torch\n');
    const out = outDir();
    const direct = await doctor(['--out', out, '--', join(venv, 'bin', 'python3'), script]);
    expect(direct.code).toBe(1);
    const notes = reportOf(out).notes;
    expect(notes).toContain(
      `${join(venv, 'bin', 'python3')} has no PyTorch (ModuleNotFoundError: No module named 'torch'): the probe reports from PyTorch, so it had nothing to send; run doctor with the Python of the environment that trains, or install torch into this one`,
    );
    expect(notes.join('\n')).not.toContain('the probe sent nothing');
    expect(direct.stdout).toMatch(/\n {2}- \S+python3 has no PyTorch \(ModuleNotFoundError: No module named 'torch'\): the probe reports from PyTorch/);
    // python3 found on PATH: the note names it as typed, with the executable it is.
    const viaPath = outDir();
    const env = pyEnv({ GPUWISE_STORE: join(tmp, 'store'), PATH: `${join(venv, 'bin')}:${process.env.PATH}` });
    expect((await runProcess(process.execPath, [bundle, 'doctor', '--out', viaPath, '--', 'python3', script], env)).code).toBe(1);
    expect(reportOf(viaPath).notes.join('\n')).toContain(`python3 (${join(venv, 'bin', 'python3')}) has no PyTorch`);
    // A Python that has torch but took no step keeps the general note.
    if (!SKIP_PYTHON) {
      const quiet = outDir();
      expect((await doctor(['--out', quiet, '--', PYTHON, '-c', 'import torch'])).code).toBe(0);
      expect(reportOf(quiet).notes.join('\n')).toContain('the probe sent nothing');
    }
  });

  it('samples the GPUs with the telemetry sampler while the command runs (fake nvidia-smi)', async () => {
    const out = outDir();
    const fake = join(tmp, 'nvidia-smi');
    const fixture = join(REPO, 'test', 'fixtures', 'telemetry', 'fake-nvidia-smi.mjs');
    writeFileSync(fake, `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(fixture)} "$@"\n`, { mode: 0o755 });
    const r = await runProcess(
      process.execPath,
      [bundle, 'doctor', '--out', out, '--', 'sleep', '1.5'],
      pyEnv({ GPUWISE_SOURCE: 'nvidia-smi', GPUWISE_NVIDIA_SMI: fake, GPUWISE_STORE: join(tmp, 'store') }),
    );
    expect(r.code).toBe(0);
    const rep = reportOf(out);
    expect(rep.gpuUnavailableReason).toBeNull();
    expect(rep.gpus?.map((g) => g.name)).toEqual(['Fake H200', 'Fake H200']);
    const g0 = rep.gpus?.[0];
    expect(g0?.samples).toBeGreaterThanOrEqual(2);
    expect(g0?.maxUsedBytes).toBe(1000 * 1024 * 1024);
    expect(g0?.timeline.tS).toHaveLength(g0?.samples ?? -1);
    expect(r.stdout).toMatch(/GPU 0 Fake H200: max used 1000 MiB of 139\.8 GiB, utilisation mean 50%/);
  });

  it('leaves no orphan: what the command left running in its process group is ended', async () => {
    const out = outDir();
    const pidFile = join(tmp, 'orphan.pid');
    const r = await doctor(['--out', out, '--', 'sh', '-c', `sleep 300 & echo $! > ${pidFile}; exit 0`]);
    expect(r.code).toBe(0);
    const pid = Number(readFileSync(pidFile, 'utf8'));
    expect(pid).toBeGreaterThan(0);
    expect(() => process.kill(pid, 0)).toThrow();
  });
});

describe.skipIf(SKIP_PYTHON)('gpuwise doctor on a CPU training script', () => {
  it('streams the output, finds the steps and writes the run directory and report', async () => {
    const out = outDir();
    const r = await doctor([
      '--out',
      out,
      '--profile-at',
      '3',
      '--profile-steps',
      '2',
      '--',
      PYTHON,
      TINY,
      '--steps',
      '14',
      '--loader-delay-ms',
      '2',
    ]);
    expect(r.code).toBe(0);
    // The user's output comes first, unchanged; the report follows.
    expect(r.stdout.indexOf('tiny_train: done after 14 steps')).toBeLessThan(r.stdout.indexOf('Outcome: completed'));
    expect(r.stdout).toMatch(/steps: 14 steps \(\d+ timed\), median [\d.]+ ms/);
    expect(r.stdout).toMatch(/DataLoader wait: \d+% of step time/);
    expect(readdirSync(out).sort()).toEqual(expect.arrayContaining(['probe.jsonl', 'report.json']));
    // The probe's step counter (beacon-PID) is evidence only for a process killed before its records arrived: a
    // run that ended leaves none behind (issue 47 item 7), and doctor --from reads the directory as before.
    expect(readdirSync(out).filter((f) => f.startsWith('beacon-'))).toEqual([]);
    const rep = reportOf(out);
    const again = await runProcess(process.execPath, [bundle, 'doctor', '--from', out, '--json'], pyEnv({ GPUWISE_STORE: join(tmp, 'store') }));
    expect(again.code).toBe(0);
    expect((JSON.parse(again.stdout) as DoctorReport).ranks[0]?.steps.steps).toBe(14);
    expect(rep).toMatchObject({ schemaVersion: 1, command: 'doctor', run: { outcome: 'completed', exitCode: 0 } });
    expect(rep.ranks).toHaveLength(1);
    // Step 1 (warm-up), the profiled steps 3 and 4 and step 5 (it writes the trace) are left out, and the statistics
    // start where the steady state does (run/steps.ts; on this shared CPU its first step varies from run to run).
    const st = rep.ranks[0]?.steps;
    expect(st).toMatchObject({ steps: 14 });
    const from = st?.steadyFromStep as number;
    expect(from).toBeGreaterThanOrEqual(2);
    expect(st?.measuredSteps).toBe(14 - (from - 1) - [3, 4, 5].filter((n) => n >= from).length);
    expect(rep.ranks[0]?.steps.dataWaitShare).toBeGreaterThan(0.1);
    expect(rep.model?.optimizer?.class).toBe('AdamW');
    expect(rep.profile.traces).toHaveLength(1);
    expect(existsSync(rep.profile.traces[0]?.path ?? '')).toBe(true);
    // 16 samples x 2 ms of dataset sleep per step is most of a CPU step of this tiny model.
    expect(rep.findings.map((f) => f.id)).toContain('dataloader-bound');
  });

  it('reports every rank of a two-process DistributedDataParallel run (gloo on CPU)', async () => {
    const out = outDir();
    const port = 20000 + Math.floor(Math.random() * 20000);
    const rank = (r: number) => `RANK=${r} LOCAL_RANK=${r} ${PYTHON} ${TINY} --ddp --steps 8`;
    const script = `export MASTER_ADDR=127.0.0.1 MASTER_PORT=${port} WORLD_SIZE=2; ${rank(0)} & ${rank(1)} & wait`;
    const r = await doctor(['--out', out, '--profile-at', '3', '--profile-steps', '2', '--', 'sh', '-c', script]);
    expect(r.code).toBe(0);
    const rep = reportOf(out);
    expect(rep.environment.worldSize).toBe(2);
    expect(rep.ranks.map((x) => [x.rank, x.rankFromEnv, x.steps.steps])).toEqual([
      [0, true, 8],
      [1, true, 8],
    ]);
    // The model inside DistributedDataParallel, and one trace per rank.
    expect(rep.model?.name).toBe('Sequential');
    expect(rep.profile.traces.map((t) => t.path.split('/').pop())).toEqual(['trace-rank0.json', 'trace-rank1.json']);
    expect(r.stdout).toMatch(/Rank 1 \(pid \d+\)\n {2}steps: 8 steps/);
  });

  // Issue 16: stdout holds the report alone (`doctor --json ... | jq`); the command's output goes to stderr.
  it('--json prints the same report as report.json, alone on stdout', async () => {
    const out = outDir();
    const r = await doctor(['--out', out, '--json', '--profile-steps', '0', '--', PYTHON, TINY, '--steps', '4']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(reportOf(out));
    expect(r.stderr).toContain('tiny_train: done after 4 steps');
  });

  it('--steps N stops the training cleanly after N steps', async () => {
    const out = outDir();
    const r = await doctor(['--out', out, '--steps', '5', '--', PYTHON, TINY, '--steps', '100']);
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain('done after');
    const rep = reportOf(out);
    expect(rep.run.outcome).toBe('stopped-after-steps');
    expect(rep.ranks[0]?.steps.steps).toBe(5);
  });

  it("returns the training's non-zero exit code, and a crash is reported", async () => {
    const out = outDir();
    const r = await doctor(['--out', out, '--', PYTHON, TINY, '--steps', '10', '--crash-at', '6']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('RuntimeError: tiny_train: crash requested at step 6');
    const rep = reportOf(out);
    expect(rep.run.outcome).toBe('crashed');
    expect(rep.run.outcomeText).toContain('crashed on rank 0 in step 6: RuntimeError');
    expect(r.stdout).toContain('Outcome: crashed');

    const out2 = outDir();
    expect((await doctor(['--out', out2, '--', PYTHON, TINY, '--steps', '3', '--exit-code', '9'])).code).toBe(9);
    expect(reportOf(out2).run).toMatchObject({ outcome: 'failed', exitCode: 9 });
  });

  /** Runs a long training under doctor and sends `signal` to doctor once step 10 is printed. */
  async function interruptAtStep10(out: string, signal: NodeJS.Signals) {
    let sent = false;
    const r = await doctor(['--out', out, '--', PYTHON, TINY, '--steps', '100000', '--step-sleep-ms', '30'], (pid, output) => {
      const poll = setInterval(() => {
        if (!sent && output().includes('step 10 loss')) {
          sent = true;
          clearInterval(poll);
          process.kill(pid, signal);
        }
      }, 20);
    });
    expect(sent).toBe(true);
    return r;
  }

  it('SIGTERM is passed on to the training; the report says it was interrupted', async () => {
    const out = outDir();
    const r = await interruptAtStep10(out, 'SIGTERM');
    // The training died of the SIGTERM passed on: doctor dies of it too, after its report.
    expect([r.code, r.signal]).toEqual([null, 'SIGTERM']);
    const rep = reportOf(out);
    expect(rep.run).toMatchObject({ outcome: 'interrupted', signal: 'SIGTERM' });
    expect(rep.ranks[0]?.steps.steps).toBeGreaterThanOrEqual(10);
  });

  it('Ctrl-C (SIGINT) reaches the training and a partial report is written', async () => {
    const out = outDir();
    const r = await interruptAtStep10(out, 'SIGINT');
    // Python dies of SIGINT after its KeyboardInterrupt traceback, and so does doctor after its report.
    expect([r.code, r.signal]).toEqual([null, 'SIGINT']);
    expect(r.stderr).toContain('KeyboardInterrupt');
    const rep = reportOf(out);
    expect(rep.run.outcome).toBe('interrupted');
    expect(rep.ranks[0]?.steps.steps).toBeGreaterThanOrEqual(10);
    expect(rep.ranks[0]?.exception?.name).toBe('KeyboardInterrupt');
  });
});
