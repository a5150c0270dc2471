/**
 * How the command doctor or tune ran ended (pure): its exit status as the shell saw it, or, for a recorded run without
 * that (doctor --from on a directory without report.json), as the probe's records imply it.
 */
import type { ProbeRecord } from './records.js';

export interface ChildExit {
  /** The child's exit status; for a death by signal, 128 + the signal number (shell convention). */
  code: number;
  signal: string | null;
  /** The status was read off the probe's records (a recorded run kept none), not given by the shell. */
  inferred?: boolean;
}

/** The exit status the records imply, when no report.json kept the real one; the note says how it was read. */
export function exitFromRecords(records: readonly ProbeRecord[]): { exit: ChildExit; note: string } {
  const pids = new Set(records.map((r) => r.pid));
  const ends = records.filter((r) => r.type === 'end');
  const crash = records.find((r) => r.type === 'exception' && r.exception !== 'KeyboardInterrupt');
  const interrupted = ends.some((r) => r.type === 'end' && r.reason === 'interrupted');
  const unended = [...pids].filter((pid) => !ends.some((e) => e.pid === pid));
  const how = 'the exit status is not in the run directory (no report.json): ';
  if (crash) return { exit: { code: 1, signal: null, inferred: true }, note: `${how}an exception ended the run, counted as exit code 1` };
  if (interrupted) return { exit: { code: 130, signal: null, inferred: true }, note: `${how}the probe saw an interrupt, counted as exit code 130` };
  if (unended.length > 0)
    return {
      exit: { code: 1, signal: null, inferred: true },
      note: `${how}process(es) ${unended.join(', ')} ended without the probe's end record (killed, or cut short): counted as a failure`,
    };
  return { exit: { code: 0, signal: null, inferred: true }, note: `${how}every process ended cleanly in the probe's records, counted as exit code 0` };
}

