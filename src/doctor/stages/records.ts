/**
 * Stage 1 of the doctor report, records: the probe's records grouped by the process that sent them.
 * In: every record the collector kept (`DoctorInput.records`). Out: one `ProcessRecords` per process, in the order the
 * processes first reported, with the records each later stage reads picked out.
 */
import {
  type CpuRecord,
  type HelloRecord,
  type LoaderRecord,
  type ModelRecord,
  type ProbeRecord,
  rankOf,
  type StepRecord,
} from '../../run/records.js';

/** One process's records, grouped. */
export interface ProcessRecords {
  pid: number;
  rank: number;
  /** RANK was set in the environment (else the one process counts as rank 0). */
  rankFromEnv: boolean;
  records: ProbeRecord[];
  hello: HelloRecord | null;
  model: ModelRecord | null;
  steps: StepRecord[];
  /** The DataLoader's own production, measured in its workers (`loader` records; none from an older probe). */
  loader: LoaderRecord[];
  /** The process's CPU time by thread (`cpu` records; none from an older probe). */
  cpu: CpuRecord[];
}

/** The records grouped by process, in the order the processes first reported. */
export function groupProcesses(records: readonly ProbeRecord[]): ProcessRecords[] {
  const byPid = new Map<number, ProbeRecord[]>();
  for (const r of records) {
    const list = byPid.get(r.pid) ?? [];
    list.push(r);
    byPid.set(r.pid, list);
  }
  return [...byPid].map(([pid, recs]) => processOf(pid, recs));
}

function processOf(pid: number, recs: ProbeRecord[]): ProcessRecords {
  const first = recs[0] as ProbeRecord;
  return {
    pid,
    rank: rankOf(first),
    rankFromEnv: first.rank !== null,
    records: recs,
    hello: recs.find((r): r is HelloRecord => r.type === 'hello') ?? null,
    // The last: a probe that sent one with a time window sends the training's own at the first step.
    model: recs.findLast((r): r is ModelRecord => r.type === 'model') ?? null,
    steps: recs.filter((r): r is StepRecord => r.type === 'step'),
    loader: recs.filter((r): r is LoaderRecord => r.type === 'loader'),
    cpu: recs.filter((r): r is CpuRecord => r.type === 'cpu'),
  };
}

/** The last allocator figures a process's steps reported; null when none did. */
export function lastMemoryOf(p: Pick<ProcessRecords, 'steps'>): StepRecord['memory'] {
  return [...p.steps].reverse().find((s) => s.memory !== null)?.memory ?? null;
}
