/**
 * A safe reader for Python pickles (protocols 2 to 5), enough for what
 * `torch.cuda.memory._dump_snapshot` writes and strict about everything else.
 *
 * Why hand-written: a pickle is a program for a stack machine, and the usual
 * readers run it (import modules, call functions). This one never executes
 * anything: the opcodes that would import or call Python objects (GLOBAL,
 * STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ, NEWOBJ_EX, EXT*, PERSID)
 * produce inert `PickleObject` placeholders. Every length field is checked
 * against the bytes that remain before anything is allocated. Memoised
 * objects stay shared (the snapshot's stack frames are referenced thousands
 * of times; copying them would cost gigabytes). Integers that do not fit a
 * double exactly come back as BigInt, so addresses stay exact.
 *
 * Pure: takes bytes, returns values; imports nothing.
 */

/** A value as read: dicts become plain objects (keys as strings), lists and tuples arrays. */
export type PickleValue = null | boolean | number | bigint | string | Uint8Array | PickleValue[] | PickleDict | PickleObject;

export interface PickleDict {
  [key: string]: PickleValue;
}

/** What an import or a call would have produced: never resolved, never run. */
export class PickleObject {
  constructor(
    /** `module.name` of the global involved, or the opcode that would have built the object. */
    readonly what: string,
    readonly args: PickleValue[] = [],
  ) {}
}

export class PickleError extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
    this.name = 'PickleError';
  }
}

/** Protocols `_dump_snapshot` can write (4 up to Python 3.13, 5 on 3.14), and 2-3 which use the same opcodes. */
export const MIN_PROTOCOL = 2;
export const MAX_PROTOCOL = 5;

const MARK = Symbol('mark');
/**
 * Limits of what a snapshot needs, checked before the work: `pickle.dump` writes containers in batches of 1000, so
 * its stack holds a few thousand slots (the largest tuple and the nesting); a flood of NONE opcodes would otherwise
 * put 8 bytes of stack per input byte (200 MB of input: 1.6 GB).
 */
const MAX_STACK_SLOTS = 1 << 21;
/** Integers in a snapshot are addresses, sizes and times (at most 9 bytes); a 1 MB LONG4 took minutes as a BigInt. */
const MAX_LONG_BYTES = 64;
/** A tuple key of a dict is written out at most this long (shared tuples nest exponentially: 261 bytes, 2^100 leaves). */
const MAX_KEY_CHARS = 256;
/** CPython writes lists in APPENDS batches of 1000: only shorter lists are complete after their first APPENDS. */
const MAX_SHARED_LIST = 1000;
const MAX_LISTS_PER_HASH = 8;
type Slot = PickleValue | typeof MARK;

const utf8 = new TextDecoder('utf-8', { fatal: true });
const latin1 = new TextDecoder('latin1');

/** Reads one pickle from `bytes`. Throws PickleError for anything malformed, truncated or unsupported. */
export function unpickle(bytes: Uint8Array): PickleValue {
  return new Unpickler(bytes).run();
}

class Unpickler {
  private pos = 0;
  private readonly stack: Slot[] = [];
  private readonly marks: number[] = [];
  private readonly memo: PickleValue[] = [];
  /** Memo index of each stack slot that came from or went to the memo (checked before use). */
  private readonly ids: number[] = [];
  private readonly lists = new Map<number, PickleValue[][]>();
  private readonly shared = new Set<PickleValue[]>();
  private readonly view: DataView;

