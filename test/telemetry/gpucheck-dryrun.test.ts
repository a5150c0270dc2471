/**
 * Dry run of the lead's real-GPU check (bench/telemetry/gpu-check.mjs) against the fake NVML library
 * and a fake nvidia-smi that agree with each other: the script itself must work before it meets a GPU.
 */
import { execFile } from 'node:child_process';
import { chmodSync, readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { buildBundle, buildFakeNvml } from '../cliBundle.js';
import { fixturePath } from './fixtures.js';
import { cleanScratch, makeScratch } from './scratch.js';

afterAll(cleanScratch);

let fake: string | null = null;
let bundle = '';
beforeAll(async () => {
  bundle = await buildBundle();
  fake = buildFakeNvml();
}, 60_000);

it('gpu-check passes on a consistent fake driver and fails on an inconsistent one', async ({ skip }) => {
  if (!fake) skip();
  const bin = makeScratch('fakebin');
  chmodSync(fixturePath('fake-nvidia-smi.mjs'), 0o755);
  symlinkSync(fixturePath('fake-nvidia-smi.mjs'), join(bin, 'nvidia-smi'));
  const out = makeScratch('gpucheck');
  const script = new URL('../../bench/telemetry/gpu-check.mjs', import.meta.url).pathname;
  const runCheck = (env: Record<string, string>) =>
    new Promise<{ code: number; stdout: string }>((resolve) => {
      execFile(
        process.execPath,
        [script, out, '--no-load'],
        {
          env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, GPUWISE_NVML_LIB: fake!, GPUWISE_BUNDLE: bundle, ...env },
          timeout: 90_000,
        },
        (err, stdout) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout }),
      );
    });
  const ok = await runCheck({});
  expect(ok.stdout).toMatch(/\n(\d+) passed, 0 failed\n/);
  expect(ok.code).toBe(0);
  const report = JSON.parse(readFileSync(join(out, 'gpu-check.json'), 'utf8'));
  expect(report.checks.length).toBeGreaterThan(100);
  // GPU 1 "falls off the bus" after a few reads: NVML and nvidia-smi then disagree, and the check must say so.
  const bad = await runCheck({ FAKE_NVML_LOSE_GPU1_AFTER: '0' });
  expect(bad.code).toBe(1);
  expect(bad.stdout).toMatch(/FAIL round 1 GPU 1: memory\.used exact/);
}, 180_000);
