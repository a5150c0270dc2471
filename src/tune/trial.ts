/**
 * One trial of `gpuwise tune`: the probe's records of one run of the command at one value, reduced to what the
 * search needs (outcome, steady peak memory, step time, throughput) and the model's resident bytes. Pure.
 */
import type { ChildExit } from '../run/exit.js';
import { type HelloRecord, type ModelRecord, type ProbeRecord, type StepRecord, rankOf } from '../run/records.js';
import { modelBytes } from '../run/setup.js';
import { countedStepsOf, gpuStepTimesOf, stepStats } from '../run/steps.js';
import type { Snapshot } from '../telemetry/sample.js';

/** ok: ran its steps; oom: any rank ran out of GPU memory; failed: ended otherwise (not retried). */
export type TrialOutcome = 'ok' | 'oom' | 'failed' | 'timeout' | 'interrupted';

/** What the probe's model record says is resident whatever the batch: the fixed part of the memory line. */
export interface ModelFacts {
  name: string;
  /** Parameters and buffers, bytes (every dtype at its size). */
  weightBytes: number;
  /** Bytes of the trainable parameters: their gradients take as much (run/setup.ts residentBytes). */
  trainableBytes: number;
  optimizerClass: string | null;
  optimizerStateBytes: number;
  /** The dtype holding most parameters (`float32`, `bfloat16`, ...). */
  mainDtype: string | null;
  /** Protocol 2: the autocast dtype of the forward, and whether the model is compiled; null when not told. */
  autocastDtype: string | null;
  compiled: boolean | null;
  hfConfig: Record<string, unknown> | null;
}

export interface TrialSummary {
  value: number;
  outcome: TrialOutcome;
  /** One line: how the trial ended. */
  detail: string;
  /** Processes that sent step records. */
  ranks: number;
  /** Steps done by the slowest rank. */
  steps: number;
  /** `max_memory_allocated` at the last step, the largest over ranks (the tightest rank binds). */
  peakAllocatedBytes: number | null;
  peakReservedBytes: number | null;
  /** The peak was already reached in step 1 although the optimizer keeps state: set by the optimizer's first step, not by the batch. */
  peakFromFirstStep: boolean;
  /** Allocation retries (the allocator freed its cache to satisfy a request) by the last step, largest over ranks. */
  allocRetries: number | null;
  /** NVML's memory of the process minus its peak reserved (CUDA context, libraries), largest over ranks; null without NVML. */
  nonAllocatorBytes: number | null;
  /** `total_memory` of the device, smallest over ranks. */
  deviceTotalBytes: number | null;
  deviceName: string | null;
  worldSize: number;
  /** Median step time over the steady steps of the slowest rank (run/steps.ts: the first step and any warm-up left out). */
  stepTimeS: number | null;
  /** gpu: from the probe's CUDA events (as the GPU ran the steps; exact even in a short run); host: wall clock between step ends. */
  stepTimeFrom: 'gpu' | 'host' | null;
  /** Sum over ranks of (median samples per measured step / median step time); null when a batch's size was unknown. */
  samplesPerS: number | null;
  tokensPerS: number | null;
  /** Samples per step of rank 0 (to tell whether the value is the per-rank batch). */
  samplesPerStep: number | null;
  seqLen: number | null;
  /** An allocation failed but the command went on (caught by the script or by cuDNN's algorithm search). */
  recoveredOom: boolean;
  model: ModelFacts | null;
}

export interface TrialInput {
  value: number;
  records: ProbeRecord[];
  exit: ChildExit;
  /** gpuwise forwarded SIGINT/SIGTERM (the user interrupted tune). */
  forwardedSignal: string | null;
  /** Why tune ended the command itself: `oom` (a rank ran out of memory) or `timeout`; null otherwise. */
  stoppedBy: 'oom' | 'timeout' | null;
  /** The command's stderr matched an out-of-memory message. */
  stderrOom: boolean;
  /** The last lines of the command's stderr (for the failure detail). */
  stderrTail: string[];
  gpuSamples: Snapshot[] | null;
}

export function modelFacts(m: ModelRecord): ModelFacts {
  const b = modelBytes(m);
  return {
    name: m.name,
    weightBytes: b.weightBytes + b.buffersBytes,
    trainableBytes: b.trainableBytes,
    optimizerClass: m.optimizer?.class ?? null,
    optimizerStateBytes: b.optimizerStateBytes,
    mainDtype: b.mainDtype,
    autocastDtype: m.autocastDtype ?? null,
    compiled: m.compiled ?? null,
    hfConfig: m.hfConfig,
  };
}

