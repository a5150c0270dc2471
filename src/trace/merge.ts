/**
 * Merges the models built from segments of one trace (parsed in parallel) into
 * the model one parser would have built. Segments share the time origin, so
 * only names and indices need remapping.
 */
import { attentionOpKey, gemmOpKey, sortGemmCalls } from './builder.js';
import type { CpuSpan, GpuActivity, MemoryPeak, TraceModel } from './model.js';
import type { LaunchCall, OpLog } from './opLog.js';

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

  // The parts' logs are kept as they are, by device and then part, each with a map from its name ids to the
  // merged ones (re-encoding every op took 80 ms of a 2 s analysis); readers merge a device's logs by start.
  // Ops a part wrote without their launch keep their correlation id and find the call in the merged map.
  const launches = new Map<number, LaunchCall>();
  let uncorrelated = 0;
  for (const p of parts) {
    for (const [c, call] of p.gpu.launches) {
      if (c < 0) launches.set(-2 - uncorrelated++, call);
      else if (!launches.has(c)) launches.set(c, call);
    }
  }
  const logs: OpLog[] = parts
    .flatMap((p, k) => p.gpu.logs.map((log) => ({ ...log, nameIds: log.nameIds === undefined ? remaps[k]! : log.nameIds.map((id) => remaps[k]![id]!) })))
    .sort((a, b) => a.device - b.device); // stable: parts stay in order
  const syncCount = parts.reduce((a, p) => a + p.gpu.syncCalls.count, 0);
  const syncCalls = { count: syncCount, startNs: new Float64Array(syncCount), durNs: new Float64Array(syncCount), nameId: new Int32Array(syncCount) };
  let s = 0;
  parts.forEach((p, k) => {
    const sc = p.gpu.syncCalls;
    syncCalls.startNs.set(sc.startNs.subarray(0, sc.count), s);
    syncCalls.durNs.set(sc.durNs.subarray(0, sc.count), s);
    for (let i = 0; i < sc.count; i++) syncCalls.nameId[s + i] = remaps[k]![sc.nameId[i]!]!;
    s += sc.count;
  });
  const graphLaunchStartsNs = parts.flatMap((p) => p.gpu.graphLaunchStartsNs).sort((a, b) => a - b);
  const gpu: GpuActivity = { count: logs.reduce((n, l) => n + l.count, 0), logs, launches, syncCalls, graphLaunchStartsNs };

  const collectives = mergeCollectives(parts, remaps);
  // The same GEMM shape seen by several parts is one record, as with one builder.
  const gemm = distinct(
    parts.map((p) => p.gemmOps),
    (op) => gemmOpKey(op.name, op.dims, op.dtype, op.convFlops),
  );
  const gemmOps = gemm.records;
  const gemmExt: number[] = [];
  const gemmIdx: number[] = [];
  parts.forEach((p, k) => {
    for (let i = 0; i < p.gemmCalls.count; i++) {
      gemmExt.push(p.gemmCalls.externalId[i]!);
      gemmIdx.push(gemm.remaps[k]![p.gemmCalls.gemm[i]!]!);
    }
  });
  const gemmCalls = sortGemmCalls(Float64Array.from(gemmExt), Int32Array.from(gemmIdx));
  // Attention ops likewise; parts are consecutive stretches of the file, so their calls joined in order are the file's.
  const attention = distinct(
    parts.map((p) => p.attentionOps),
    (op) => attentionOpKey(op.name, op.dims, op.causal),
  );
  const attentionOps = attention.records;
  const attentionStart: number[] = [];
  const attentionOp: number[] = [];
  parts.forEach((p, k) => {
    for (let i = 0; i < p.attentionCalls.count; i++) {
      attentionStart.push(p.attentionCalls.startNs[i]!);
      attentionOp.push(attention.remaps[k]![p.attentionCalls.op[i]!]!);
    }
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
    steps: [...steps.values()].sort((a, b) => a.startNs - b.startNs),
    dataLoader: spans((p) => p.dataLoader),
    optimizerSteps: spans((p) => p.optimizerSteps),
    syncOps: spans((p) => p.syncOps),
    dataParallelForwards: spans((p) => p.dataParallelForwards),
    ddpForwards: spans((p) => p.ddpForwards),
    cpuCollectives: {
      count: parts.reduce((a, p) => a + p.cpuCollectives.count, 0),
      startNs: Float64Array.from(parts.flatMap((p) => [...p.cpuCollectives.startNs])),
      endNs: Float64Array.from(parts.flatMap((p) => [...p.cpuCollectives.endNs])),
    },
    cpuAllReduceStartsNs: Float64Array.from(parts.flatMap((p) => [...p.cpuAllReduceStartsNs])).sort(),
    collectives,
    // Each framework's first evidence in file order, as one builder would keep it.
    frameworks: parts.flatMap((p) => p.frameworks).filter((f, i, all) => all.findIndex((g) => g.framework === f.framework) === i),
    gemmOps,
    gemmCalls,
    attentionOps,
    attentionCalls: { count: attentionStart.length, startNs: Float64Array.from(attentionStart), op: Int32Array.from(attentionOp) },
    memoryPeaks: [...peaks.values()].sort((a, b) => a.device - b.device),
    eventCounts,
    cpuRangeNs: withCpu.length ? [Math.min(...withCpu.map((p) => p.cpuRangeNs[0])), Math.max(...withCpu.map((p) => p.cpuRangeNs[1]))] : [0, 0],
    warnings: [...new Set(parts.flatMap((p) => p.warnings))],
    endedEarly: parts.find((p) => p.endedEarly !== null)?.endedEarly ?? null,
  };
}

/** The parts' collective kernels, one after the other, with names in the merged table. */
function mergeCollectives(parts: TraceModel[], remaps: Int32Array[]): TraceModel['collectives'] {
  const n = parts.reduce((a, p) => a + p.collectives.count, 0);
  const out: TraceModel['collectives'] = {
    count: n,
    startNs: new Float64Array(n),
    durNs: new Float64Array(n),
    launchStartNs: new Float64Array(n),
    correlation: new Float64Array(n),
    bytes: new Float64Array(n),
    nameId: new Int32Array(n),
    processGroupId: new Int32Array(n),
    seq: new Float64Array(n),
    seqText: new Map(),
  };
  let at = 0;
  parts.forEach((p, k) => {
    const c = p.collectives;
    const remap = remaps[k]!;
    for (const key of ['startNs', 'durNs', 'launchStartNs', 'correlation', 'bytes', 'seq'] as const) out[key].set(c[key].subarray(0, c.count), at);
    for (let i = 0; i < c.count; i++) {
      out.nameId[at + i] = remap[c.nameId[i]!]!;
      out.processGroupId[at + i] = c.processGroupId[i]! < 0 ? -1 : remap[c.processGroupId[i]!]!;
    }
    for (const [i, text] of c.seqText) out.seqText.set(at + i, text);
    at += c.count;
  });
  return out;
}

/** One record per distinct key over the parts' lists, first seen first (as one builder keeps them), and each part's index map. */
function distinct<T>(lists: readonly (readonly T[])[], keyOf: (x: T) => string): { records: T[]; remaps: number[][] } {
  const records: T[] = [];
  const keys = new Map<string, number>();
  const remaps = lists.map((list) =>
    list.map((x) => {
      const key = keyOf(x);
      let idx = keys.get(key);
      if (idx === undefined) {
        idx = records.length;
        records.push(x);
        keys.set(key, idx);
      }
      return idx;
    }),
  );
  return { records, remaps };
}
