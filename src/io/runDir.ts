/**
 * A recorded doctor run directory, read back for `doctor --from` and `runs show --rediagnose` (shell): the probe's
 * records (probe.jsonl and the probes' fallback files probe-PID.jsonl), the profiler windows and snapshots the records
 * name (found in the directory by their file name, plain or gzipped: a directory copied from a GPU machine keeps its
 * files, not their absolute paths), the report.json doctor wrote, if any (the run's command, times, exit status
 * and GPU samples, which the records do not carry), and the model.json it wrote for `gpuwise plan`, if kept. A missing, empty, foreign or damaged directory is one InputError.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { analysedWindowEnds, type ProbeRecord, parseProbeLines, rankOf } from '../run/records.js';
import { parseDoctorReport } from '../doctor/reportCheck.js';
import type { DoctorReport } from '../doctor/reportTypes.js';
import { InputError } from './inputError.js';
import { asOtherInput } from './otherInput.js';

export interface CapturedFile {
  rank: number;
  /** The file in the run directory; null when it is not there (`recorded` says what the probe wrote). */
  path: string | null;
  /** The path the probe recorded (on the machine that ran it). */
  recorded: string;
  kind: 'trace' | 'window' | 'oom';
}

export interface RecordedRun {
  dir: string;
  records: ProbeRecord[];
  skippedLines: number;
  /** What was left out of the probe files and why (run/records.ts). */
  recordNotes: string[];
  /** The probe files read, relative to dir. */
  probeFiles: string[];
  traces: CapturedFile[];
  snapshots: CapturedFile[];
  /** RUN_DIR/report.json when doctor wrote one there and it reads as a doctor report. */
  savedReport: DoctorReport | null;
  /** Why report.json was not used (present but unreadable); null when absent or used. */
  savedReportProblem: string | null;
  /** RUN_DIR/model.json (the model `gpuwise plan --model` reads) when the directory holds one; null otherwise. */
  modelJson: string | null;
}

const PROBE_FILE = /^probe(-\d+)?\.jsonl$/;

/**
 * The file in `dir` for a path the probe recorded: its own name, gzipped or not; else, for the lowest rank, the
 * trimmed name a shipped run directory uses (`trace.json[.gz]`, `snapshot.pickle[.gz]`).
 */
function locate(dir: string, files: Set<string>, recorded: string, trimmedName: string, lowestRank: boolean): string | null {
  const name = basename(recorded);
  const plain = name.replace(/\.gz$/, '');
  for (const candidate of [name, plain, `${plain}.gz`]) if (files.has(candidate)) return join(dir, candidate);
  if (lowestRank) for (const candidate of [trimmedName, `${trimmedName}.gz`]) if (files.has(candidate)) return join(dir, candidate);
  return null;
}

export function readRunDir(dir: string): RecordedRun {
  let isDir: boolean;
  try {
    isDir = statSync(dir).isDirectory();
  } catch (e) {
    throw new InputError(dir, (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such directory' : (e as Error).message);
  }
  // A trace, a report.json, probe.jsonl itself...: said as what it is.
  if (!isDir) throw asOtherInput(new InputError(dir, 'not a directory (give the run directory doctor wrote: it holds probe.jsonl)'), dir, 'run-directory');
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch (e) {
    throw new InputError(dir, `cannot read: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
  }
  if (entries.length === 0) throw new InputError(dir, 'empty directory: not a doctor run directory (no probe.jsonl)');
  const probeFiles = entries.filter((f) => PROBE_FILE.test(f)).sort();
  if (probeFiles.length === 0)
    throw new InputError(dir, 'not a doctor run directory: no probe.jsonl or probe-PID.jsonl in it (gpuwise doctor --out DIR writes them)');
  const texts: string[] = [];
  let lines = 0;
  for (const f of probeFiles) {
    try {
      const text = readFileSync(join(dir, f), 'utf8');
      texts.push(text.endsWith('\n') || text === '' ? text : `${text}\n`);
      lines += text.split('\n').filter((l) => l.trim() !== '').length;
    } catch (e) {
      throw new InputError(join(dir, f), `cannot read: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    }
  }
  const { records, skippedLines, notes: recordNotes } = parseProbeLines(texts.join(''));
  if (records.length === 0)
    throw new InputError(
      join(dir, probeFiles[0] as string),
      lines === 0
        ? 'empty: the probe recorded nothing in this run'
        : `damaged: none of its ${lines} line(s) is a probe record this gpuwise reads${recordNotes[0] ? ` (${recordNotes[0]})` : ''}`,
    );
  const files = new Set(entries);
  const profileEnds = analysedWindowEnds(records);
  const windows = new Set<ProbeRecord>(profileEnds);
  const lowest = Math.min(...profileEnds.map(rankOf), Number.POSITIVE_INFINITY);
  const traces: CapturedFile[] = [];
  const snapshots: CapturedFile[] = [];
  for (const r of records) {
    if (r.type === 'profile-end' && windows.has(r)) {
      const low = rankOf(r) === lowest;
      if (typeof r.trace === 'string') traces.push({ rank: rankOf(r), recorded: r.trace, kind: 'trace', path: locate(dir, files, r.trace, 'trace.json', low) });
      if (typeof r.snapshot === 'string')
        snapshots.push({ rank: rankOf(r), recorded: r.snapshot, kind: 'window', path: locate(dir, files, r.snapshot, 'snapshot.pickle', low) });
    }
    if (r.type === 'oom' && typeof r.snapshot === 'string')
      snapshots.push({ rank: rankOf(r), recorded: r.snapshot, kind: 'oom', path: locate(dir, files, r.snapshot, 'oom-snapshot.pickle', false) });
  }
  let savedReport: DoctorReport | null = null;
  let savedReportProblem: string | null = null;
  const reportPath = join(dir, 'report.json');
  if (existsSync(reportPath)) {
    try {
      savedReport = parseDoctorReport(readFileSync(reportPath, 'utf8'));
    } catch (e) {
      savedReportProblem = `report.json ${(e as Error).message}: the run's command, times and exit status are taken from the records`;
    }
  }
  const modelJson = files.has('model.json') ? join(dir, 'model.json') : null;
  return { dir, records, skippedLines, recordNotes, probeFiles, traces, snapshots, savedReport, savedReportProblem, modelJson };
}
