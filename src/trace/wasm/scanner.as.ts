// AssemblyScript (compiled to WebAssembly by scripts/buildWasm.mjs; not part of the TypeScript build).
//
// The event scanner: reads the events of a trace segment straight from its UTF-8 bytes and writes one compact record
// per event for ../eventScanner.ts to replay into the sink. It is the byte-level twin of TraceJsonParser.parseEvent
// for the events real traces are made of; whatever it does not decode exactly as the parser would, it leaves to the
// parser:
//   - an event it cannot decode exactly (an escaped string, a quoted number, shapes to build, an unknown category ...)
//     becomes a FALLBACK record holding the event's byte range, which the parser reads;
//   - text the parser would reject or repair (a syntax error, a bare word, the end of traceEvents ...) stops the scan
//     with ABORT, and the caller hands the parser the whole segment.
// Every number comes out as the parser's: integers of up to 15 digits are exact in an i64 as in the parser's f64,
// times use its integer-nanosecond rule, and other decimals are taken only where one division rounds them exactly.
// A full name table (MAX_NAMES, ARENA_BYTES) aborts too.

@external('env', 'wants')
declare function hostWants(ph: i32, cat: i32, name: i32): i32;
/** A name seen for the first time, at ptr: the host decodes it and returns its flags (NAME_*). */
@external('env', 'newName')
declare function hostNewName(ptr: usize, len: i32): i32;

// Record kinds (the low 2 bits of a record's header slot).
const KIND_SKIP: i32 = 1;
const KIND_FALLBACK: i32 = 2;
const KIND_EVENT: i32 = 3;
/** Header flags. */
const HAS_ARGS: i32 = 1 << 14;
const ARGS_READ: i32 = 1 << 15;

/** Name flags the host returns. */
const NAME_CPU_OP_WITH_ARGS: i32 = 1;

/** Arg kinds in the dictionary. */
const ARG_NUMBER: i32 = 1;
const ARG_STRING: i32 = 2;
const ARG_ID: i32 = 3;
const ARG_VALUE: i32 = 4;
const ARG_SLOTS: i32 = 17;
/** Slots of the largest record: header, name, pid, tid, ts, dur, id, args. */
const MAX_RECORD_SLOTS: i32 = 7 + ARG_SLOTS;

// scan() results.
const DONE: i32 = 0;
const PAUSED: i32 = 1;
const ABORT: i32 = -1;

const MAX_NAMES: i32 = 1 << 18;
const TABLE_SLOTS: i32 = 1 << 19; // a power of two, at least twice MAX_NAMES
const ARENA_BYTES: i32 = 8 << 20;
const OUT_SLOTS: i32 = 1 << 16;
const DICT_BYTES: i32 = 4096;
const PAGE: usize = 65536;

// Layout of linear memory, set by init(): dictionary, name entries, hash table, name bytes, records, then the input.
let dictPtr: usize = 0;
let entriesPtr: usize = 0; // per name id: arena offset (u32), length (u32), flags (u32), last filter answer (u32)
let tablePtr: usize = 0; // per slot: hash (u32), name id (u32; 0 = empty)
let arenaPtr: usize = 0;
let arenaUsed: i32 = 0;
let names: i32 = 0;
let outPtr: usize = 0;
let inPtr: usize = 0;
let inCap: usize = 0;

// Dictionary (written by the host): categories and args keys the parser knows.
let catCount: i32 = 0;
let argKeysPtr: usize = 0;
let argIndexPtr: usize = 0;
let argDefaultsPtr: usize = 0;
let argIndexBits: u64 = 6;
let argCount: i32 = 0;
let cpuOpCat: i32 = 0;
let catsWithArgs: u32 = 0; // bit per category code

let originUs: f64 = 0;
/** Where the last scan stopped (DONE: the end; PAUSED: the ',' before the next event). */
let resumeAt: usize = 0;
let outLen: i32 = 0;
let end: usize = 0;

/** Lays out memory; returns the dictionary's address, where the host writes the known categories and args keys. */
export function init(): usize {
  const base = (__heap_base + 15) & ~15;
  dictPtr = base;
  entriesPtr = dictPtr + DICT_BYTES;
  tablePtr = entriesPtr + <usize>(MAX_NAMES + 1) * 16;
  arenaPtr = tablePtr + <usize>TABLE_SLOTS * 8;
  outPtr = arenaPtr + ARENA_BYTES;
  inPtr = outPtr + <usize>OUT_SLOTS * 8;
  inCap = 0;
  grow(inPtr);
  return dictPtr;
}

