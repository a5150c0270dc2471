/**
 * spawnSync's result without blocking the test's thread: a long child (Python with torch, a notebook) run with
 * spawnSync holds the vitest worker's event loop, and past 60 s of that the worker's own calls to vitest time out
 * ("Timeout calling onTaskUpdate"), whatever the tests do. Same fields as spawnSync's, `timeout` in ms (SIGKILL).
 */
import { spawn } from 'node:child_process';

export interface SpawnedResult {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  error?: Error;
}

export function spawnAsync(
  cmd: string,
  args: string[],
  opts: { env?: NodeJS.ProcessEnv; cwd?: string; timeout?: number; stdio?: 'ignore' | 'pipe' } = {},
): Promise<SpawnedResult> {
  return new Promise((ok) => {
    const child = spawn(cmd, args, { env: opts.env, cwd: opts.cwd, stdio: ['ignore', opts.stdio ?? 'pipe', opts.stdio ?? 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout?.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
    });
    child.stderr?.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
    });
    const timer = opts.timeout === undefined ? undefined : setTimeout(() => child.kill('SIGKILL'), opts.timeout);
    child.once('error', (error) => {
      clearTimeout(timer);
      ok({ status: null, signal: null, stdout, stderr, error });
    });
    child.once('close', (status, signal) => {
      clearTimeout(timer);
      ok({ status, signal, stdout, stderr });
    });
  });
}
