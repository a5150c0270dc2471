/**
 * The doctor input of a recorded run (pure): what `doctor --from RUN_DIR` hands to buildDoctorReport. The probe's
 * records are the run; the command, times, exit status and GPU samples come from the report.json doctor wrote beside
 * them when there is one (the records do not carry them), else they are read off the records and the report's notes
 * say what was inferred.
 */
import type { ChildExit, DoctorInput, DoctorReport, SnapshotInput, TraceInput } from './report.js';
import { type ProbeRecord, rankOf } from '../run/records.js';

export interface RecordedRunInput {
  dir: string;
  records: ProbeRecord[];
  skippedLines: number;
  /** Why records were left out (parseProbeLines). */
  recordNotes: string[];
  traces: TraceInput[];
  snapshots: SnapshotInput[];
  savedReport: DoctorReport | null;
  savedReportProblem: string | null;
  /** This gpuwise's version (the report is rebuilt with its rules). */
  version: string;
}

/** The exit status the records imply, when no report.json kept the real one; the note says how it was read. */
export function exitFromRecords(records: readonly ProbeRecord[]): { exit: ChildExit; note: string } {
  const pids = new Set(records.map((r) => r.pid));
  const ends = records.filter((r) => r.type === 'end');
  const crash = records.find((r) => r.type === 'exception' && r.exception !== 'KeyboardInterrupt');
  const interrupted = ends.some((r) => r.type === 'end' && r.reason === 'interrupted');
  const unended = [...pids].filter((pid) => !ends.some((e) => e.pid === pid));
  const how = 'the exit status is not in the run directory (no report.json): ';
  if (crash) return { exit: { code: 1, signal: null }, note: `${how}an exception ended the run, counted as exit code 1` };
  if (interrupted) return { exit: { code: 130, signal: null }, note: `${how}the probe saw an interrupt, counted as exit code 130` };
  if (unended.length > 0)
    return {
      exit: { code: 1, signal: null },
      note: `${how}process(es) ${unended.join(', ')} ended without the probe's end record (killed, or cut short): counted as a failure`,
    };
  return { exit: { code: 0, signal: null }, note: `${how}every process ended cleanly in the probe's records, counted as exit code 0` };
}

export function recordedRunInput(run: RecordedRunInput): DoctorInput {
  const saved = run.savedReport;
  const notes: string[] = [];
  const recordedBy = saved ? ` (recorded by gpuwise ${saved.version})` : '';
  notes.push(`re-diagnosed from ${run.dir} with the rules of gpuwise ${run.version}${recordedBy}: no process ran`);
  if (run.savedReportProblem) notes.push(run.savedReportProblem);
  notes.push(...run.recordNotes);
  const times = run.records.map((r) => r.t).filter((t) => Number.isFinite(t));
  const hello = [...run.records].filter((r) => r.type === 'hello').sort((a, b) => rankOf(a) - rankOf(b))[0];
  let exit: ChildExit;
  if (saved) exit = { code: saved.run.exitCode, signal: saved.run.signal };
  else {
    const inferred = exitFromRecords(run.records);
    exit = inferred.exit;
    notes.push(inferred.note);
  }
  return {
    version: run.version,
    command: saved?.run.command ?? (hello && hello.type === 'hello' ? ['python', ...hello.argv] : []),
    runDir: run.dir,
    startedAtMs: saved?.run.startedAtMs ?? (times.length ? Math.min(...times) * 1000 : 0),
    endedAtMs: saved ? saved.run.startedAtMs + saved.run.durationS * 1000 : times.length ? Math.max(...times) * 1000 : 0,
    exit,
    forwardedSignal: null,
    records: run.records,
    skippedLines: run.skippedLines,
    traces: run.traces,
    snapshots: run.snapshots,
    gpuSamples: null,
    gpuUnavailableReason: saved?.gpus ? null : 're-diagnosed from the probe records; the GPU samples live only in a report.json, and there is none',
    recordedGpus: saved?.gpus ? { gpus: saved.gpus, driver: saved.environment.driver ?? null } : null,
    notes,
  };
}
