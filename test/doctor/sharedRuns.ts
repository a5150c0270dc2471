/**
 * Realistic shared-GPU runs for tests, synthesised from the real H200 doctor runs (examples/doctor/runs/h200): a real
 * run's hello, model and step records (their GPU step times, memory, batches) repeated for as long as a test needs,
 * each step stretched by a slowdown while another process works on the GPU, and the NVML samples (once a second) the
 * telemetry sampler would have taken of it: the processes with their memory and SM share.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { groupProcesses } from '../../src/doctor/stages/records.js';
import { type HelloRecord, parseProbeLines, type ProbeRecord, type StepRecord } from '../../src/run/records.js';
import { emptyGpu, emptyProcess, type GpuSample, type ProcessSample, type Snapshot } from '../../src/telemetry/sample.js';

export const RUNS = join(__dirname, '..', '..', 'examples', 'doctor', 'runs', 'h200');
export const recordsOf = (name: string) => parseProbeLines(readFileSync(join(RUNS, name, 'probe.jsonl'), 'utf8')).records;

const GiB = 1024 ** 3;
/** The Unix second the synthetic runs start at (any; the samples are placed relative to it). */
export const T0 = 1_800_000_000;

/** A real process's records moved to `pid`, starting at `startS`, its steady steps repeated for `seconds`. */
export function tiledProcess(
  run: string,
  opts: { pid: number; rank?: number | null; startS: number; seconds: number; slowdownAt?: (tUnix: number) => number; processIndex?: number },
): ProbeRecord[] {
  const p = groupProcesses(recordsOf(run))[opts.processIndex ?? 0];
  if (!p) throw new Error(`no process in ${run}`);
  const gpu = new Map<number, number>();
  for (const r of p.records)
    if ((r.type === 'step' || r.type === 'end') && r.gpuStepTimes) for (const [s, d] of r.gpuStepTimes) gpu.set(s, d);
  // the real steady steps: not the warm-up, not the window or the step that wrote the trace
  const real = p.steps.filter((s, i) => i > 0 && !s.profiled && !p.steps[i - 1]?.profiled && gpu.has(s.step));
  const rank = opts.rank === undefined ? p.hello?.rank ?? null : opts.rank;
  const base = { pid: opts.pid, rank };
  const out: ProbeRecord[] = [];
  const start = T0 + opts.startS;
  if (p.hello) out.push({ ...p.hello, ...base, t: start } as HelloRecord);
  if (p.model) out.push({ ...p.model, ...base, t: start });
  let t = start;
  const durs: number[] = [];
  for (let k = 1; t < start + opts.seconds; k++) {
    const src = real[(k - 1) % real.length] as StepRecord;
    const dur = (gpu.get(src.step) as number) * (opts.slowdownAt?.(t) ?? 1);
    t += dur;
    durs.push(dur);
    // GPU times reach the host a couple of steps late, as in the real records
    const lag = k - 2;
    out.push({ ...src, ...base, step: k, t, stepTimeS: dur, profiled: false, gpuStepTimes: lag >= 1 ? [[lag, durs[lag - 1] as number]] : [] });
  }
  const n = durs.length;
  out.push({ v: 1, type: 'end', ...base, t, reason: 'exit', steps: n, exception: null, gpuStepTimes: [[n - 1, durs[n - 2] as number], [n, durs[n - 1] as number]] } as ProbeRecord);
  return out;
}

export interface SampledProcess {
  pid: number;
  gpu: number;
  /** Seconds since T0 while it is listed. */
  fromS: number;
  toS: number;
  usedBytes: number;
  /** SM share while listed; `undefined`: not measured (a sole process gets the GPU's). */
  smUtil: (tS: number) => number | null;
  name?: string;
  command?: string;
  user?: string;
  rank?: number | null;
}

/** One NVML snapshot a second from `fromS` to `toS` (seconds since T0) of `gpus` GPUs holding `procs`. */
export function samplesOf(procs: readonly SampledProcess[], opts: { fromS: number; toS: number; gpus?: number; hiddenGpus?: number[] }): Snapshot[] {
  const out: Snapshot[] = [];
  for (let s = opts.fromS; s <= opts.toS; s++) {
    const gpus: GpuSample[] = [];
    for (let i = 0; i < (opts.gpus ?? 2); i++) {
      const g = emptyGpu(i, `GPU-${i}`, 'NVIDIA H200');
      g.cudaIndex = opts.hiddenGpus?.includes(i) ? null : i;
      g.memoryTotalBytes = 150109880320;
      const here = procs.filter((p) => p.gpu === i && s >= p.fromS && s <= p.toS);
      g.processes = here.map((p) => {
        const row: ProcessSample = { ...emptyProcess(p.pid, i), type: 'C', name: p.name ?? 'python', usedMemoryBytes: p.usedBytes };
        row.smUtilPercent = p.smUtil(s);
        row.command = p.command ?? null;
        row.user = p.user ?? null;
        row.rank = p.rank ?? null;
        return row;
      });
      g.memoryUsedBytes = here.reduce((a, p) => a + p.usedBytes, 0) + 0.5 * GiB;
      g.utilizationGpuPercent = Math.min(100, here.reduce((a, p) => a + (p.smUtil(s) ?? 0), 0));
      gpus.push(g);
    }
    out.push({ schemaVersion: 1, source: 'nvml', timestampMs: (T0 + s) * 1000, hostname: 'vm', driverVersion: '580.95', cudaVersion: '13.0', gpus, notes: [] });
  }
  return out;
}

export { GiB };
