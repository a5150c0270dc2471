/**
 * The per-rank view of a multi-rank run (pure): each training rank's steady step, DataLoader wait, throughput, GPU, and
 * from its own profiler window the exposed and overlapped communication; the skew between ranks, the slowest rank, and
 * the rank the others wait for with why, when the data says it. Also the probe-timed side of `rank-imbalance`, handed to
 * the rule as its context (`probeBalanceOf`).
 *
 * Why two figures of imbalance: in a synchronous job (DDP) every rank waits for the slowest at each all-reduce, so the
 * ranks' step times come out nearly equal whoever is slow; what differs is how the step is spent. A rank that loads its
 * batches more slowly shows it as DataLoader wait, while the others spend the same time waiting inside the collective.
 * The probe sees the first on every step; the trace (when every rank has a window) sees the second.
 */
import { IMBALANCE_MIN_SHARE } from '../advice/rules/distributed.js';
import type { ProbeBalance } from '../advice/rules/rule.js';
import type { HelloRecord } from '../run/records.js';
import { balanceLimits, type Job, jobOf } from '../pace/job.js';
import { measuredStep, type Pipeline } from '../pace/pipeline.js';
import type { TraceMetrics } from '../trace/metrics/types.js';
import { fmtMs, fmtPct } from '../util/format.js';

export interface RankView {
  rank: number;
  pid: number;
  /** The CUDA device the rank ran on (its hello: the current device), null on CPU or without a hello. */
  device: { index: number; name: string } | null;
  medianStepS: number | null;
  p90StepS: number | null;
  dataWaitShare: number | null;
  /** Mean DataLoader wait per measured step (the share of the mean step). */
  dataWaitPerStepS: number | null;
  samplesPerS: number | null;
  /** From this rank's own profiler window; null when it has none. */
  window: {
    /** GPU busy share of its window's step (0..1). */
    gpuBusyShare: number;
    /** GPU work per step other than communication. */
    computeNsPerStep: number;
    /** Communication not hidden under compute, as a share of its window's step. */
    commExposedShare: number;
    /** Share of communication hidden under compute (0..1), null without communication. */
    commOverlapShare: number | null;
  } | null;
}

export interface DistributedView {
  ranks: RankView[];
  /** Slowest median step / fastest median step - 1; null when fewer than two ranks have a median. */
  skew: number | null;
  slowestRank: number | null;
  fastestRank: number | null;
  /**
   * (Largest - smallest DataLoader wait per step) / the mean step of the rank that waits longest: what the others wait
   * for in collectives, as a share of the step.
   */
  dataWaitSpread: number | null;
  /**
   * The rank the others wait for, when the data names one: the rank that waits longest on its DataLoader when the
   * spread reaches IMBALANCE_MIN_SHARE, else the slowest by median when the skew does. null otherwise.
   */
  straggler: { rank: number; by: 'step-time' | 'dataloader-wait' } | null;
  /** Why the straggler (else the slowest rank) is slower, when the data says it: one line per cause. */
  why: string[];
}

/** A rank counts in the view when it timed steps (a launcher or a process without steps is not a training rank). */
export interface RankInput {
  rank: number;
  pid: number;
  medianS: number | null;
  p90S: number | null;
  meanS: number | null;
  dataWaitShare: number | null;
  samplesPerS: number | null;
  measuredSteps: number;
}

/** Differences smaller than this share of the step are not called a cause. */
const CAUSE_MIN_SHARE = 0.05;

function windowOf(m: TraceMetrics | null): RankView['window'] {
  if (!m || !(m.perStep.durNs > 0)) return null;
  const comm = m.perStep.kernelNsByCategory.communication;
  return {
    gpuBusyShare: m.gpuBusyShare,
    computeNsPerStep: Math.max(0, m.perStep.busyNs - comm),
    commExposedShare: m.comm.exposedNsPerStep / m.perStep.durNs,
    commOverlapShare: m.comm.overlapShare,
  };
}

function deviceOf(hello: HelloRecord | null): RankView['device'] {
  const cur = hello?.cuda.currentDevice;
  if (cur === null || cur === undefined) return null;
  const d = hello?.cuda.devices.find((x) => x.index === cur);
  return d ? { index: d.index, name: d.name } : null;
}

