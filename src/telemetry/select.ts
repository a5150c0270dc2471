/**
 * `gpuwise select`: choose the N best GPUs for a new job. A GPU qualifies when it is not lost, is in
 * the candidate set (CUDA_VISIBLE_DEVICES of the caller, unless told otherwise), has at least
 * `minFreeBytes` free and at most `maxUtilPercent` utilisation. Without `maxUtilPercent`, a GPU at or
 * near 100% (BUSY_PERCENT and above) is not free and does not qualify (issue 47 item 7: select chose a GPU
 * at 100% because it had the most free memory); a limit asked for replaces that rule. A figure that is not
 * available disqualifies the GPU only when a limit on it was asked for. Qualifying GPUs are ranked idle
 * first (at most IDLE_PERCENT busy: a job there gets the whole GPU), then by most free memory, then
 * lowest utilisation, then fewest processes, then index.
 */
import type { GpuSample } from './sample.js';

/** Utilisation from which a GPU is busy (not free) when no --max-util was given. */
export const BUSY_PERCENT = 90;
/** Utilisation up to which a GPU is idle: idle GPUs rank before busier ones, whatever their free memory. */
export const IDLE_PERCENT = 10;

export interface SelectOptions {
  count: number;
  minFreeBytes: number | null;
  maxUtilPercent: number | null;
  /** NVML indices allowed; null = every GPU. */
  candidates: ReadonlySet<number> | null;
}

export interface Rejection {
  gpu: GpuSample;
  reason: string;
}

export interface Selection {
  chosen: GpuSample[];
  rejected: Rejection[];
  /** True when at least `count` GPUs qualified. */
  satisfied: boolean;
}

function rejectionReason(g: GpuSample, o: SelectOptions): string | null {
  if (g.lost) return 'lost (fell off the bus)';
  if (o.candidates !== null && !o.candidates.has(g.index)) return 'not in CUDA_VISIBLE_DEVICES';
  if (o.minFreeBytes !== null) {
    if (g.memoryFreeBytes === null) return 'free memory not available';
    if (g.memoryFreeBytes < o.minFreeBytes) return 'too little free memory';
  }
  if (o.maxUtilPercent !== null) {
    if (g.utilizationGpuPercent === null) return 'utilisation not available';
    if (g.utilizationGpuPercent > o.maxUtilPercent) return 'too busy';
  } else if (g.utilizationGpuPercent !== null && g.utilizationGpuPercent >= BUSY_PERCENT)
    return `busy (${g.utilizationGpuPercent}% utilisation; --max-util 100 accepts it)`;
  return null;
}

function isIdle(g: GpuSample): boolean {
  return g.utilizationGpuPercent !== null && g.utilizationGpuPercent <= IDLE_PERCENT;
}

export function selectGpus(gpus: readonly GpuSample[], o: SelectOptions): Selection {
  const rejected: Rejection[] = [];
  const ok: GpuSample[] = [];
  for (const g of gpus) {
    const reason = rejectionReason(g, o);
    if (reason === null) ok.push(g);
    else rejected.push({ gpu: g, reason });
  }
  ok.sort(
    (a, b) =>
      Number(isIdle(b)) - Number(isIdle(a)) ||
      (b.memoryFreeBytes ?? -1) - (a.memoryFreeBytes ?? -1) ||
      (a.utilizationGpuPercent ?? 101) - (b.utilizationGpuPercent ?? 101) ||
      a.processes.length - b.processes.length ||
      a.index - b.index,
  );
  return { chosen: ok.slice(0, o.count), rejected, satisfied: ok.length >= o.count };
}

/** The CUDA_VISIBLE_DEVICES value for the chosen GPUs, ascending by index so rank order is stable. */
export function visibleDevicesValue(chosen: readonly GpuSample[], format: 'index' | 'uuid'): string {
  return [...chosen]
    .sort((a, b) => a.index - b.index)
    .map((g) => (format === 'uuid' ? g.uuid : String(g.index)))
    .join(',');
}
