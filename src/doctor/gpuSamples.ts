/**
 * The GPU samples taken while the run trained, aggregated (pure): each GPU's summary and timelines with every process
 * seen on it (gpuProcesses.ts), and each process's own NVML memory.
 */
import type { ProcessRecords } from './stages/records.js';
import { type GpuSample, type Snapshot, usableMemoryBytes } from '../telemetry/sample.js';
import { gpuProcessesOf, isGpuProcess, withJobPids } from './gpuProcesses.js';
import type { DoctorInput, GpuSummary } from './reportTypes.js';

/** The GPU summaries: from this run's samples, or those a re-diagnosed run's report kept, with the job's pids told again. */
export function gpusOf(input: DoctorInput, processes: readonly ProcessRecords[]): GpuSummary[] | null {
  const jobPids = jobPidsOf(processes, input.commandPids);
  if (input.gpuSamples) return summarizeGpus(input.gpuSamples, jobPids);
  const saved = input.recordedGpus?.gpus ?? null;
  return saved
    ? saved.map((g) => (Array.isArray(g.processes) ? { ...g, processes: withJobPids(g.processes.filter(isGpuProcess), jobPids) } : g))
    : null;
}

/** The run's pids and their RANK (null for a process without one): how the GPU samples tell the job's processes. */
function jobPidsOf(processes: readonly ProcessRecords[], commandPids: readonly number[] = []): Map<number, number | null> {
  const pids = new Map<number, number | null>(commandPids.map((pid) => [pid, null]));
  for (const p of processes) pids.set(p.pid, p.rankFromEnv ? p.rank : null);
  return pids;
}

type GpuTally = GpuSummary & { utilSum: number; utilN: number };

function summarizeGpus(samples: Snapshot[], jobPids: ReadonlyMap<number, number | null>): GpuSummary[] {
  const by = new Map<number, GpuTally>();
  const processes = gpuProcessesOf(samples, (s) => secondsSince(samples, s), jobPids);
  const firstSampleAtMs = samples[0]?.timestampMs ?? null;
  for (const s of samples) {
    for (const g of s.gpus) {
      let e = by.get(g.index);
      if (!e) {
        e = emptyTally(g);
        by.set(g.index, e);
      }
      addSample(e, g, secondsSince(samples, s));
    }
  }
  return [...by.values()]
    .sort((a, b) => a.index - b.index)
    .map(({ utilSum, utilN, ...g }) => ({
      ...g,
      meanUtilizationPercent: utilN ? utilSum / utilN : null,
      firstSampleAtMs,
      processes: processes.get(g.index) ?? [],
    }));
}

function emptyTally(g: GpuSample): GpuTally {
  return {
    index: g.index,
    cudaIndex: g.cudaIndex,
    name: g.name,
    totalBytes: usableMemoryBytes(g),
    samples: 0,
    maxUsedBytes: null,
    meanUtilizationPercent: null,
    maxUtilizationPercent: null,
    timeline: { tS: [], usedBytes: [], utilizationPercent: [] },
    utilSum: 0,
    utilN: 0,
  };
}

function addSample(e: GpuTally, g: GpuSample, tS: number): void {
  e.samples++;
  e.timeline.tS.push(tS);
  e.timeline.usedBytes.push(g.memoryUsedBytes);
  e.timeline.utilizationPercent.push(g.utilizationGpuPercent);
  if (g.memoryUsedBytes !== null) e.maxUsedBytes = Math.max(e.maxUsedBytes ?? 0, g.memoryUsedBytes);
  if (g.utilizationGpuPercent !== null) {
    e.utilSum += g.utilizationGpuPercent;
    e.utilN++;
    e.maxUtilizationPercent = Math.max(e.maxUtilizationPercent ?? 0, g.utilizationGpuPercent);
  }
}

function secondsSince(samples: Snapshot[], s: Snapshot): number {
  const t0 = samples[0]?.timestampMs ?? null;
  return t0 !== null && s.timestampMs !== null ? Math.round(s.timestampMs - t0) / 1000 : 0;
}

/** GPU memory NVML attributed to `pid` at each sample (summed over its GPUs), and the largest. */
export function nvmlUsedByPid(samples: Snapshot[] | null, pid: number): { max: number | null; timeline: { tS: number[]; usedBytes: number[] } } {
  const timeline = { tS: [] as number[], usedBytes: [] as number[] };
  if (!samples) return { max: null, timeline };
  let max: number | null = null;
  for (const s of samples) {
    let sum: number | null = null;
    for (const g of s.gpus)
      for (const p of g.processes) if (p.pid === pid && p.usedMemoryBytes !== null) sum = (sum ?? 0) + p.usedMemoryBytes;
    if (sum === null) continue;
    max = Math.max(max ?? 0, sum);
    timeline.tS.push(secondsSince(samples, s));
    timeline.usedBytes.push(sum);
  }
  return { max, timeline };
}
