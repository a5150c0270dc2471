/**
 * What a trace can support. A finding is only as good as the steps it rests on:
 * a trace that is not from torch.profiler, holds no GPU activity, or was cut
 * before its steps' GPU work was written must not yield findings (let alone a
 * "healthy" verdict) about data it does not hold. `assessTrace` decides which
 * steps are whole, analyses only those, and says why when nothing can be judged.
 *
 * Why the cut matters: torch.profiler (Kineto) writes every CPU op first, then
 * the GPU activity (with its runtime calls), then GPU annotations and process
 * metadata. A file cut in the CPU part holds step markers with no GPU work at
 * all: nothing to judge. One cut after the GPU part lost only metadata: every
 * step is whole. One cut inside the GPU part is the hard case: the activity is
 * written as a few time-ordered runs (one per launching thread: a backward
 * thread's kernels may come after the main thread's, from the first step
 * again), so a prefix never proves a step whole. There, steps count only when
 * they have GPU work and every device's activity was read past their end, and
 * the findings' severity is capped at medium (`severityCap`), so that a CI gate
 * (`--fail-on high`) never fails on a step that may be partial. Pure.
 */
import type { Finding, Severity } from '../findings/finding.js';
import { analyzeTrace } from './metrics/index.js';
import { findStep, StepWindowBuilder } from './metrics/steps.js';
import type { TraceMetrics } from './metrics/types.js';
import type { TraceModel } from './model.js';
import { forEachOp } from './opLog.js';

/** Event categories torch.profiler (Kineto) writes; any of them marks a PyTorch profiler trace. */
const KINETO_CATEGORIES = [
  'cpu_op',
  'kernel',
  'cuda_runtime',
  'cuda_driver',
  'gpu_memcpy',
  'gpu_memset',
  'user_annotation',
  'gpu_user_annotation',
  'python_function',
  'ac2g',
  'fwdbwd',
  'cpu_instant_event',
  'overhead',
  'Trace',
];
/** What Kineto writes after all GPU activity: reading any of it means the GPU part was read whole. */
const AFTER_GPU_ACTIVITY = ['gpu_user_annotation', 'Trace', 'M'];
/** Categories of TensorFlow's Chrome timelines (tf.profiler, `timeline.Timeline`). */
const TENSORFLOW_CATEGORIES = ['Op', 'DataFlow', 'Tensor'];

export type TraceProducer = 'pytorch-profiler' | 'tensorflow' | 'unknown';

export interface TraceCoverage {
  /** Who wrote the trace, as far as its categories and metadata tell. */
  producer: TraceProducer;
  /** Events read (all categories). */
  events: number;
  /** Why reading stopped before the end of the trace; null when read to its end. */
  endedEarly: string | null;
  /** GPU ops (kernels, memcpys, memsets) read. */
  gpuOps: number;
  /** ProfilerStep markers read. */
  stepMarkers: number;
  /** Steps the analysis and its findings rest on: whole, with GPU work. */
  stepsUsed: number[];
  /** Steps read but left out, and why. */
  stepsLeftOut: { step: number; reason: 'no GPU work' | 'cut by the end of the input' }[];
  /** On a trace that ended inside its GPU activity: how far that was read, ns from the trace origin (the least over devices). */
  gpuReadToNs: number | null;
  /** The highest severity its findings may have: 'medium' when the input ended inside its GPU activity, else null. */
  severityCap: Severity | null;
  /** Why nothing in this trace can be judged; null when it supports findings. */
  nothingToJudge: string | null;
}

export interface AssessedTrace {
  coverage: TraceCoverage;
  /** Metrics over the whole steps only; null when nothing can be judged. */
  metrics: TraceMetrics | null;
  /** The model the metrics were computed from (its steps restricted to the whole ones): for collective timings. */
  model: TraceModel;
}

/** Analyses the part of a trace that supports findings, and says how much that is. */
export function assessTrace(model: TraceModel): AssessedTrace {
  const producer = producerOf(model);
  const coverage: TraceCoverage = {
    producer,
    events: Object.values(model.eventCounts).reduce((a, b) => a + b, 0),
    endedEarly: model.endedEarly,
    gpuOps: model.gpu.count,
    stepMarkers: model.steps.length,
    stepsUsed: [],
    stepsLeftOut: [],
    gpuReadToNs: null,
    severityCap: null,
    nothingToJudge: null,
  };
  if (producer !== 'pytorch-profiler') {
    coverage.nothingToJudge =
      producer === 'tensorflow'
        ? 'a TensorFlow timeline, not a PyTorch profiler trace: gpuwise reads traces written by torch.profiler'
        : 'not a PyTorch profiler trace: no torch.profiler events (cpu_op, kernel, cuda_runtime ...) nor its deviceProperties (a Chrome, JAX or TensorFlow trace?); gpuwise reads traces written by torch.profiler (export_chrome_trace or tensorboard_trace_handler)';
    return { coverage, metrics: null, model };
  }
  if (model.gpu.count === 0) {
    coverage.nothingToJudge =
      model.endedEarly !== null
        ? `${model.endedEarly}: ${coverage.events} events read, none of them GPU activity (torch.profiler writes that after the CPU events), so no step can be judged`
        : 'no GPU activity (no kernel, memcpy or memset): profile with activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA] on a GPU run';
    return { coverage, metrics: null, model };
  }
  let used = model;
  const gpuPartWhole = AFTER_GPU_ACTIVITY.some((c) => (model.eventCounts[c] ?? 0) > 0);
  if (model.endedEarly !== null && !gpuPartWhole) {
    coverage.severityCap = 'medium';
    const whole = wholeSteps(model);
    coverage.gpuReadToNs = whole.gpuReadToNs;
    coverage.stepsLeftOut = whole.leftOut;
    if (whole.markers === null) {
      coverage.nothingToJudge = `${model.endedEarly}, and without ProfilerStep markers no part of it is known to be whole: profile with a schedule and call prof.step() each step`;
      return { coverage, metrics: null, model };
    }
    if (whole.markers.length === 0) {
      coverage.nothingToJudge = `${model.endedEarly}: none of its ${model.steps.length} profiler steps was read whole with its GPU work`;
      return { coverage, metrics: null, model };
    }
    used = { ...model, steps: whole.markers };
  }
  const metrics = analyzeTrace(used);
  const withWork = metrics.steps.filter((s) => s.devices.some((d) => d.busyNs > 0));
  coverage.stepsUsed = metrics.steps.map((s) => s.step);
  if (withWork.length === 0) {
    coverage.nothingToJudge = metrics.stepsFromMarkers
      ? `none of its ${model.steps.length} profiler steps holds GPU work (the GPU activity lies outside the ProfilerStep spans)`
      : 'no GPU work inside the profiled window';
    return { coverage, metrics: null, model: used };
  }
  return { coverage, metrics, model: used };
}

