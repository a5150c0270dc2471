/**
 * analyze's rules on the run's windows (advice/engine.ts diagnose), each rank's `RunContext` a view of the run (pure):
 * the precision asked for, the rank's pipeline (the rules' gains are judged on the run outside the profiler), a
 * compiled model, decode steps, a loop that trains nothing, windows begun apart, NVML peaks, the probe's rank balance,
 * a split model's data-parallel fit (dataParallelFix.ts); a fix led by the training framework's own switch when the
 * probe saw one, none in a generation loop.
 */
import { diagnose } from '../advice/engine.js';
import { frameworkNamedBy, inFramework, inTraceFramework } from '../advice/framework.js';
import type { GpuPeak, RunContext } from '../advice/rules/rule.js';
import type { Finding } from '../findings/finding.js';
import type { Precision } from '../planner/setup.js';
import type { ModelRecord } from '../run/records.js';
import type { Inferred } from '../run/setup.js';
import type { CollectiveTimings } from '../trace/metrics/collectives.js';
import type { TraceMetrics } from '../trace/metrics/types.js';
import { dataParallelAlternativeOf } from './dataParallelFix.js';
import type { RankSummary } from './reportTypes.js';
import type { SharingGpu } from './sharing.js';
import type { RunPace } from './stages/pace.js';
import { oneJob, type Run, windowsOf } from './stages/run.js';

/** The rules' findings on every analysed window: together for ranks of one job, apart for unrelated processes. */
export function traceRuleFindings(run: Run, pace: RunPace): Finding[] {
  const analysed = windowsOf(run.input.traces);
  const metrics = analysed.map((t) => t.metrics as TraceMetrics);
  const collectives = analysed.every((t) => t.collectives !== null) ? analysed.map((t) => t.collectives as CollectiveTimings) : [];
  const contextOf = (m: TraceMetrics) => ruleContextOf(run, pace, m);
  const found = oneJob(analysed)
    ? diagnose(metrics, collectives, metrics.map(contextOf))
    : metrics.flatMap((m, i) => diagnose([m], collectives.length ? [collectives[i] as CollectiveTimings] : [], [contextOf(m)]));
  return inRunFramework(found, run, metrics);
}

/** What doctor knows of a window's rank beyond the trace (advice/rules/rule.ts RunContext), read off the run. */
function ruleContextOf(run: Run, pace: RunPace, m: TraceMetrics): RunContext {
  const rank = run.ranks.find((r) => r.rank === m.rank);
  return {
    askedHalf: askedHalfOf(run.asked),
    pace: pace.byRank.get(m.rank) ?? null,
    compiled: run.model?.compiled === true,
    decode: rank?.steps.decode ?? null,
    inference: trainsNothing(rank, run.model),
    windowsApart: run.windowsApart !== null,
    gpuPeakBytes: run.gpus ? gpuPeaksOf(run.gpus, rank?.pid ?? null) : null,
    probeBalance: pace.probeBalance,
    dataParallel: dataParallelAlternativeOf(m, run.model, run.setup, run.hardware, run.planModel.model),
  };
}

/**
 * The probe's framework (the call stack at a step) first; else the one the trace names, as analyze does. A loop that
 * trains nothing (generation, evaluation) is no training loop: its fixes are not a Trainer's or Lightning's switches.
 */
function inRunFramework(found: Finding[], run: Run, metrics: readonly TraceMetrics[]): Finding[] {
  const model = run.model;
  const named = model?.framework ? null : frameworkNamedBy(metrics);
  const summaryOf = (rank: number) => run.ranks.find((r) => r.rank === rank);
  return found.map((f) =>
    trainsNothing(summaryOf(f.ranks[0] ?? 0), model) ? f : named ? inTraceFramework(f, named) : inFramework(f, model?.framework),
  );
}

/** The half precision the run asked for, as the rules' context carries it. */
function askedHalfOf(asked: Inferred<Precision | null> | null): RunContext['askedHalf'] {
  const v = asked?.value ?? null;
  const dtype = v === 'amp-bf16' || v === 'bf16' ? 'bfloat16' : v === 'amp-fp16' ? 'float16' : null;
  return asked && dtype ? { dtype, evidence: asked.evidence } : null;
}

/**
 * Whether a rank trains nothing (RunContext.inference): its steps are decode steps, or the probe counted its outermost
 * module's forwards, none with gradients, and no optimizer was built. Unknown (an older probe, no forward seen) is not
 * inference.
 */
function trainsNothing(rank: RankSummary | undefined, model: ModelRecord | null): boolean {
  if (!rank) return false;
  if (rank.steps.decode) return true;
  const modes = rank.forwardGradModes;
  return modes !== undefined && modes.grad === 0 && modes.noGrad + modes.inference > 0 && model?.optimizer == null;
}

/** The process's NVML peak memory on each GPU, in CUDA ordinal order where known (cuda:0, the output device, first). */
function gpuPeaksOf(gpus: readonly SharingGpu[], pid: number | null): GpuPeak[] | null {
  if (pid === null) return null;
  const rows = gpus
    .map((g) => ({ g, peak: g.processes?.find((x) => x.pid === pid)?.peakUsedBytes ?? null }))
    .filter((x): x is { g: SharingGpu; peak: number } => x.peak !== null)
    .sort((a, b) => (a.g.cudaIndex ?? a.g.index) - (b.g.cudaIndex ?? b.g.index));
  return rows.map(({ g, peak }) => ({
    index: g.index,
    name: `GPU ${g.index}${typeof g.cudaIndex === 'number' ? ` (cuda:${g.cudaIndex})` : ''}`,
    peakBytes: peak,
  }));
}
