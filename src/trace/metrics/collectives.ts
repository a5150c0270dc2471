/**
 * Collective timings: each collective kernel of the analysed steps with the key
 * that finds the same collective on another rank. Cross-rank rules read them
 * (rank-imbalance); they are not part of the JSON metrics, whose size must not
 * grow with the trace (a DDP trace with small buckets has 24,000 collectives a GB).
 *
 * A key is a group and a number: the process group and collective name with the
 * NCCL sequence number when the trace has it, else the collective name with its
 * order of appearance (the n-th all_reduce).
 */
import type { TraceModel } from '../model.js';

export interface CollectiveTimings {
  /** Whether keys came from sequence numbers ('sequence') or order ('order'); 'none' when empty. */
  matchedBy: 'sequence' | 'order' | 'none';
  count: number;
  /** Distinct key groups (`process group#name` or `order#name`). */
  groups: string[];
  /** Per collective, in start order: its group (index in `groups`). */
  group: Int32Array;
  /** Its sequence number or order within the group; NaN when the number is in `seqText`. */
  seq: Float64Array;
  /** Sequence numbers wider than 2^53, as decimal text, by index. */
  seqText: Map<number, string>;
  durNs: Float64Array;
}

/** The collectives that start within the analysed steps (`steps` in time order), keyed for matching. */
export function collectiveTimings(model: TraceModel, steps: readonly { startNs: number; endNs: number }[]): CollectiveTimings {
  const c = model.collectives;
  const lo = steps.length > 0 ? steps[0]!.startNs : Number.POSITIVE_INFINITY;
  const hi = steps.length > 0 ? steps[steps.length - 1]!.endNs : Number.NEGATIVE_INFINITY;
  let n = 0;
  const order = new Uint32Array(c.count);
  for (let i = 0; i < c.count; i++) if (c.startNs[i]! >= lo && c.startNs[i]! < hi) order[n++] = i;
  const rows = order.subarray(0, n).sort((a, b) => c.startNs[a]! - c.startNs[b]! || a - b);
  const out: CollectiveTimings = {
    matchedBy: n === 0 ? 'none' : 'sequence',
    count: n,
    groups: [],
    group: new Int32Array(n),
    seq: new Float64Array(n),
    seqText: new Map(),
    durNs: new Float64Array(n),
  };
  const groupIds = new Map<string, number>();
  const seenOfName = new Map<number, number>();
  const groupOf = (key: string) => {
    let g = groupIds.get(key);
    if (g === undefined) {
      g = out.groups.length;
      out.groups.push(key);
      groupIds.set(key, g);
    }
    return g;
  };
  for (let k = 0; k < n; k++) {
    const i = rows[k]!;
    const name = model.names[c.nameId[i]!]!;
    const text = c.seqText.get(i);
    out.durNs[k] = c.durNs[i]!;
    if (text !== undefined || !Number.isNaN(c.seq[i]!)) {
      const pg = c.processGroupId[i]! >= 0 ? model.names[c.processGroupId[i]!]! : '';
      out.group[k] = groupOf(`${pg}#${name}`);
      out.seq[k] = text === undefined ? c.seq[i]! : Number.NaN;
      if (text !== undefined) out.seqText.set(k, text);
    } else {
      // Without sequence numbers, the n-th collective of a name matches the n-th on the other ranks.
      out.matchedBy = 'order';
      const seen = seenOfName.get(c.nameId[i]!) ?? 0;
      seenOfName.set(c.nameId[i]!, seen + 1);
      out.group[k] = groupOf(`order#${name}`);
      out.seq[k] = seen;
    }
  }
  return out;
}

/** The key of collective k, as one string (for matching; built on demand, not stored). */
export function collectiveKey(t: CollectiveTimings, k: number): string {
  return `${t.groups[t.group[k]!]}#${t.seqText.get(k) ?? t.seq[k]!}`;
}

/** Each rank's wait in collectives for the other ranks, per analysed step, and how many collectives every rank had. */
export interface CollectiveWaits {
  /** By rank index (the order the timings were given in), ns per step. */
  waitNsPerStep: number[];
  matched: number;
}

/**
 * The time each rank waits in collectives for the others (pure): a collective moves the same bytes on every rank, so
 * its transfer time is its shortest duration across the ranks; what a rank spends in it beyond that is waiting, and
 * the rank the others wait for waits least. Only collectives every rank has count. `stepCounts[i]` is rank i's
 * analysed steps (the wait is per step); ranks without timings (`timings.length` short of `stepCounts.length`) wait 0,
 * nothing matched. The one home of this figure: rank-imbalance's evidence and the pace model's job (pace/job.ts).
 */
export function collectiveWaits(timings: readonly CollectiveTimings[], stepCounts: readonly number[]): CollectiveWaits {
  const waitNs = stepCounts.map(() => 0);
  const maps = timings.length === stepCounts.length ? timings.map(timingsByKey) : [];
  let matched = 0;
  // Collectives of rank 0, each once, that every rank has.
  for (const [group, first] of maps[0] ?? []) {
    for (const key of first.keys()) {
      const durs: number[] = [];
      for (const m of maps) {
        const d = m.get(group)?.get(key);
        if (d === undefined) break;
        durs.push(d);
      }
      if (durs.length < maps.length) continue;
      matched++;
      const min = Math.min(...durs);
      durs.forEach((d, i) => {
        waitNs[i]! += d - min;
      });
    }
  }
  return { waitNsPerStep: waitNs.map((w, i) => w / Math.max(1, stepCounts[i]!)), matched };
}

/** Durations by group, then sequence number (or its text): a later duplicate replaces an earlier one. */
function timingsByKey(t: CollectiveTimings): Map<string, Map<number | string, number>> {
  const out = new Map<string, Map<number | string, number>>();
  for (let k = 0; k < t.count; k++) {
    const group = t.groups[t.group[k]!]!;
    let m = out.get(group);
    if (m === undefined) out.set(group, (m = new Map()));
    m.set(t.seqText.get(k) ?? t.seq[k]!, t.durNs[k]!);
  }
  return out;
}