interface RankFigures {
  rank: number;
  steps: number;
  stepTimeS: number | null;
  stepTimeFrom: 'gpu' | 'host' | null;
  samplesPerStep: number | null;
  tokensPerStep: number | null;
  seqLen: number | null;
  first: StepRecord | null;
  last: StepRecord | null;
  nvmlBytes: number | null;
  deviceTotalBytes: number | null;
  deviceName: string | null;
}

function rankFigures(pid: number, recs: ProbeRecord[], samples: Snapshot[] | null): RankFigures {
  const steps = recs.filter((r): r is StepRecord => r.type === 'step').sort((a, b) => a.step - b.step);
  // The one definition of step statistics (run/steps.ts): steady steps, GPU times when they cover the steps.
  const stats = stepStats(steps, gpuStepTimesOf(recs), [], false, countedStepsOf(recs));
  const withMem = steps.filter((s) => s.memory !== null);
  const hello = recs.find((r): r is HelloRecord => r.type === 'hello') ?? null;
  const devIndex = withMem[withMem.length - 1]?.memory?.device ?? hello?.cuda.currentDevice ?? 0;
  const dev = hello?.cuda.devices.find((d) => d.index === devIndex) ?? null;
  let nvml: number | null = null;
  for (const s of samples ?? []) {
    let sum: number | null = null;
    for (const g of s.gpus)
      for (const p of g.processes) if (p.pid === pid && p.usedMemoryBytes !== null) sum = (sum ?? 0) + p.usedMemoryBytes;
    if (sum !== null) nvml = Math.max(nvml ?? 0, sum);
  }
  return {
    rank: rankOf(recs[0] as ProbeRecord),
    steps: stats.steps, // every step the process counted: past its first 2048 the probe records only a sample
    stepTimeS: stats.medianS,
    stepTimeFrom: stats.measuredSteps === 0 ? null : stats.timing,
    samplesPerStep: stats.samplesPerStep ?? null,
    tokensPerStep: stats.tokensPerStep ?? null,
    seqLen: stats.seqLen,
    first: withMem[0] ?? null,
    last: withMem[withMem.length - 1] ?? null,
    nvmlBytes: nvml,
    deviceTotalBytes: dev?.totalMemoryBytes ?? null,
    deviceName: dev?.name ?? null,
  };
}

const maxOf = (xs: (number | null)[]): number | null => xs.reduce<number | null>((m, x) => (x === null ? m : Math.max(m ?? x, x)), null);
const minOf = (xs: (number | null)[]): number | null => xs.reduce<number | null>((m, x) => (x === null ? m : Math.min(m ?? x, x)), null);

function firstLine(s: string): string {
  const line = s.split('\n').find((l) => l.trim() !== '') ?? '';
  return line.length > 200 ? `${line.slice(0, 197)}...` : line;
}