/**
 * The dictionary the host wrote at init()'s address: `cats` entries of [code u8, len u8, bytes], then `args` entries of
 * [code u8, slot u8, kind u8, len u8, bytes]; and the time origin. False when the args keys cannot be indexed.
 */
export function setDictionary(cats: i32, args: i32, cpuOp: i32, withArgs: u32, origin: f64): bool {
  catCount = cats;
  argCount = args;
  cpuOpCat = cpuOp;
  catsWithArgs = withArgs;
  originUs = origin;
  // Args keys as 16-byte entries: prefix u64 (keyPrefix), address of the key's bytes, slot, kind.
  let d = dictPtr;
  for (let i = 0; i < cats; i++) d += 2 + at(d + 1);
  argKeysPtr = dictPtr + DICT_BYTES / 2;
  for (let i = 0; i < args; i++) {
    const n = at(d + 3);
    const e = argKeysPtr + (<usize>i << 4);
    store<u64>(e, keyPrefix(d + 4, n));
    store<u32>(e, <u32>(d + 4), 8);
    store<u8>(e, <u8>at(d + 1), 12);
    store<u8>(e, <u8>at(d + 2), 13);
    d += 4 + n;
  }
  // A direct index from a key's prefix to its entry; the dictionary is small enough to find a size with no collision.
  // What an absent arg reads as: -1 (numbers, and null for strings), NaN for ids (null).
  argDefaultsPtr = argKeysPtr + <usize>args * 16;
  for (let i = 0; i < ARG_SLOTS; i++) store<f64>(argDefaultsPtr + (<usize>i << 3), -1);
  for (let i = 0; i < args; i++) {
    const e = argKeysPtr + (<usize>i << 4);
    if (load<u8>(e, 13) == ARG_ID) store<f64>(argDefaultsPtr + (<usize>load<u8>(e, 12) << 3), NaN);
  }
  argIndexPtr = argDefaultsPtr + <usize>ARG_SLOTS * 8;
  for (argIndexBits = 6; argIndexBits < 11; argIndexBits++) {
    memory.fill(argIndexPtr, 0, <usize>1 << <usize>argIndexBits);
    let clash = false;
    for (let i = 0; i < args && !clash; i++) {
      const at = argIndexPtr + argIndexKey(load<u64>(argKeysPtr + (<usize>i << 4)));
      if (load<u8>(at) != 0) clash = true;
      else store<u8>(at, <u8>(i + 1));
    }
    if (!clash) break;
  }
  return argIndexBits < 11;
}

function grow(to: usize): void {
  const have = <usize>memory.size() * PAGE;
  if (to > have) memory.grow(<i32>((to - have + PAGE - 1) / PAGE));
}

/** Room for `len` input bytes (plus padding); returns where the host copies them. */
export function reserveInput(len: usize): usize {
  if (len + 16 > inCap) {
    inCap = len + 16 + (len >> 2);
    grow(inPtr + inCap);
  }
  return inPtr;
}

export function outAddress(): usize {
  return outPtr;
}
export function outSlots(): i32 {
  return outLen;
}
export function resumePosition(): usize {
  return resumeAt;
}

@inline
function at(p: usize): i32 {
  return <i32>load<u8>(p);
}
@inline
function isWs(c: i32): bool {
  return c == 32 || c == 10 || c == 13 || c == 9;
}
@inline
function isDigit(c: i32): bool {
  return <u32>(c - 48) < 10;
}
/** The parser's isTokenEnd. */
@inline
function isTokenEnd(c: i32): bool {
  return c == 44 || c == 125 || c == 93 || c == 58 || isWs(c);
}
function skipWs(p: usize): usize {
  while (p < end && isWs(at(p))) p++;
  return p;
}

/**
 * Scans the events in [from, to): a middle segment, `(',' event)*` with whitespace. Returns DONE, PAUSED (the record
 * buffer is full: replay it and call again from resumePosition()) or ABORT (the parser must read the segment).
 */
