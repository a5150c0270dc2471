/**
 * GPUs shared while the run trained (pure), from the processes NVML listed on each GPU (gpuProcesses.ts) and the
 * probe's step records:
 * - `gpu-shared`: another process (someone else's, or another process of this run that is not its DDP peer) ran work
 *   on the GPU a training process used. The slowdown is measured where the run allows it: the process's steps split
 *   into those that ran while the other was active on that GPU and those that ran while it was not, slowdown =
 *   median(contended) / median(alone) − 1. Without alone steps no number is measured; the estimate then says its
 *   basis (time-slicing).
 * - `ranks-share-gpu`: two or more ranks of one distributed job on one GPU while other GPUs of the job stay empty
 *   (no `torch.cuda.set_device(local_rank)`).
 */
import { type EstimatedGain, type Finding, finding } from '../findings/finding.js';
import type { Fix } from '../pace/fix.js';
import { gainOf, jobGainOf } from '../pace/gain.js';
import type { Job } from '../pace/job.js';
import { measuredStep, type Pipeline } from '../pace/pipeline.js';
import type { HelloRecord, StepRecord } from '../run/records.js';
import { slowedByProbe } from '../run/steps.js';
import { fmtBytes, fmtMs, fmtPct } from '../util/format.js';
import { quantile } from '../util/stats.js';
import { ACTIVE_SM_PERCENT, type GpuProcess, gpuProcessLabel } from './gpuProcesses.js';

/** Fewest steps on each side of the split for a median to stand for it. */
export const MIN_SPLIT_STEPS = 5;
/** The time-slicing estimate never assumes the other process took more than this share of the GPU. */
const MAX_OTHER_SHARE = 0.9;

/** A process of the run as the sharing rules read it (built by producers.ts from its records and statistics). */
export interface SharingProcess {
  pid: number;
  rank: number;
  rankFromEnv: boolean;
  hello: HelloRecord | null;
  steps: readonly StepRecord[];
  /** GPU step times by step number (run/steps.ts gpuStepTimesOf). */
  gpuStepTimes: ReadonlyMap<number, number>;
  /** The timing its statistics use, and their median step. */
  timing: 'gpu' | 'host';
  medianS: number | null;
  /** Last step's allocator device (the process's current CUDA device) and its peak allocated bytes there (0 unknown). */
  device: number | null;
  peakAllocatedBytes: number;
}

/** What the rules read of a GPU summary (reportTypes.ts GpuSummary has it all). */
export interface SharingGpu {
  index: number;
  cudaIndex?: number | null;
  name: string;
  meanUtilizationPercent: number | null;
  timeline: { tS: number[] };
  firstSampleAtMs?: number | null;
  processes?: GpuProcess[];
}

/**
 * The run's pace as the sharing rules read it (stages/pace.ts RunPace): each process's pipeline, each rank's, and the
 * job of several ranks. A fix's gain is made on the pipeline of the process it concerns (the job, for ranks).
 */
export interface SharingPace {
  byPid: ReadonlyMap<number, Pipeline>;
  byRank: ReadonlyMap<number, Pipeline>;
  job: Job | null;
}

const NO_PACE: SharingPace = { byPid: new Map(), byRank: new Map(), job: null };

/**
 * A change measured or modelled as the whole step: `stepNs` (the basis it was measured on) becomes `expectedNs`. The
 * gain is that ratio on the process's pipeline (the run's step and the plan's); on the measured step alone where the
 * process has none.
 */
function wholeStep(label: string, stepNs: number, expectedNs: number, arithmetic: string): Fix {
  return { label, ops: [{ kind: 'step', factor: stepNs > 0 ? Math.max(0, expectedNs / stepNs) : 1 }], arithmetic };
}

function gainOn(p: Pipeline | undefined, stepNs: number, fix: Fix): EstimatedGain | null {
  return gainOf(p ?? measuredStep(stepNs, 'the measured step'), fix);
}

type WindowState = 'active' | 'idle' | 'unknown';

/** The GPU that holds most of a process's memory: where its work runs (a stray context elsewhere is small). */
export function mainGpuOf(gpus: readonly SharingGpu[], pid: number): SharingGpu | null {
  let best: SharingGpu | null = null;
  let bestBytes = -1;
  for (const g of gpus) {
    const p = g.processes?.find((x) => x.pid === pid);
    const b = p?.peakUsedBytes ?? (p ? 0 : -1);
    if (b > bestBytes) {
      best = g;
      bestBytes = b;
    }
  }
  return bestBytes >= 0 ? best : null;
}

