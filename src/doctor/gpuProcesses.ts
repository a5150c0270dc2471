/**
 * Every process seen on each GPU over a doctor run (pure): the job's own processes (those that sent probe records,
 * with their rank) and any other, each with its memory and SM share over the samples where it was present. Kept in
 * the report (`gpus[].processes`) with its per-sample timeline, so `doctor --from` rebuilds the sharing findings
 * (sharing.ts) from a saved report.json as a live run builds them from the samples.
 */
import type { GpuSample, ProcessSample, Snapshot } from '../telemetry/sample.js';
import { withoutControlChars } from '../util/controlChars.js';

/**
 * A process counts as running work in a sample when NVML gave it more than this share of the sample's second on the
 * SMs. An idle process that only holds a context reads 0; one that launches an occasional small kernel (a metrics
 * reduction, a health check) reads a few %. Below 5% it can take at most 5% of the GPU's time from another process,
 * which is under the smallest gain a finding reports (findings/finding.ts MEDIUM_GAIN).
 */
export const ACTIVE_SM_PERCENT = 5;

export interface GpuProcess {
  pid: number;
  /** One of the run's own processes (it sent probe records); false: another process on the GPU. */
  job: boolean;
  /** The job process's RANK from its environment; null for a process without one and for other processes. */
  rank: number | null;
  /** What the samples say about it (NVML or nvidia-smi, /proc): short name, command line, owner; null when unknown. */
  name: string | null;
  command: string | null;
  user: string | null;
  /** Samples it was listed in, and the time they cover (each sample stands for the interval since the previous one). */
  samples: number;
  presentS: number;
  /** Seconds since the run's first sample: first and last sample it was listed in. */
  firstS: number;
  lastS: number;
  peakUsedBytes: number | null;
  meanUsedBytes: number | null;
  /** Mean SM share (nvmlDeviceGetProcessUtilization) over the samples that gave one; a sole process gets the GPU's. */
  meanSmUtilPercent: number | null;
  /** Samples in which it ran work (SM share above ACTIVE_SM_PERCENT). */
  activeSamples: number;
  /** Its samples: seconds since the run's first sample, memory, SM share (null = not available). */
  timeline: { tS: number[]; usedBytes: (number | null)[]; smUtilPercent: (number | null)[] };
}

/** A process's row of one sample; a pid listed twice on a GPU (compute and graphics) is one row. */
function merged(rows: readonly ProcessSample[]): Map<number, { mem: number | null; sm: number | null; row: ProcessSample }> {
  const out = new Map<number, { mem: number | null; sm: number | null; row: ProcessSample }>();
  for (const p of rows) {
    const e = out.get(p.pid);
    if (!e) out.set(p.pid, { mem: p.usedMemoryBytes, sm: p.smUtilPercent, row: p });
    else {
      if (p.usedMemoryBytes !== null) e.mem = (e.mem ?? 0) + p.usedMemoryBytes;
      if (p.smUtilPercent !== null) e.sm = Math.max(e.sm ?? 0, p.smUtilPercent);
    }
  }
  return out;
}

/** The interval a sample stands for: since the GPU's previous sample, at most twice the usual interval (a gap is not presence). */
function intervalsOf(tS: readonly number[]): number[] {
  const gaps = tS.slice(1).map((t, i) => t - (tS[i] as number)).filter((d) => d > 0).sort((a, b) => a - b);
  const usual = gaps.length ? (gaps[Math.floor(gaps.length / 2)] as number) : 1;
  return tS.map((t, i) => (i === 0 ? usual : Math.min(2 * usual, Math.max(0, t - (tS[i - 1] as number)))));
}

/**
 * The processes of every GPU, by NVML index, from the run's samples (`tS` of each sample as the GPU summaries count
 * it). `jobPids` maps the run's own pids to their RANK (null without one).
 */
