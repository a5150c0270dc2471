/**
 * Exact medians of values that are produced by a pass (a walk over the op
 * logs) instead of held in an array: a radix selection on the values' bits,
 * 16 bits per pass, until few enough candidates are left to sort. Memory is a
 * 256 KB histogram per series whatever the number of values; a median costs
 * 2-5 passes, and one pass serves every series.
 */

/**
 * Calls visit once for every value of every series, in any order; must give
 * the same values on every call. Several series share each pass.
 */
export type SeriesPass = (visit: (series: number, v: number) => void) => void;

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
  /** Even count: the value just above the lower middle one. */
  upper,
  done,
}

/** Selection state of one series. */
class Selection {
  phase = Phase.histogram;
  level = 0;
  readonly prefix: number[] = [];
  rank: number;
  hist: Uint32Array | null = null;
  found: Float64Array | null = null;
  filled = 0;
  lower = Number.NaN;
  atOrBelow = 0;
  above = Number.POSITIVE_INFINITY;
  result = 0;

  constructor(readonly n: number) {
    this.rank = (n - 1) >> 1;
    if (n === 0) this.phase = Phase.done;
  }

  matches(key: Uint32Array, levels: number): boolean {
    for (let l = 0; l < levels; l++) if (digit(key, l) !== this.prefix[l]) return false;
    return true;
  }

  /** Before a pass. */
  prepare(): void {
    if (this.phase === Phase.histogram) this.hist = new Uint32Array(65536);
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
        if (this.level === 4) this.phase = Phase.same;
        else if (hist[d]! <= COLLECT_AT_MOST) {
          this.phase = Phase.collect;
          this.found = new Float64Array(hist[d]!);
        }
        return;
      }
      case Phase.collect:
        this.lower = this.found!.sort()[this.rank]!;
        this.found = null;
        this.afterLower();
        return;
      case Phase.same:
        this.afterLower();
        return;
      case Phase.upper:
        this.result = (this.lower + (this.atOrBelow > this.n / 2 ? this.lower : this.above)) / 2;
        this.phase = Phase.done;
        return;
      default:
        return;
    }
  }

  private afterLower(): void {
    if (this.n % 2 === 1) {
      this.result = this.lower;
      this.phase = Phase.done;
    } else this.phase = Phase.upper;
  }
}

/**
 * The median of each series as `median()` defines it (the middle value, or the
 * mean of the two middle values; 0 when empty), given how many values each has.
 */
export function mediansOfPass(pass: SeriesPass, counts: number[]): number[] {
  const sels = counts.map((n) => new Selection(n));
  const key = new Uint32Array(2);
  while (sels.some((s) => s.phase !== Phase.done)) {
    for (const s of sels) s.prepare();
    pass((series, v) => sels[series]!.visit(v, key));
    for (const s of sels) s.advance();
  }
  return sels.map((s) => s.result);
}
