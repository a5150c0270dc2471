/**
 * `gpuwise doctor` on two DDP ranks (gloo on CPU, launched by a shell as torchrun would: RANK, WORLD_SIZE, MASTER_*),
 * as a user runs it (the CLI bundled and started as its own process): the per-rank view of a run whose rank 1 loads
 * its batches more slowly, a rank that raises, a rank that SIGKILLs itself under a launcher that then terminates the
 * other, and a rank that hangs before a collective (the probe's watchdog, --hang-timeout, outcome hung, exit 124).
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBundle } from '../cliBundle.js';
import type { DoctorReport } from '../../src/doctor/reportTypes.js';
import { PYTHON, REPO, SKIP_PYTHON, TINY, pyEnv, runProcess } from './helpers.js';

const tmp = mkdtempSync(join(tmpdir(), 'gpuwise-ranks-'));
const bundle = join(REPO, 'node_modules', '.cache', 'gpuwise-doctor-ranks-test', 'gpuwise.mjs');
let n = 0;
const outDir = () => join(tmp, `run${n++}`);

beforeAll(async () => {
  await buildBundle('gpuwise-doctor-ranks-test');
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

// GPUWISE_PROBE_DIR: this checkout's probe (node_modules may be a link to another checkout's, where the bundle lives).
const doctor = (args: string[], env: Record<string, string> = {}) =>
  runProcess(
    process.execPath,
    [bundle, 'doctor', ...args],
    pyEnv({ GPUWISE_STORE: join(tmp, 'store'), GPUWISE_PROBE_DIR: join(REPO, 'python'), ...env }),
  );
const reportOf = (dir: string) => JSON.parse(readFileSync(join(dir, 'report.json'), 'utf8')) as DoctorReport;

/**
 * Two ranks of tiny_train.py --ddp with `args`. `launcher`: `sh` waits for both (each rank fails on its own); `torchrun`
 * (bash) terminates the other rank with SIGTERM as soon as one exits, as torchrun's agent does.
 */
function twoRanks(args: string, launcher: 'sh' | 'torchrun' = 'sh'): string[] {
  const port = 20000 + Math.floor(Math.random() * 20000);
  const rank = (r: number) => `RANK=${r} LOCAL_RANK=${r} ${PYTHON} ${TINY} --ddp ${args}`;
  const env = `export MASTER_ADDR=127.0.0.1 MASTER_PORT=${port} WORLD_SIZE=2;`;
  if (launcher === 'sh') return ['sh', '-c', `${env} ${rank(0)} & ${rank(1)} & wait`];
  return ['bash', '-c', `${env} ${rank(0)} & p0=$!; ${rank(1)} & p1=$!; wait -n; kill -TERM $p0 $p1 2>/dev/null; wait; exit 1`];
}

function gone(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return false;
  } catch {
    return true;
  }
}