/** The view, or null with fewer than two training ranks. */
export function distributedView(
  ranks: readonly RankInput[],
  helloOf: (pid: number) => HelloRecord | null,
  metricsOf: (rank: number) => TraceMetrics | null,
): DistributedView | null {
  const training = ranks.filter((r) => r.measuredSteps > 0 && r.medianS !== null);
  if (training.length < 2) return null;
  const views: RankView[] = training.map((r) => ({
    rank: r.rank,
    pid: r.pid,
    device: deviceOf(helloOf(r.pid)),
    medianStepS: r.medianS,
    p90StepS: r.p90S,
    dataWaitShare: r.dataWaitShare,
    dataWaitPerStepS: r.dataWaitShare !== null && r.meanS !== null ? r.dataWaitShare * r.meanS : null,
    samplesPerS: r.samplesPerS,
    window: windowOf(metricsOf(r.rank)),
  }));
  const meanOf = new Map(training.map((r) => [r.rank, r.meanS ?? 0]));
  const byMedian = [...views].sort((a, b) => (a.medianStepS ?? 0) - (b.medianStepS ?? 0));
  const fastest = byMedian[0] as RankView;
  const slowest = byMedian[byMedian.length - 1] as RankView;
  const slowS = slowest.medianStepS as number;
  const skew = (fastest.medianStepS ?? 0) > 0 ? slowS / (fastest.medianStepS as number) - 1 : null;
  const waits = views.filter((v) => v.dataWaitPerStepS !== null);
  let dataWaitSpread: number | null = null;
  let mostWait: RankView | null = null;
  if (waits.length === views.length) {
    const sorted = [...waits].sort((a, b) => (a.dataWaitPerStepS as number) - (b.dataWaitPerStepS as number));
    mostWait = sorted[sorted.length - 1] as RankView;
    // Per step waits are share x mean step: over the same rank's mean step, one unit (its median may differ a lot).
    const meanS = meanOf.get(mostWait.rank) ?? 0;
    if (meanS > 0) dataWaitSpread = ((mostWait.dataWaitPerStepS as number) - (sorted[0]?.dataWaitPerStepS as number)) / meanS;
  }
  // A rank that waits on its DataLoader holds every rank of a synchronous job: they wait for it in the next
  // collective, so all steps last alike and their medians differ only by where each rank's boundary falls (a loaded
  // host moves them by more than a tenth). The waits name the straggler first; the steps' skew only without them.
  let straggler: DistributedView['straggler'] = null;
  if (mostWait && dataWaitSpread !== null && dataWaitSpread >= IMBALANCE_MIN_SHARE) straggler = { rank: mostWait.rank, by: 'dataloader-wait' };
  else if (skew !== null && skew >= IMBALANCE_MIN_SHARE) straggler = { rank: slowest.rank, by: 'step-time' };
  const subject = straggler ? (views.find((v) => v.rank === straggler.rank) as RankView) : slowest;
  return {
    ranks: views,
    skew,
    slowestRank: slowest.rank,
    fastestRank: fastest.rank,
    dataWaitSpread,
    straggler,
    why: views.length > 1 ? whyOf(subject, views.filter((v) => v !== subject), slowS) : [],
  };
}

/** What the data says makes `r` slower than the others (each against the other rank that is best at it). */
function whyOf(r: RankView, others: RankView[], stepS: number): string[] {
  const out: string[] = [];
  const stepNs = stepS * 1e9;
  const least = <T>(pick: (v: RankView) => T | null) =>
    others
      .filter((o) => pick(o) !== null)
      .sort((a, b) => (pick(a) as number) - (pick(b) as number))[0] ?? null;
  const wait = r.dataWaitPerStepS;
  const lw = least((o) => o.dataWaitPerStepS);
  if (wait !== null && lw && wait - (lw.dataWaitPerStepS as number) >= CAUSE_MIN_SHARE * stepS)
    out.push(
      `more DataLoader wait: ${fmtMs(wait * 1e9)} a step against ${fmtMs((lw.dataWaitPerStepS as number) * 1e9)} on rank ${lw.rank}`,
    );
  const w = r.window;
  if (w) {
    const lc = least((o) => o.window?.computeNsPerStep ?? null);
    if (lc?.window && w.computeNsPerStep - lc.window.computeNsPerStep >= CAUSE_MIN_SHARE * stepNs)
      out.push(
        `more GPU compute: ${fmtMs(w.computeNsPerStep)} a step in its window against ${fmtMs(lc.window.computeNsPerStep)} on rank ${lc.rank}`,
      );
    const most = [...others].filter((o) => o.window).sort((a, b) => (b.window?.gpuBusyShare ?? 0) - (a.window?.gpuBusyShare ?? 0))[0];
    if (most?.window && most.window.gpuBusyShare - w.gpuBusyShare >= 2 * CAUSE_MIN_SHARE)
      out.push(
        `less GPU busy: ${fmtPct(w.gpuBusyShare)} of its window against ${fmtPct(most.window.gpuBusyShare)} on rank ${most.rank} (its host side is slower: Python, launches, a busier CPU)`,
      );
  }
  return out;
}

