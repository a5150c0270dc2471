/**
 * Shared by the doctor tests: Debian's CPU PyTorch for /usr/bin/python3 (CI installs
 * python3-torch), the probe's folders, and a runner that collects a process's output.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import type { DoctorReport } from '../../src/doctor/reportTypes.js';
import { type ProbeRecord, parseProbeLines } from '../../src/run/records.js';
import { installSiteHook } from '../../src/io/siteHook.js';
import { runCli } from '../helpers/cli.js';

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const PYTHON = '/usr/bin/python3';
export const PROBE_ROOT = join(REPO, 'python');
export const BOOT = join(PROBE_ROOT, 'gpuwise', 'boot');
export const TINY = join(REPO, 'examples', 'doctor', 'tiny_train.py');

/** torch importable by /usr/bin/python3. CI must have it: there a missing torch fails the tests instead of skipping them. */
export const HAS_TORCH = existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'import torch'], { stdio: 'ignore' }).status === 0;
export const SKIP_PYTHON = !HAS_TORCH && !process.env.CI;

/** Environment for a Python child: no bytecode files in the repository. */
export function pyEnv(extra: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, PYTHONDONTWRITEBYTECODE: '1', ...extra };
  for (const k of Object.keys(env)) if (env[k] === undefined) delete env[k];
  for (const k of [
    'GPUWISE_SOCKET',
    'GPUWISE_RUN_DIR',
    'GPUWISE_MAX_STEPS',
    'GPUWISE_PROBE_FAULT',
    'GPUWISE_PROFILE_AT',
    'GPUWISE_PROFILE_STEPS',
    'GPUWISE_STALL_S',
    'GPUWISE_STALL_REPEAT_S',
    'GPUWISE_TIME_WINDOW_AFTER_S',
    'GPUWISE_TIME_WINDOW_S',
    'GPUWISE_TIME_WINDOW_CPU',
  ])
    if (!(k in extra)) delete env[k];
  return env;
}

export interface Ran {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export function runProcess(
  cmd: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  onStart?: (pid: number, output: () => string) => void,
): Promise<Ran> {
  return new Promise((ok, fail) => {
    const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.once('error', fail);
    child.once('spawn', () => onStart?.(child.pid as number, () => stdout));
    child.once('close', (code, signal) => ok({ code, signal, stdout, stderr }));
  });
}

/** Every record of the probe-PID.jsonl fallback files in `dir`. */
export function fallbackRecords(dir: string): ProbeRecord[] {
  const text = readdirSync(dir)
    .filter((f) => /^probe-\d+\.jsonl$/.test(f))
    .map((f) => readFileSync(join(dir, f), 'utf8'))
    .join('');
  return parseProbeLines(text).records;
}

/**
 * A Python script (its lines) run under the probe alone, no collector: its records from the fallback files of a fresh
 * run directory made in `parent`, with the process's output and exit.
 */
export async function probeScript(
  parent: string,
  script: string[],
  env: Record<string, string> = {},
): Promise<{ records: ProbeRecord[]; stdout: string; stderr: string; code: number | null; dir: string }> {
  const dir = mkdtempSync(join(parent, 'run-'));
  const r = await runProcess(
    PYTHON,
    ['-c', script.join('\n')],
    pyEnv({ PYTHONPATH: [BOOT, PROBE_ROOT].join(delimiter), GPUWISE_RUN_DIR: dir, ...env }),
  );
  return { records: fallbackRecords(dir), stdout: r.stdout, stderr: r.stderr, code: r.code, dir };
}

export function stepsOf(records: ProbeRecord[]): number[] {
  return records.flatMap((r) => (r.type === 'step' ? [r.step] : []));
}

/** `gpuwise doctor --from DIR --json` through the bundled CLI: the report of a recorded run, re-diagnosed. */
export async function rediagnosed(dir: string): Promise<DoctorReport> {
  const r = await runCli(['doctor', '--from', dir, '--json']);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as DoctorReport;
}

/**
 * A Python with gpuwise's site hook, as the wheel installs it: a venv over /usr/bin/python3's packages (Debian's torch)
 * holding the probe package and the hook (io/siteHook.ts). Returns the venv's python.
 */
export function hookedPython(parent: string): string {
  const venv = join(parent, 'hooked-venv');
  const made = spawnSync(PYTHON, ['-m', 'venv', '--system-site-packages', '--without-pip', venv], { encoding: 'utf8' });
  if (made.status !== 0) throw new Error(`python3 -m venv: ${made.stderr}`);
  const python = join(venv, 'bin', 'python');
  const site = spawnSync(python, ['-c', 'import sysconfig; print(sysconfig.get_paths()["purelib"])'], { encoding: 'utf8' }).stdout.trim();
  installSiteHook(PROBE_ROOT, site);
  return python;
}