describe.skipIf(SKIP_PYTHON)('gpuwise doctor on two DDP ranks (gloo on CPU)', () => {
  it('compares the ranks: rank 1 waits on its DataLoader, rank 0 waits for it in the all-reduce', async () => {
    const out = outDir();
    const r = await doctor(['--out', out, '--profile-steps', '0', '--', ...twoRanks('--steps 24 --fault-rank 1 --slow-rank-ms 1')]);
    expect(r.code, r.stderr).toBe(0);
    const rep = reportOf(out);
    const d = rep.distributed;
    expect(d?.ranks.map((v) => [v.rank, v.device, v.window])).toEqual([
      [0, null, null],
      [1, null, null],
    ]);
    // 16 samples x 1 ms a step on rank 1's DataLoader; rank 0 spends that time inside DDP's all-reduce instead.
    const [w0, w1] = (d?.ranks ?? []).map((v) => v.dataWaitPerStepS ?? Number.NaN);
    expect(w1).toBeGreaterThan(0.012);
    expect((w1 ?? Number.NaN) - (w0 ?? Number.NaN)).toBeGreaterThan(0.01);
    expect(d?.straggler).toEqual({ rank: 1, by: 'dataloader-wait' });
    expect(d?.why.join('\n')).toMatch(/more DataLoader wait: [\d.]+ ms a step against [\d.]+ (ms|us) on rank 0/);
    // No window: the probe-timed finding, with the id the trace's cross-rank rule uses.
    const f = rep.findings.find((x) => x.id === 'rank-imbalance');
    expect(f).toMatchObject({ source: 'probe', ranks: [0, 1], data: { straggler: 1, by: 'dataloader-wait' } });
    expect(f?.estimatedGain?.savedFraction).toBeGreaterThan(0.1);
    expect(r.stdout).toMatch(/Ranks compared: skew [\d.]+% .*rank 1 waits longest on its DataLoader/);
    expect(r.stdout).toMatch(/ {2}rank {2}GPU +median step/);
    expect(readFileSync(join(out, 'report.md'), 'utf8')).toContain('### Ranks compared');
    const html = readFileSync(join(out, 'report.html'), 'utf8');
    expect(html).toContain('<h2>Ranks compared</h2>');
    expect(html).toContain('<table id="ranks">');
  });

  it('a rank that raises is the cause; the other rank failing in its collective afterwards is not', async () => {
    const out = outDir();
    // (sh's `wait` returns 0 whatever its jobs did: the exit status is the launcher's business, the outcome the records'.)
    await doctor(['--out', out, '--profile-steps', '0', '--', ...twoRanks('--steps 12 --crash-at 6 --fault-rank 1')]);
    const rep = reportOf(out);
    expect(rep.run.outcome).toBe('crashed');
    expect(rep.run.firstFailure).toMatchObject({ rank: 1, kind: 'exception', step: 6 });
    expect(rep.run.outcomeText).toMatch(/^crashed on rank 1 in step 6: RuntimeError: tiny_train: crash requested at step 6/);
    expect(rep.run.firstFailure?.after.map((a) => a.rank)).toEqual([0]);
    expect(rep.run.outcomeText).toMatch(/; after it rank 0 /);
    expect(rep.run.outcomeText).not.toMatch(/crashed on rank 0/);
  });

  it('a rank killed by SIGKILL is the cause; the rank the launcher then terminated is not', async () => {
    const out = outDir();
    const r = await doctor(['--out', out, '--profile-steps', '0', '--', ...twoRanks('--steps 12 --kill-at 6 --fault-rank 1', 'torchrun')]);
    expect(r.code).not.toBe(0);
    const rep = reportOf(out);
    expect(rep.run.outcome).toBe('failed');
    // Killed in step 6. A SIGKILL also loses the records still queued in the process (up to 20 ms of them where writes
    // are dear), but not the step counter the probe keeps in a mapped file of the run directory (beacon-PID).
    expect(rep.run.firstFailure).toMatchObject({ rank: 1, kind: 'killed', error: null, step: 6 });
    expect(rep.run.outcomeText).toMatch(/^rank 1 died in step 6 without an end record \(killed by a signal/);
    // The killed rank's counter is kept (the evidence for --from); rank 0's is removed only when its end record
    // arrived, which depends on whether torchrun's SIGTERM let it write one: either is right.
    const beacons = readdirSync(out).filter((f) => f.startsWith('beacon-'));
    const killedPid = rep.ranks.find((k) => k.rank === 1)?.pid;
    expect(beacons).toContain(`beacon-${killedPid}`);
    const rank0 = rep.ranks.find((k) => k.rank === 0);
    expect(beacons.includes(`beacon-${rank0?.pid}`)).toBe(rank0?.endReason == null);
    // The replay reads the counters too: the same step.
    const again = await doctor(['--from', out, '--json']);
    expect((JSON.parse(again.stdout) as DoctorReport).run.firstFailure).toMatchObject({ rank: 1, kind: 'killed', step: 6 });
    expect(rep.run.firstFailure?.after.map((a) => a.rank)).toEqual([0]);
    // Each process's end as the collector saw it (its connection closing). Rank 0 fails in its collective the moment
    // rank 1's connection drops, so the two EOFs come a fraction of a millisecond apart and a loaded machine may deliver
    // them in either order: what orders the cause is the kind of each end (killed, then a consequence), not the clock.
    const [r0, r1] = rep.ranks;
    expect(Math.abs((r1?.endedAtS as number) - (r0?.endedAtS as number))).toBeLessThan(1);
  });

  it('a rank that hangs before a collective: stall warnings, the job stopped, outcome hung naming rank 1 and its stack', async () => {
    const out = outDir();
    const r = await doctor(['--out', out, '--profile-steps', '0', '--hang-timeout', '3', '--', ...twoRanks('--steps 12 --hang-at 5 --fault-rank 1')], {
      GPUWISE_STALL_S: '1',
      GPUWISE_STALL_REPEAT_S: '1',
    });
    expect(r.code).toBe(124);
    expect(r.stderr).toMatch(/gpuwise doctor: warning: rank 1 \(pid \d+\) has made no progress for \d+ s in step 5 \(at tiny_train\.py:\d+ main\)/);
    expect(r.stderr).toMatch(/every training rank has made no progress for \d+ s \(--hang-timeout 3\): stopping the job/);
    const rep = reportOf(out);
    expect(rep.run.outcome).toBe('hung');
    expect(rep.run.firstFailure).toBeUndefined();
    expect(rep.run.hang).toMatchObject({ timeoutS: 3, behindRanks: [1] });
    const sleepLine = readFileSync(TINY, 'utf8').split('\n').findIndex((l) => l.includes('time.sleep(1e6)')) + 1;
    const [h0, h1] = rep.run.hang?.ranks ?? [];
    expect(h1).toMatchObject({ rank: 1, step: 5, inCollective: false });
    expect(h1?.stack.at(-1)).toBe(`${TINY}:${sleepLine} main`);
    expect(h0).toMatchObject({ rank: 0, step: 5, inCollective: true });
    expect(h0?.stack.at(-1)).toMatch(/torch\/distributed\/distributed_c10d\.py:\d+ all_reduce$/);
    expect(rep.run.outcomeText).toMatch(/^hung: .*behind: rank 1 \(every rank is in step 5; rank 1 is not inside a collective/);
    expect(r.stdout).toMatch(/rank 1 \(pid \d+\) BEHIND: step 5, no progress for \d+ s, not in a collective; innermost: tiny_train\.py:\d+ main/);
    // No orphans: both ranks are gone.
    for (const x of rep.ranks) expect(gone(x.pid)).toBe(true);
    // doctor --from reads the stall records back to the same diagnosis.
    const again = await runProcess(process.execPath, [bundle, 'doctor', '--from', out, '--json'], pyEnv({}));
    expect(again.code).toBe(0);
    const re = JSON.parse(again.stdout) as DoctorReport;
    expect(re.run.outcome).toBe('hung');
    expect(re.run.hang?.behindRanks).toEqual([1]);
  }, 120_000);
});
