/**
 * What every rule shares (pure): the rule types (`RankRule`, the `RunContext` doctor hands over), `paced`, a finding
 * whose fix's gain the pace model makes on the pipeline given (doctor's run) or the window's, and the tests several
 * rules ask the same way: the step, the matmul time, fp32 matmuls worth a finding, a compiled model, the GPU.
 */
import { type Finding, type FindingParts, finding } from '../../findings/finding.js';
import { type GpuSpec, gpuOfDevice } from '../../gpus/catalogue.js';
import type { Fix } from '../../pace/fix.js';
import { gainOf } from '../../pace/gain.js';
import type { Job } from '../../pace/job.js';
import type { Pipeline } from '../../pace/pipeline.js';
import { windowPipeline } from '../../pace/window.js';
import type { CollectiveTimings } from '../../trace/metrics/collectives.js';
import type { ModelRecord } from '../../run/records.js';
import type { DecodeStats } from '../../run/steps.js';
import type { TraceMetrics } from '../../trace/metrics/types.js';
import { fmtMs, fmtPct } from '../../util/format.js';

export { type FindingParts, finding } from '../../findings/finding.js';

/**
 * What doctor knows of the run beyond its trace (analyze has only the trace), for one rank: a view of doctor's run model
 * (doctor/traceRules.ts reads it off the `Run` and its pace); the rules read it and decide themselves, nothing rewrites
 * their findings afterwards.
 * - `askedHalf`: the half precision the run asked for, read off its launch (run/setup.ts askedPrecision: accelerate's
 *   state, a launcher's or script's flag), and what showed it. A precision rule that sees fp32 matmuls in such a run
 *   says that autocast does not reach them, instead of recommending the mixed precision the run already asks for.
 * - `pace`: the rank's pipeline outside the profiler, which its fixes' gains are judged on (else the window's own).
 * - `compiled`: the probe saw the model wrapped by torch.compile; compiling it is no advice (a trace shows Triton
 *   kernels only for what compile could capture).
 * - `decode`: the rank's steps are decode steps (generation); launch-bound's fix is then a static KV cache with CUDA
 *   graphs, not "compile the model".
 * - `inference`: the rank trains nothing: its steps are decode steps, or the probe counted its outermost module's
 *   forwards and none ran with gradients, and it built no optimizer (generation and evaluation loops, a static-cache
 *   `generate()` whose steps are graph replays). Its precision lever is the weights themselves in bf16, not autocast;
 *   its syncs are its own loop's results read on the host, not a loss logged.
 * - `windowsApart`: the ranks' profiler windows began at different steps, so the time one rank waits for another in
 *   them is the profiler's; the rules read off those waits stay silent.
 * - `gpuPeakBytes`: the process's NVML peak memory on each GPU it used, its output device (cuda:0) first.
 * - `probeBalance`: the ranks' balance timed by the probe over every steady step, the same for every rank of the job;
 *   rank-imbalance weighs the window's figures against it.
 * - `dataParallel`: for a model split over GPUs by hand, data parallelism over the same GPUs when the whole model fits
 *   on one (doctor's planner fit); model-parallel-bubble leads with it when it beats the pipeline.
 */
export interface RunContext {
  askedHalf: { dtype: 'bfloat16' | 'float16'; evidence: string } | null;
  pace?: Pipeline | null;
  compiled?: boolean;
  decode?: DecodeStats | null;
  inference?: boolean;
  windowsApart?: boolean;
  gpuPeakBytes?: readonly GpuPeak[] | null;
  probeBalance?: ProbeBalance | null;
  dataParallel?: DataParallelAlternative | null;
  /**
   * This rank's wait a step in collectives for the other ranks (window ns; trace/metrics/collectives.ts), where the
   * ranks' collectives were matched: the part of its exposed communication that is the others' work, not its own.
   */
  peerWaitNs?: number;
}

/** Data parallelism for a model split by hand, when the whole model fits on one GPU (doctor/dataParallelFix.ts). */
export interface DataParallelAlternative {
  /** DDP when the whole model's state fits on each GPU, else FSDP2 when it fits sharded. */
  layout: 'ddp' | 'fsdp';
  /** Predicted peak per GPU and on what it rests: the planner's memory model, or an upper bound from the probe's bytes. */
  peakBytes: number;
  basis: 'planner' | 'probe-bound';
  /** The peak against the budget, in words ("of the 125 GiB budget"). */
  budgetText: string;
  /** Gradient bytes all-reduced each step and the link they cross (the GPU catalogue's intra-node bandwidth). */
  gradBytes: number;
  linkBytesPerS: number;
}

/**
 * The ranks' balance as the probe timed it over every steady step (doctor/distributed.ts). In a synchronous job the
 * ranks' steps come out nearly equal whoever is slow; what differs is how they are spent: a rank that loads its
 * batches more slowly shows it as DataLoader wait while the others wait in the collective. A window is a few steps
 * with the profiler's own cost; these are all of them.
 */
