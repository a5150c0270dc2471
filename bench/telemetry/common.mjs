// Helpers for the telemetry benchmark and real-GPU check. Plain Node (no npm packages): they run on a
// GPU machine that has only node, dist/gpuwise.mjs, node_modules/koffi (+ @koromix/koffi-*) and nvidia-smi.
import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const GPUWISE = process.env.GPUWISE_BUNDLE ?? join(ROOT, 'dist', 'gpuwise.mjs');
export const MIB = 2 ** 20;

/** Runs a program; resolves { code, stdout, stderr, wallMs }. */
export function run(bin, args, env = {}, timeoutMs = 120000) {
  return new Promise((resolve) => {
    const t0 = performance.now();
    execFile(bin, args, { env: { ...process.env, ...env }, timeout: timeoutMs, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr, wallMs: performance.now() - t0 });
    });
  });
}

export const gpuwise = (args, env = {}, timeoutMs) => run(process.execPath, [GPUWISE, ...args], env, timeoutMs);

/** CPU seconds used by this process's waited-for children (utime+stime from /proc/self/stat, 100 Hz ticks). */
export function childCpuSeconds() {
  const text = readFileSync('/proc/self/stat', 'latin1');
  const f = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return (Number(f[13]) + Number(f[14])) / 100; // cutime, cstime = fields 16, 17
}

export async function hasNvidiaSmi() {
  return (await run('nvidia-smi', ['-L'], {}, 30000)).code === 0;
}

export async function gpuCount() {
  const r = await run('nvidia-smi', ['--query-gpu=index', '--format=csv,noheader'], {}, 30000);
  return r.code === 0 ? r.stdout.trim().split('\n').filter(Boolean).length : 0;
}

/**
 * Starts one gpu_load.py per GPU (if python3 with torch is there). Resolves the list of
 * { gpu, pid, child } once every process printed "ready", or [] with a reason.
 */
export async function startLoad(nGpus, seconds, gib = 2) {
  const probe = await run('python3', ['-c', 'import torch; print(torch.cuda.device_count())'], {}, 120000);
  if (probe.code !== 0) return { procs: [], reason: `no python3 with torch (${probe.stderr.trim().split('\n').pop()})` };
  const procs = [];
  for (let i = 0; i < nGpus; i++) {
    const child = spawn('python3', [join(ROOT, 'bench/telemetry/gpu_load.py'), '--seconds', String(seconds), '--gib', String(gib)], {
      env: {
        ...process.env,
        CUDA_VISIBLE_DEVICES: String(i),
        RANK: String(i),
        LOCAL_RANK: String(i),
        WORLD_SIZE: String(nGpus),
        SLURM_JOB_ID: 'gpuwise-check',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    procs.push({ gpu: i, pid: child.pid, child });
  }
  await Promise.all(
    procs.map(
      (p) =>
        new Promise((resolve, reject) => {
          let buf = '';
          const timer = setTimeout(() => reject(new Error(`load on GPU ${p.gpu} not ready in 120 s`)), 120000);
          p.child.stdout.on('data', (d) => {
            buf += d;
            if (buf.includes('ready')) {
              clearTimeout(timer);
              resolve();
            } else if (buf.includes('error')) reject(new Error(buf.trim()));
          });
          p.child.on('exit', (code) => reject(new Error(`load on GPU ${p.gpu} exited with ${code}`)));
        }),
    ),
  );
  return { procs, reason: null };
}

export function stopLoad(procs) {
  for (const p of procs) p.child.kill('SIGTERM');
}

export function percentile(sorted, q) {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

/** Starts `gpuwise exporter --port 0`; resolves { url, child } once it serves. */
export function startExporterProcess(args = [], env = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [GPUWISE, 'exporter', '--port', '0', ...args], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (d) => {
      err += d;
      const m = /serving (http:\/\/[^\s]+)\/metrics/.exec(err);
      if (m) resolve({ url: m[1], child });
    });
    child.on('exit', (code) => reject(new Error(`exporter exited with ${code}: ${err.trim()}`)));
  });
}
