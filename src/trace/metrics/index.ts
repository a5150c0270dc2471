/** analyzeTrace: a TraceModel in, TraceMetrics out. Pure. */
import { CATEGORY_NAMES } from '../kernelClass.js';
import type { CpuSpan, TraceModel } from '../model.js';
import { forEachOp } from '../opLog.js';
import { HostSpanCollector, type HostSpans } from './hostSpans.js';
import { crossDeviceStats } from './crossDevice.js';
import { coveredLen, firstAfter, unionOf } from './intervals.js';
import { attentionStats } from './attention.js';
import { kernelMix } from './kernelMix.js';
import { pointwiseChains } from './pointwiseChains.js';
import { commStats, kernelFigures, median } from './kernels.js';
import { pickFramework } from '../framework.js';
import { modelFlops } from './modelFlops.js';
import { type StepWindow, StepWindowBuilder } from './steps.js';
import { analyseTimeline, emptyCategories, emptyIdle } from './timeline.js';
import { IDLE_CAUSES, type StepMetrics, type TraceMetrics } from './types.js';

export { type CollectiveTimings, collectiveTimings } from './collectives.js';
export type { TraceMetrics } from './types.js';

export function analyzeTrace(model: TraceModel): TraceMetrics {
  // One walk over the ops for both: the windows and the host spans need no order.
  const stepBuilder = new StepWindowBuilder(model);
  const spanCollector = new HostSpanCollector();
  forEachOp(model.gpu.logs, model.gpu.launches, (op) => {
    stepBuilder.add(op);
    spanCollector.add(op);
  });
  const { windows: allWindows, fromMarkers } = stepBuilder.windows();
  const spans = spanCollector.finish(model);
  const timeline = analyseTimeline(model, spans, allWindows);
  // A trailing step without GPU work is the profiler stopping, not a step: drop it.
  let keep = allWindows.length;
  while (keep > 1 && timeline.perWindow[keep - 1]!.every((d) => d.busyNs === 0)) keep--;
  const windows = allWindows.slice(0, keep);
  const steps: StepMetrics[] = windows.map((w, i) => ({
    step: w.step,
    startNs: w.startNs,
    endNs: w.endNs,
    durNs: w.endNs - w.startNs,
    devices: timeline.perWindow[i]!.filter((d) => d.busyNs > 0 || d.kernels > 0),
  }));

  const nSteps = Math.max(1, steps.length);
  // Per-step figures are means over steps and over the devices that ran work, so they
  // compare with the step time itself (DataParallel drives several GPUs from one trace).
  const perStep = {
    durNs: 0,
    busyNs: 0,
    idleNs: 0,
    idleByCauseNs: emptyIdle(),
    kernelNsByCategory: emptyCategories(),
    syncRefillNs: 0,
    syncDrains: 0,
  };
  let commNs = 0;
  let exposedNs = 0;
  let deviceSteps = 0;
  for (const s of steps) {
    perStep.durNs += s.durNs / nSteps;
    deviceSteps += s.devices.length;
  }
  const devicesPerStep = deviceSteps / nSteps || 1;
  const share = 1 / (nSteps * devicesPerStep);
  for (const s of steps) {
    for (const d of s.devices) {
      perStep.busyNs += d.busyNs * share;
      perStep.idleNs += d.idleNs * share;
      for (const c of IDLE_CAUSES) perStep.idleByCauseNs[c] += d.idleByCauseNs[c] * share;
      for (const c of CATEGORY_NAMES) perStep.kernelNsByCategory[c] += d.kernelNsByCategory[c] * share;
      perStep.syncRefillNs += d.syncRefillNs * share;
      perStep.syncDrains += d.syncDrains * share;
      commNs += d.commNs;
      exposedNs += d.commExposedNs;
    }
  }
  const durs = steps.map((s) => s.durNs);
  const k = kernelFigures(model, windows, 15);
  const { stats: attention, handWrittenKernels } = attentionStats(model, windows, k.byName, perStep.kernelNsByCategory.attention);
  const memory = model.memoryPeaks.map((p) => ({
    device: p.device,
    peakAllocatedBytes: p.allocatedBytes,
    peakReservedBytes: p.reservedBytes,
    deviceTotalBytes: model.devices.find((d) => d.id === p.device)?.totalGlobalMemBytes ?? null,
  }));

  return {
    rank: model.rank,
    worldSize: model.worldSize,
    devices: model.devices.map((d) => ({
      id: d.id,
      name: d.name,
      totalMemoryBytes: d.totalGlobalMemBytes,
      computeCapability: `${d.computeMajor}.${d.computeMinor}`,
    })),
    stepsFromMarkers: fromMarkers,
    steps,
    stepTime: {
      meanNs: durs.length ? durs.reduce((a, b) => a + b, 0) / durs.length : 0,
      medianNs: median(durs),
      minNs: durs.length ? Math.min(...durs) : 0,
      maxNs: durs.length ? Math.max(...durs) : 0,
    },
    perStep,
    gpuBusyShare: perStep.durNs > 0 ? perStep.busyNs / perStep.durNs : 0,
    smEfficiency: k.smEfficiency,
    launch: k.launch,
    precision: k.precision,
    copies: k.copies,
    gemmShapes: k.gemmShapes,
    kernelMix: kernelMix(k.byName, steps.length),
    pointwiseChains: pointwiseChains(model, windows, handWrittenKernels),
    modelFlops: modelFlops(
      k.gemmShapes,
      k.convolutions,
      attention,
      k.precision,
      perStep.kernelNsByCategory,
      steps.length,
      median(durs),
      model.devices[0]?.name ?? null,
    ),
    attention,
    comm: commStats(model, windows, commNs / nSteps / devicesPerStep, exposedNs / nSteps / devicesPerStep),
    memory,
    topKernels: k.topKernels,
    crossDevice: crossDeviceStats(model, windows),
    timeline: timeline.timeline,
    examples: {
      syncCalls: syncCalls(model, windows, spans.copySyncs),
      syncOps: countByName(blockingOps(model, spans), windows).map(({ name, count, first }) => ({ name, count, firstAtNs: first })),
      dataLoaderWaitNsPerStep: spansIn(model.dataLoader, windows) / nSteps,
      pageableH2dExample: k.pageableH2dExample,
      memcpyBlockedNsPerStep: memcpyBlockedNs(model, spans, windows) / nSteps,
      hostFreeNsPerStep: hostFreeNs(model, spans),
    },
    structure: structure(model, windows),
  };
}

