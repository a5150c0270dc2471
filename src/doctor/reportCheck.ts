/**
 * Is this parsed JSON a doctor report this gpuwise can read? (pure). Used where a report comes back
 * from a file or the run history, so a foreign JSON file gets one clear line instead of a crash deep
 * in a renderer. Checks the envelope and the parts every reader walks; optional parts added to
 * schema 1 later (stepTimeline, whatIfs) are read defensively by the renderers.
 */
import { DOCTOR_SCHEMA_VERSION, type DoctorReport } from './reportTypes.js';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The problem with `value` as a doctor report, or null when it is one. */
export function doctorReportProblem(value: unknown): string | null {
  if (!isObject(value) || value.tool !== 'gpuwise') return 'is not a gpuwise report';
  if (value.command !== 'doctor') return `is a gpuwise ${String(value.command)} report, not a doctor report`;
  if (typeof value.schemaVersion !== 'number') return 'is not a gpuwise doctor report (no schemaVersion)';
  if (value.schemaVersion > DOCTOR_SCHEMA_VERSION)
    return `was written by a newer gpuwise (doctor report schema ${value.schemaVersion}; this one reads ${DOCTOR_SCHEMA_VERSION})`;
  if (value.schemaVersion !== DOCTOR_SCHEMA_VERSION) return `has an unknown doctor report schema ${value.schemaVersion}`;
  const run = value.run;
  if (!isObject(run) || !Array.isArray(run.command) || typeof run.outcome !== 'string' || typeof run.startedAtMs !== 'number')
    return 'is a damaged gpuwise doctor report (no run section)';
  if (!Array.isArray(value.ranks) || !Array.isArray(value.findings) || !isObject(value.environment) || !isObject(value.profile))
    return 'is a damaged gpuwise doctor report (ranks, findings, environment or profile missing)';
  for (const r of value.ranks) if (!isObject(r) || !isObject(r.steps)) return 'is a damaged gpuwise doctor report (a rank without step statistics)';
  for (const f of value.findings)
    if (!isObject(f) || typeof f.id !== 'string' || typeof f.severity !== 'string' || !Array.isArray(f.evidence) || !isObject(f.recommendation))
      return 'is a damaged gpuwise doctor report (a malformed finding)';
  return null;
}

/** Parses report text; throws an Error whose message is the one-line problem. */
export function parseDoctorReport(text: string): DoctorReport {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Error('is not JSON (a doctor report is RUN_DIR/report.json)');
  }
  const problem = doctorReportProblem(value);
  if (problem !== null) throw new Error(problem);
  return value as DoctorReport;
}

/** The planner what-ifs, when the report carries them (added to schema 1 later): only well-formed entries. */
export function whatIfsOf(report: DoctorReport): { title: string; text: string }[] {
  const raw = (report as { whatIfs?: unknown }).whatIfs;
  if (!Array.isArray(raw)) return [];
  return raw.filter(
    (w): w is { title: string; text: string } => isObject(w) && typeof w.title === 'string' && typeof w.text === 'string',
  );
}
