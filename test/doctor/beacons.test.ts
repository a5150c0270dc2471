/**
 * The step counter the probe keeps in the run directory (`beacon-PID`, python/gpuwise/probe/beacon.py): one store a
 * step into a mapped file, which a SIGKILL does not take away with the queued records. Run for real with the CPU
 * PyTorch: the counter says the last step the process ended, a forked child counts in a file of its own (never in its
 * parent's), and the process keeps no descriptor open for it.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { readStepBeacons } from '../../src/io/beacons.js';
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
});