function within(windows: StepWindow[], t: number): boolean {
  return windows.length > 0 && t >= windows[0]!.startNs && t < windows[windows.length - 1]!.endNs;
}

function spansIn(spans: CpuSpan[], windows: StepWindow[]): number {
  let t = 0;
  for (const s of spans) if (within(windows, s.startNs)) t += s.endNs - s.startNs;
  return t;
}

function countByName(spans: CpuSpan[], windows: StepWindow[]): { name: string; count: number; total: number; first: number }[] {
  const m = new Map<string, { name: string; count: number; total: number; first: number }>();
  for (const s of spans) {
    if (!within(windows, s.startNs)) continue;
    const e = m.get(s.name) ?? { name: s.name, count: 0, total: 0, first: s.startNs };
    e.count++;
    e.total += s.endNs - s.startNs;
    m.set(s.name, e);
  }
  return [...m.values()].sort((a, b) => b.total - a.total);
}

/**
 * Ops such as `aten::item` that really blocked: they contain a synchronising runtime call (on CPU tensors they do not).
 * An op inside another on the same thread is the same sync (`aten::item` calls `aten::_local_scalar_dense`): only the
 * outermost, the one the user's code called, is kept (issue 47: both were listed for the same syncs).
 */
function blockingOps(model: TraceModel, spans: HostSpans): CpuSpan[] {
  const sc = model.gpu.syncCalls;
  const syncs: [number, number][] = [...spans.memcpyCalls];
  for (let i = 0; i < sc.count; i++) syncs.push([sc.startNs[i]!, sc.startNs[i]! + sc.durNs[i]!]);
  const u = unionOf(syncs);
  const blocking = model.syncOps.filter((op) => coveredLen(u, op.startNs, op.endNs) > 0);
  return outermost(blocking);
}

/** The spans not inside another of `spans` on the same thread (by start, the longer first where two start together). */
function outermost(spans: readonly CpuSpan[]): CpuSpan[] {
  const sorted = [...spans].sort((a, b) => a.startNs - b.startNs || b.endNs - a.endNs);
  const openEnd = new Map<number | string, number>();
  const out: CpuSpan[] = [];
  for (const s of sorted) {
    const end = openEnd.get(s.tid);
    if (end !== undefined && s.endNs <= end) continue;
    openEnd.set(s.tid, s.endNs);
    out.push(s);
  }
  return out;
}

/** Whether `t` falls inside a step's CPU span (ProfilerStep#N), where the training loop's own code runs. */
function insideStepSpan(model: TraceModel, t: number): boolean {
  for (const s of model.steps) if (t >= s.startNs && t < s.endNs) return true;
  return false;
}

/**
 * Time the host spent inside memcpy runtime calls in the loop's steps: a copy from or to pageable memory returns only
 * once the copy ran, after the work queued before it, so the thread waits there on the GPU (and a spinning wait counts
 * as its CPU time); an asynchronous copy from pinned memory returns at once.
 */
function memcpyBlockedNs(model: TraceModel, spans: HostSpans, windows: StepWindow[]): number {
  const mine = model.steps.length > 0 ? (t: number) => insideStepSpan(model, t) : (t: number) => within(windows, t);
  let total = 0;
  for (const [start, end] of spans.memcpyCalls) if (mine(start)) total += end - start;
  return total;
}

