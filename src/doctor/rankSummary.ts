/**
 * One process's summary in the report (pure): its steady step statistics (run/steps.ts), its memory beside what NVML
 * saw of it, and how it ended.
 */
import { epochStartsOf, loaderFacts } from '../pace/run.js';
import type { ExceptionRecord, OomRecord, ProbeRecord } from '../run/records.js';
import { countedStepsOf, gpuStepTimesOf, type StepStats, stepStats, stepTimelineOf } from '../run/steps.js';
import type { Snapshot } from '../telemetry/sample.js';
import { nvmlUsedByPid } from './gpuSamples.js';
import type { RankSummary } from './reportTypes.js';
import { lastMemoryOf, type ProcessRecords } from './stages/records.js';

/** The ranks' summaries, by rank then pid. */
export function summarizeRanks(processes: readonly ProcessRecords[], gpuSamples: Snapshot[] | null, disconnectedAtMs?: Record<number, number>): RankSummary[] {
  return processes.map((p) => summarizeRank(p, gpuSamples, disconnectedAtMs)).sort((a, b) => a.rank - b.rank || a.pid - b.pid);
}

/** One rank's summary: steady step statistics, memory beside NVML, how it ended. */
function summarizeRank(p: ProcessRecords, gpuSamples: Snapshot[] | null, disconnectedAtMs?: Record<number, number>): RankSummary {
  const recs = p.records;
  const lastMem = lastMemoryOf(p);
  const { max: nvml, timeline: nvmlTimeline } = nvmlUsedByPid(gpuSamples, p.pid);
  const end = recs.find((r) => r.type === 'end');
  return {
    rank: p.rank,
    rankFromEnv: p.rankFromEnv,
    pid: p.pid,
    localRank: p.hello?.localRank ?? null,
    steps: stepsOf(p),
    allocator: lastMem,
    nvmlUsedBytes: nvml,
    nonAllocatorBytes: nvml !== null && lastMem !== null ? nvml - lastMem.peakReservedBytes : null,
    nvmlTimeline,
    stepTimeline: stepTimelineOf(p.steps),
    ...endOf(recs),
    ...(end && end.type === 'end' && end.forwardGradModes ? { forwardGradModes: end.forwardGradModes } : {}),
    ...(disconnectedAtMs?.[p.pid] !== undefined ? { endedAtS: (disconnectedAtMs[p.pid] as number) / 1000 } : {}),
  };
}

function stepsOf(p: ProcessRecords): StepStats {
  const recs = p.records;
  return stepStats(
    p.steps,
    gpuStepTimesOf(recs),
    epochStartsOf(p.loader),
    recs.some((r) => r.type === 'profile-end' && r.cuptiDetached === true),
    countedStepsOf(recs),
    // An epoch start holds up each worker's first batch (the main loader's workers).
    Math.max(1, loaderFacts(p.loader, null)?.workers ?? 1),
  );
}

/** How the process ended, from its records: the exception, the out-of-memory error, the probe's own error, the end's reason. */
function endOf(recs: readonly ProbeRecord[]): Pick<RankSummary, 'exception' | 'oom' | 'probeError' | 'endReason'> {
  const exc = recs.find((r): r is ExceptionRecord => r.type === 'exception') ?? null;
  const oom = recs.find((r): r is OomRecord => r.type === 'oom') ?? null;
  const err = recs.find((r) => r.type === 'probe-error');
  const end = recs.find((r) => r.type === 'end');
  return {
    exception: exc ? { name: exc.exception, message: exc.message, step: exc.step, outOfMemory: exc.outOfMemory } : null,
    oom: oom
      ? { step: oom.step, device: oom.device, allocBytes: oom.allocBytes, deviceFreeBytes: oom.deviceFreeBytes, snapshot: oom.snapshot }
      : null,
    probeError: err && err.type === 'probe-error' ? err.error : null,
    endReason: end && end.type === 'end' ? end.reason : null,
  };
}

