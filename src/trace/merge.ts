/**
 * Merges the models built from segments of one trace (parsed in parallel) into
 * the model one parser would have built. Segments share the time origin, so
 * only names and indices need remapping.
 */
import type { CpuSpan, GpuOps, MemoryPeak, RuntimeCalls, TraceModel } from './model.js';

export function mergeModels(parts: TraceModel[]): TraceModel {
  if (parts.length === 1) return parts[0]!;
  const first = parts[0]!;
  const names: string[] = [];
  const nameIds = new Map<string, number>();
  const remaps = parts.map((p) =>
    Int32Array.from(p.names, (n) => {
      let id = nameIds.get(n);
      if (id === undefined) {
        id = names.length;
        names.push(n);
        nameIds.set(n, id);
      }
      return id;
    }),
  );

  const gpuCount = parts.reduce((a, p) => a + p.gpu.count, 0);
  const rtCount = parts.reduce((a, p) => a + p.runtime.count, 0);
  const gpu: GpuOps = {
    count: gpuCount,
    device: new Int16Array(gpuCount),
    kind: new Uint8Array(gpuCount),
    category: new Uint8Array(gpuCount),
    copyKind: new Uint8Array(gpuCount),
    startNs: new Float64Array(gpuCount),
    durNs: new Float64Array(gpuCount),
    correlation: new Float64Array(gpuCount),
    nameId: new Int32Array(gpuCount),
    bytes: new Float64Array(gpuCount),
    blocksPerSm: new Float32Array(gpuCount),
  };
  const runtime: RuntimeCalls = {
    count: rtCount,
    kind: new Uint8Array(rtCount),
    startNs: new Float64Array(rtCount),
    durNs: new Float64Array(rtCount),
    correlation: new Float64Array(rtCount),
    externalId: new Float64Array(rtCount),
    nameId: new Int32Array(rtCount),
  };
  let g = 0;
  let r = 0;
  const collectives: TraceModel['collectives'] = [];
  const gemmOps: TraceModel['gemmOps'] = [];
  const gemmByExternalId = new Map<number, number>();
  const gemmKeys = new Map<string, number>();
  parts.forEach((p, k) => {
    const remap = remaps[k]!;
    for (const key of ['device', 'kind', 'category', 'copyKind', 'startNs', 'durNs', 'correlation', 'bytes', 'blocksPerSm'] as const) {
      (gpu[key] as Float64Array).set(p.gpu[key].subarray(0, p.gpu.count) as Float64Array, g);
    }
    for (let i = 0; i < p.gpu.count; i++) gpu.nameId[g + i] = remap[p.gpu.nameId[i]!]!;
    for (const key of ['kind', 'startNs', 'durNs', 'correlation', 'externalId'] as const) {
      (runtime[key] as Float64Array).set(p.runtime[key].subarray(0, p.runtime.count) as Float64Array, r);
    }
    for (let i = 0; i < p.runtime.count; i++) runtime.nameId[r + i] = remap[p.runtime.nameId[i]!]!;
    for (const c of p.collectives) collectives.push({ ...c, opIndex: c.opIndex + g });
    // The same GEMM shape seen by several parts is one record, as with one builder.
    const gemmRemap = p.gemmOps.map((op) => {
      const key = `${op.name}|${JSON.stringify(op.dims)}|${op.dtype ?? ''}`;
      let idx = gemmKeys.get(key);
      if (idx === undefined) {
        idx = gemmOps.length;
        gemmOps.push(op);
        gemmKeys.set(key, idx);
      }
      return idx;
    });
    for (const [ext, idx] of p.gemmByExternalId) gemmByExternalId.set(ext, gemmRemap[idx]!);
    g += p.gpu.count;
    r += p.runtime.count;
  });

  const spans = (pick: (p: TraceModel) => CpuSpan[]) => parts.flatMap(pick).sort((a, b) => a.startNs - b.startNs);
  const steps = new Map<number, TraceModel['steps'][number]>();
  for (const s of parts.flatMap((p) => p.steps)) {
    const prev = steps.get(s.step);
    if (!prev || s.endNs - s.startNs > prev.endNs - prev.startNs) steps.set(s.step, s);
  }
  const peaks = new Map<number, MemoryPeak>();
  for (const m of parts.flatMap((p) => p.memoryPeaks)) {
    const prev = peaks.get(m.device);
    if (!prev) peaks.set(m.device, { ...m });
    else {
      if (m.allocatedBytes > prev.allocatedBytes) {
        prev.allocatedBytes = m.allocatedBytes;
        prev.atNs = m.atNs;
      }
      prev.reservedBytes = Math.max(prev.reservedBytes, m.reservedBytes);
    }
  }
  const eventCounts: Record<string, number> = {};
  for (const p of parts) for (const [k, v] of Object.entries(p.eventCounts)) eventCounts[k] = (eventCounts[k] ?? 0) + v;
  const withCpu = parts.filter((p) => p.cpuRangeNs[1] > p.cpuRangeNs[0]);
  const distributed = parts.find((p) => p.distributed !== null)?.distributed ?? null;
  return {
    source: first.source,
    rank: distributed?.rank ?? 0,
    worldSize: distributed?.worldSize ?? 1,
    distributed,
    devices: parts.find((p) => p.devices.length > 0)?.devices ?? [],
    baseTimeNs: parts.find((p) => p.baseTimeNs !== null)?.baseTimeNs ?? null,
    originUs: first.originUs,
    names,
    gpu,
    runtime,
    steps: [...steps.values()].sort((a, b) => a.startNs - b.startNs),
    dataLoader: spans((p) => p.dataLoader),
    optimizerSteps: spans((p) => p.optimizerSteps),
    syncOps: spans((p) => p.syncOps),
    dataParallelForwards: spans((p) => p.dataParallelForwards),
    ddpForwards: spans((p) => p.ddpForwards),
    cpuCollectives: spans((p) => p.cpuCollectives),
    collectives,
    gemmOps,
    gemmByExternalId,
    memoryPeaks: [...peaks.values()].sort((a, b) => a.device - b.device),
    eventCounts,
    cpuRangeNs: withCpu.length ? [Math.min(...withCpu.map((p) => p.cpuRangeNs[0])), Math.max(...withCpu.map((p) => p.cpuRangeNs[1]))] : [0, 0],
    warnings: [...new Set(parts.flatMap((p) => p.warnings))],
  };
}
