/** Sorted, disjoint intervals and the few operations the timeline needs. */

export interface Segments {
  start: Float64Array;
  end: Float64Array;
  n: number;
}

export const EMPTY_SEGMENTS: Segments = { start: new Float64Array(0), end: new Float64Array(0), n: 0 };

/** Union of intervals given in any order. */
export function unionOf(intervals: ReadonlyArray<readonly [number, number]>): Segments {
  const starts = Float64Array.from(intervals, (i) => i[0]);
  const ends = Float64Array.from(intervals, (i) => i[1]);
  return unionOfColumns(starts, ends, intervals.length);
}

/** Union of intervals given as columns, in any order (no pair per interval is made). */
export function unionOfColumns(starts: Float64Array, ends: Float64Array, count: number): Segments {
  const order = new Int32Array(count);
  let k = 0;
  for (let i = 0; i < count; i++) if (ends[i]! > starts[i]!) order[k++] = i;
  const sorted = order.subarray(0, k).sort((x, y) => starts[x]! - starts[y]!);
  const start = new Float64Array(k);
  const end = new Float64Array(k);
  let n = 0;
  for (const i of sorted) {
    const a = starts[i]!;
    const b = ends[i]!;
    if (n > 0 && a <= end[n - 1]!) {
      if (b > end[n - 1]!) end[n - 1] = b;
    } else {
      start[n] = a;
      end[n] = b;
      n++;
    }
  }
  return { start: start.subarray(0, n), end: end.subarray(0, n), n };
}

/** Index of the first segment whose end is after t. */
export function firstEndingAfter(s: Segments, t: number): number {
  let lo = 0;
  let hi = s.n;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (s.end[mid]! <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Length of [a, b] covered by s. */
export function coveredLen(s: Segments, a: number, b: number): number {
  let total = 0;
  for (let i = firstEndingAfter(s, a); i < s.n && s.start[i]! < b; i++) {
    total += Math.min(b, s.end[i]!) - Math.max(a, s.start[i]!);
  }
  return total;
}

/** Whether t lies inside a segment (closed at both ends, with a tolerance). */
export function covers(s: Segments, t: number, tolNs: number): boolean {
  return coveringIndex(s, t, tolNs) >= 0;
}

/** The index of the segment that covers t (within tolNs), or -1. */
export function coveringIndex(s: Segments, t: number, tolNs: number): number {
  const i = firstEndingAfter(s, t - tolNs);
  return i < s.n && s.start[i]! <= t + tolNs ? i : -1;
}

/** Length of the part of [lo, hi] covered by both a and b. */
export function intersectionLen(a: Segments, b: Segments, lo: number, hi: number): number {
  let i = firstEndingAfter(a, lo);
  let j = firstEndingAfter(b, lo);
  let total = 0;
  while (i < a.n && j < b.n) {
    const s = Math.max(a.start[i]!, b.start[j]!, lo);
    const e = Math.min(a.end[i]!, b.end[j]!, hi);
    if (e > s) total += e - s;
    if (a.start[i]! >= hi && b.start[j]! >= hi) break;
    if (a.end[i]! < b.end[j]!) i++;
    else j++;
  }
  return total;
}

/**
 * Removes from `pieces` (disjoint [a, b] pairs) whatever `s` covers, and
 * returns the removed length. Used to hand idle time to causes in priority order.
 */
export function claim(pieces: number[], s: Segments): number {
  if (s.n === 0 || pieces.length === 0) return 0;
  let claimed = 0;
  const out: number[] = [];
  for (let p = 0; p < pieces.length; p += 2) {
    let a = pieces[p]!;
    const b = pieces[p + 1]!;
    for (let i = firstEndingAfter(s, a); i < s.n && s.start[i]! < b && a < b; i++) {
      const cs = Math.max(a, s.start[i]!);
      const ce = Math.min(b, s.end[i]!);
      if (ce <= cs) continue;
      if (cs > a) out.push(a, cs);
      claimed += ce - cs;
      a = ce;
    }
    if (a < b) out.push(a, b);
  }
  pieces.length = 0;
  for (const x of out) pieces.push(x);
  return claimed;
}

export function piecesLen(pieces: number[]): number {
  let t = 0;
  for (let p = 0; p < pieces.length; p += 2) t += pieces[p + 1]! - pieces[p]!;
  return t;
}

/** Index of the first value strictly greater than t in a sorted array. */
export function firstAfter(sorted: ArrayLike<number>, t: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid]! <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