export function scan(from: usize, to: usize): i32 {
  end = to;
  outLen = 0;
  let p = from;
  while (true) {
    p = skipWs(p);
    if (p >= to) {
      resumeAt = p;
      return DONE;
    }
    if (outLen + MAX_RECORD_SLOTS > OUT_SLOTS) {
      resumeAt = p;
      return PAUSED;
    }
    if (at(p) != 44) return ABORT; // ']' ends traceEvents: the parser reads what follows
    p = skipWs(p + 1);
    if (p >= to || at(p) != 123) return ABORT; // not an object: the parser notes it
    p = event(p);
    if (p == 0) return ABORT;
  }
}

// The event being read (module globals: no allocation, no struct passing).
let evPh: i32 = 0;
let evCat: i32 = 0;
let evName: i32 = 0;
let numberEnd: usize = 0;

/** Reads the event whose '{' is at `start`; returns the position after its '}', or 0 to abort. */
function event(start: usize): usize {
  evPh = 0;
  evCat = 0;
  evName = 0;
  let pid: f64 = 0;
  let tid: f64 = 0;
  let ts: f64 = NaN;
  let dur: f64 = NaN;
  let id: f64 = NaN;
  let flags: i32 = 0;
  const rec = outPtr + (<usize>outLen << 3);
  const args = rec + 7 * 8;
  let p = start + 1;
  let first = true;
  while (true) {
    p = skipWs(p);
    if (p >= end) return 0;
    let c = at(p);
    if (c == 125) {
      p++;
      break;
    }
    if (!first) {
      if (c != 44) return 0;
      p = skipWs(p + 1);
      if (p >= end) return 0;
      c = at(p);
    }
    first = false;
    if (c != 34) return 0;
    const ks = p + 1;
    let ke = ks;
    while (ke < end && at(ke) != 34) {
      if (at(ke) == 92) return 0; // escaped key: the parser's own quirks apply
      ke++;
    }
    if (ke >= end) return 0;
    p = afterColon(ke + 1);
    if (p == 0) return 0;
    c = at(p);
    const len = <i32>(ke - ks);
    const k0 = at(ks);
    if (len == 2 && k0 == 112 && at(ks + 1) == 104) {
      // ph: one plain character
      if (c != 34 || p + 2 >= end || at(p + 2) != 34 || at(p + 1) == 92 || at(p + 1) < 32) return fallback(start);
      evPh = at(p + 1);
      p += 3;
      if ((evPh == 115 || evPh == 102) && !wanted()) return skip(p);
    } else if (len == 3 && k0 == 99 && at(ks + 1) == 97 && at(ks + 2) == 116) {
      // cat
      if (c != 34) return fallback(start);
      const e = stringEnd(p);
      if (e == 0) return 0;
      if (!plain) return fallback(start);
      const code = catCode(p + 1, <i32>(e - p - 1));
      if (code < 0) return fallback(start);
      evCat = code;
      p = e + 1;
      if (evName != 0 && !wanted()) return skip(p);
    } else if (len == 4 && k0 == 110 && at(ks + 1) == 97 && at(ks + 2) == 109 && at(ks + 3) == 101) {
      // name
      if (c != 34) return fallback(start);
      const e = stringEnd(p);
      if (e == 0) return 0;
      if (!plain) return fallback(start);
      evName = intern(p + 1, <i32>(e - p - 1));
      if (evName < 0) return 0;
      p = e + 1;
      if (evCat != 0 && !wanted()) return skip(p);
    } else if (len == 3 && k0 == 112 && at(ks + 1) == 105 && at(ks + 2) == 100) {
      pid = readId(p);
      if (isNaN(pid)) return fallback(start);
      p = numberEnd;
    } else if (len == 3 && k0 == 116 && at(ks + 1) == 105 && at(ks + 2) == 100) {
      tid = readId(p);
      if (isNaN(tid)) return fallback(start);
      p = numberEnd;
    } else if (len == 2 && k0 == 116 && at(ks + 1) == 115) {
      ts = readTime(p, true);
      if (isNaN(ts)) return fallback(start);
      p = numberEnd;
    } else if (len == 3 && k0 == 100 && at(ks + 1) == 117 && at(ks + 2) == 114) {
      dur = readTime(p, false);
      if (isNaN(dur)) return fallback(start);
      p = numberEnd;
    } else if (len == 2 && k0 == 105 && at(ks + 1) == 100) {
      id = readId(p);
      if (isNaN(id)) return fallback(start);
      p = numberEnd;
    } else if (len == 4 && k0 == 97 && at(ks + 1) == 114 && at(ks + 2) == 103 && at(ks + 3) == 115) {
      flags |= HAS_ARGS;
      if (c != 123) p = skipValue(p);
      else {
        const want = wantsArgs();
        if (want < 0) return fallback(start);
        if (want == 0) p = skipValue(p);
        else {
          // A repeated args key overwrites field by field, as in the parser: reset once per event.
          if ((flags & ARGS_READ) == 0) resetArgs(args);
          flags |= ARGS_READ;
          p = readArgs(p, args);
          if (p == 1) return fallback(start);
        }
      }
    } else p = skipValue(p);
    if (p == 0) return 0;
  }
  store<f64>(rec, <f64>(KIND_EVENT | (evPh << 2) | (evCat << 9) | flags));
  store<f64>(rec, <f64>evName, 8);
  store<f64>(rec, pid, 16);
  store<f64>(rec, tid, 24);
  store<f64>(rec, ts, 32);
  store<f64>(rec, dur, 40);
  store<f64>(rec, id, 48);
  outLen += (flags & ARGS_READ) != 0 ? MAX_RECORD_SLOTS : 7;
  return p;
}

