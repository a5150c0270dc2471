/**
 * Builds the CLI as `npm run build` does (scripts/buildConfig.mjs), into node_modules/.cache (so koffi and
 * node-sqlite3-wasm resolve from the project's node_modules), for tests that need a real process
 * (exit codes, kill -9). Built once per test file.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';
// @ts-expect-error: a build script in JavaScript, without types
import { cliBuildOptions } from '../scripts/buildConfig.mjs';
import { makeScratch } from './telemetry/scratch.js';

const ROOT = new URL('../', import.meta.url).pathname;
export const BUNDLE = join(ROOT, 'node_modules/.cache/gpuwise-test/gpuwise.mjs');

/** Bundles the CLI into node_modules/.cache/NAME/gpuwise.mjs (one name per test file: files run in parallel). */
export async function buildBundle(name = 'gpuwise-test'): Promise<string> {
  const outfile = join(ROOT, 'node_modules/.cache', name, 'gpuwise.mjs');
  mkdirSync(join(ROOT, 'node_modules/.cache', name), { recursive: true });
  await build({ ...cliBuildOptions(outfile), logLevel: 'error' });
  return outfile;
}

/** Compiles the fake NVML library; null when there is no C compiler. */
export function buildFakeNvml(): string | null {
  const out = join(makeScratch('fake'), 'libfake-nvml.so');
  try {
    execFileSync('cc', ['-shared', '-fPIC', '-o', out, join(ROOT, 'test/fixtures/telemetry/fake-nvml.c')], { stdio: 'pipe' });
    return out;
  } catch {
    return null;
  }
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export function gpuwise(args: string[], env: Record<string, string | undefined> = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BUNDLE, ...args], { env: { ...process.env, ...env }, timeout: 30000 }, (err, stdout, stderr) => {
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });
}
