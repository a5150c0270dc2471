/**
 * Doctor reports for the history and format tests: the real CPU probe run on tiny_train.py (records
 * from its file fallback) through the real builder; GPU samples are added where a test needs charts
 * (no GPU here), attributed to the real training process.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import type { ProbeRecord, StepRecord } from '../../src/run/records.js';
import type { DoctorInput, DoctorReport } from '../../src/doctor/reportTypes.js';
import { buildDoctorReport } from '../../src/doctor/report.js';
import { type Snapshot, emptyGpu, emptyProcess } from '../../src/telemetry/sample.js';
import { BOOT, PROBE_ROOT, PYTHON, TINY, fallbackRecords, pyEnv, runProcess } from '../doctor/helpers.js';
import { doctorInput } from '../doctor/input.js';

export const GiB = 1024 ** 3;

/** Runs tiny_train.py under the probe (no collector: records land in probe-PID.jsonl) and returns its records. */
export async function probeRecords(args: string[]): Promise<ProbeRecord[]> {
  const dir = mkdtempSync(join(tmpdir(), 'gpuwise-history-probe-'));
  const r = await runProcess(
    PYTHON,
    [TINY, ...args],
    pyEnv({
      PYTHONPATH: [BOOT, PROBE_ROOT].join(delimiter),
      GPUWISE_SOCKET: join(dir, 'nobody-listens.sock'),
      GPUWISE_RUN_DIR: dir,
      GPUWISE_PROFILE_STEPS: '0',
    }),
  );
  if (r.code !== 0) throw new Error(`tiny_train failed: ${r.stderr}`);
  return fallbackRecords(dir);
}

export function inputOf(records: ProbeRecord[], over: Partial<DoctorInput> = {}): DoctorInput {
  const t0 = Math.min(...records.map((r) => r.t)) * 1000;
  const t1 = Math.max(...records.map((r) => r.t)) * 1000;
  return doctorInput(records, {
    command: ['/usr/bin/python3', TINY, '--steps', '12'],
    runDir: '/runs/test',
    startedAtMs: Number.isFinite(t0) ? Math.floor(t0) : 0,
    endedAtMs: Number.isFinite(t1) ? Math.ceil(t1) : 1000,
    ...over,
  });
}

export function reportOf(records: ProbeRecord[], over: Partial<DoctorInput> = {}): DoctorReport {
  return buildDoctorReport(inputOf(records, over));
}

/**
 * The same records as if the run had used cuda:0 of a 2-GPU host: allocator figures on every step
 * (growing to `peakReservedGiB`), and one GPU sample a second where NVML sees the training process
 * with its reserved memory plus a 0.5 GiB CUDA context.
 */
export function onGpu(records: ProbeRecord[], peakReservedGiB = 30): { records: ProbeRecord[]; samples: Snapshot[] } {
  const steps = records.filter((r): r is StepRecord => r.type === 'step');
  const pid = steps[0]?.pid ?? 1;
  const last = Math.max(1, ...steps.map((s) => s.step));
  const withMem = records.map((r) => {
    if (r.type !== 'step') return r;
    const reserved = Math.round((peakReservedGiB * GiB * r.step) / last);
    return {
      ...r,
      memory: {
        device: 0,
        allocatedBytes: Math.round(reserved * 0.8),
        reservedBytes: reserved,
        peakAllocatedBytes: Math.round(reserved * 0.9),
        peakReservedBytes: reserved,
        allocRetries: 0,
        ooms: 0,
      },
    };
  });
  const t0 = Math.floor(Math.min(...records.map((r) => r.t)) * 1000);
  const samples: Snapshot[] = [];
  for (let i = 0; i < 8; i++) {
    const gpus = [0, 1].map((index) => {
      const g = emptyGpu(index, `GPU-${index}`, 'NVIDIA H200');
      g.memoryTotalBytes = 141 * GiB;
      if (index === 0) {
        const p = emptyProcess(pid, 0);
        p.usedMemoryBytes = Math.round(((peakReservedGiB * (i + 1)) / 8 + 0.5) * GiB);
        g.processes = [p];
        g.memoryUsedBytes = (p.usedMemoryBytes ?? 0) + 0.25 * GiB;
        g.utilizationGpuPercent = i === 0 ? 0 : 93;
      } else {
        g.memoryUsedBytes = 0.5 * GiB;
        g.utilizationGpuPercent = 0;
      }
      return g;
    });
    samples.push({ schemaVersion: 1, source: 'nvml', timestampMs: t0 + i * 1000, hostname: 'h', driverVersion: null, cudaVersion: null, gpus, notes: [] });
  }
  return { records: withMem, samples };
}