/** From just after a key's closing quote: past ':' and whitespace to the value; 0 if malformed or cut. */
@inline
function afterColon(p: usize): usize {
  p = skipWs(p);
  if (p >= end || at(p) != 58) return 0;
  p = skipWs(p + 1);
  return p < end ? p : 0;
}

/**
 * The sink's filter, asked when the parser asks it. Its answer is kept per name for the last phase and category it
 * was asked with (the filter is a pure function, TraceSink.wants): a trace asks about the same few pairs again and
 * again, and a call out of WebAssembly costs more than the rest of an event.
 */
function wanted(): bool {
  const entry = entriesPtr + (<usize>evName << 4);
  const key = <u32>(evPh | (evCat << 8) | (1 << 16));
  const cached = load<u32>(entry, 12);
  if ((cached & 0x1ffff) == key) return (cached >> 17) != 0;
  const yes = hostWants(evPh, evCat, evName) != 0;
  store<u32>(entry, key | (yes ? 1 << 17 : 0), 12);
  return yes;
}

/** The parser's wantsArgs: 1 read them, 0 skip them, -1 the parser must read the event (shapes to build). */
function wantsArgs(): i32 {
  if (evCat == 0 || evName == 0) return 1;
  if (((catsWithArgs >> <u32>evCat) & 1) != 0) return 1;
  if (evPh == 77) return 1;
  if (evCat == cpuOpCat) return (nameFlags(evName) & NAME_CPU_OP_WITH_ARGS) != 0 ? -1 : 0;
  return 0;
}

/** The event is skipped: records it and jumps past its '}' from p (inside it, at depth 1). */
function skip(p: usize): usize {
  const e = objectEnd(p, 1);
  if (e == 0) return 0;
  store<f64>(outPtr + (<usize>outLen << 3), <f64>(KIND_SKIP | (evPh << 2) | (evCat << 9)));
  outLen += 1;
  return e;
}

/** The parser reads this event: records its byte range. */
function fallback(start: usize): usize {
  const e = objectEnd(start + 1, 1);
  if (e == 0) return 0;
  const rec = outPtr + (<usize>outLen << 3);
  store<f64>(rec, <f64>KIND_FALLBACK);
  store<f64>(rec, <f64>(start - inPtr), 8);
  store<f64>(rec, <f64>(e - inPtr), 16);
  outLen += 3;
  return e;
}

/**
 * Past the '}' that closes an object, from p inside it at `depth`: what the parser's skipRestOfEvent expression
 * matches (braces counted, strings opaque, brackets ignored, at most three levels inside). Deeper nesting takes the
 * parser another way, so it aborts; so does the end of the input.
 *
 * Sixteen bytes at a time: a mask of the quotes, backslashes and braces in them, then only those bytes are looked at
 * (skipped CPU ops are half of a trace, and a byte at a time this was the scanner's slowest loop).
 */
