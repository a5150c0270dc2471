/** Per-GPU figures over a recording (pure), for `smi --replay`. */
import type { GpuSample, Snapshot } from './sample.js';

export interface GpuSummary {
  index: number;
  uuid: string;
  name: string;
  samples: number;
  utilizationGpuMeanPercent: number | null;
  utilizationGpuMaxPercent: number | null;
  memoryUsedMaxBytes: number | null;
  powerMeanWatts: number | null;
  powerMaxWatts: number | null;
  lostSamples: number;
}

/** Per-GPU figures over a recording (pure). Means are over samples where the figure was available. */
export function summarizeRecording(snapshots: readonly Snapshot[]): GpuSummary[] {
  const by = new Map<string, { g: GpuSample; util: number[]; mem: number[]; power: number[]; n: number; lost: number }>();
  for (const s of snapshots)
    for (const g of s.gpus) {
      const key = g.uuid || String(g.index);
      let e = by.get(key);
      if (!e) by.set(key, (e = { g, util: [], mem: [], power: [], n: 0, lost: 0 }));
      e.n++;
      if (g.lost) e.lost++;
      if (g.utilizationGpuPercent !== null) e.util.push(g.utilizationGpuPercent);
      if (g.memoryUsedBytes !== null) e.mem.push(g.memoryUsedBytes);
      if (g.powerWatts !== null) e.power.push(g.powerWatts);
    }
  const mean = (a: number[]) => (a.length === 0 ? null : a.reduce((x, y) => x + y, 0) / a.length);
  const max = (a: number[]) => (a.length === 0 ? null : a.reduce((x, y) => Math.max(x, y), -Infinity));
  return [...by.values()].map((e) => ({
    index: e.g.index,
    uuid: e.g.uuid,
    name: e.g.name,
    samples: e.n,
    utilizationGpuMeanPercent: mean(e.util),
    utilizationGpuMaxPercent: max(e.util),
    memoryUsedMaxBytes: max(e.mem),
    powerMeanWatts: mean(e.power),
    powerMaxWatts: max(e.power),
    lostSamples: e.lost,
  }));
}