/**
 * The stepping thread's time a step outside the calls that wait on the GPU (memcpy, sync) or on the DataLoader: the
 * median over the loop's step spans (`ProfilerStep#N`), so the span the profiler's own stop lands in does not count.
 * An upper bound of the host's own work (the profiler's cost is in it); its backward's wait on autograd's thread is
 * in it too, as the backward's launches are host work. Null without two step spans.
 */
function hostFreeNs(model: TraceModel, spans: HostSpans): number | null {
  if (model.steps.length < 2) return null;
  const sc = model.gpu.syncCalls;
  const waits: [number, number][] = [...spans.memcpyCalls, ...model.dataLoader.map((d) => [d.startNs, d.endNs] as [number, number])];
  for (let i = 0; i < sc.count; i++) waits.push([sc.startNs[i]!, sc.startNs[i]! + sc.durNs[i]!]);
  const blocked = unionOf(waits);
  return median(model.steps.map((s) => s.endNs - s.startNs - coveredLen(blocked, s.startNs, s.endNs)));
}

/** The loop's sync calls by name; a blocking copy's own stream syncs are the copy's (`HostSpans.copySyncs`), not here. */
function syncCalls(
  model: TraceModel,
  windows: StepWindow[],
  copySyncs: ReadonlySet<number>,
): { name: string; count: number; totalNs: number }[] {
  const sc = model.gpu.syncCalls;
  const m = new Map<number, { count: number; total: number }>();
  // With step markers, only syncs inside a step's CPU span are the loop's: a window also covers the GPU tail of its
  // last step, where the profiler's own stop (a cudaDeviceSynchronize that drains the queue) runs.
  const mine = model.steps.length > 0 ? (t: number) => insideStepSpan(model, t) : (t: number) => within(windows, t);
  for (let i = 0; i < sc.count; i++) {
    if (!mine(sc.startNs[i]!) || copySyncs.has(i)) continue;
    const e = m.get(sc.nameId[i]!) ?? { count: 0, total: 0 };
    e.count++;
    e.total += sc.durNs[i]!;
    m.set(sc.nameId[i]!, e);
  }
  return [...m.entries()]
    .sort((a, b) => b[1].total - a[1].total)
    .map(([id, e]) => ({ name: model.names[id]!, count: e.count, totalNs: e.total }));
}

function structure(model: TraceModel, windows: StepWindow[]): TraceMetrics['structure'] {
  const nSteps = Math.max(1, windows.length);
  const dpDevices = new Set(model.gpu.logs.map((l) => l.device));
  const ddpForwards = model.ddpForwards.filter((f) => within(windows, f.startNs));
  const optimizerSteps = model.optimizerSteps.filter((f) => within(windows, f.startNs));
  // All-reduce launch times: CPU-side collective ops and the launches of NCCL all-reduce kernels.
  const c = model.collectives;
  const cpu = model.cpuAllReduceStartsNs;
  const times = new Float64Array(cpu.length + c.count);
  times.set(cpu);
  let n = cpu.length;
  for (let i = 0; i < c.count; i++) {
    if (!/all_?reduce/i.test(model.names[c.nameId[i]!]!)) continue;
    const t = launchStart(model, i);
    if (!Number.isNaN(t)) times[n++] = t;
  }
  const allReduceTimes = times.subarray(0, n).sort();
  let micro = 0;
  let microWithAllReduce = 0;
  // Forwards and steps are both sorted by start: one pass pairs consecutive forwards of a step,
  // and a binary search asks whether an all-reduce started between them.
  let f = 0;
  for (const w of model.steps) {
    while (f < ddpForwards.length && ddpForwards[f]!.startNs < w.startNs) f++;
    for (; f + 1 < ddpForwards.length && ddpForwards[f + 1]!.startNs < w.endNs; f++) {
      micro++;
      const lo = ddpForwards[f]!.startNs;
      const next = firstAfter(allReduceTimes, lo);
      if (next < allReduceTimes.length && allReduceTimes[next]! < ddpForwards[f + 1]!.startNs) microWithAllReduce++;
    }
  }
  return {
    dataParallel: model.dataParallelForwards.length > 0,
    dataParallelDevices: model.dataParallelForwards.length > 0 ? dpDevices.size : 0,
    ddp: ddpForwards.length > 0,
    ddpForwardsPerStep: ddpForwards.length / nSteps,
    optimizerStepsPerStep: optimizerSteps.length / nSteps,
    accumulationMicroStepsWithAllReduce: microWithAllReduce,
    accumulationMicroSteps: micro,
    framework: pickFramework(model.frameworks),
  };
}

/** When collective kernel i was launched; NaN when unknown. */
function launchStart(model: TraceModel, i: number): number {
  const c = model.collectives;
  if (!Number.isNaN(c.launchStartNs[i]!)) return c.launchStartNs[i]!;
  const corr = c.correlation[i]!;
  return corr >= 0 ? (model.gpu.launches.get(corr)?.startNs ?? Number.NaN) : Number.NaN;
}
