/**
 * Exact medians of values that are produced by a pass (a walk over the op
 * logs) instead of held in an array: a radix selection on the values' bits,
 * 16 bits per pass, until few enough candidates are left to sort. Memory is a
 * 256 KB histogram per series whatever the number of values; a median costs
 * 2-5 passes (usually 2), and one pass serves every series.
 */

const f64 = new Float64Array(1);
const u32 = new Uint32Array(f64.buffer);
/** Little-endian: word 1 holds the sign, exponent and top of the mantissa. */
const HI = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1 ? 1 : 0;
const LO = 1 - HI;
const COLLECT_AT_MOST = 8192;

/** The 64-bit key whose unsigned order is the numeric order of finite doubles, as [hi, lo]. */
function keyOf(v: number, out: Uint32Array): void {
  f64[0] = v === 0 ? 0 : v; // -0 sorts with +0
  const hi = u32[HI]!;
  const lo = u32[LO]!;
  if (hi >>> 31) {
    out[0] = ~hi >>> 0;
    out[1] = ~lo >>> 0;
  } else {
    out[0] = (hi | 0x80000000) >>> 0;
    out[1] = lo;
  }
}

/** The 16-bit digit of a key at level 0 (most significant) to 3. */
function digit(key: Uint32Array, level: number): number {
  const word = key[level >> 1]!;
  return level & 1 ? word & 0xffff : word >>> 16;
}

const enum Phase {
  histogram,
  collect,
  /** Every candidate left has the same 64 bits: any one of them is the value. */
  same,
  /** Even count: the value just above the lower middle one, when not already known. */
  upper,
  done,
}

/** Selection state of one series. */
class Selection {
  phase = Phase.histogram;
  level = 0;
  readonly prefix: number[] = [];
  n = 0;
  rank = 0;
  hist: Uint32Array | null = new Uint32Array(65536);
  /** Candidates left in the chosen bucket. */
  left = 0;
  found: Float64Array | null = null;
  filled = 0;
  lower = Number.NaN;
  atOrBelow = 0;
  above = Number.POSITIVE_INFINITY;
  result = 0;

  setCount(n: number): void {
    this.n = n;
    this.rank = (n - 1) >> 1;
    if (n === 0) this.phase = Phase.done;
  }

  matches(key: Uint32Array, levels: number): boolean {
    for (let l = 0; l < levels; l++) if (digit(key, l) !== this.prefix[l]) return false;
    return true;
  }

  visit(v: number, key: Uint32Array): void {
    switch (this.phase) {
      case Phase.histogram:
        keyOf(v, key);
        if (this.matches(key, this.level)) this.hist![digit(key, this.level)]!++;
        return;
      case Phase.collect:
        keyOf(v, key);
        if (this.filled < this.found!.length && this.matches(key, this.level)) this.found![this.filled++] = v;
        return;
      case Phase.same:
        if (Number.isNaN(this.lower)) {
          keyOf(v, key);
          if (this.matches(key, 4)) this.lower = v;
        }
        return;
      case Phase.upper:
        if (v <= this.lower) this.atOrBelow++;
        else if (v < this.above) this.above = v;
        return;
      default:
        return;
    }
  }

  /** After a pass: move to the next phase. */
  advance(): void {
    switch (this.phase) {
      case Phase.histogram: {
        const hist = this.hist!;
        this.hist = null;
        let below = 0;
        let d = 0;
        while (d < 65535 && below + hist[d]! <= this.rank) below += hist[d++]!;
        this.rank -= below;
        this.prefix.push(d);
        this.level++;
        this.left = hist[d]!;
        if (this.level === 4) this.phase = Phase.same;
        else if (this.left <= COLLECT_AT_MOST) {
          this.phase = Phase.collect;
          this.found = new Float64Array(this.left);
        } else this.hist = new Uint32Array(65536);
        return;
      }
      case Phase.collect: {
        const sorted = this.found!.sort();
        this.found = null;
        this.lower = sorted[this.rank]!;
        // The next value up is in the bucket unless the lower one is its last.
        this.finish(this.rank + 1 < sorted.length ? sorted[this.rank + 1]! : Number.NaN);
        return;
      }
      case Phase.same:
        this.finish(this.rank + 1 < this.left ? this.lower : Number.NaN);
        return;
      case Phase.upper:
        this.result = (this.lower + (this.atOrBelow > this.n / 2 ? this.lower : this.above)) / 2;
        this.phase = Phase.done;
        return;
      default:
        return;
    }
  }

  /** The lower middle value is known; `next` is the value after it when known (NaN: one more pass). */
  private finish(next: number): void {
    if (this.n % 2 === 1) {
      this.result = this.lower;
      this.phase = Phase.done;
    } else if (!Number.isNaN(next)) {
      this.result = (this.lower + next) / 2;
      this.phase = Phase.done;
    } else this.phase = Phase.upper;
  }
}

/**
 * Medians of several series as `median()` defines them (the middle value, or
 * the mean of the two middle values; 0 when empty). The caller's own pass can
 * be the first: visit every value, then `endPass` with the counts; repeat
 * passes that only visit while `endPass` says more are needed.
 */
export class Medians {
  private readonly sels: Selection[];
  private readonly key = new Uint32Array(2);
  private first = true;

  constructor(series: number) {
    this.sels = Array.from({ length: series }, () => new Selection());
  }

  readonly visit = (series: number, v: number): void => this.sels[series]!.visit(v, this.key);

  /** Ends a pass (the first one gives how many values each series has); true while another pass is needed. */
  endPass(counts: readonly number[]): boolean {
    if (this.first) {
      this.first = false;
      for (const [i, s] of this.sels.entries()) s.setCount(counts[i]!);
    }
    for (const s of this.sels) s.advance();
    return this.sels.some((s) => s.phase !== Phase.done);
  }

  results(): number[] {
    return this.sels.map((s) => s.result);
  }
}
