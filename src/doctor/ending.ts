/**
 * How each process of a run ended, and which one failed first (pure). In a multi-rank job one rank's failure ends the
 * others: the launcher terminates them (SIGTERM: no end record), or their next collective fails because the peer is
 * gone (gloo's "Connection closed by peer", NCCL's aborted communicator or watchdog timeout). Those ends are
 * consequences; the cause is the first failure by time among the rest: an exception or out-of-memory of its own, or a
 * process that vanished (no end record: SIGKILL, the OOM killer, a segfault) when the time it went is known (its
 * connection to doctor closed). A vanished process whose time is only bounded by its last record comes next, and a
 * consequence-looking exception only when nothing else failed.
 */
import type { ProbeRecord } from '../run/records.js';

/** Messages and exception names of a collective that failed because a peer went away, or of a termination. */
const CONSEQUENCE =
  /ChildFailedError|closed by peer|reset by peer|broken pipe|communicator (was|has been) aborted|collective operation timeout|watchdog caught|NCCL communicator|DistBackendError|DistNetworkError|SignalException|terminated by signal|Socket Timeout|Connection refused/i;

export function isConsequence(name: string, message: string): boolean {
  return CONSEQUENCE.test(name) || CONSEQUENCE.test(message);
}

/**
 * torchrun's own account of a failed job (its ChildFailedError message): the rank of the "Root Cause (first observed
 * failure)", its exit code, and the signal that killed it. null when the message has none.
 */
export function launcherRootCause(message: string): { rank: number; exitCode: number | null; signal: string | null } | null {
  const i = message.indexOf('Root Cause');
  if (i < 0) return null;
  const part = message.slice(i);
  const rank = /\brank\s*:\s*(\d+)/.exec(part);
  if (!rank) return null;
  const code = /exitcode\s*:\s*(-?\d+)/.exec(part);
  const sig = /Signal \d+ \((SIG[A-Z]+)\)/.exec(part);
  return { rank: Number(rank[1]), exitCode: code ? Number(code[1]) : null, signal: sig ? (sig[1] as string) : null };
}

export interface ProcessRecordsIn {
  rank: number;
  pid: number;
  rankFromEnv: boolean;
  records: readonly ProbeRecord[];
}

export type EndKind = 'exception' | 'out-of-memory' | 'killed';

export interface FirstFailure {
  rank: number;
  pid: number;
  rankFromEnv: boolean;
  kind: EndKind;
  /** The step it was in (steps done + 1). */
  step: number;
  /** `Name: first line of the message` of its exception or OOM; null for a process that vanished. */
  error: string | null;
  /** When (Unix seconds): the exception or OOM record, the connection closing, else its last record. */
  tS: number | null;
}

export interface Ending {
  first: FirstFailure | null;
  /** The other processes that did not end cleanly, with how, in words. */
  after: { rank: number; pid: number; how: string }[];
}

interface Classified {
  p: ProcessRecordsIn;
  kind: EndKind | 'consequence' | 'interrupted' | 'stopped' | 'clean';
  step: number;
  error: string | null;
  tS: number | null;
  exactTime: boolean;
  how: string;
}

export function firstLine(s: string, max = 200): string {
  // The first line that says something: not a rule of '=' or '-' (torchrun's reports open with one).
  const line = s.split('\n').find((l) => /[A-Za-z0-9]/.test(l)) ?? '';
  return line.length > max ? `${line.slice(0, max - 3)}...` : line;
}

