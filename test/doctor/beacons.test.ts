/**
 * The step counter the probe keeps in the run directory (`beacon-PID`, python/gpuwise/probe/beacon.py): one store a
 * step into a mapped file, which a SIGKILL does not take away with the queued records. Run for real with the CPU
 * PyTorch: the counter says the last step the process ended, a forked child counts in a file of its own (never in its
 * parent's), and the process keeps no descriptor open for it.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readStepBeacons, removeSpentBeacons } from '../../src/io/beacons.js';
import type { ProbeRecord } from '../../src/run/records.js';
import { BOOT, PROBE_ROOT, PYTHON, SKIP_PYTHON, pyEnv, runProcess } from './helpers.js';

const tmp = mkdtempSync(join(tmpdir(), 'gpuwise-beacons-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const LOOP = [
  'import os, signal, torch',
  'm = torch.nn.Linear(8, 1)',
  'opt = torch.optim.SGD(m.parameters(), lr=0.01)',
  'def train(n):',
  '    for i in range(n):',
  '        m(torch.randn(4, 8)).sum().backward()',
  '        opt.step(); opt.zero_grad()',
  'train(7)',
  'fds = sorted(os.listdir("/proc/self/fd"))',
  'print("descriptors to beacon files:", sum("beacon-" in os.readlink("/proc/self/fd/" + f) for f in fds if os.path.exists("/proc/self/fd/" + f)))',
  'pid = os.fork()',
  'if pid == 0:',
  '    train(3)',
  '    os._exit(0)',
  'os.waitpid(pid, 0)',
  'print("child", pid, flush=True)',
  'os.kill(os.getpid(), signal.SIGKILL)',
].join('\n');

describe.skipIf(SKIP_PYTHON)('the step counter in the run directory', () => {
  it("holds the last step a SIGKILLed process ended, a forked child's in its own file, with no descriptor open", async () => {
    const dir = join(tmp, 'run');
    const r = await runProcess(PYTHON, ['-c', LOOP], pyEnv({ PYTHONPATH: [BOOT, PROBE_ROOT].join(delimiter), GPUWISE_RUN_DIR: dir, GPUWISE_PROFILE_STEPS: '0' }));
    expect(r.stdout).toMatch(/descriptors to beacon files: 0/);
    const child = Number(/child (\d+)/.exec(r.stdout)?.[1]);
    const beacons = readStepBeacons(dir);
    // 7 optimizer steps, then the parent was killed with its step records still queued (they take under 2 ms): its
    // file holds 7. The forked child's counter goes on from its parent's (3 steps more) in a file of its own.
    const parent = Object.keys(beacons).map(Number).find((pid) => pid !== child)!;
    expect(beacons[parent]).toBe(7);
    expect(beacons[child]).toBe(10);
  });

  it('leaves out a file that is not a counter', () => {
    const dir = mkdtempSync(join(tmp, 'odd-'));
    writeFileSync(join(dir, 'beacon-12'), Buffer.from([1, 2, 3]));
    writeFileSync(join(dir, 'beacon-x'), Buffer.alloc(8));
    const ok = Buffer.alloc(8);
    ok.writeBigUInt64LE(42n);
    writeFileSync(join(dir, 'beacon-13'), ok);
    expect(readStepBeacons(dir)).toEqual({ 13: 42 });
    expect(readStepBeacons(join(dir, 'missing'))).toEqual({});
  });

  it("at a run's end the counter of a process whose end record arrived is removed; a killed process's stays, the evidence (issue 47 item 7)", () => {
    const dir = mkdtempSync(join(tmp, 'spent-'));
    const counter = (step: bigint) => {
      const b = Buffer.alloc(8);
      b.writeBigUInt64LE(step);
      return b;
    };
    writeFileSync(join(dir, 'beacon-100'), counter(30n)); // ended: its end record says 30 steps
    writeFileSync(join(dir, 'beacon-200'), counter(6n)); // killed in step 7: no end record, 4 step records
    writeFileSync(join(dir, 'beacon-300'), counter(2n)); // killed before any record arrived
    writeFileSync(join(dir, 'report.json'), '{}');
    const records = [
      { type: 'hello', pid: 100 },
      { type: 'step', pid: 100, step: 30 },
      { type: 'end', pid: 100, reason: 'exit', steps: 30 },
      { type: 'hello', pid: 200 },
      { type: 'step', pid: 200, step: 4 },
    ] as unknown as ProbeRecord[];
    expect(removeSpentBeacons(dir, records)).toEqual([100]);
    expect(readdirSync(dir).sort()).toEqual(['beacon-200', 'beacon-300', 'report.json']);
    expect(readStepBeacons(dir)).toEqual({ 200: 6, 300: 2 });
    expect(removeSpentBeacons(join(dir, 'missing'), records)).toEqual([]);
    expect(existsSync(join(dir, 'beacon-100'))).toBe(false);
  });
});