function producerOf(model: TraceModel): TraceProducer {
  const counts = model.eventCounts;
  if (model.devices.length > 0 || model.distributed !== null || KINETO_CATEGORIES.some((c) => (counts[c] ?? 0) > 0))
    return 'pytorch-profiler';
  if (TENSORFLOW_CATEGORIES.some((c) => (counts[c] ?? 0) > 0)) return 'tensorflow';
  return 'unknown';
}

/**
 * The step markers of a trace that ended early whose windows hold GPU work and end before every device's activity
 * stops (null: the trace has no markers, so no window can be known whole).
 */
function wholeSteps(model: TraceModel): {
  markers: TraceModel['steps'] | null;
  leftOut: TraceCoverage['stepsLeftOut'];
  gpuReadToNs: number;
} {
  const windows = new StepWindowBuilder(model);
  const readTo = new Map<number, number>();
  const opsIn = new Array<number>(model.steps.length).fill(0);
  forEachOp(model.gpu.logs, model.gpu.launches, (op, log) => {
    windows.add(op);
    if (op.startNs > (readTo.get(log.device) ?? Number.NEGATIVE_INFINITY)) readTo.set(log.device, op.startNs);
    // As the windows do: an op belongs to the step whose CPU span launched it.
    const s = findStep(model.steps, Number.isNaN(op.launch.startNs) ? op.startNs : op.launch.startNs);
    if (s >= 0) opsIn[s]!++;
  });
  const gpuReadToNs = Math.min(...readTo.values());
  if (model.steps.length === 0) return { markers: null, leftOut: [], gpuReadToNs };
  const markers: TraceModel['steps'] = [];
  const leftOut: TraceCoverage['stepsLeftOut'] = [];
  const built = windows.windows().windows;
  built.forEach((w, i) => {
    if (w.endNs > gpuReadToNs) leftOut.push({ step: w.step, reason: 'cut by the end of the input' });
    else if (opsIn[i] === 0) leftOut.push({ step: w.step, reason: 'no GPU work' });
    else markers.push(model.steps[i]!);
  });
  return { markers, leftOut, gpuReadToNs };
}

/** One line saying how much of a trace the findings rest on (for reports), or null for a whole trace with steps, used whole. */
export function coverageNote(c: TraceCoverage): string | null {
  if (c.nothingToJudge !== null) return `nothing to judge: ${c.nothingToJudge}`;
  if (c.endedEarly === null) {
    return c.stepMarkers === 0
      ? 'no ProfilerStep markers: the whole trace is taken as one step, so "per step" means per trace (profile with a schedule and call prof.step() every step)'
      : null;
  }
  if (c.severityCap === null)
    return `${c.endedEarly}: read ${c.events} events, all of its GPU activity among them: the ${c.stepsUsed.length} steps are whole`;
  const cut = c.stepsLeftOut.filter((s) => s.reason !== 'no GPU work').length;
  const empty = c.stepsLeftOut.length - cut;
  const leftOut = [cut ? `${cut} cut` : '', empty ? `${empty} without GPU work` : ''].filter(Boolean).join(', ') || 'none';
  return (
    `${c.endedEarly}, inside its GPU activity: read ${c.events} events; findings rest on the ${c.stepsUsed.length} of ${c.stepMarkers} profiler steps` +
    ` that look whole (${leftOut} left out); a cut file cannot prove a step whole, so no finding is rated above ${c.severityCap}`
  );
}

/** Lowers findings on the given ranks to the cap (the rest unchanged). */
export function capSeverity(findings: Finding[], capByRank: ReadonlyMap<number, Severity>): Finding[] {
  const order: Severity[] = ['high', 'medium', 'low', 'info'];
  return findings.map((f) => {
    const caps = f.ranks.map((r) => capByRank.get(r)).filter((c): c is Severity => c !== undefined);
    if (caps.length === 0) return f;
    const cap = caps.reduce((a, b) => (order.indexOf(a) > order.indexOf(b) ? a : b));
    return order.indexOf(f.severity) < order.indexOf(cap)
      ? { ...f, severity: cap, evidence: [...f.evidence, `rated ${cap}, not ${f.severity}: the trace ends inside its GPU activity`] }
      : f;
  });
}