function objectEnd(p: usize, depth: i32): usize {
  let inString = false;
  let escapedFirst = 0; // a backslash ended the last block: the first byte of this one is escaped
  while (p + 16 <= end) {
    const v = v128.load(p);
    let m =
      i8x16.bitmask(v128.or(v128.or(i8x16.eq(v, QUOTES), i8x16.eq(v, BACKSLASHES)), v128.or(i8x16.eq(v, LBRACES), i8x16.eq(v, RBRACES)))) &
      ~escapedFirst;
    escapedFirst = 0;
    while (m != 0) {
      const i = ctz(m);
      const c = at(p + i);
      if (inString) {
        if (c == 34) inString = false;
        else if (c == 92) {
          if (i == 15) escapedFirst = 1;
          else m &= ~(1 << (i + 1));
        }
      } else if (c == 34) inString = true;
      else if (c == 123) {
        if (++depth > 4) return 0;
      } else if (c == 125) {
        if (--depth == 0) return p + i + 1;
      }
      m &= m - 1;
    }
    p += 16;
  }
  p += escapedFirst;
  if (inString) {
    p = stringEndFrom(p);
    if (p == 0) return 0;
    p++;
  }
  while (p < end) {
    const c = at(p);
    if (c == 34) {
      p = stringEnd(p);
      if (p == 0) return 0;
    } else if (c == 123) {
      if (++depth > 4) return 0;
    } else if (c == 125) {
      if (--depth == 0) return p + 1;
    }
    p++;
  }
  return 0;
}

const QUOTES = i8x16.splat(34);
const BACKSLASHES = i8x16.splat(92);
const LBRACES = i8x16.splat(123);
const RBRACES = i8x16.splat(125);

/**
 * The closing quote of the string whose opening quote is at p, honouring escapes; 0 at the end of the input.
 * `plain` is cleared when the string holds a backslash.
 */
let plain: bool = true;
function stringEnd(p: usize): usize {
  plain = true;
  return stringEndFrom(p + 1);
}

/** stringEnd from inside the string (p is its first unread byte); leaves `plain` set when there is no backslash. */
function stringEndFrom(p: usize): usize {
  while (p + 16 <= end) {
    const v = v128.load(p);
    const m = i8x16.bitmask(v128.or(i8x16.eq(v, QUOTES), i8x16.eq(v, BACKSLASHES)));
    if (m == 0) {
      p += 16;
      continue;
    }
    p += ctz(m);
    if (at(p) == 34) return p;
    plain = false;
    p += 2;
  }
  while (p < end) {
    const c = at(p);
    if (c == 34) return p;
    if (c == 92) {
      plain = false;
      p += 2;
    } else p++;
  }
  return 0;
}

/** The parser's skipValue: a string, a nested value (brackets and braces counted together), or a bare token. */
function skipValue(p: usize): usize {
  const c = at(p);
  if (c == 34) {
    const e = stringEnd(p);
    return e == 0 ? 0 : e + 1;
  }
  if (c != 123 && c != 91) {
    while (p < end && !isTokenEnd(at(p))) p++;
    return p < end ? p : 0;
  }
  let depth = 0;
  while (p < end) {
    const d = at(p);
    if (d == 34) {
      p = stringEnd(p);
      if (p == 0) return 0;
    } else if (d == 123 || d == 91) depth++;
    else if (d == 125 || d == 93) {
      depth--;
      if (depth <= 0) return p + 1;
    }
    p++;
  }
  return 0;
}

/** Code of a known category (0 for ""), or -1 (the parser reads unknown or escaped ones). */
function catCode(p: usize, len: i32): i32 {
  if (len == 0) return 0;
  let d = dictPtr;
  for (let i = 0; i < catCount; i++) {
    const code = at(d);
    const n = at(d + 1);
    if (n == len && memory.compare(d + 2, p, len) == 0) return code;
    d += 2 + n;
  }
  return -1;
}

/** The parser's readId for the integers it keeps as numbers: up to 15 digits, then a delimiter. NaN otherwise. */
function readId(p: usize): f64 {
  // Integers: up to 15 digits are exact in an i64 and in the f64 the parser accumulates, step by step.
  let v: i64 = 0;
  let n = 0;
  let c = at(p);
  while (isDigit(c)) {
    v = v * 10 + <i64>(c - 48);
    n++;
    c = at(++p);
  }
  if (n == 0 || n > 15 || !(c == 44 || c == 125 || c == 93 || isWs(c)) || p >= end) return NaN;
  numberEnd = p;
  return <f64>v;
}