/** DDP peers run in lockstep: their sharing is `ranks-share-gpu`, not contention one can time against running alone. */
function isPeer(p: SharingProcess, o: GpuProcess): boolean {
  return p.rankFromEnv && o.job && o.rank !== null;
}

interface Split {
  trainer: SharingProcess;
  others: GpuProcess[];
  contended: number[];
  alone: number[];
  changeOver: number;
  unknown: number;
  /** Mean over the sample windows of the contended steps: the others' summed SM share and the trainer's own. */
  othersSharePercent: number | null;
  ownSharePercent: number | null;
}

/**
 * Each timed step of `trainer` (its first, warm-up step and the profiled steps left out) against the samples of `g`:
 * contended when every sample window the step overlaps had another process active (SM share > ACTIVE_SM_PERCENT),
 * alone when none had, left out when it straddles a change-over or a window has no reading. A sample's window is the
 * second before it (NVML's per-process utilisation covers the last second).
 */
export function splitSteps(trainer: SharingProcess, g: SharingGpu, others: readonly GpuProcess[]): Split | null {
  const t0 = g.firstSampleAtMs;
  const tS = g.timeline.tS;
  if (t0 === null || t0 === undefined || tS.length === 0) return null;
  const at = tS.map((t) => t0 / 1000 + t);
  const gaps = at.slice(1).map((t, i) => t - (at[i] as number)).sort((a, b) => a - b);
  const usual = gaps.length ? (gaps[Math.floor(gaps.length / 2)] as number) : 1;
  const index = new Map(tS.map((t, i) => [t, i]));
  const active = new Array<boolean>(at.length).fill(false);
  const unknown = new Array<boolean>(at.length).fill(false);
  const share = new Array<number>(at.length).fill(0);
  for (const o of others)
    o.timeline.tS.forEach((t, k) => {
      const i = index.get(t);
      if (i === undefined) return;
      const sm = o.timeline.smUtilPercent[k] ?? null;
      if (sm === null) unknown[i] = true;
      else {
        share[i] = (share[i] as number) + sm;
        if (sm > ACTIVE_SM_PERCENT) active[i] = true;
      }
    });
  const own = new Array<number | null>(at.length).fill(null);
  const mine = g.processes?.find((p) => p.pid === trainer.pid);
  mine?.timeline.tS.forEach((t, k) => {
    const i = index.get(t);
    if (i !== undefined) own[i] = mine.timeline.smUtilPercent[k] ?? null;
  });
  const state = (i: number): WindowState => (active[i] ? 'active' : unknown[i] ? 'unknown' : 'idle');
  const firstAtOrAfter = (x: number) => {
    let lo = 0;
    let hi = at.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((at[mid] as number) < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  const ordered = [...trainer.steps].sort((a, b) => a.step - b.step);
  const slowed = slowedByProbe(ordered);
  const out: Split = { trainer, others: [...others], contended: [], alone: [], changeOver: 0, unknown: 0, othersSharePercent: null, ownSharePercent: null };
  const contendedWindows = new Set<number>();
  ordered.forEach((s, n) => {
    if (n === 0 || slowed.has(s.step)) return;
    const dur = trainer.timing === 'gpu' ? trainer.gpuStepTimes.get(s.step) : s.stepTimeS;
    if (dur === undefined || dur === null || !Number.isFinite(dur)) return;
    const end = s.t;
    const start = end - (s.stepTimeS ?? dur);
    const last = firstAtOrAfter(end);
    const first = firstAtOrAfter(start + 1e-9);
    if (last >= at.length || start < (at[0] as number) - usual) {
      out.unknown++;
      return;
    }
    const states = new Set<WindowState>();
    for (let i = first; i <= last; i++) states.add(state(i));
    if (states.has('unknown')) out.unknown++;
    else if (states.size > 1) out.changeOver++;
    else if (states.has('active')) {
      out.contended.push(dur);
      for (let i = first; i <= last; i++) contendedWindows.add(i);
    } else out.alone.push(dur);
  });
  if (contendedWindows.size > 0) {
    const ws = [...contendedWindows];
    out.othersSharePercent = ws.reduce((a, i) => a + (share[i] as number), 0) / ws.length;
    const owns = ws.map((i) => own[i]).filter((x): x is number => x !== null && x !== undefined);
    out.ownSharePercent = owns.length ? owns.reduce((a, b) => a + b, 0) / owns.length : null;
  }
  return out;
}

const median = (xs: readonly number[]) => quantile([...xs].sort((a, b) => a - b), 0.5) as number;
const fmtS = (s: number) => fmtMs(s * 1e9);
const pct = (p: number) => `${p.toFixed(0)}%`;

function trainerLabel(p: SharingProcess): string {
  return p.rankFromEnv ? `rank ${p.rank} (pid ${p.pid})` : `pid ${p.pid}`;
}

function otherLine(o: GpuProcess, g: SharingGpu): string {
  return `${gpuProcessLabel(o)}${o.job ? ', another process of this run' : ''}: on GPU ${g.index} for ${o.presentS.toFixed(0)} s, running work in ${o.activeSamples} of ${o.samples} samples, mean SM share ${o.meanSmUtilPercent === null ? 'n/a' : pct(o.meanSmUtilPercent)}, peak memory ${o.peakUsedBytes === null ? 'n/a' : fmtBytes(o.peakUsedBytes)}`;
}

interface Assessed {
  split: Split;
  fix: Fix;
  gain: EstimatedGain | null;
  basis: 'measured' | 'time-slicing';
  slowdown: number | null;
  evidence: string;
}

function assess(sp: Split, label: string, pace: SharingPace): Assessed | null {
  const p = pace.byPid.get(sp.trainer.pid);
  const nC = sp.contended.length;
  const nA = sp.alone.length;
  if (nC < MIN_SPLIT_STEPS) return null;
  const medC = median(sp.contended);
  const left = `${sp.changeOver} step(s) at a change-over and ${sp.unknown} without a reading left out`;
  if (nA >= MIN_SPLIT_STEPS) {
    const medA = median(sp.alone);
    const slowdown = medC / medA - 1;
    const mean = (nC * medC + nA * medA) / (nC + nA);
    // Measured on the whole step (the steps alone against the mix): a whole-step change, the ratio on the run's step.
    const fix = wholeStep(
      label,
      mean * 1e9,
      medA * 1e9,
      `${nC} of ${nC + nA} steps at the contended median ${fmtS(medC)} and ${nA} at the alone median ${fmtS(medA)}: ${fmtS(mean)} a step on average; alone every step would take about ${fmtS(medA)}`,
    );
    return {
      split: sp,
      basis: 'measured',
      slowdown,
      evidence: `${trainerLabel(sp.trainer)}: median step ${fmtS(medC)} over ${nC} steps while the other process(es) ran work on the GPU, ${fmtS(medA)} over ${nA} steps while they did not: ${slowdown >= 0 ? '+' : ''}${fmtPct(slowdown)} (${left})`,
      fix,
      gain: gainOn(p, mean * 1e9, fix),
    };
  }
  const other = Math.min(MAX_OTHER_SHARE, (sp.othersSharePercent ?? 0) / 100);
  // An upper bound reached when this process always has GPU work queued: a whole-step change of 1 - the others' share.
  const fix = wholeStep(
    label,
    medC * 1e9,
    medC * (1 - other) * 1e9,
    `time-slicing estimate, not a measurement (no step ran alone): without MPS the GPU runs one process's kernels at a time, so the ${fmtPct(other)} of the SM time spent on the other process(es) is time this process's kernels wait: ${fmtS(medC)} x (1 - ${other.toFixed(2)}) = ${fmtS(medC * (1 - other))}; an upper bound, reached when this process always has GPU work queued`,
  );
  return {
    split: sp,
    basis: 'time-slicing',
    slowdown: null,
    evidence: `${trainerLabel(sp.trainer)}: ${nC} steps (median ${fmtS(medC)}) ran while the other process(es) ran work on the GPU and only ${nA} without, so the slowdown cannot be measured on this run; in those seconds the other process(es) took ${sp.othersSharePercent === null ? 'n/a' : pct(sp.othersSharePercent)} of the SM time, this process ${sp.ownSharePercent === null ? 'n/a' : pct(sp.ownSharePercent)}`,
    fix,
    gain: gainOn(p, medC * 1e9, fix),
  };
}

/** `gpu-shared`, one finding per GPU where another process ran work beside a training process. */
export function gpuSharedFindings(gpus: readonly SharingGpu[], procs: readonly SharingProcess[], pace: SharingPace = NO_PACE): Finding[] {
  const out: Finding[] = [];
  for (const g of gpus) {
    const listed = g.processes ?? [];
    const assessed: Assessed[] = [];
    for (const p of procs) {
      if (p.steps.length === 0 || mainGpuOf(gpus, p.pid)?.index !== g.index) continue;
      const others = listed.filter((o) => o.pid !== p.pid && !isPeer(p, o) && o.activeSamples > 0);
      if (others.length === 0) continue;
      const sp = splitSteps(p, g, others);
      const a = sp ? assess(sp, others.every((o) => o.job) ? 'one GPU per process' : 'the GPU to this run alone', pace) : null;
      if (a) assessed.push(a);
    }
    if (assessed.length === 0) continue;
    const worst = [...assessed].sort((a, b) => (b.gain?.savedFraction ?? 0) - (a.gain?.savedFraction ?? 0))[0] as Assessed;
    const others = [...new Map(assessed.flatMap((a) => a.split.others).map((o) => [o.pid, o])).values()];
    const sameRun = others.every((o) => o.job);
    // The title speaks of the worst-hit process and the processes that ran beside it (not of itself).
    const beside = worst.split.others;
    const who = beside.length === 1 ? gpuProcessLabel(beside[0] as GpuProcess) : `${beside.length} other processes`;
    const title =
      worst.basis === 'measured' && worst.slowdown !== null
        ? `GPU ${g.index} is shared: ${trainerLabel(worst.split.trainer)}'s steps took ${fmtPct(Math.max(0, worst.slowdown))} longer while ${who} ran work on it`
        : `GPU ${g.index} is shared: ${who} ran work on it during ${trainerLabel(worst.split.trainer)}'s steps (no step ran alone to compare)`;
    out.push(
      finding({
        id: 'gpu-shared',
        title,
        ranks: [...new Set(assessed.map((a) => a.split.trainer.rank))].sort((a, b) => a - b),
        evidence: [...others.map((o) => otherLine(o, g)), ...assessed.map((a) => a.evidence)],
        data: {
          gpu: g.index,
          pid: worst.split.trainer.pid,
          basis: worst.basis,
          slowdown: worst.slowdown,
          contendedSteps: worst.split.contended.length,
          aloneSteps: worst.split.alone.length,
          contendedMedianS: median(worst.split.contended),
          aloneMedianS: worst.split.alone.length ? median(worst.split.alone) : null,
          othersSmSharePercent: worst.split.othersSharePercent,
          otherPids: others.map((o) => o.pid).join(','),
          activeSmPercent: ACTIVE_SM_PERCENT,
          sameRun,
        },
        recommendation: sameRun ? sameRunFix(procs) : foreignFix(),
        ...(worst.gain ? { fix: { ...worst.fix, label: sameRun ? 'one GPU per process' : 'the GPU to this run alone' } } : {}),
        estimatedGain: worst.gain,
      }),
    );
  }
  return out;
}

function sameRunFix(procs: readonly SharingProcess[]): Finding['recommendation'] {
  const cmds = procs.filter((p) => p.hello).map((p) => `python ${(p.hello as HelloRecord).argv.join(' ')}`);
  const lines = cmds.length >= 2 ? cmds.map((c, i) => `CUDA_VISIBLE_DEVICES=${i} ${c} &`) : ['CUDA_VISIBLE_DEVICES=0 python a.py &', 'CUDA_VISIBLE_DEVICES=1 python b.py &'];
  return {
    summary:
      'Run the processes of this run on different GPUs: each then has a GPU to itself instead of a time slice of one. `gpuwise select -n 2` names free GPUs.',
    code: [...lines, 'wait'].join('\n'),
  };
}

function foreignFix(): Finding['recommendation'] {
  return {
    summary:
      'Train on a GPU no other process uses: `gpuwise select` picks free GPUs (CUDA_VISIBLE_DEVICES). When the GPU is shared on purpose, NVIDIA MPS runs both processes\' kernels at the same time instead of in turns, and MIG gives each its own slice of SMs and memory.',
    code: [
      'CUDA_VISIBLE_DEVICES=$(gpuwise select -n 1 --max-util 10) python train.py',
      '# or: gpuwise select -n 1 --max-util 10 -- python train.py',
      '# shared on purpose: nvidia-cuda-mps-control -d (MPS), or MIG instances (nvidia-smi mig -cgi ...)',
    ].join('\n'),
  };
}

/**
 * `ranks-share-gpu`: ranks of one distributed job whose work runs on the same GPU while GPUs visible to the job have
 * none of its processes. Read off NVML (the GPU holding most of each rank's memory); without NVML process figures,
 * off the probe (ranks on one host reporting the same current device of several visible ones).
 */
export function ranksShareGpuFinding(gpus: readonly SharingGpu[], procs: readonly SharingProcess[], pace: SharingPace = NO_PACE): Finding | null {
  const ranks = procs.filter((p) => p.rankFromEnv && p.steps.length > 0);
  if (new Set(ranks.map((r) => r.rank)).size < 2) return null;
  const nvml = fromNvml(gpus, ranks, pace);
  // NVML's word (where each rank's memory is) wins over the probe's ordinals, which depend on each rank's CUDA_VISIBLE_DEVICES.
  return nvml !== undefined ? nvml : fromProbe(ranks, pace);
}

/** undefined: NVML did not list two ranks' processes (the probe decides). */
function fromNvml(gpus: readonly SharingGpu[], ranks: readonly SharingProcess[], pace: SharingPace): Finding | null | undefined {
  const main = new Map<number, SharingGpu>();
  for (const r of ranks) {
    const g = mainGpuOf(gpus, r.pid);
    if (g) main.set(r.pid, g);
  }
  if (main.size < 2) return undefined;
  const byGpu = new Map<number, SharingProcess[]>();
  for (const r of ranks) {
    const g = main.get(r.pid);
    if (g) byGpu.set(g.index, [...(byGpu.get(g.index) ?? []), r]);
  }
  const shared = [...byGpu].filter(([, rs]) => rs.length >= 2).sort((a, b) => b[1].length - a[1].length)[0];
  if (!shared) return null;
  const used = new Set(byGpu.keys());
  const idle = gpus.filter((g) => !used.has(g.index) && g.cudaIndex !== null);
  if (idle.length === 0) return null;
  const [gi, group] = shared;
  const g = gpus.find((x) => x.index === gi) as SharingGpu;
  const rowOf = (r: SharingProcess) => g.processes?.find((p) => p.pid === r.pid);
  const shares = group.map((r) => rowOf(r)?.meanSmUtilPercent ?? null);
  const rankList = group.map((r) => r.rank).sort((a, b) => a - b);
  const evidence = [
    `NVML: ${group.map((r) => `rank ${r.rank} (pid ${r.pid}) holds ${fmtBytes(rowOf(r)?.peakUsedBytes ?? 0)} on GPU ${gi}, SM share ${shares[group.indexOf(r)] === null ? 'n/a' : pct(shares[group.indexOf(r)] as number)}`).join('; ')}`,
    ...idle.map((x) => `GPU ${x.index}${typeof x.cudaIndex === 'number' ? ` (cuda:${x.cudaIndex})` : ''}: no process of this run${x.meanUtilizationPercent === null ? '' : `, utilisation mean ${pct(x.meanUtilizationPercent)}`}${(x.processes ?? []).some((p) => !p.job) ? ' (other processes use it)' : ''}`),
    ...probeLines(group),
  ];
  return shareFinding(gi, rankList, idle.map((x) => x.index), group, shares, evidence, 'nvml', pace);
}

function probeLines(group: readonly SharingProcess[]): string[] {
  const told = group.filter((r) => r.hello?.cuda.currentDevice !== null && r.hello?.cuda.currentDevice !== undefined);
  if (told.length === 0) return [];
  return [
    `probe: ${told.map((r) => `rank ${r.rank} (LOCAL_RANK ${r.hello?.localRank ?? '?'}) on cuda:${r.device ?? r.hello?.cuda.currentDevice} of ${r.hello?.cuda.devices.length ?? '?'} visible`).join(', ')}`,
  ];
}

function fromProbe(ranks: readonly SharingProcess[], pace: SharingPace): Finding | null {
  const byKey = new Map<string, SharingProcess[]>();
  for (const r of ranks) {
    const dev = r.device ?? r.hello?.cuda.currentDevice ?? null;
    const visible = r.hello?.cuda.devices.length ?? 0;
    // A rank that placed its model with .to(local_rank) but never called set_device reports cuda:0 as current, with
    // nothing allocated there: its work is elsewhere. Only a current device that holds the rank's tensors counts.
    if (dev === null || visible < 2 || !r.hello || !(r.peakAllocatedBytes > 0)) continue;
    const key = `${r.hello.hostname}\u0000${dev}`;
    byKey.set(key, [...(byKey.get(key) ?? []), r]);
  }
  const shared = [...byKey.values()].filter((rs) => rs.length >= 2).sort((a, b) => b.length - a.length)[0];
  if (!shared) return null;
  const host = shared[0]?.hello?.hostname;
  const usedDevices = new Set(ranks.filter((r) => r.hello?.hostname === host).map((r) => r.device ?? r.hello?.cuda.currentDevice));
  const visible = shared[0]?.hello?.cuda.devices.map((d) => d.index) ?? [];
  const idle = visible.filter((d) => !usedDevices.has(d));
  if (idle.length === 0) return null;
  const dev = shared[0]?.device ?? shared[0]?.hello?.cuda.currentDevice ?? 0;
  const evidence = [
    ...probeLines(shared),
    `${idle.map((d) => `cuda:${d}`).join(', ')}: visible to every rank, used by none (no NVML process figures in this run to confirm it)`,
  ];
  return shareFinding(
    dev,
    shared.map((r) => r.rank).sort((a, b) => a - b),
    idle,
    shared,
    shared.map(() => null),
    evidence,
    'probe',
    pace,
    'cuda:',
  );
}

function shareFinding(
  gpu: number,
  rankList: number[],
  idle: number[],
  group: readonly SharingProcess[],
  shares: (number | null)[],
  evidence: string[],
  source: 'nvml' | 'probe',
  pace: SharingPace,
  prefix = 'GPU ',
): Finding {
  const n = group.length;
  const stepS = Math.max(0, ...group.map((r) => r.medianS ?? 0));
  // Lockstep ranks go at the slowest one's pace; alone, each rank loses the time the GPU spends on the others' kernels.
  const known = shares.every((s) => s !== null) && shares.length === n;
  const total = known ? (shares as number[]).reduce((a, b) => a + b, 0) : 0;
  const minOthers = known ? Math.min(...(shares as number[]).map((s) => Math.min(MAX_OTHER_SHARE, (total - s) / 100))) : 0;
  const saved = known && minOthers > 0 ? stepS * minOthers : stepS * (1 - 1 / n);
  const arithmetic = known && minOthers > 0
    ? `time-slicing: the GPU runs one rank's kernels at a time, so each rank waits while the others' kernels run (at least ${fmtPct(minOthers)} of the SM time); on its own GPU: ${fmtS(stepS)} x (1 - ${minOthers.toFixed(2)}) = ${fmtS(stepS - saved)}`
    : `time-slicing: ${n} ranks on one GPU each get about 1/${n} of it; on their own GPUs: ${fmtS(stepS)} / ${n} = ${fmtS(stepS / n)}`;
  // Time-slicing: a whole-step change (an upper bound, each rank always having GPU work queued), on the ranks sharing.
  const fix = stepS > 0 ? wholeStep('one GPU per rank', stepS * 1e9, (stepS - saved) * 1e9, arithmetic) : null;
  return finding({
    id: 'ranks-share-gpu',
    title: `Ranks ${rankList.join(', ')} all run on ${prefix}${gpu} while ${idle.map((i) => `${prefix}${i}`).join(', ')} ${idle.length === 1 ? 'stays' : 'stay'} idle`,
    ranks: rankList,
    evidence,
    data: { gpu, ranks: rankList.join(','), idleGpus: idle.join(','), source, stepS },
    recommendation: {
      summary:
        'Give each rank its own GPU: set the device from LOCAL_RANK before creating the model or any CUDA tensor, and pass it to DDP. Without it every rank uses cuda:0.',
      code: [
        'local_rank = int(os.environ["LOCAL_RANK"])',
        'torch.cuda.set_device(local_rank)  # before the model and any CUDA tensor',
        'model = DistributedDataParallel(model.to(local_rank), device_ids=[local_rank])',
      ].join('\n'),
    },
    ...(fix ? { fix } : {}),
    estimatedGain: fix ? shareGain(fix, stepS * 1e9, rankList, pace) : null,
  });
}

/**
 * The gain of giving each sharing rank its own GPU: on the job (the ranks' own pipelines, the slowest setting the
 * pace) when it holds them all, else on the slowest sharing rank's pipeline, else on the measured step alone.
 */
function shareGain(fix: Fix, stepNs: number, ranks: readonly number[], pace: SharingPace): EstimatedGain | null {
  if (pace.job && ranks.every((r) => pace.job?.ranks.some((x) => x.rank === r))) return jobGainOf(pace.job, fix, ranks);
  const slowest = ranks.map((r) => pace.byRank.get(r)).filter((p): p is Pipeline => p !== undefined).sort((a, b) => b.stepNs - a.stepNs)[0];
  return gainOn(slowest, stepNs, fix);
}
