/**
 * Runs the bundled CLI as its own process under a wall-clock limit and reports its peak resident memory
 * (test/helpers/rssOnExit.mjs), for the property tests that feed hostile inputs: a hang or a memory blow-up
 * is a failed assertion, not a stuck test run.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const PRELOAD = new URL('./rssOnExit.mjs', import.meta.url).pathname;

export interface BoundedRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** Peak resident memory of the process, MiB; null when it was killed before it could tell. */
  peakRssMiB: number | null;
  /** CPU time the process used, all its threads, ms (null as peakRssMiB): work done, whatever the machine's load. */
  cpuMs: number | null;
  /** Wall time: grows with the machine's load; for messages, never for a bound (a hang is `timedOut`). */
  wallMs: number;
  timedOut: boolean;
}

export function runBounded(
  bundle: string,
  args: string[],
  opts: { timeoutMs: number; env?: NodeJS.ProcessEnv; cwd?: string; stdin?: 'ignore' | 'pipe'; nodeArgs?: string[] },
): Promise<BoundedRun> {
  const dir = mkdtempSync(join(tmpdir(), 'gpuwise-rss-'));
  const rssFile = join(dir, 'rss');
  const started = performance.now();
  return new Promise((ok, fail) => {
    const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), '--import', PRELOAD, bundle, ...args], {
      env: { ...(opts.env ?? process.env), GPUWISE_TEST_RSS_FILE: rssFile },
      cwd: opts.cwd,
      stdio: [opts.stdin ?? 'ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    // Only the ends are kept: a runaway output must not make the test itself the memory hog.
    child.stdout?.on('data', (d) => {
      stdout = (stdout + d).slice(-1 << 20);
    });
    child.stderr?.on('data', (d) => {
      stderr = (stderr + d).slice(-1 << 16);
    });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, opts.timeoutMs);
    child.once('error', fail);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      let peak: number | null = null;
      let cpu: number | null = null;
      try {
        const [bytes, ms] = readFileSync(rssFile, 'utf8').split(' ').map(Number);
        peak = (bytes as number) / 2 ** 20;
        cpu = ms ?? null;
      } catch {
        peak = null;
      }
      rmSync(dir, { recursive: true, force: true });
      ok({ code, signal, stdout, stderr, peakRssMiB: peak, cpuMs: cpu, wallMs: performance.now() - started, timedOut });
    });
  });
}
