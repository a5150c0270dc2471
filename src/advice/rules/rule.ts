import { type Finding, type FindingParts, finding } from '../../findings/finding.js';
import { type GpuSpec, lookupGpu } from '../../gpus/catalogue.js';
import type { Fix } from '../../pace/fix.js';
import { gainOf } from '../../pace/gain.js';
import type { Pipeline } from '../../pace/pipeline.js';
import { windowPipeline } from '../../pace/window.js';
import type { CollectiveTimings } from '../../trace/metrics/collectives.js';
import type { TraceMetrics } from '../../trace/metrics/types.js';
import { fmtMs } from '../../util/format.js';

export { type FindingParts, finding } from '../../findings/finding.js';

/**
 * What doctor knows of the run beyond its trace (analyze has only the trace): the half precision the run asked for,
 * read off its launch (run/setup.ts askedPrecision: accelerate's state, a launcher's or script's flag), and what
 * showed it. A precision rule that sees fp32 matmuls in such a run says that autocast does not reach them, instead of
 * recommending the mixed precision the run already asks for. `pace`: the rank's pipeline outside the profiler, which
 * its fixes' gains are judged on (else the window's own).
 */
export interface RunContext {
  askedHalf: { dtype: 'bfloat16' | 'float16'; evidence: string } | null;
  pace?: Pipeline | null;
}

/**
 * A rule reads one rank's metrics (and, under doctor, the run's context: the asked precision, the rank's pipeline) and
 * returns at most one finding; its fix's gain is judged on `ctx.pace`, by default the window's own pipeline.
 */
export type RankRule = (m: TraceMetrics, ctx?: RunContext) => Finding | null;
/**
 * A rule that compares ranks (runs only with two or more); `collectives[i]` is rank i's, or empty when not given;
 * `paces[i]` rank i's pipeline, as for a rank rule.
 */
export type CrossRankRule = (ranks: TraceMetrics[], collectives: readonly CollectiveTimings[], paces?: readonly (Pipeline | null)[]) => Finding | null;

/**
 * The step time the window's figures are shares of: the mean over the analysed steps, the same basis as every
 * per-step figure in the metrics. Gains are not computed on it but on the pipeline (`paced`).
 */
export function stepNs(m: TraceMetrics): number {
  return m.perStep.durNs;
}

/**
 * When something happened, said by the analysed step it fell in ("in step 5, 12.3 ms after it began"): a trace's
 * own clock starts anywhere (even after the event: a negative time), a step is what the reader can find.
 */
export function whenInSteps(m: TraceMetrics, atNs: number): string {
  const s = m.steps.find((x) => atNs >= x.startNs && atNs < x.endNs);
  if (s) return `in step ${s.step}, ${fmtMs(atNs - s.startNs)} after it began`;
  const first = m.steps[0];
  const last = m.steps[m.steps.length - 1];
  if (first && atNs < first.startNs) return `${fmtMs(first.startNs - atNs)} before the first analysed step`;
  return last ? `${fmtMs(atNs - last.endNs)} after the last analysed step` : 'outside the analysed steps';
}

export function matmulNs(m: TraceMetrics): number {
  const k = m.perStep.kernelNsByCategory;
  return k.gemm + k.conv + k.attention;
}

/** The trace's GPU in the catalogue (its peaks), or null for one the catalogue lacks. */
export function gpuOf(m: TraceMetrics): GpuSpec | null {
  const d = m.devices[0];
  return d?.name ? lookupGpu({ name: d.name, memoryBytes: d.totalMemoryBytes }) : null;
}

/** A finding's parts with its fix as data and the gain of that fix on the pipeline (the window's unless given). */
export function pacedParts(m: TraceMetrics, pace: Pipeline | null | undefined, parts: Omit<FindingParts, 'estimatedGain' | 'fix'>, fix: Fix): FindingParts {
  return { ...parts, fix, estimatedGain: gainOf(pace ?? windowPipeline(m), fix) };
}

/** A finding whose fix is data and whose gain is that fix applied to the pipeline (the window's unless given). */
export function paced(m: TraceMetrics, pace: Pipeline | null | undefined, parts: Omit<FindingParts, 'estimatedGain' | 'fix'>, fix: Fix): Finding {
  return finding(pacedParts(m, pace, parts, fix));
}
