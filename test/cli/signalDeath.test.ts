/**
 * A command that dies of a signal makes doctor die of the same signal, after its report (issue 43 item 8): Python's
 * subprocess, Slurm and torchrun's elastic agent tell a death by signal N from an exit status 128+N, which is what
 * doctor used to give. The bundled CLI run from Python's subprocess, as such a parent runs it, against the same
 * script run plainly. tune, whose trials may crash, reports and exits with its own status instead.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBundle } from '../cliBundle.js';
import { PYTHON, REPO, SKIP_PYTHON, pyEnv } from '../doctor/helpers.js';

const tmp = mkdtempSync(join(tmpdir(), 'gpuwise-signal-'));
let bundle = '';
const env = () => pyEnv({ GPUWISE_STORE: join(tmp, 'store'), GPUWISE_PROBE_DIR: join(REPO, 'python') });

beforeAll(async () => {
  bundle = await buildBundle('gpuwise-signal-test');
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** A script that kills itself with the signal named by argv[1], no handler of its own. */
const SELF_KILL = 'import os, signal, sys, time\nos.kill(os.getpid(), getattr(signal, sys.argv[1]))\ntime.sleep(10)\n';

/**
 * Runs each argv (a JSON list of lists on stdin) with subprocess.run, stdout captured, and prints the return codes
 * (negative: the signal) and the stdouts.
 */
const DRIVER = `
import json, subprocess, sys
out = []
for argv in json.load(sys.stdin):
    r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out.append({"returncode": r.returncode, "stdout": r.stdout.decode(errors="replace")})
print(json.dumps(out))
`;

function runAll(argvs: string[][]): { returncode: number; stdout: string }[] {
  const r = spawnSync(PYTHON, ['-c', DRIVER], { input: JSON.stringify(argvs), env: env(), encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

let runs = 0;
const doctor = (flags: string[], cmd: string[]) => [process.execPath, bundle, 'doctor', '--no-serve', ...flags, '--out', join(tmp, `run${runs++}`), '--', ...cmd];

describe.skipIf(SKIP_PYTHON)('a death by signal passes through doctor', () => {
  it("SIGSEGV, SIGRTMAX and SIGTERM: subprocess's returncode under doctor is the plain run's (-N), the report written first", () => {
    const script = join(tmp, 'self_kill.py');
    writeFileSync(script, SELF_KILL);
    const signals = ['SIGSEGV', 'SIGRTMAX', 'SIGTERM'];
    const plain = runAll(signals.map((s) => [PYTHON, script, s]));
    const under = runAll(signals.map((s) => doctor([], [PYTHON, script, s])));
    expect(plain.map((r) => r.returncode)).toEqual([-11, -64, -15]);
    expect(under.map((r) => r.returncode)).toEqual(plain.map((r) => r.returncode));
    for (const [i, r] of under.entries()) expect(r.stdout).toMatch(new RegExp(`^Outcome: .*\\(killed by ${signals[i]}\\)$`, 'm'));
  });

  it('--json too: the whole report on stdout, then the same death', () => {
    const script = join(tmp, 'self_kill_json.py');
    writeFileSync(script, SELF_KILL);
    const [r] = runAll([doctor(['--json'], [PYTHON, script, 'SIGSEGV'])]);
    expect(r?.returncode).toBe(-11);
    const report = JSON.parse(r?.stdout ?? '');
    expect(report.run).toMatchObject({ exitCode: 139, signal: 'SIGSEGV' });
    expect(JSON.parse(readFileSync(join(tmp, `run${runs - 1}`, 'report.json'), 'utf8')).run.signal).toBe('SIGSEGV');
  });

  it('tune reports a trial that died of a signal and exits with its own status', () => {
    const [r] = runAll([[process.execPath, bundle, 'tune', '--out', join(tmp, 'tune'), '--param', 'b=1..2', '--', 'sh', '-c', 'kill -SEGV $$', '{b}']]);
    expect(r?.returncode).toBe(1);
    expect(r?.stdout).toContain('-> FAILED: exit code 139 (SIGSEGV)');
  });
});