function classify(p: ProcessRecordsIn, disconnectedAtS: number | null, stopAtS: number | null, beaconStep: number): Classified {
  const recs = p.records;
  // A process killed with records still queued got further than its last record: its step counter says how far.
  const lastStep = recs.reduce((m, r) => (r.type === 'step' ? Math.max(m, r.step) : m), beaconStep);
  const oom = recs.find((r) => r.type === 'oom');
  const exc = recs.find((r) => r.type === 'exception');
  const end = recs.find((r) => r.type === 'end');
  if (oom && oom.type === 'oom')
    return { p, kind: 'out-of-memory', step: oom.step, error: 'out of GPU memory', tS: oom.t, exactTime: true, how: 'ran out of GPU memory' };
  if (exc && exc.type === 'exception') {
    const error = `${exc.exception}: ${firstLine(exc.message, 160)}`;
    if (exc.outOfMemory) return { p, kind: 'out-of-memory', step: exc.step + 1, error, tS: exc.t, exactTime: true, how: `ran out of memory (${error})` };
    if (exc.exception === 'KeyboardInterrupt')
      return { p, kind: 'interrupted', step: exc.step + 1, error, tS: exc.t, exactTime: true, how: 'was interrupted (KeyboardInterrupt: a SIGINT from the launcher)' };
    if (exc.exception === 'ChildFailedError' || launcherRootCause(exc.message))
      return { p, kind: 'consequence', step: exc.step + 1, error, tS: exc.t, exactTime: true, how: `(the launcher) reported the failure (${exc.exception})` };
    if (isConsequence(exc.exception, exc.message))
      return { p, kind: 'consequence', step: exc.step + 1, error, tS: exc.t, exactTime: true, how: `failed in a collective once its peer was gone (${error})` };
    return { p, kind: 'exception', step: exc.step + 1, error, tS: exc.t, exactTime: true, how: `raised ${error}` };
  }
  if (!end) {
    const lastT = recs.reduce((m, r) => Math.max(m, r.t), Number.NEGATIVE_INFINITY);
    const tS = disconnectedAtS ?? (Number.isFinite(lastT) ? lastT : null);
    if (stopAtS !== null && disconnectedAtS !== null && disconnectedAtS >= stopAtS)
      return { p, kind: 'stopped', step: lastStep + 1, error: null, tS, exactTime: true, how: 'was stopped by doctor' };
    return {
      p,
      kind: 'killed',
      step: lastStep + 1,
      error: null,
      tS,
      exactTime: disconnectedAtS !== null,
      how: 'ended without an end record (terminated by the launcher, or killed by a signal)',
    };
  }
  return { p, kind: 'clean', step: lastStep, error: null, tS: end.t, exactTime: true, how: `ended (${end.type === 'end' ? end.reason : 'exit'})` };
}

const byTime = (a: Classified, b: Classified) => (a.tS ?? Number.POSITIVE_INFINITY) - (b.tS ?? Number.POSITIVE_INFINITY) || a.p.rank - b.p.rank;

/**
 * The first failure and how the others ended. `disconnectedAtMs`: when each process's connection to doctor closed
 * (live runs); `stopAtMs`: when doctor stopped the job (a hang), so the processes gone after it were stopped by doctor;
 * `stepBeacons`: the last step each process ended by its step counter (the run directory's `beacon-PID` files).
 */
export function endingOf(
  processes: readonly ProcessRecordsIn[],
  disconnectedAtMs: Readonly<Record<number, number>> = {},
  stopAtMs: number | null = null,
  stepBeacons: Readonly<Record<number, number>> = {},
): Ending {
  const all = processes.map((p) => {
    const d = disconnectedAtMs[p.pid];
    return classify(p, d === undefined ? null : d / 1000, stopAtMs === null ? null : stopAtMs / 1000, stepBeacons[p.pid] ?? 0);
  });
  const own = all.filter((c) => c.kind === 'exception' || c.kind === 'out-of-memory' || (c.kind === 'killed' && c.exactTime)).sort(byTime);
  // A vanished process known only by its last record: the one the launcher names as the root cause first.
  const named = all
    .flatMap((c) => (c.kind === 'consequence' && c.error !== null ? [launcherRootCause(recordMessage(c.p) ?? '')] : []))
    .find((x) => x !== null);
  const bounded = all
    .filter((c) => c.kind === 'killed' && !c.exactTime)
    .sort((a, b) => Number(b.p.rank === named?.rank && b.p.rankFromEnv) - Number(a.p.rank === named?.rank && a.p.rankFromEnv) || byTime(a, b));
  const consequences = all.filter((c) => c.kind === 'consequence').sort(byTime);
  const first = own[0] ?? bounded[0] ?? consequences[0] ?? null;
  if (first === null) return { first: null, after: [] };
  const told = named && first.kind === 'killed' && first.p.rankFromEnv && first.p.rank === named.rank ? named : null;
  const after = all
    .filter((c) => c !== first && c.kind !== 'clean')
    .sort(byTime)
    .map((c) => ({ rank: c.p.rank, pid: c.p.pid, how: c.how }));
  return {
    first: {
      rank: first.p.rank,
      pid: first.p.pid,
      rankFromEnv: first.p.rankFromEnv,
      kind: first.kind as EndKind,
      step: first.step,
      error: told
        ? `the launcher's root cause: exit code ${told.exitCode ?? '?'}${told.signal ? ` (${told.signal})` : ''}`
        : first.error,
      tS: first.tS,
    },
    after,
  };
}

function recordMessage(p: ProcessRecordsIn): string | null {
  const exc = p.records.find((r) => r.type === 'exception');
  return exc && exc.type === 'exception' ? exc.message : null;
}