/**
 * The parser's readTimeNs on its fast path (a plain decimal of at most 15 integer digits, ended by a token end):
 * integer nanoseconds, relative to the origin for timestamps. NaN when the parser would take its slow path.
 */
function readTime(p: usize, relative: bool): f64 {
  let neg = false;
  let c = at(p);
  if (c == 45) {
    neg = true;
    c = at(++p);
  }
  let wholeDigits: i64 = 0;
  let digits = 0;
  while (isDigit(c)) {
    wholeDigits = wholeDigits * 10 + <i64>(c - 48);
    digits++;
    c = at(++p);
  }
  let whole = <f64>wholeDigits;
  let fracNs: f64 = 0;
  if (c == 46) {
    c = at(++p);
    let k = 0;
    while (isDigit(c)) {
      // Digits 1-3 are ns; the 4th rounds half up; the rest are ignored (the parser's rule).
      if (k == 0) fracNs += <f64>((c - 48) * 100);
      else if (k == 1) fracNs += <f64>((c - 48) * 10);
      else if (k == 2) fracNs += <f64>(c - 48);
      else if (k == 3 && c - 48 >= 5) fracNs += 1;
      k++;
      c = at(++p);
    }
  }
  if (digits == 0 || digits > 15 || !isTokenEnd(c) || p >= end) return NaN;
  numberEnd = p;
  if (neg) {
    whole = -whole;
    fracNs = -fracNs;
  }
  return relative ? (whole - originUs) * 1000 + fracNs : whole * 1000 + fracNs;
}

const POW10: StaticArray<f64> = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15];

/**
 * A number arg as the parser reads it (Number() of the token): plain decimals of at most 15 digits in all, which are
 * exact as an integer over a power of ten, so one division rounds them exactly as Number() does. A nested value
 * reads as -1 (skipped). Anything else returns NaN (the parser reads the event).
 */
function readNumber(p: usize): f64 {
  let c = at(p);
  if (c == 123 || c == 91) {
    numberEnd = skipValue(p);
    return numberEnd == 0 ? NaN : -1;
  }
  let neg = false;
  if (c == 45) {
    neg = true;
    c = at(++p);
  }
  let digitsValue: i64 = 0;
  let digits = 0;
  let frac = 0;
  while (isDigit(c)) {
    digitsValue = digitsValue * 10 + <i64>(c - 48);
    digits++;
    c = at(++p);
  }
  if (digits == 0) return NaN;
  if (c == 46) {
    c = at(++p);
    while (isDigit(c)) {
      digitsValue = digitsValue * 10 + <i64>(c - 48);
      digits++;
      frac++;
      c = at(++p);
    }
    if (frac == 0) return NaN;
  }
  if (digits > 15 || !isTokenEnd(c) || p >= end) return NaN;
  numberEnd = p;
  const m = <f64>digitsValue;
  const v = frac == 0 ? m : m / unchecked(POW10[frac]);
  return neg ? -v : v;
}

function resetArgs(a: usize): void {
  memory.copy(a, argDefaultsPtr, ARG_SLOTS << 3);
}

