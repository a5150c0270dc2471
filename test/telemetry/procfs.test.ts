/** The /proc reader on real processes of this machine (Linux only). */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readlinkSync } from 'node:fs';
import { userInfo } from 'node:os';
import { describe, expect, it } from 'vitest';
import { ProcReader } from '../../src/live/procfs.js';
import { emptyGpu, emptyProcess, SNAPSHOT_SCHEMA_VERSION, type Snapshot } from '../../src/telemetry/sample.js';

function snapshotWith(pids: number[]): Snapshot {
  const g = emptyGpu(0, 'GPU-x', 'x');
  g.processes = pids.map((pid) => emptyProcess(pid, 0));
  return {
    schemaVersion: SNAPSHOT_SCHEMA_VERSION,
    source: 'nvml',
    timestampMs: 0,
    hostname: null,
    driverVersion: null,
    cudaVersion: null,
    gpus: [g],
    notes: [],
  };
}

describe.runIf(existsSync('/proc/self/stat'))('ProcReader', () => {
  it('decodes command lines as UTF-8 (issue 20 item 11: latin1 turned café into cafÃ©)', async () => {
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 1500)', 'café-训练.py']);
    try {
      await new Promise((r) => setTimeout(r, 200));
      const s = new ProcReader().enrich(snapshotWith([child.pid!]));
      expect(s.gpus[0]!.processes[0]!.command).toContain('café-训练.py');
    } finally {
      child.kill();
    }
  });

  it('reads user, command, RSS, CPU and the torchrun/Slurm environment of a live process', async () => {
    const child = spawn(process.execPath, ['-e', 'const t = Date.now() + 1500; while (Date.now() < t) {}', 'worker-arg'], {
      env: { ...process.env, RANK: '3', LOCAL_RANK: '1', WORLD_SIZE: '4', SLURM_JOB_ID: '4242' },
    });
    try {
      const reader = new ProcReader();
      reader.enrich(snapshotWith([child.pid!]));
      await new Promise((r) => setTimeout(r, 400));
      const s = reader.enrich(snapshotWith([child.pid!]));
      const p = s.gpus[0]!.processes[0]!;
      expect(p.user).toBe(userInfo().username);
      expect(p.command).toContain('worker-arg');
      expect(p).toMatchObject({ rank: 3, localRank: 1, worldSize: 4, slurmJobId: '4242' });
      expect(p.rssBytes!).toBeGreaterThan(10 * 2 ** 20); // a node process
      expect(p.cpuPercent!).toBeGreaterThan(0); // it spins: some CPU, however loaded the machine (a 2-core VM under load gave 7%)
      expect(s.notes).toEqual([]);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('shows the same CPU reading on every GPU a process uses (one sample, two rows)', async () => {
    const child = spawn(process.execPath, ['-e', 'const t = Date.now() + 1500; while (Date.now() < t) {}']);
    const onTwoGpus = () => {
      const s = snapshotWith([child.pid!]);
      const g1 = emptyGpu(1, 'GPU-y', 'y');
      g1.processes = [emptyProcess(child.pid!, 1)];
      s.gpus.push(g1);
      return s;
    };
    try {
      const reader = new ProcReader();
      reader.enrich(onTwoGpus());
      await new Promise((r) => setTimeout(r, 400));
      const s = reader.enrich(onTwoGpus());
      const [a, b] = s.gpus.map((g) => g.processes[0]!.cpuPercent);
      expect(a!).toBeGreaterThan(0);
      expect(b).toBe(a);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('keeps one descriptor per live process, notices when it ends, and closes everything', async () => {
    const child = spawn('sleep', ['30'], { stdio: 'ignore' });
    const statPath = `/proc/${child.pid}/stat`;
    // Descriptors of this process open on the child's stat file.
    const openOnStat = () =>
      readdirSync('/proc/self/fd').filter((fd) => {
        try {
          return readlinkSync(`/proc/self/fd/${fd}`) === statPath;
        } catch {
          return false;
        }
      }).length;
    const reader = new ProcReader();
    await new Promise((r) => setTimeout(r, 200)); // past exec
    try {
      for (let i = 0; i < 5; i++) expect(reader.enrich(snapshotWith([child.pid!])).gpus[0]!.processes[0]!.rssBytes).toBeGreaterThan(0);
      expect(openOnStat()).toBe(1);
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
      // Reaped: the pid has no /proc entry any more; NVML may still list it for a moment.
      const s = reader.enrich(snapshotWith([child.pid!]));
      expect(s.gpus[0]!.processes[0]!.rssBytes).toBeNull();
      expect(s.notes[0]).toMatch(/not visible in \/proc/);
      expect(openOnStat()).toBe(0);
    } finally {
      child.kill('SIGKILL');
      reader.close();
    }
  });

  it('says so when GPU processes are not visible (another pid namespace)', () => {
    const s = new ProcReader().enrich(snapshotWith([2 ** 22 + 12345]));
    expect(s.gpus[0]!.processes[0]!.user).toBeNull();
    expect(s.notes[0]).toMatch(/1 GPU process is not visible in \/proc/);
  });
});
