/**
 * DataParallel's GPU 0 imbalance in memory (pure): analyze's `dataparallel` rule measures each GPU's busy time in the
 * window (advice/rules/distributed.ts); doctor, which sampled NVML, adds the process's peak memory on each GPU. GPU 0
 * (the output device) holds the gathered outputs, the loss, the optimizer state and the master weights, the others a
 * replica and their activations. Kept here so the trace rule never depends on doctor.
 */
import type { Finding } from '../findings/finding.js';
import { fmtBytes } from '../util/format.js';
import type { SharingGpu } from './sharing.js';

/** The `dataparallel` finding with the process's NVML peak per GPU in its evidence and data; any other finding as it is. */
export function withDataParallelMemory(f: Finding, gpus: readonly SharingGpu[], pidOfRank: (rank: number) => number | null): Finding {
  if (f.id !== 'dataparallel') return f;
  const pid = pidOfRank(f.ranks[0] ?? 0);
  if (pid === null) return f;
  const rows = gpus
    .map((g) => ({ g, p: g.processes?.find((x) => x.pid === pid) }))
    .filter((x): x is { g: SharingGpu; p: NonNullable<typeof x.p> } => x.p !== undefined && x.p.peakUsedBytes !== null)
    // the output device is cuda:0 of the process; order by CUDA ordinal where known, else by NVML index
    .sort((a, b) => (a.g.cudaIndex ?? a.g.index) - (b.g.cudaIndex ?? b.g.index));
  if (rows.length < 2) return f;
  const [first, ...rest] = rows as [(typeof rows)[number], ...typeof rows];
  const othersMean = rest.reduce((a, r) => a + (r.p.peakUsedBytes as number), 0) / rest.length;
  const ratio = othersMean > 0 ? (first.p.peakUsedBytes as number) / othersMean : null;
  const name = (g: SharingGpu) => `GPU ${g.index}${typeof g.cudaIndex === 'number' ? ` (cuda:${g.cudaIndex})` : ''}`;
  return {
    ...f,
    evidence: [
      ...f.evidence,
      `NVML peak memory of the process per GPU: ${rows.map((r) => `${name(r.g)} ${fmtBytes(r.p.peakUsedBytes as number)}`).join(', ')}${ratio !== null ? `; ${name(first.g)} holds ${ratio.toFixed(2)}x the others' mean (the gathered outputs, the loss, the optimizer state and the master weights live there), so it runs out of memory first` : ''}`,
    ],
    data: {
      ...f.data,
      ...Object.fromEntries(rows.map((r) => [`peakUsedBytesGpu${r.g.index}`, r.p.peakUsedBytes as number])),
      memoryImbalance: ratio,
    },
  };
}
