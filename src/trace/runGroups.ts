/**
 * Which trace files belong together. A folder of traces may hold one
 * distributed run (one file per rank), several unrelated runs, or one run
 * profiled in several windows (`tensorboard_trace_handler` with a repeating
 * schedule writes a file per rank per window). Only the ranks of one window of
 * one run may be compared with each other: cross-rank rules on files that are
 * not are confident nonsense. Files are grouped by their `distributedInfo`
 * (rank, world size, backend) and by time: the ranks of one window were
 * profiled at the same time, so their spans overlap. Pure.
 */
import type { TraceModel } from './model.js';

/** What grouping reads from one file's model. */
export interface TraceIdentity {
  path: string;
  /** null: no distributedInfo (a single-process trace). */
  rank: number | null;
  worldSize: number;
  backend: string | null;
  /** Wall-clock span of the trace's CPU activity, ns (baseTimeNanoseconds + timestamps); null when the trace has no base time. */
  startNs: number | null;
  endNs: number | null;
}

export interface RunGroup {
  /** Indices into the identities given, by rank. */
  members: number[];
  /** One phrase saying what the group is ("ranks 0-1 of 2 (nccl)", "a single-process trace"). */
  label: string;
  /** What does not add up (missing ranks, a rank beyond the world size); empty when nothing. */
  notes: string[];
}

export function identityOf(path: string, model: TraceModel): TraceIdentity {
  const d = model.distributed;
  const base = model.baseTimeNs === null ? Number.NaN : Number(model.baseTimeNs);
  const origin = base + model.originUs * 1000;
  const timed = Number.isFinite(origin) && model.cpuRangeNs[1] > model.cpuRangeNs[0];
  return {
    path,
    rank: d === null || d.worldSize <= 1 ? null : d.rank,
    worldSize: d?.worldSize ?? 1,
    backend: d?.backend ?? null,
    startNs: timed ? origin + model.cpuRangeNs[0] : null,
    endNs: timed ? origin + model.cpuRangeNs[1] : null,
  };
}

/**
 * Splits files into groups that may be analysed together: each single-process trace alone; distributed traces
 * together when they share world size and backend, have distinct ranks and (where both carry a base time) overlap
 * in time. A second file for a rank, or a world size that differs, starts another group.
 */
export function groupRuns(ids: readonly TraceIdentity[]): RunGroup[] {
  type Open = { worldSize: number; backend: string | null; ranks: Map<number, number>; lo: number; hi: number };
  const singles: number[] = [];
  const open: Open[] = [];
  const order = ids.map((_, i) => i).sort((a, b) => (ids[a]!.startNs ?? Number.POSITIVE_INFINITY) - (ids[b]!.startNs ?? Number.POSITIVE_INFINITY) || a - b);
  for (const i of order) {
    const id = ids[i]!;
    if (id.rank === null) {
      singles.push(i);
      continue;
    }
    const fits = (g: Open) =>
      g.worldSize === id.worldSize &&
      g.backend === id.backend &&
      !g.ranks.has(id.rank!) &&
      (id.startNs === null || !Number.isFinite(g.lo) || (id.startNs <= g.hi && id.endNs! >= g.lo));
    let g = open.find(fits);
    if (g === undefined) {
      g = { worldSize: id.worldSize, backend: id.backend, ranks: new Map(), lo: Number.POSITIVE_INFINITY, hi: Number.NEGATIVE_INFINITY };
      open.push(g);
    }
    g.ranks.set(id.rank, i);
    if (id.startNs !== null) {
      g.lo = Math.min(g.lo, id.startNs);
      g.hi = Math.max(g.hi, id.endNs!);
    }
  }
  const groups: { at: number; group: RunGroup }[] = [];
  for (const g of open) {
    const ranks = [...g.ranks.keys()].sort((a, b) => a - b);
    const notes: string[] = [];
    const missing = Array.from({ length: g.worldSize }, (_, r) => r).filter((r) => !g.ranks.has(r));
    if (missing.length > 0 && missing.length < g.worldSize) notes.push(`rank${missing.length > 1 ? 's' : ''} ${listRanks(missing)} of ${g.worldSize} not among the inputs`);
    const beyond = ranks.filter((r) => r < 0 || r >= g.worldSize);
    if (beyond.length) notes.push(`rank ${beyond.join(', ')} is outside a world of ${g.worldSize}`);
    const members = ranks.map((r) => g.ranks.get(r)!);
    groups.push({ at: Math.min(...members), group: { members, label: `rank${ranks.length > 1 ? 's' : ''} ${listRanks(ranks)} of ${g.worldSize}${g.backend ? ` (${g.backend})` : ''}`, notes } });
  }
  for (const i of singles) groups.push({ at: i, group: { members: [i], label: 'a single-process trace', notes: [] } });
  // Groups in the order their first file was given (a sorted folder listing stays sorted).
  return groups.sort((a, b) => a.at - b.at).map((g) => g.group);
}

/** 0,1,2,3,5 -> "0-3, 5". */
export function listRanks(ranks: readonly number[]): string {
  const out: string[] = [];
  for (let i = 0; i < ranks.length; ) {
    let j = i;
    while (j + 1 < ranks.length && ranks[j + 1] === ranks[j]! + 1) j++;
    out.push(j > i ? `${ranks[i]}-${ranks[j]}` : String(ranks[i]));
    i = j + 1;
  }
  return out.join(', ');
}

/** Why several groups were found, for the line that says the inputs were split. */
export function describeSplit(ids: readonly TraceIdentity[], groups: readonly RunGroup[]): string {
  const distributed = groups.filter((g) => ids[g.members[0]!]!.rank !== null);
  const worldSizes = new Set(distributed.map((g) => ids[g.members[0]!]!.worldSize));
  const reasons: string[] = [];
  const singles = groups.length - distributed.length;
  if (singles > 0) reasons.push(`${singles} single-process trace${singles > 1 ? 's' : ''} (no distributedInfo: not ranks of one run)`);
  if (worldSizes.size > 1) reasons.push(`world sizes differ (${[...worldSizes].sort((a, b) => a - b).join(', ')})`);
  if (distributed.length > worldSizes.size) reasons.push('a rank appears in several files (separate runs or profiling windows, split by time)');
  return `${ids.length} traces form ${groups.length} separate runs, analysed one by one: ${reasons.join('; ')}`;
}
