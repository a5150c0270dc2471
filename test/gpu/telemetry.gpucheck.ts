/**
 * Real-GPU checks of the telemetry pillar: runs bench/telemetry/gpu-check.mjs (NVML against nvidia-smi
 * on this machine, under load) on the built dist/gpuwise.mjs. The same script runs with only `node`
 * where npm is missing: node bench/telemetry/gpu-check.mjs OUTDIR
 */
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';

it('NVML values agree with nvidia-smi on this GPU machine', async () => {
  const out = process.env.GPUWISE_GPU_OUT ?? mkdtempSync(join(tmpdir(), 'gpuwise-gpu-'));
  const script = new URL('../../bench/telemetry/gpu-check.mjs', import.meta.url).pathname;
  const r = await new Promise<{ code: number; stdout: string }>((resolve) =>
    execFile(process.execPath, [script, out], { timeout: 280_000, maxBuffer: 16 << 20 }, (err, stdout) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout }),
    ),
  );
  const failures = r.stdout.split('\n').filter((l) => l.startsWith('FAIL'));
  expect(failures, r.stdout.slice(-4000)).toEqual([]);
  expect(r.code).toBe(0);
});