  constructor(private readonly bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  run(): PickleValue {
    const b = this.bytes;
    if (b.length === 0) throw new PickleError('empty input', 0);
    if (b[0] !== 0x80) {
      throw new PickleError('not a pickle of protocol 2 or later (no PROTO opcode at the start)', 0);
    }
    for (;;) {
      if (this.pos >= b.length) throw new PickleError('truncated pickle (no STOP opcode)', this.pos);
      const at = this.pos;
      const op = b[this.pos++]!;
      switch (op) {
        case 0x80: {
          // PROTO
          const v = this.u8();
          if (v < MIN_PROTOCOL || v > MAX_PROTOCOL)
            throw new PickleError(`unsupported pickle protocol ${v} (expected ${MIN_PROTOCOL} to ${MAX_PROTOCOL})`, at);
          break;
        }
        case 0x95: // FRAME: an 8-byte length hint; frames are not needed to read a whole buffer.
          this.need(8);
          this.pos += 8;
          break;
        case 0x2e: {
          // STOP
          const v = this.pop(at);
          return v;
        }
        case 0x28: // MARK
          if (this.stack.length >= MAX_STACK_SLOTS) this.tooDeep();
          this.marks.push(this.stack.length);
          this.stack.push(MARK);
          break;
        case 0x30: // POP
          this.pop(at);
          break;
        case 0x31: // POP_MARK
          this.popMark(at);
          break;
        case 0x32: // DUP
          this.push(this.peek(at));
          break;
        case 0x4e: // NONE
          this.push(null);
          break;
        case 0x88: // NEWTRUE
          this.push(true);
          break;
        case 0x89: // NEWFALSE
          this.push(false);
          break;
        case 0x4a: // BININT
          this.need(4);
          this.push(this.view.getInt32(this.pos, true));
          this.pos += 4;
          break;
        case 0x4b: // BININT1
          this.push(this.u8());
          break;
        case 0x4d: // BININT2
          this.need(2);
          this.push(this.view.getUint16(this.pos, true));
          this.pos += 2;
          break;
        case 0x8a: // LONG1
          this.push(this.long(this.u8()));
          break;
        case 0x8b: {
          // LONG4
          this.need(4);
          const n = this.view.getInt32(this.pos, true);
          this.pos += 4;
          if (n < 0) throw new PickleError('negative LONG4 length', at);
          this.push(this.long(n));
          break;
        }
        case 0x47: // BINFLOAT (big-endian)
          this.need(8);
          this.push(this.view.getFloat64(this.pos, false));
          this.pos += 8;
          break;
        case 0x8c: // SHORT_BINUNICODE
          this.push(this.str(this.u8(), at));
          break;
        case 0x58: // BINUNICODE
          this.push(this.str(this.u32(), at));
          break;
        case 0x8d: // BINUNICODE8
          this.push(this.str(this.u64len(), at));
          break;
        case 0x55: // SHORT_BINSTRING (Python 2 str): latin-1 text
          this.push(latin1.decode(this.take(this.u8())));
          break;
        case 0x54: // BINSTRING
          this.push(latin1.decode(this.take(this.u32())));
          break;
        case 0x43: // SHORT_BINBYTES
          this.push(this.take(this.u8()).slice());
          break;
        case 0x42: // BINBYTES
          this.push(this.take(this.u32()).slice());
          break;
        case 0x8e: // BINBYTES8
        case 0x96: // BYTEARRAY8
          this.push(this.take(this.u64len()).slice());
          break;
        case 0x7d: // EMPTY_DICT
          this.push({});
          break;
        case 0x64: {
          // DICT
          const items = this.popMark(at);
          const d: PickleDict = {};
          this.setItems(d, items, at);
          this.push(d);
          break;
        }
        case 0x73: {
          // SETITEM
          const v = this.pop(at);
          const k = this.pop(at);
          const d = this.peek(at);
          if (!isDict(d)) throw new PickleError('SETITEM on something that is not a dict', at);
          setKey(d, k, v);
          break;
        }
        case 0x75: {
          // SETITEMS: read the pairs in place on the stack (no temporary array; this is the hottest opcode)
          const m = this.markIndex(at);
          const st = this.stack;
          const d = st[m - 1];
          if (d === undefined || d === MARK || !isDict(d)) throw new PickleError('SETITEMS on something that is not a dict', at);
          if ((st.length - m - 1) % 2 !== 0) throw new PickleError('odd number of items for a dict', at);
          for (let i = m + 1; i < st.length; i += 2) setKey(d, st[i] as PickleValue, st[i + 1] as PickleValue);
          st.length = m;
          break;
        }
        case 0x5d: // EMPTY_LIST
        case 0x29: // EMPTY_TUPLE
          this.push([]);
          break;
        case 0x6c: // LIST
        case 0x74: // TUPLE
          this.push(this.popMark(at));
          break;
        case 0x85: // TUPLE1
          this.push([this.pop(at)]);
          break;
        case 0x86: {
          // TUPLE2
          const b2 = this.pop(at);
          const a2 = this.pop(at);
          this.push([a2, b2]);
          break;
        }
        case 0x87: {
          // TUPLE3
          const c3 = this.pop(at);
          const b3 = this.pop(at);
          const a3 = this.pop(at);
          this.push([a3, b3, c3]);
          break;
        }
        case 0x61: {
          // APPEND
          const v = this.pop(at);
          const l = this.peek(at);
          if (!Array.isArray(l)) throw new PickleError('APPEND on something that is not a list', at);
          this.notShared(l, at);
          l.push(v);
          break;
        }
        case 0x65: {
          // APPENDS
          const m = this.markIndex(at);
          const st = this.stack;
          const l = st[m - 1];
          if (!Array.isArray(l)) throw new PickleError('APPENDS on something that is not a list', at);
          this.notShared(l, at);
          if (l.length === 0 && !selfReferencing(l, st, m + 1)) {
            // A fresh list: an exact-size array (push would over-allocate), or an earlier list with the same elements.
            const hash = this.hashOfMemoRun(m + 1, st.length);
            const same = hash === null ? undefined : this.findList(hash, m + 1, st.length);
            if (same) this.replaceList(m - 1, l, same);
            else {
              const items = st.slice(m + 1) as PickleValue[];
              this.replaceList(m - 1, l, items);
              if (hash !== null) this.registerList(hash, items);
            }
          } else for (let i = m + 1; i < st.length; i++) l.push(st[i] as PickleValue);
          st.length = m;
          break;
        }
        case 0x8f: // EMPTY_SET: sets are read as lists
          this.push([]);
          break;
        case 0x90: {
          // ADDITEMS
          const items = this.popMark(at);
          const s = this.peek(at);
          if (!Array.isArray(s)) throw new PickleError('ADDITEMS on something that is not a set', at);
          this.notShared(s, at);
          for (const v of items) s.push(v);
          break;
        }
        case 0x91: // FROZENSET
          this.push(this.popMark(at));
          break;
        case 0x94: {
          // MEMOIZE
          const k = this.memo.length;
          this.memo[k] = this.peek(at);
          this.ids[this.stack.length - 1] = k;
          break;
        }
        case 0x71: // BINPUT
          this.put(this.u8(), at);
          break;
        case 0x72: // LONG_BINPUT
          this.put(this.u32(), at);
          break;
        case 0x68: // BINGET
          this.pushMemo(this.u8(), at);
          break;
        case 0x6a: // LONG_BINGET
          this.pushMemo(this.u32(), at);
          break;
        // Opcodes that import or call: inert placeholders, nothing resolved or run.
        case 0x63: {
          // GLOBAL: "module\nname\n"
          const mod = this.line(at);
          const name = this.line(at);
          this.push(new PickleObject(`${mod}.${name}`));
          break;
        }
        case 0x93: {
          // STACK_GLOBAL
          const name = this.pop(at);
          const mod = this.pop(at);
          this.push(new PickleObject(`${keyText(mod)}.${keyText(name)}`));
          break;
        }
        case 0x52: {
          // REDUCE: callable(*args) -> placeholder naming the callable
          const args = this.pop(at);
          const fn = this.pop(at);
          this.push(new PickleObject(describe(fn), Array.isArray(args) ? args : [args]));
          break;
        }
        case 0x81: {
          // NEWOBJ: cls.__new__(cls, *args)
          const args = this.pop(at);
          const cls = this.pop(at);
          this.push(new PickleObject(describe(cls), Array.isArray(args) ? args : [args]));
          break;
        }
        case 0x92: {
          // NEWOBJ_EX: cls, args, kwargs
          this.pop(at);
          const args = this.pop(at);
          const cls = this.pop(at);
          this.push(new PickleObject(describe(cls), Array.isArray(args) ? args : [args]));
          break;
        }
        case 0x62: // BUILD: obj.__setstate__(state) -> the state is dropped, the object kept as is
          this.pop(at);
          this.peek(at);
          break;
        case 0x69: {
          // INST: "module\nname\n" and args after MARK
          const mod = this.line(at);
          const name = this.line(at);
          const args = this.popMark(at);
          this.push(new PickleObject(`${mod}.${name}`, args));
          break;
        }
        case 0x6f: {
          // OBJ: MARK cls args...
          const items = this.popMark(at);
          if (items.length === 0) throw new PickleError('OBJ without a class', at);
          this.push(new PickleObject(describe(items[0]!), items.slice(1)));
          break;
        }
        case 0x82: // EXT1
          this.push(new PickleObject(`extension#${this.u8()}`));
          break;
        case 0x83: // EXT2
          this.need(2);
          this.push(new PickleObject(`extension#${this.view.getUint16(this.pos, true)}`));
          this.pos += 2;
          break;
        case 0x84: // EXT4
          this.push(new PickleObject(`extension#${this.u32()}`));
          break;
        case 0x51: // BINPERSID
          this.push(new PickleObject('persistent', [this.pop(at)]));
          break;
        case 0x97: // NEXT_BUFFER
        case 0x98: // READONLY_BUFFER
          throw new PickleError('out-of-band buffers (pickle protocol 5 NEXT_BUFFER) are not supported', at);
        default:
          throw new PickleError(`unsupported pickle opcode 0x${op.toString(16).padStart(2, '0')}`, at);
      }
    }
  }

  private need(n: number): void {
    if (n > this.bytes.length - this.pos) {
      throw new PickleError(`truncated pickle (a field needs ${n} bytes, ${this.bytes.length - this.pos} remain)`, this.pos);
    }
  }

  private u8(): number {
    this.need(1);
    return this.bytes[this.pos++]!;
  }

  private u32(): number {
    this.need(4);
    const v = this.view.getUint32(this.pos, true);
    this.pos += 4;
    return v;
  }

  /** An 8-byte length, checked against the remaining bytes before it is used. */
  private u64len(): number {
    this.need(8);
    const v = this.view.getBigUint64(this.pos, true);
    this.pos += 8;
    const remain = BigInt(this.bytes.length - this.pos);
    if (v > remain) throw new PickleError(`length field claims ${v} bytes but only ${remain} remain`, this.pos - 8);
    return Number(v);
  }

  /** Checks a length read from the input against the bytes that remain. */
  private lengthFits(n: number): void {
    if (n > this.bytes.length - this.pos) {
      throw new PickleError(`length field claims ${n} bytes but only ${this.bytes.length - this.pos} remain`, this.pos);
    }
  }

  /** A view of the next `n` bytes (no copy), after checking they exist. */
  private take(n: number): Uint8Array {
    this.lengthFits(n);
    const v = this.bytes.subarray(this.pos, this.pos + n);
    this.pos += n;
    return v;
  }

  private str(n: number, at: number): string {
    this.lengthFits(n);
    const b = this.bytes;
    const p = this.pos;
    // Most strings are short ASCII keys and names: build them without a decoder call or a view.
    if (n <= 64) {
      let s = '';
      let i = 0;
      for (; i < n; i++) {
        const c = b[p + i]!;
        if (c >= 0x80) break;
        s += String.fromCharCode(c);
      }
      if (i === n) {
        this.pos += n;
        return s;
      }
    }
    const raw = this.take(n);
    try {
      return utf8.decode(raw);
    } catch {
      throw new PickleError('invalid UTF-8 in a string', at);
    }
  }

  /** Two's-complement little-endian integer of `n` bytes: a number when exact, else a BigInt. */
  private long(n: number): number | bigint {
    this.lengthFits(n);
    if (n > MAX_LONG_BYTES)
      throw new PickleError(`an integer of ${n} bytes (a snapshot's integers take at most ${MAX_LONG_BYTES})`, this.pos);
    const b = this.bytes;
    const p = this.pos;
    this.pos += n;
    if (n === 0) return 0;
    if (n <= 6) {
      let v = 0;
      for (let i = n - 1; i >= 0; i--) v = v * 256 + b[p + i]!;
      if (b[p + n - 1]! & 0x80) v -= 2 ** (8 * n);
      return v;
    }
    // 7-8 bytes (timestamps in µs, addresses): exact in a double while below 2^53, without BigInt.
    if (n <= 8 && !(b[p + n - 1]! & 0x80)) {
      const lo = (b[p]! | (b[p + 1]! << 8) | (b[p + 2]! << 16)) + b[p + 3]! * 0x1000000;
      let hi = 0;
      for (let i = n - 1; i >= 4; i--) hi = hi * 256 + b[p + i]!;
      if (hi < 0x200000) return hi * 0x100000000 + lo;
    }
    let v = 0n;
    for (let i = n - 1; i >= 0; i--) v = (v << 8n) | BigInt(b[p + i]!);
    if (b[p + n - 1]! & 0x80) v -= 1n << BigInt(8 * n);
    return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
  }

  /** A newline-terminated ASCII line (GLOBAL and INST arguments). */
  private line(at: number): string {
    const end = this.bytes.indexOf(0x0a, this.pos);
    if (end < 0) throw new PickleError('truncated pickle (unterminated line)', at);
    const s = latin1.decode(this.bytes.subarray(this.pos, end));
    this.pos = end + 1;
    return s;
  }

  private push(v: PickleValue): void {
    if (this.stack.length >= MAX_STACK_SLOTS) this.tooDeep();
    this.stack.push(v);
  }

  private tooDeep(): never {
    throw new PickleError(
      `more than ${MAX_STACK_SLOTS} values on the pickle stack at once (not a pickle written by pickle.dump)`,
      this.pos - 1,
    );
  }

  private pop(at: number): PickleValue {
    const v = this.stack.pop();
    if (v === undefined) throw new PickleError('stack underflow', at);
    if (v === MARK) throw new PickleError('unexpected MARK on the stack', at);
    return v;
  }

  private peek(at: number): PickleValue {
    const v = this.stack[this.stack.length - 1];
    if (v === undefined) throw new PickleError('stack underflow', at);
    if (v === MARK) throw new PickleError('unexpected MARK on the stack', at);
    return v;
  }

  private popMark(at: number): PickleValue[] {
    const m = this.markIndex(at);
    const items = this.stack.slice(m + 1) as PickleValue[];
    this.stack.length = m;
    return items;
  }

  /** Index of the topmost MARK, popped from the mark list; the caller truncates the stack to it. */
  private markIndex(at: number): number {
    const m = this.marks.pop();
    if (m === undefined) throw new PickleError('no MARK on the stack', at);
    return m;
  }

  private put(i: number, at: number): void {
    this.memo[i] = this.peek(at);
    this.ids[this.stack.length - 1] = i;
  }

  private pushMemo(i: number, at: number): void {
    const v = this.get(i, at);
    if (this.stack.length >= MAX_STACK_SLOTS) this.tooDeep();
    this.ids[this.stack.length] = i;
    this.stack.push(v);
  }

  /**
   * Lists whose elements are all memoised objects are shared by content: the
   * snapshot's stack-frame lists are written once per trace entry but hold the
   * same few hundred sequences of frames (the GPT-2 fixture: 11,912 lists, 207
   * distinct), so sharing them saves most of the memory. `pickle.dump` writes a
   * list of fewer than 1000 items with one APPENDS and never touches it again;
   * a pickle that appends to such a list later is refused (notShared) rather
   * than read with a changed value.
   */
  private hashOfMemoRun(from: number, to: number): number | null {
    const n = to - from;
    if (n < 2 || n >= MAX_SHARED_LIST) return null;
    let h = n;
    for (let k = from; k < to; k++) {
      const id = this.ids[k];
      if (id === undefined || this.memo[id] !== this.stack[k]) return null;
      h = (Math.imul(h, 31) + id) | 0;
    }
    return h;
  }

  private findList(hash: number, from: number, to: number): PickleValue[] | undefined {
    const candidates = this.lists.get(hash);
    if (!candidates) return undefined;
    const st = this.stack;
    outer: for (const c of candidates) {
      if (c.length !== to - from) continue;
      for (let k = from; k < to; k++) if (c[k - from] !== st[k]) continue outer;
      return c;
    }
    return undefined;
  }

  private registerList(hash: number, list: PickleValue[]): void {
    const candidates = this.lists.get(hash);
    // A few lists per hash: a crafted file full of colliding lists must not make reading quadratic.
    if (candidates && candidates.length >= MAX_LISTS_PER_HASH) return;
    if (candidates) candidates.push(list);
    else this.lists.set(hash, [list]);
    this.shared.add(list);
  }

  private notShared(l: PickleValue[], at: number): void {
    if (this.shared.has(l)) throw new PickleError('a list is appended to after it was complete (not a pickle written by pickle.dump)', at);
  }

  /** Puts `next` where `old` was on the stack (at `pos`) and in the memo. */
  private replaceList(pos: number, old: PickleValue[], next: PickleValue[]): PickleValue[] {
    const id = this.ids[pos];
    if (id !== undefined && this.memo[id] === old) this.memo[id] = next;
    this.stack[pos] = next;
    return next;
  }

  private get(i: number, at: number): PickleValue {
    const v = this.memo[i];
    if (v === undefined) throw new PickleError(`memo entry ${i} read before it was written`, at);
    return v;
  }

  private setItems(d: PickleDict, items: PickleValue[], at: number): void {
    if (items.length % 2 !== 0) throw new PickleError('odd number of items for a dict', at);
    for (let i = 0; i < items.length; i += 2) setKey(d, items[i]!, items[i + 1]!);
  }
}

/** Whether the items about to be appended to `l` include `l` itself (then it must stay the same object). */
function selfReferencing(l: PickleValue[], st: Slot[], from: number): boolean {
  for (let k = from; k < st.length; k++) if (st[k] === l) return true;
  return false;
}

function isDict(v: PickleValue): v is PickleDict {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array) && !(v instanceof PickleObject);
}

