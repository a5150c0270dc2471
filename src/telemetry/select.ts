/**
 * `gpuwise select`: choose the N best GPUs for a new job. A GPU qualifies when it is not lost, is in
 * the candidate set (CUDA_VISIBLE_DEVICES of the caller, unless told otherwise), has at least
 * `minFreeBytes` free and at most `maxUtilPercent` utilisation. A figure that is not available
 * disqualifies the GPU only when a limit on it was asked for. Qualifying GPUs are ranked by most
 * free memory, then lowest utilisation, then fewest processes, then index.
 */
import type { GpuSample } from './sample.js';

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
  }
  return null;
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
