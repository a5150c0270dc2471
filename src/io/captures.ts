/**
 * The profiler windows and memory snapshots of a doctor run, read and analysed (shell): analyze's and memory's own
 * code on the files, so a run diagnosed by doctor reads like `analyze` and `memory` on them. A file that cannot be
 * read or analysed becomes an entry with its error, never a failure of the whole report.
 */
import type { SnapshotInput, TraceInput } from '../doctor/reportTypes.js';
import { analyze as analyzeSnapshot } from '../memory/report.js';
import { analyzeTrace, collectiveTimings } from '../trace/metrics/index.js';
import { loadTrace } from './loadTrace.js';
import { readSnapshotFile } from './readSnapshot.js';

export interface CaptureRef {
  rank: number;
  /** The file to read; null when it is not there (`missing` says why). */
  path: string | null;
  /** How to name it to the user. */
  label: string;
  missing?: string;
}

export async function analyseTraceFiles(refs: readonly CaptureRef[]): Promise<TraceInput[]> {
  const out: TraceInput[] = [];
  for (const r of refs) {
    if (r.path === null) {
      out.push({ rank: r.rank, path: r.label, metrics: null, collectives: null, error: r.missing ?? 'not found' });
      continue;
    }
    try {
      const model = await loadTrace(r.path);
      const metrics = analyzeTrace(model);
      out.push({ rank: r.rank, path: r.label, metrics, collectives: collectiveTimings(model, metrics.steps), error: null });
    } catch (e) {
      out.push({ rank: r.rank, path: r.label, metrics: null, collectives: null, error: (e as Error).message });
    }
  }
  return out.sort((a, b) => a.rank - b.rank);
}

export async function analyseSnapshotFiles(refs: readonly (CaptureRef & { kind: 'window' | 'oom' })[]): Promise<SnapshotInput[]> {
  const out: SnapshotInput[] = [];
  for (const r of refs) {
    if (r.path === null) {
      out.push({ rank: r.rank, path: r.label, kind: r.kind, report: null, error: r.missing ?? 'not found' });
      continue;
    }
    try {
      const { snapshot } = await readSnapshotFile(r.path);
      out.push({ rank: r.rank, path: r.label, kind: r.kind, report: analyzeSnapshot(snapshot, { path: r.path }).report, error: null });
    } catch (e) {
      out.push({ rank: r.rank, path: r.label, kind: r.kind, report: null, error: (e as Error).message });
    }
  }
  return out;
}