function setKey(d: PickleDict, k: PickleValue, v: PickleValue): void {
  const key = typeof k === 'string' ? k : keyText(k);
  // Plain objects keep V8's compact shapes; only `__proto__` needs care so a key can never change the prototype.
  if (key === '__proto__') Object.defineProperty(d, key, { value: v, enumerable: true, writable: true, configurable: true });
  else d[key] = v;
}

/** A non-string dict key as text, cut at MAX_KEY_CHARS: the walk stops there however deeply shared the key is. */
function keyText(k: PickleValue): string {
  const out: string[] = [];
  let chars = 0;
  const put = (s: string) => {
    out.push(s);
    chars += s.length;
  };
  const walk = (v: PickleValue) => {
    if (chars > MAX_KEY_CHARS) return;
    if (typeof v === 'string') put(v);
    else if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean' || v === null) put(String(v));
    else if (Array.isArray(v)) {
      put('(');
      for (let i = 0; i < v.length && chars <= MAX_KEY_CHARS; i++) {
        if (i > 0) put(', ');
        walk(v[i] as PickleValue);
      }
      put(')');
    } else if (v instanceof PickleObject) put(`<${v.what}>`);
    else put(String(v));
  };
  walk(k);
  const text = out.join('');
  return text.length > MAX_KEY_CHARS ? `${text.slice(0, MAX_KEY_CHARS)}…` : text;
}

function describe(v: PickleValue): string {
  return v instanceof PickleObject ? v.what : typeof v;
}

/** True for a dict produced by `unpickle`. */
export function isPickleDict(v: unknown): v is PickleDict {
  return isDict(v as PickleValue);
}