/** Reduces one trial's records and exit to its summary. Out of memory on any rank makes the whole trial `oom`. */
export function summarizeTrial(input: TrialInput): TrialSummary {
  const byPid = new Map<number, ProbeRecord[]>();
  for (const r of input.records) byPid.set(r.pid, [...(byPid.get(r.pid) ?? []), r]);
  const ranks: RankFigures[] = [];
  for (const [pid, recs] of byPid) if (recs.some((r) => r.type === 'step')) ranks.push(rankFigures(pid, recs, input.gpuSamples));
  ranks.sort((a, b) => a.rank - b.rank);

  const exceptions = input.records.filter((r) => r.type === 'exception');
  const oomException = exceptions.find((r) => r.type === 'exception' && r.outOfMemory);
  const oomRecord = input.records.find((r) => r.type === 'oom');
  const otherException = exceptions.find((r) => r.type === 'exception' && !r.outOfMemory && r.exception !== 'KeyboardInterrupt');
  const code = input.exit.code;

  let outcome: TrialOutcome;
  let detail: string;
  if (input.forwardedSignal !== null) {
    outcome = 'interrupted';
    detail = `interrupted (${input.forwardedSignal})`;
  } else if (oomException || input.stoppedBy === 'oom' || input.stderrOom || (oomRecord && code !== 0)) {
    outcome = 'oom';
    const where = oomException ?? oomRecord;
    const step = oomException?.type === 'exception' ? oomException.step + 1 : oomRecord?.type === 'oom' ? oomRecord.step : null;
    detail = where
      ? `out of memory on rank ${rankOf(where)}${step !== null ? ` in step ${step}` : ''}`
      : 'out of memory (the command said so on stderr)';
  } else if (input.stoppedBy === 'timeout') {
    outcome = 'timeout';
    detail = 'stopped: the trial ran past --timeout';
  } else if (code === 0) {
    outcome = 'ok';
    const steps = minOf(ranks.map((r) => r.steps)) ?? 0;
    detail = steps > 0 ? `${steps} steps` : 'exit 0, but the probe saw no training step';
  } else {
    outcome = 'failed';
    const tail = input.stderrTail.filter((l) => l.trim() !== '');
    detail =
      otherException?.type === 'exception'
        ? `exit code ${code}: ${otherException.exception}: ${firstLine(otherException.message)}`
        : `exit code ${code}${input.exit.signal ? ` (${input.exit.signal})` : ''}${tail.length ? `: ${firstLine(tail[tail.length - 1] as string)}` : ''}`;
  }

  const stateBytes = (() => {
    const m = input.records.find((r): r is ModelRecord => r.type === 'model');
    return m?.optimizer?.stateBytes ?? 0;
  })();
  const lasts = ranks.map((r) => r.last);
  const peakAllocated = maxOf(lasts.map((l) => l?.memory?.peakAllocatedBytes ?? null));
  const peakFromFirstStep =
    stateBytes > 0 &&
    ranks.some(
      (r) =>
        r.first !== null &&
        r.last !== null &&
        r.last.step > 1 &&
        (r.last.memory?.peakAllocatedBytes ?? 0) <= (r.first.memory?.peakAllocatedBytes ?? 0),
    );
  const nonAlloc = maxOf(ranks.map((r) => (r.nvmlBytes !== null && r.last?.memory ? r.nvmlBytes - r.last.memory.peakReservedBytes : null)));
  const model = (() => {
    const recs = input.records.filter((r): r is ModelRecord => r.type === 'model').sort((a, b) => rankOf(a) - rankOf(b));
    return recs[0] ? modelFacts(recs[0]) : null;
  })();
  const sumOrNull = (xs: (number | null)[]) =>
    xs.length > 0 && xs.every((x) => x !== null) ? xs.reduce<number>((a, x) => a + (x as number), 0) : null;
  const hello = input.records.find((r): r is HelloRecord => r.type === 'hello');
  return {
    value: input.value,
    outcome,
    detail,
    ranks: ranks.length,
    steps: minOf(ranks.map((r) => r.steps)) ?? 0,
    peakAllocatedBytes: peakAllocated,
    peakReservedBytes: maxOf(lasts.map((l) => l?.memory?.peakReservedBytes ?? null)),
    peakFromFirstStep,
    allocRetries: maxOf(lasts.map((l) => l?.memory?.allocRetries ?? null)),
    nonAllocatorBytes: nonAlloc,
    deviceTotalBytes: minOf(ranks.map((r) => r.deviceTotalBytes)),
    deviceName: ranks.find((r) => r.deviceName !== null)?.deviceName ?? null,
    worldSize: Math.max(ranks.length, hello?.worldSize ?? 1),
    stepTimeS: maxOf(ranks.map((r) => r.stepTimeS)),
    stepTimeFrom: ranks.some((r) => r.stepTimeFrom === 'host') ? 'host' : (ranks[0]?.stepTimeFrom ?? null),
    samplesPerS: sumOrNull(ranks.map((r) => (r.samplesPerStep !== null && r.stepTimeS ? r.samplesPerStep / r.stepTimeS : null))),
    tokensPerS: sumOrNull(ranks.map((r) => (r.tokensPerStep !== null && r.stepTimeS ? r.tokensPerStep / r.stepTimeS : null))),
    samplesPerStep: ranks[0]?.samplesPerStep ?? null,
    seqLen: ranks[0]?.seqLen ?? null,
    recoveredOom: outcome === 'ok' && oomRecord !== undefined,
    model,
  };
}

/** Messages PyTorch, cuBLAS, cuDNN and NCCL print when GPU memory runs out. */
export const OOM_TEXT =
  /CUDA out of memory|OutOfMemoryError|CUDA error: out of memory|CUBLAS_STATUS_ALLOC_FAILED|CUDNN_STATUS_ALLOC_FAILED|Cuda failure 'out of memory'|HIP out of memory/;
