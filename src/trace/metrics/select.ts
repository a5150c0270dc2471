/**
 * Exact medians of values that are produced by a pass (a walk over the op
 * logs) instead of held in an array: a radix selection on the values' bits,
 * 16 bits per pass, until few enough candidates are left to sort. Memory is a
 * 256 KB histogram whatever the number of values; a median costs 2-4 passes.
 */

/** Calls visit once for every value, in any order; must give the same values on every call. */
export type ValuePass = (visit: (v: number) => void) => void;

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

/** The k-th smallest value (0-based) of n values. */
export function kthSmallest(pass: ValuePass, n: number, k: number): number {
  if (n === 0) return 0;
  const key = new Uint32Array(2);
  const prefix: number[] = [];
  const matches = (level: number) => {
    for (let l = 0; l < level; l++) if (digit(key, l) !== prefix[l]) return false;
    return true;
  };
  let rank = k;
  for (let level = 0; level < 4; level++) {
    const hist = new Uint32Array(65536);
    pass((v) => {
      keyOf(v, key);
      if (matches(level)) hist[digit(key, level)]!++;
    });
    let below = 0;
    let d = 0;
    while (d < 65535 && below + hist[d]! <= rank) below += hist[d++]!;
    rank -= below;
    prefix.push(d);
    const count = hist[d]!;
    if (level === 3) {
      // Every candidate left has the same 64 bits: the same value.
      let value = Number.NaN;
      pass((v) => {
        keyOf(v, key);
        if (Number.isNaN(value) && matches(4)) value = v;
      });
      return value;
    }
    if (count <= COLLECT_AT_MOST) {
      const found = new Float64Array(count);
      let i = 0;
      pass((v) => {
        keyOf(v, key);
        if (matches(level + 1) && i < count) found[i++] = v;
      });
      return found.sort()[rank]!;
    }
  }
  return Number.NaN; // not reached
}

/** The median as `median()` defines it: the middle value, or the mean of the two middle values. */
export function medianOfPass(pass: ValuePass, n: number): number {
  if (n === 0) return 0;
  const lower = kthSmallest(pass, n, (n - 1) >> 1);
  if (n % 2 === 1) return lower;
  // The next value up: the lower one again if it repeats, else the smallest value above it.
  let atOrBelow = 0;
  let above = Number.POSITIVE_INFINITY;
  pass((v) => {
    if (v <= lower) atOrBelow++;
    else if (v < above) above = v;
  });
  const upper = atOrBelow > n / 2 ? lower : above;
  return (lower + upper) / 2;
}