export function gpuProcessesOf(
  samples: readonly Snapshot[],
  tSOf: (s: Snapshot) => number,
  jobPids: ReadonlyMap<number, number | null>,
): Map<number, GpuProcess[]> {
  const perGpu = new Map<number, { tS: number[]; byPid: Map<number, GpuProcess & { memSum: number; memN: number; smSum: number; smN: number; at: number[] }> }>();
  for (const s of samples) {
    const t = tSOf(s);
    for (const g of s.gpus as GpuSample[]) {
      let e = perGpu.get(g.index);
      if (!e) {
        e = { tS: [], byPid: new Map() };
        perGpu.set(g.index, e);
      }
      const at = e.tS.length;
      e.tS.push(t);
      for (const [pid, { mem, sm, row }] of merged(g.processes)) {
        let p = e.byPid.get(pid);
        if (!p) {
          p = {
            pid,
            job: jobPids.has(pid),
            rank: jobPids.get(pid) ?? null,
            name: null,
            command: null,
            user: null,
            samples: 0,
            presentS: 0,
            firstS: t,
            lastS: t,
            peakUsedBytes: null,
            meanUsedBytes: null,
            meanSmUtilPercent: null,
            activeSamples: 0,
            timeline: { tS: [], usedBytes: [], smUtilPercent: [] },
            memSum: 0,
            memN: 0,
            smSum: 0,
            smN: 0,
            at: [],
          };
          e.byPid.set(pid, p);
        }
        p.name ??= row.name;
        p.command ??= row.command;
        p.user ??= row.user;
        p.samples++;
        p.lastS = t;
        p.at.push(at);
        p.timeline.tS.push(t);
        p.timeline.usedBytes.push(mem);
        p.timeline.smUtilPercent.push(sm);
        if (mem !== null) {
          p.peakUsedBytes = Math.max(p.peakUsedBytes ?? 0, mem);
          p.memSum += mem;
          p.memN++;
        }
        if (sm !== null) {
          p.smSum += sm;
          p.smN++;
          if (sm > ACTIVE_SM_PERCENT) p.activeSamples++;
        }
      }
    }
  }
  const out = new Map<number, GpuProcess[]>();
  for (const [index, e] of perGpu) {
    const intervals = intervalsOf(e.tS);
    const list = [...e.byPid.values()].map(({ memSum, memN, smSum, smN, at, ...p }) => ({
      ...p,
      presentS: Math.round(at.reduce((a, i) => a + (intervals[i] as number), 0) * 1000) / 1000,
      meanUsedBytes: memN ? memSum / memN : null,
      meanSmUtilPercent: smN ? smSum / smN : null,
    }));
    // the job's processes first (by rank, then pid), then the others by the memory they held
    list.sort((a, b) => Number(b.job) - Number(a.job) || (a.rank ?? -1) - (b.rank ?? -1) || (b.peakUsedBytes ?? 0) - (a.peakUsedBytes ?? 0) || a.pid - b.pid);
    out.set(index, list);
  }
  return out;
}

/** Is this entry of a report read back a process row every reader can walk (a damaged or foreign report may hold anything)? */
export function isGpuProcess(v: unknown): v is GpuProcess {
  if (typeof v !== 'object' || v === null) return false;
  const p = v as Record<string, unknown>;
  const tl = p.timeline as Record<string, unknown> | null | undefined;
  return (
    typeof p.pid === 'number' &&
    typeof p.samples === 'number' &&
    typeof p.activeSamples === 'number' &&
    typeof tl === 'object' &&
    tl !== null &&
    Array.isArray(tl.tS) &&
    Array.isArray(tl.usedBytes) &&
    Array.isArray(tl.smUtilPercent)
  );
}

/** The same processes, with `job` and `rank` told again from the run's pids (a saved report re-read with its records). */
export function withJobPids(list: readonly GpuProcess[], jobPids: ReadonlyMap<number, number | null>): GpuProcess[] {
  return list.map((p) => ({ ...p, job: jobPids.has(p.pid), rank: jobPids.get(p.pid) ?? null }));
}

/** How a process is named in every format: `rank 1 (pid 4242)`, `pid 4242 (this run)`, `pid 999 python serve.py (alice)`. */
export function gpuProcessLabel(p: Pick<GpuProcess, 'pid' | 'job' | 'rank' | 'name' | 'command' | 'user'>): string {
  if (p.job) return p.rank !== null ? `rank ${p.rank} (pid ${p.pid})` : `pid ${p.pid} (this run)`;
  const what = shortCommand(p.command) ?? (p.name === null ? null : withoutControlChars(p.name));
  return `pid ${p.pid}${what ? ` ${what}` : ''}${p.user ? ` (${withoutControlChars(p.user)})` : ''}`;
}

/** A command line cut to 60 characters: enough to recognise it, short enough for a table cell. */
function shortCommand(c: string | null): string | null {
  if (c === null || c.trim() === '') return null;
  const t = withoutControlChars(c).trim();
  return t.length > 60 ? `${t.slice(0, 57)}...` : t;
}
