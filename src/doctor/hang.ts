/**
 * Hangs (pure): the probe's watchdog sends `stall` records when a rank's main thread makes no progress; here they are
 * tracked while the run goes (`StallTracker`, fed by the collector: is every training rank stalled, and for how long)
 * and read afterwards (`hangAnalysis`: which rank is behind). A rank is behind when its step is the lowest, or, at the
 * same step, when its stack is not inside a collective while the others' are (they wait for it there).
 */
import type { ProbeRecord, StallRecord } from '../run/records.js';

/** Frames of a rank waiting for the others: torch.distributed's collectives, c10d, DDP's own synchronisation. */
const COLLECTIVE_FRAME =
  /torch[/\\]distributed[/\\]|c10d|broadcast_coalesced|_sync_buffers|\b(all_reduce|all_gather\w*|reduce_scatter\w*|all_to_all\w*|barrier|broadcast\w*|monitored_barrier|_sync_params\w*)\b/;

/** How many of a stack's innermost frames may show the collective it waits in (a wrapper, the call, a helper). */
const INNERMOST_FRAMES = 3;

export function inCollective(stack: readonly string[]): boolean {
  // The innermost frames only: every frame under DDP's forward or a training loop's all_reduce helper is not a wait.
  return stack.slice(-INNERMOST_FRAMES).some((f) => COLLECTIVE_FRAME.test(f));
}

/** The innermost frames, shortened to the file's name: `tiny_train.py:91 main`. */
export function innermostFrames(stack: readonly string[], n: number): string[] {
  return stack.slice(-n).map((f) => f.replace(/^.*[/\\]/, ''));
}

export interface StalledRank {
  rank: number;
  pid: number;
  /** The step it is in. */
  step: number;
  /** Seconds without progress at its last stall record. */
  stalledS: number;
  inCollective: boolean;
  /** Its main thread's stack at the last stall record, innermost last. */
  stack: string[];
}

export interface HangAnalysis {
  /** Seconds doctor waited with every rank stalled before stopping the job; null when it did not stop it. */
  timeoutS: number | null;
  /** When doctor stopped the job (Unix ms); null when it did not, or it is not known. */
  stoppedAtMs: number | null;
  behindRanks: number[];
  /** Why those ranks are behind, in words. */
  why: string;
  ranks: StalledRank[];
}

/**
 * Each process's last stall record when nothing followed it: no step at or past the stalled step, no end. Read by step
 * numbers and times, not record order (the collector keeps steps apart from the other records).
 */
export function openStalls(records: readonly ProbeRecord[]): StallRecord[] {
  const lastStall = new Map<number, StallRecord>();
  const lastStep = new Map<number, number>();
  const ended = new Map<number, number>();
  for (const r of records) {
    if (r.type === 'stall' && r.t >= (lastStall.get(r.pid)?.t ?? Number.NEGATIVE_INFINITY)) lastStall.set(r.pid, r);
    else if (r.type === 'step') lastStep.set(r.pid, Math.max(lastStep.get(r.pid) ?? 0, r.step));
    else if (r.type === 'end') ended.set(r.pid, r.t);
  }
  return [...lastStall.values()].filter((s) => (lastStep.get(s.pid) ?? 0) < s.step && !((ended.get(s.pid) ?? Number.NEGATIVE_INFINITY) >= s.t));
}

/** Stalls a process recovered from (a step at or past the stalled step came later): the longest of each, by step. */
export function recoveredStalls(records: readonly ProbeRecord[]): StallRecord[] {
  const lastStep = new Map<number, number>();
  for (const r of records) if (r.type === 'step') lastStep.set(r.pid, Math.max(lastStep.get(r.pid) ?? 0, r.step));
  const longest = new Map<string, StallRecord>();
  for (const r of records)
    if (r.type === 'stall' && (lastStep.get(r.pid) ?? 0) >= r.step) {
      const key = `${r.pid}:${r.step}`;
      if (r.sinceStepS > (longest.get(key)?.sinceStepS ?? -1)) longest.set(key, r);
    }
  return [...longest.values()].sort((a, b) => a.t - b.t);
}

/** Which stalled ranks are behind, and why. */
export function hangAnalysis(stalls: readonly StallRecord[], timeoutS: number | null, stoppedAtMs: number | null = null): HangAnalysis | null {
  if (stalls.length === 0) return null;
  const ranks: StalledRank[] = stalls
    .map((s) => ({ rank: s.rank ?? 0, pid: s.pid, step: s.step, stalledS: s.sinceStepS, inCollective: inCollective(s.stack), stack: s.stack }))
    .sort((a, b) => a.rank - b.rank || a.pid - b.pid);
  const minStep = Math.min(...ranks.map((r) => r.step));
  const lowest = ranks.filter((r) => r.step === minStep);
  let behind = lowest;
  let why: string;
  const names = (rs: StalledRank[]) => rs.map((r) => r.rank).join(', ');
  if (lowest.length < ranks.length)
    why = `rank${lowest.length > 1 ? 's' : ''} ${names(lowest)} ${lowest.length > 1 ? 'are' : 'is'} in step ${minStep}, the others further on`;
  else {
    const outside = ranks.filter((r) => !r.inCollective);
    if (outside.length > 0 && outside.length < ranks.length) {
      behind = outside;
      why = `every rank is in step ${minStep}; rank${outside.length > 1 ? 's' : ''} ${names(outside)} ${outside.length > 1 ? 'are' : 'is'} not inside a collective while the others wait in one`;
    } else if (ranks.length === 1) why = `the only stalled rank, in step ${minStep}`;
    else
      why = `every rank is in step ${minStep} and ${outside.length === 0 ? 'inside a collective' : 'outside any collective'}: the stacks do not tell which is behind`;
  }
  return { timeoutS, stoppedAtMs, behindRanks: behind.map((r) => r.rank), why, ranks };
}

interface ProcState {
  rank: number;
  ended: boolean;
  stall: StallRecord | null;
}

/**
 * While the run goes: each training process's state from its records as they arrive (a stall after its last step, an
 * end) and its connection closing (the process is gone). `stalledForS(now)` is how long every live training rank has
 * been stalled, null while one is not (or none is live).
 */
export class StallTracker {
  private readonly procs = new Map<number, ProcState>();

  add(r: ProbeRecord): void {
    if (r.type !== 'step' && r.type !== 'stall' && r.type !== 'end') return;
    const p = this.procs.get(r.pid) ?? { rank: r.rank ?? 0, ended: false, stall: null };
    this.procs.set(r.pid, p);
    if (r.type === 'end') p.ended = true;
    p.stall = r.type === 'stall' ? r : null;
  }

  /** The process's connection closed: it ended (its end record may be missing: killed). */
  gone(pid: number): void {
    const p = this.procs.get(pid);
    if (p) p.ended = true;
  }

  /** Seconds every live training process has been stalled (since its last step), null when one is not stalled. */
  stalledForS(nowS: number): number | null {
    const live = [...this.procs.values()].filter((p) => !p.ended);
    if (live.length === 0 || live.some((p) => p.stall === null)) return null;
    return Math.min(...live.map((p) => nowS - ((p.stall as StallRecord).t - (p.stall as StallRecord).sinceStepS)));
  }

  /** The open stalls of the live processes. */
  stalls(): StallRecord[] {
    return [...this.procs.values()].filter((p) => !p.ended && p.stall !== null).map((p) => p.stall as StallRecord);
  }
}
