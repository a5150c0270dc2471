/**
 * The doctor input of a recorded run (pure): what `doctor --from RUN_DIR` hands to buildDoctorReport. The probe's
 * records are the run, kept through the same bounded sample the live collector keeps (recordSample.ts), so a
 * re-diagnosis runs the live run's code on the live run's records; the command, times, exit status and GPU samples
 * come from the report.json doctor wrote beside them when there is one (the records do not carry them), else they are
 * read off the records and the report's notes say what was inferred.
 */
import { type ChildExit, exitFromRecords } from '../run/exit.js';
import { openStalls } from './hang.js';
import { RecordSample } from './recordSample.js';
import type { DoctorInput, DoctorReport, SnapshotInput, TraceInput } from './reportTypes.js';
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
  /** The directory's model.json (for `gpuwise plan --model`), null when it holds none. */
  modelJson: string | null;
  /** This gpuwise's version (the report is rebuilt with its rules). */
  version: string;
  /** The processes' step counters in the directory (io/beacons.ts); absent: none. */
  stepBeacons?: Record<number, number>;
}

/** Where GPU samples come from, in the user's terms: the lead of every reason a re-diagnosis has none. */
const SAMPLED_LIVE = 'GPU utilisation and memory are sampled while doctor runs the command, and kept in the report it writes';

/**
 * The reasons a re-diagnosis gave before, each a report written by `doctor --from` (issue 47: "report.json holds
 * none" said where the tool keeps them, not what the user can do): read in a saved report, they say it came from one.
 */
const REDIAGNOSIS_REASONS = [
  SAMPLED_LIVE,
  "this run directory's report.json holds none",
  'the GPU samples live only in the report.json',
  'the GPU samples live in report.json',
  're-diagnosed from the probe records',
];

/**
 * Why a re-diagnosed run has no GPU samples: they are kept only in the report doctor wrote as it ran the command (the
 * probe's records do not carry them), so say whether there is none, it cannot be read, it came from a re-diagnosis
 * itself, or the recorded run had none and why; and so what gets them: running the command under doctor.
 */
export function noGpuSamplesReason(saved: DoctorReport | null, unreadable: boolean): string {
  if (unreadable) return `${SAMPLED_LIVE} (report.json), and this run directory's could not be read (see the notes)`;
  if (!saved) return `${SAMPLED_LIVE}; this run directory holds the probe's records but no such report`;
  const was = saved.gpuUnavailableReason;
  if (was === null || REDIAGNOSIS_REASONS.some((r) => was.startsWith(r)))
    return `${SAMPLED_LIVE}; this run directory's report was itself made by doctor --from from the probe's records, which do not carry them`;
  return `the recorded run had none (${was})`;
}

export function recordedRunInput(run: RecordedRunInput): DoctorInput {
  const saved = run.savedReport;
  const sample = new RecordSample();
  for (const r of run.records) sample.add(r);
  const records = sample.records();
  const notes: string[] = [];
  const recordedBy = saved ? ` (recorded by gpuwise ${saved.version})` : '';
  notes.push(`re-diagnosed from ${run.dir} with the rules of gpuwise ${run.version}${recordedBy}: no process ran`);
  if (run.savedReportProblem) notes.push(run.savedReportProblem);
  notes.push(...run.recordNotes);
  const times = records.map((r) => r.t).filter((t) => Number.isFinite(t));
  const hello = [...records].filter((r) => r.type === 'hello').sort((a, b) => rankOf(a) - rankOf(b))[0];
  let exit: ChildExit;
  if (saved) exit = { code: saved.run.exitCode, signal: saved.run.signal };
  else {
    const inferred = exitFromRecords(records);
    exit = inferred.exit;
    notes.push(inferred.note);
  }
  // A hang doctor stopped: from the saved report; without one, when every process left without an end record was stalled.
  let hang: DoctorInput['hang'] = null;
  if (saved?.run.outcome === 'hung') hang = { timeoutS: saved.run.hang?.timeoutS ?? null, atMs: saved.run.hang?.stoppedAtMs ?? null };
  else if (!saved) {
    const stalled = new Set(openStalls(records).map((s) => s.pid));
    const unended = [...new Set(records.map((r) => r.pid))].filter((pid) => !records.some((r) => r.pid === pid && r.type === 'end'));
    if (stalled.size > 0 && unended.every((pid) => stalled.has(pid))) {
      hang = { timeoutS: null, atMs: null };
      notes.push('every process without an end record was stalled at its last record: taken as a hang that was stopped');
    }
  }
  // When each process ended, as the live run saw it (its connection closing): who failed first.
  const disconnectedAtMs: Record<number, number> = {};
  for (const r of saved?.ranks ?? []) if (typeof r.endedAtS === 'number') disconnectedAtMs[r.pid] = r.endedAtS * 1000;
  return {
    version: run.version,
    command: saved?.run.command ?? (hello && hello.type === 'hello' ? ['python', ...hello.argv] : []),
    runDir: run.dir,
    startedAtMs: saved?.run.startedAtMs ?? (times.length ? Math.min(...times) * 1000 : 0),
    endedAtMs: saved ? saved.run.startedAtMs + saved.run.durationS * 1000 : times.length ? Math.max(...times) * 1000 : 0,
    exit,
    forwardedSignal: saved?.run.outcome === 'interrupted' && saved.run.signal ? saved.run.signal : null,
    hang,
    disconnectedAtMs,
    ...(run.stepBeacons ? { stepBeacons: run.stepBeacons } : {}),
    records,
    stepRecordsByPid: sample.stepCounts(),
    skippedLines: run.skippedLines,
    traces: run.traces,
    snapshots: run.snapshots,
    gpuSamples: null,
    gpuUnavailableReason: saved?.gpus ? null : noGpuSamplesReason(saved, run.savedReportProblem !== null),
    recordedGpus: saved?.gpus ? { gpus: saved.gpus, driver: saved.environment.driver ?? null } : null,
    planModelFile: run.modelJson,
    ...(saved?.environment.unprobed ? { unprobed: saved.environment.unprobed } : {}),
    notes,
  };
}