const lineOf = (v: RankView) =>
  `rank ${v.rank}: median step ${v.medianStepS === null ? 'n/a' : fmtMs(v.medianStepS * 1e9)}, DataLoader wait ${v.dataWaitPerStepS === null ? 'n/a' : `${fmtMs(v.dataWaitPerStepS * 1e9)} a step`} (probe, every steady step)`;

/**
 * Each rank's wait in collectives a step as the probe times it, ns (what doctor has where no window times the
 * collectives on every rank): a synchronous job's ranks meet in every collective, so a rank waits there for the rank
 * that waits longest on its DataLoader, the difference of their waits. Assumed: a rank's longer step otherwise (the
 * step-time skew) is its own work, so no wait is read from it; without every rank's DataLoader wait, none waits.
 */
export function probeWaitsNs(view: DistributedView | null): Map<number, number> {
  const out = new Map<number, number>();
  if (view === null || view.ranks.some((v) => v.dataWaitPerStepS === null)) return out;
  const most = Math.max(...view.ranks.map((v) => v.dataWaitPerStepS as number));
  for (const v of view.ranks) out.set(v.rank, (most - (v.dataWaitPerStepS as number)) * 1e9);
  return out;
}

/**
 * The job as the probe times it: each rank's pipeline (`pipelines`, doctor's run pipelines by rank; else the rank's
 * median step alone) less its wait (probeWaitsNs). Null without a rank.
 */
export function probeJobOf(view: DistributedView | null, pipelines: ReadonlyMap<number, Pipeline> = new Map()): Job | null {
  const waits = probeWaitsNs(view);
  const byRank = new Map(pipelines);
  for (const v of view?.ranks ?? [])
    if (!byRank.has(v.rank) && v.medianStepS !== null) byRank.set(v.rank, measuredStep(v.medianStepS * 1e9, `rank ${v.rank}'s median step (probe)`));
  return jobOf([...byRank].map(([rank, pipeline]) => ({ rank, pipeline, waitNs: waits.get(rank) ?? 0 })));
}

/**
 * The probe-timed side of rank-imbalance, as the rule's context (advice/rules/rule.ts ProbeBalance): the skew and the
 * DataLoader waits' spread with a line per rank, the straggler when the steps name one, and the job balancing's gain
 * is read on (`job`: probeJobOf, by default on the ranks' median steps alone). Null without a view.
 */
export function probeBalanceOf(view: DistributedView | null, job: Job | null = probeJobOf(view)): ProbeBalance | null {
  if (view === null) return null;
  const st = view.straggler;
  const skewLine = `probe-timed over the run: skew ${view.skew === null ? 'n/a' : fmtPct(view.skew)} (rank ${view.slowestRank} slowest), DataLoader wait spread ${view.dataWaitSpread === null ? 'n/a' : fmtPct(view.dataWaitSpread)} of the step`;
  const waits = [...probeWaitsNs(view)];
  const loading = waits.find(([, ns]) => ns === 0)?.[0];
  const waiting = waits.filter(([, ns]) => ns > 0);
  const waitText = waiting.length
    ? `; the others wait in collectives for rank ${loading}, which waits longest on its DataLoader (${waiting.map(([r, ns]) => `rank ${r} ${fmtMs(ns)} a step`).join(', ')}): its work, not theirs`
    : '';
  const limits = job ? balanceLimits(job, view.ranks.map((v) => v.rank)) : '';
  return {
    ranks: view.ranks.map((v) => v.rank),
    evidence: [skewLine, ...view.ranks.map(lineOf), ...view.why.map((w) => `rank ${st?.rank ?? view.slowestRank}: ${w}`)],
    data: { probeSkew: view.skew, probeSlowestRank: view.slowestRank, probeDataWaitSpread: view.dataWaitSpread },
    straggler:
      st === null
        ? null
        : {
            rank: st.rank,
            by: st.by,
            title:
              st.by === 'step-time'
                ? `Rank ${st.rank} is slower: its median step is ${fmtPct(view.skew ?? 0)} longer than the fastest rank's`
                : `Rank ${st.rank} waits on its DataLoader longer than the others: they wait for it in every collective`,
          },
    compared: view.skew !== null,
    job: st === null ? null : job,
    balanceArithmetic: `balanced ranks each take the mean of the ranks' own work, timed by the probe over every steady step${waitText}${limits ? `; ${limits}` : ''}`,
  };
}