/** Reads an args object at p into the slots; returns the position after it, 0 to abort, 1 for the parser to read it. */
function readArgs(p: usize, a: usize): usize {
  p++;
  let first = true;
  while (true) {
    p = skipWs(p);
    if (p >= end) return 0;
    let c = at(p);
    if (c == 125) return p + 1;
    if (!first) {
      if (c != 44) return 0;
      p = skipWs(p + 1);
      if (p >= end) return 0;
      c = at(p);
    }
    first = false;
    if (c != 34) return 0;
    const ke = stringEnd(p);
    if (ke == 0) return 0;
    if (!plain) return 1;
    const ks = p + 1;
    p = afterColon(ke + 1);
    if (p == 0) return 0;
    // Which key: the dictionary holds the ones the parser reads, each with its length and first bytes in one u64.
    const len = <i32>(ke - ks);
    const probe = keyPrefix(ks, len);
    let slot = -1;
    let kind = 0;
    const i = <i32>load<u8>(argIndexPtr + argIndexKey(probe)) - 1;
    if (i >= 0) {
      const d = argKeysPtr + (<usize>i << 4);
      if (load<u64>(d) == probe && (len <= 7 || sameBytes(load<u32>(d, 8), ks, len))) {
        slot = load<u8>(d, 12);
        kind = load<u8>(d, 13);
      }
    }
    if (slot < 0) {
      p = skipValue(p);
      if (p == 0) return 0;
      continue;
    }
    const to = a + (<usize>slot << 3);
    if (kind == ARG_NUMBER) {
      const v = readNumber(p);
      if (isNaN(v)) return 1;
      store<f64>(to, v);
      p = numberEnd;
    } else if (kind == ARG_ID) {
      const v = readId(p);
      if (isNaN(v)) return 1;
      store<f64>(to, v);
      p = numberEnd;
    } else if (kind == ARG_STRING) {
      if (at(p) != 34) return 1;
      const e = stringEnd(p);
      if (e == 0) return 0;
      if (!plain) return 1;
      const nameId = intern(p + 1, <i32>(e - p - 1));
      if (nameId < 0) return 0;
      store<f64>(to, <f64>nameId);
      p = e + 1;
    } else return 1; // shapes and dtypes: the parser builds them
  }
}

/** Name flags of an interned id. */
@inline
function nameFlags(id: i32): i32 {
  return load<i32>(entriesPtr + (<usize>id << 4), 8);
}

/**
 * The id of the string of `len` bytes at p (1 and up; 0 is ""), adding it on first sight; -1 when the table is full.
 * Only unescaped strings come here (the parser unescapes the others).
 */
function intern(p: usize, len: i32): i32 {
  if (len == 0) return 0;
  const h = hashBytes(p, len);
  const mask = <u32>TABLE_SLOTS - 1;
  let s = h & mask;
  while (true) {
    const slot = tablePtr + (<usize>s << 3);
    const id = load<i32>(slot, 4);
    if (id == 0) break;
    if (load<u32>(slot) == h) {
      const entry = entriesPtr + (<usize>id << 4);
      if (load<i32>(entry, 4) == len && sameBytes(arenaPtr + load<u32>(entry), p, len)) return id;
    }
    s = (s + 1) & mask;
  }
  if (names + 1 > MAX_NAMES || arenaUsed + len > ARENA_BYTES) return -1;
  const id = ++names;
  const entry = entriesPtr + (<usize>id << 4);
  memory.copy(arenaPtr + arenaUsed, p, len);
  store<u32>(entry, arenaUsed);
  store<i32>(entry, len, 4);
  arenaUsed += len;
  store<i32>(entry, hostNewName(arenaPtr + load<u32>(entry), len), 8);
  const slot = tablePtr + (<usize>s << 3);
  store<u32>(slot, h);
  store<i32>(slot, id, 4);
  return id;
}

/** A key's length (top byte) and its first bytes, up to 7: equal for equal keys, and enough to tell most apart. */
@inline
function keyPrefix(p: usize, len: i32): u64 {
  const n = <u64>(len < 7 ? len : 7);
  return (load<u64>(p) & ((<u64>1 << (n << 3)) - 1)) | (<u64>len << 56);
}

@inline
function argIndexKey(prefix: u64): usize {
  return <usize>((prefix * 0x9e3779b97f4a7c15) >> (64 - argIndexBits));
}

/** A 32-bit hash of `len` bytes at p, eight at a time (kernel names run to hundreds of bytes). */
function hashBytes(p: usize, len: i32): u32 {
  let h: u64 = 0x9e3779b97f4a7c15 ^ <u64>len;
  let i = 0;
  for (; i + 8 <= len; i += 8) {
    h = (h ^ load<u64>(p + i)) * 0xff51afd7ed558ccd;
    h ^= h >> 32;
  }
  for (; i < len; i++) h = (h ^ <u64>load<u8>(p + i)) * 0x100000001b3;
  h ^= h >> 29;
  return <u32>h;
}

function sameBytes(a: usize, b: usize, len: i32): bool {
  let i = 0;
  for (; i + 8 <= len; i += 8) if (load<u64>(a + i) != load<u64>(b + i)) return false;
  for (; i < len; i++) if (load<u8>(a + i) != load<u8>(b + i)) return false;
  return true;
}
