/**
 * How the run ended, in one word and one sentence (pure): the first failure by time is the cause (ending.ts), the
 * other ranks' ends are named as what followed; a hang doctor stopped is `hung` unless a rank failed before it.
 */
import type { Ending } from './ending.js';
import type { HangAnalysis } from './hang.js';
import type { DoctorInput, Outcome, RankSummary } from './reportTypes.js';

export interface RunOutcome {
  outcome: Outcome;
  /** One sentence on how the run ended. */
  text: string;
}

/** The rank as the outcome names it: `rank R`, or `pid P` for a process without RANK beside others. */
function who(f: { rank: number; pid: number; rankFromEnv: boolean }, processes: number): string {
  return f.rankFromEnv || processes < 2 ? `rank ${f.rank}` : `pid ${f.pid}`;
}

/** "; then rank 0 ended without an end record (...)": the other processes, as consequences of the first failure. */
function afterText(ending: Ending, byPid: ReadonlyMap<number, RankSummary>): string {
  if (ending.after.length === 0) return '';
  const name = (a: { rank: number; pid: number }) => {
    const r = byPid.get(a.pid);
    return r && !r.rankFromEnv ? `pid ${a.pid}` : `rank ${a.rank}`;
  };
  return `; after it ${ending.after.map((a) => `${name(a)} ${a.how}`).join('; ')}`;
}

/** How the run ended: a process's failure first (the first by time), then doctor's hang stop, then the exit. */
export function outcomeOf(input: DoctorInput, ranks: readonly RankSummary[], ending: Ending, hang: HangAnalysis | null): RunOutcome {
  return failureOutcome(input, ranks, ending, hang) ?? hangOutcome(input, hang) ?? exitOutcome(input, ranks);
}

/** The first failure by time (out of memory, an exception, a process killed), unless doctor passed on a signal first. */
function failureOutcome(input: DoctorInput, ranks: readonly RankSummary[], ending: Ending, hang: HangAnalysis | null): RunOutcome | null {
  const code = input.exit.code;
  const first = ending.first;
  const byPid = new Map(ranks.map((r) => [r.pid, r]));
  const after = afterText(ending, byPid);
  const hangTail =
    input.hang && hang
      ? `; the others then made no progress and doctor stopped the job after ${input.hang.timeoutS ?? '?'} s (--hang-timeout)`
      : '';
  if (first?.kind === 'out-of-memory')
    return {
      outcome: 'out-of-memory',
      text: `ran out of GPU memory on ${who(first, ranks.length)} in step ${first.step} (exit code ${code})${after}${hangTail}`,
    };
  if (input.forwardedSignal !== null)
    return {
      outcome: 'interrupted',
      text: `interrupted (${input.forwardedSignal} passed to the command); exit code ${code}; the report covers the steps before`,
    };
  if (first?.kind === 'exception') {
    const r = byPid.get(first.pid);
    if (r && r.steps.steps === 0 && ending.after.length === 0)
      return {
        outcome: 'crashed',
        text: `crashed before the first training step (pid ${first.pid}${first.rankFromEnv ? `, rank ${first.rank}` : ''}): ${first.error} (exit code ${code})`,
      };
    return {
      outcome: 'crashed',
      text: `crashed on ${who(first, ranks.length)} in step ${first.step}: ${first.error} (exit code ${code})${after}${hangTail}`,
    };
  }
  if (first?.kind === 'killed' && (code !== 0 || ranks.length > 1))
    return {
      outcome: 'failed',
      text: `${who(first, ranks.length)} died in step ${first.step} without an end record (${first.error ?? 'killed by a signal: SIGKILL, the OOM killer, a segfault'})${after}${hangTail}; exit code ${code}${input.exit.signal ? ` (${input.exit.signal})` : ''}`,
    };
  return null;
}

/** Doctor stopped the job after every training rank stalled (--hang-timeout), and which were behind. */
function hangOutcome(input: DoctorInput, hang: HangAnalysis | null): RunOutcome | null {
  if (!input.hang) return null;
  const behind = hang?.behindRanks ?? [];
  return {
    outcome: 'hung',
    text: `hung: every training rank made no progress for ${input.hang.timeoutS ?? '?'} s and doctor stopped the job (--hang-timeout)${
      behind.length ? `; behind: rank${behind.length > 1 ? 's' : ''} ${behind.join(', ')} (${hang?.why})` : ''
    }`,
  };
}

/** No process failed first: the command's exit and the processes' end reasons tell how it ended. */
function exitOutcome(input: DoctorInput, ranks: readonly RankSummary[]): RunOutcome {
  const code = input.exit.code;
  if (ranks.some((r) => r.exception?.name === 'KeyboardInterrupt'))
    return {
      outcome: 'interrupted',
      text: `interrupted (SIGINT passed to the command); exit code ${code}; the report covers the steps before`,
    };
  // A recorded run that kept no exit status: what its records imply, said as such (issue 47: "completed (exit code
  // 0)" above a note that no process ran and the code was assumed).
  const kept = input.exit.inferred === true ? ', as the probe\'s records tell it: the run directory kept no exit status' : '';
  if (code !== 0)
    return {
      outcome: 'failed',
      text: kept
        ? `failed${kept}`
        : `the command failed with exit code ${code}${input.exit.signal ? ` (killed by ${input.exit.signal})` : ''}`,
    };
  if (ranks.length > 0 && ranks.every((r) => r.endReason === 'max-steps'))
    return { outcome: 'stopped-after-steps', text: `stopped cleanly after ${ranks[0]?.steps.steps ?? 0} steps (--steps)` };
  return { outcome: 'completed', text: kept ? `completed${kept}` : 'completed (exit code 0)' };
}