export interface ProbeBalance {
  ranks: number[];
  /** The skew and the DataLoader waits' spread, one line per rank, why the straggler is slower. */
  evidence: string[];
  data: Record<string, number | string | null>;
  /** The rank the others wait for when the steps name one (by its step time or its DataLoader wait), with the title. */
  straggler: { rank: number; by: 'step-time' | 'dataloader-wait'; title: string } | null;
  /** The ranks' medians could be compared (two or more had one). */
  compared: boolean;
  /**
   * The job as the probe times it (pace/job.ts): each rank's pipeline less its wait in collectives, the wait read off
   * the DataLoader waits (doctor/distributed.ts probeWaitsNs); balancing's gain is read on it. Null without one.
   */
  job: Job | null;
  /** What the probe says of balancing, in words and numbers (the fix's arithmetic). */
  balanceArithmetic: string;
}

/** One GPU's peak memory used by the process (NVML), with the GPU's name as the report writes it ("GPU 1 (cuda:0)"). */
export interface GpuPeak {
  index: number;
  name: string;
  peakBytes: number;
}

/**
 * A rule reads one rank's metrics (and, under doctor, the run's context: the asked precision, the rank's pipeline) and
 * returns at most one finding; its fix's gain is judged on `ctx.pace`, by default the window's own pipeline.
 */
export type RankRule = (m: TraceMetrics, ctx?: RunContext) => Finding | null;
/** A rule that reads the model the probe described (doctor only: its modules' dtypes, its optimizer's state), not a window. */
export type ModelRule = (model: ModelRecord) => Finding | null;
/**
 * A rule that compares ranks (runs only with two or more); `collectives[i]` is rank i's, or empty when not given;
 * `contexts[i]` rank i's context, as for a rank rule.
 */
export type CrossRankRule = (
  ranks: TraceMetrics[],
  collectives: readonly CollectiveTimings[],
  contexts?: readonly (RunContext | undefined)[],
) => Finding | null;

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

/**
 * The model is compiled, as the rules judge it: the probe saw torch.compile (`ctx.compiled`), or the window ran
 * Inductor's Triton kernels (KernelMix.tritonKernels: trace/kernelClass.ts's isInductorKernel). doctor's what-ifs and
 * the planner's hint ask run/setup.ts's inferCompiled, which names its evidence, on the same two facts.
 */
export function isCompiled(m: TraceMetrics, ctx?: RunContext | null): boolean {
  return ctx?.compiled === true || m.kernelMix.tritonKernels > 0;
}

/** fp32 SIMT matmuls worth no-tensor-cores' finding: this share of the matmul time or more. */
const FP32_MIN_SHARE_OF_MATMUL = 0.1;

/**
 * fp32 (SIMT) matmul time per step when it is a share of the matmuls worth a finding (FP32_MIN_SHARE_OF_MATMUL), else
 * null: no-tensor-cores' finding (compute.ts), which mixed-precision (precision.ts) leaves to it.
 */
export function fp32MatmulNsPerStep(m: TraceMetrics): number | null {
  const fp32 = m.precision.fp32Ns / Math.max(1, m.steps.length);
  return fp32 > 0 && fp32 / Math.max(matmulNs(m), 1) >= FP32_MIN_SHARE_OF_MATMUL ? fp32 : null;
}

export function matmulNs(m: TraceMetrics): number {
  const k = m.perStep.kernelNsByCategory;
  return k.gemm + k.conv + k.attention;
}

/** The trace's GPU in the catalogue (its peaks), or null for one the catalogue lacks. */
export function gpuOf(m: TraceMetrics): GpuSpec | null {
  return gpuOfDevice(m.devices[0]);
}

/** The pipeline a rule's gains come from: the run's when doctor gives one (`RunContext.pace`), else the window's. */
export function pipelineOf(m: TraceMetrics, pace: Pipeline | null | undefined): Pipeline {
  return pace ?? windowPipeline(m);
}

/** A finding's parts with its fix as data and the gain of that fix on the pipeline (the window's unless given). */
export function pacedParts(
  m: TraceMetrics,
  pace: Pipeline | null | undefined,
  parts: Omit<FindingParts, 'estimatedGain' | 'fix'>,
  fix: Fix,
): FindingParts {
  return { ...parts, fix, estimatedGain: gainOf(pipelineOf(m, pace), fix) };
}

/** A finding whose fix is data and whose gain is that fix applied to the pipeline (the window's unless given). */
export function paced(
  m: TraceMetrics,
  pace: Pipeline | null | undefined,
  parts: Omit<FindingParts, 'estimatedGain' | 'fix'>,
  fix: Fix,
): Finding {
  return finding(pacedParts(m, pace, parts, fix));
}

/**
 * "(5.1% of the profiled window's 189 ms step)": a share of the step with the step named for what it is. doctor's
 * report gives the run's mean step beside it (184 ms: the plan, the expected lines), and the window's step, slowed by
 * the profiler, is another figure (issue 47: near-duplicate numbers).
 */
export function ofWindowStep(partNs: number, stepNs: number): string {
  return `(${fmtPct(stepNs > 0 ? partNs / stepNs : 0)} of the profiled window's ${fmtMs(stepNs)} step)`;
}
