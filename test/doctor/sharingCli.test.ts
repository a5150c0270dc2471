/**
 * doctor as a process, sampling through the koffi NVML binding against the fake libnvidia-ml
 * (test/fixtures/telemetry/fake-nvml.c): the command's own pid and another live process are listed on GPU 0 with the
 * command lines /proc gives, and the other one's work beside the training is a `gpu-shared` finding.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DoctorReport } from '../../src/doctor/reportTypes.js';
import { buildBundle, buildFakeNvml } from '../cliBundle.js';
import { PYTHON, REPO, SKIP_PYTHON, TINY, pyEnv, runProcess } from './helpers.js';

const tmp = mkdtempSync(join(tmpdir(), 'gpuwise-sharing-'));
const bundle = join(REPO, 'node_modules', '.cache', 'gpuwise-sharing-test', 'gpuwise.mjs');
let lib: string | null = null;
let other: ChildProcess | null = null;

beforeAll(async () => {
  await buildBundle('gpuwise-sharing-test');
  lib = buildFakeNvml();
  other = spawn('sleep', ['120'], { stdio: 'ignore' });
}, 120_000);
afterAll(() => {
  other?.kill();
  rmSync(tmp, { recursive: true, force: true });
});

describe.skipIf(SKIP_PYTHON)('doctor: processes sharing a GPU (fake NVML, live processes)', () => {
  it('lists the training process and the other one by pid and command line, and finds the sharing', async () => {
    if (!lib) throw new Error('no C compiler for the fake NVML library');
    const out = join(tmp, 'run');
    const pids = join(tmp, 'pids');
    // the command writes its own pid (exec keeps it) and the other process's: the fake lists both on GPU 0
    const script = `echo "$$,${other?.pid}" > ${pids}; exec ${PYTHON} ${TINY} --steps 40 --loader-delay-ms 5`;
    const r = await runProcess(
      process.execPath,
      [bundle, 'doctor', '--out', out, '--', 'sh', '-c', script],
      pyEnv({ GPUWISE_STORE: join(tmp, 'store'), GPUWISE_SOURCE: 'nvml', GPUWISE_NVML_LIB: lib, FAKE_NVML_PIDS_FILE: pids }),
    );
    expect(r.code).toBe(0);
    const rep = JSON.parse(readFileSync(join(out, 'report.json'), 'utf8')) as DoctorReport;
    const trainer = rep.ranks[0]?.pid;
    const listed = rep.gpus?.[0]?.processes ?? [];
    const mine = listed.find((p) => p.pid === trainer);
    expect(mine).toMatchObject({ job: true, rank: null, meanSmUtilPercent: 60 });
    expect(mine?.command).toBe(`${PYTHON} ${TINY} --steps 40 --loader-delay-ms 5`);
    const sleeper = listed.find((p) => p.pid === other?.pid);
    expect(sleeper).toMatchObject({ job: false, command: 'sleep 120', meanSmUtilPercent: 40 });
    expect(sleeper?.samples).toBe(sleeper?.activeSamples);
    // the other process worked the whole run: no step ran alone, so the finding estimates and says on what basis
    const f = rep.findings.find((x) => x.id === 'gpu-shared');
    expect(f?.data).toMatchObject({ gpu: 0, pid: trainer, basis: 'time-slicing', aloneSteps: 0, othersSmSharePercent: 40 });
    expect(String(f?.data.otherPids).split(',')).toContain(String(other?.pid));
    expect(r.stdout).toContain(`pid ${other?.pid} sleep 120`);
    expect(readFileSync(join(out, 'report.html'), 'utf8')).toContain('<h3>Processes on the GPUs</h3>');
  }, 120_000);
});
