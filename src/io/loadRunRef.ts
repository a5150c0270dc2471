/**
 * What a RUN argument of `runs show` and `compare` names (shell): a run directory or a report.json
 * (works without any store), else a run of the history: `last`, `last~N`, an id or a unique id prefix. The report
 * is checked as a doctor report (doctor/reportCheck.ts); the commands take it through `cli/runRef.ts`, which also
 * proves it readable by their renderers.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { DoctorReport } from '../doctor/reportTypes.js';
import { parseDoctorReport } from '../doctor/reportCheck.js';
import { InputError } from './inputError.js';
import { readTextInput } from './readTextInput.js';
import { loadRunByRef } from './runStore.js';
import { asOtherInput } from './otherInput.js';

export interface LoadedRun {
  /** How to name the run to the user: its id, or the path it was read from. */
  label: string;
  /** The history's id; null for a report read from a file. */
  id: string | null;
  report: DoctorReport;
  /** The report.json read, or the store file. */
  source: string;
  /** What the user should know about how the reference was resolved (runs `last` skipped), or null. */
  note: string | null;
}

/** Reads RUN_DIR/report.json or a report file; InputError with one line when it is not a doctor report. */
function readReportFile(path: string): { report: DoctorReport; file: string } {
  const { file, text } = readTextInput(path, 'report.json', 'not a doctor run directory?');
  let report: DoctorReport;
  try {
    report = parseDoctorReport(text);
  } catch (e) {
    throw asOtherInput(new InputError(file, (e as Error).message), file, 'doctor-report'); // a trace...: said as what it is
  }
  return { report, file };
}

export function looksLikePath(ref: string): boolean {
  return existsSync(ref) || ref.includes('/') || ref.endsWith('.json') || ref === '.' || ref === '..';
}

/** `measuredOnly`: `last` and `last~N` skip runs that measured no step, saying so in `note` (compare). */
export async function readRunRef(ref: string, storeDir: string, opts: { measuredOnly?: boolean } = {}): Promise<LoadedRun> {
  if (looksLikePath(ref)) {
    const { report, file } = readReportFile(ref);
    return { label: ref, id: null, report, source: file, note: null };
  }
  const { id, note, report } = await loadRunByRef(storeDir, ref, opts);
  const source = join(storeDir, 'runs.sqlite');
  return { label: id, id, report, source, note };
}
