import { existsSync, rmSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PickleError, PickleObject, type PickleValue, unpickle } from '../../src/memory/pickle.js';
import { SnapshotShapeError, toSnapshot } from '../../src/memory/snapshot.js';
import { fixtureBytes, loadSnapshot } from './helpers.js';

const bytes = (...xs: (number | string)[]): Uint8Array =>
  Uint8Array.from(xs.flatMap((x) => (typeof x === 'string' ? [...x].map((c) => c.charCodeAt(0)) : [x])));

/** Structural equality that also compares BigInts and PickleObjects. */
function plain(v: PickleValue): unknown {
  return JSON.parse(JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? `${x}n` : x)));
}

describe('unpickle', () => {
  it('reads protocols 2, 3, 4 and 5 written by CPython to the same value', () => {
    const values = [2, 3, 4, 5].map((p) => plain(unpickle(fixtureBytes(`train_p${p}.pickle`))));
    expect(values[1]).toEqual(values[0]);
    expect(values[2]).toEqual(values[0]);
    expect(values[3]).toEqual(values[0]);
    const v = values[0] as { segments: unknown[]; device_traces: unknown[][] };
    expect(v.segments.length).toBeGreaterThan(0);
    expect(v.device_traces[0]!.length).toBeGreaterThan(100);
  });

  it('keeps memoised objects shared instead of copying them', () => {
    const v = unpickle(fixtureBytes('memory_snapshot.pickle.gz')) as { device_traces: { frames: unknown[] }[][] };
    const trace = v.device_traces[0]!;
    const distinct = new Set<unknown>();
    let refs = 0;
    for (const e of trace) {
      for (const f of e.frames) distinct.add(f);
      refs += e.frames.length;
    }
    // Hundreds of thousands of frame references point at a few thousand frame objects: the pickle memo shares them and so must we.
    expect(trace.length).toBe(17788);
    expect(refs).toBeGreaterThan(100_000);
    expect(distinct.size).toBeLessThan(refs / 10);
  });

  it('keeps integers above 2^53 exact', () => {
    const snap = loadSnapshot('bigaddr_p5.pickle');
    const first = snap.segments.map((s) => s.address).sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1))[0]!;
    expect(typeof first).toBe('bigint');
    expect(first).toBe(1n << 60n);
    // LONG1 with 8 bytes: 2^53 + 1 is not a double.
    expect(unpickle(bytes(0x80, 4, 0x8a, 8, 1, 0, 0, 0, 0, 0, 0x20, 0, '.'))).toBe(2n ** 53n + 1n);
    expect(unpickle(bytes(0x80, 4, 0x8a, 1, 0xff, '.'))).toBe(-1);
    expect(unpickle(bytes(0x80, 4, 0x8a, 2, 0x00, 0x80, '.'))).toBe(-32768);
    expect(unpickle(bytes(0x80, 4, 'J', 0xfe, 0xff, 0xff, 0xff, '.'))).toBe(-2);
  });

  it('reads every LONG1 integer exactly: a number when safe, else a BigInt', () => {
    const encode = (v: bigint): Uint8Array => {
      const out: number[] = [];
      let x = v;
      for (;;) {
        out.push(Number(x & 255n));
        const top = out[out.length - 1]! & 0x80;
        x >>= 8n;
        if ((x === 0n && !top) || (x === -1n && top)) break;
      }
      return Uint8Array.from([0x80, 4, 0x8a, out.length, ...out, 0x2e]);
    };
    fc.assert(
      fc.property(fc.bigInt({ min: -(2n ** 80n), max: 2n ** 80n }), (v) => {
        const got = unpickle(encode(v));
        if (typeof got === 'number') return Number.isSafeInteger(got) && BigInt(got) === v;
        return got === v && (v > BigInt(Number.MAX_SAFE_INTEGER) || v < BigInt(Number.MIN_SAFE_INTEGER));
      }),
      { numRuns: 2000 },
    );
  });

  it('shares lists with the same memoised elements, and refuses to append to one later', () => {
    // [[d, d], [d, d]]: the second list is the first one.
    const two = bytes(0x80, 4, ']', 0x94, '}', 0x94, '0', '(', ']', 0x94, '(', 'h', 1, 'h', 1, 'e', ']', 0x94, '(', 'h', 1, 'h', 1, 'e', 'e', '.');
    const v = unpickle(two) as PickleValue[][];
    expect(v).toHaveLength(2);
    expect(v[0]).toHaveLength(2);
    expect(v[1]).toBe(v[0]);
    // Appending 7 to the second list afterwards would change the first: refused, not misread.
    const later = bytes(0x80, 4, ']', 0x94, '}', 0x94, '0', '(', ']', 0x94, '(', 'h', 1, 'h', 1, 'e', ']', 0x94, '(', 'h', 1, 'h', 1, 'e', 'h', 3, 'K', 7, 'a', '0', 'e', '.');
    expect(() => unpickle(later)).toThrow(/appended to after it was complete/);
    // A list that contains itself stays itself.
    const selfRef = unpickle(bytes(0x80, 4, ']', 0x94, '(', 'K', 1, 'h', 0, 'e', '.')) as PickleValue[];
    expect(selfRef[1]).toBe(selfRef);
    const real = unpickle(fixtureBytes('memory_snapshot.pickle.gz')) as { device_traces: { frames: unknown[] }[][] };
    const lists = new Set(real.device_traces[0]!.map((e) => e.frames));
    // 11,912 frame lists in the file hold 207 distinct sequences.
    expect(lists.size).toBeLessThanOrEqual(207);
  });

  it('turns imports and calls into inert placeholders and never runs them', () => {
    rmSync('/tmp/gpuwise-pwned', { force: true });
    const v = unpickle(fixtureBytes('evil_os_system.pickle')) as { segments: PickleValue[] };
    const obj = v.segments[0];
    expect(obj).toBeInstanceOf(PickleObject);
    expect((obj as PickleObject).what).toMatch(/^(posix|os|nt)\.system$/);
    expect(existsSync('/tmp/gpuwise-pwned')).toBe(false);
    expect(() => toSnapshot(v as PickleValue)).toThrow(SnapshotShapeError);
  });

  it('refuses what it cannot read with a PickleError', () => {
    expect(() => unpickle(bytes())).toThrow(PickleError);
    expect(() => unpickle(bytes('(dp0\n.'))).toThrow(/protocol 2 or later/);
    expect(() => unpickle(bytes(0x80, 6, 'N', '.'))).toThrow(/unsupported pickle protocol 6/);
    expect(() => unpickle(bytes(0x80, 4, 'N'))).toThrow(/truncated/);
    expect(() => unpickle(bytes(0x80, 4, '.'))).toThrow(/stack underflow/);
    expect(() => unpickle(bytes(0x80, 5, 0x97, '.'))).toThrow(/out-of-band/);
  });

  it('checks length fields against the remaining bytes before allocating', () => {
    // BINUNICODE8 and BINBYTES8 claiming 2^60 bytes; BINUNICODE claiming 4 GiB.
    const huge = [0, 0, 0, 0, 0, 0, 0, 0x10];
    expect(() => unpickle(bytes(0x80, 4, 0x8d, ...huge, 'a', '.'))).toThrow(/claims 1152921504606846976 bytes/);
    expect(() => unpickle(bytes(0x80, 4, 0x8e, ...huge, '.'))).toThrow(/claims/);
    expect(() => unpickle(bytes(0x80, 4, 'X', 0xff, 0xff, 0xff, 0xff, '.'))).toThrow(/claims 4294967295 bytes/);
    expect(() => unpickle(bytes(0x80, 4, 0x8b, 0xff, 0xff, 0xff, 0x7f, '.'))).toThrow(/claims/);
  });

  it('rejects a valid pickle that is not a snapshot', () => {
    expect(() => toSnapshot(unpickle(fixtureBytes('not_snapshot.pickle')))).toThrow(/without 'segments'/);
    expect(() => toSnapshot(unpickle(bytes(0x80, 4, 'K', 7, '.')))).toThrow(/^a pickled number$/);
  });

  it('never throws anything but PickleError or SnapshotShapeError on mutated snapshots', () => {
    const base = fixtureBytes('train_p4.pickle');
    const mutation = fc.oneof(
      fc.record({ kind: fc.constant('truncate' as const), at: fc.nat(base.length - 1) }),
      fc.record({ kind: fc.constant('flip' as const), at: fc.nat(base.length - 1), value: fc.integer({ min: 0, max: 255 }) }),
      fc.record({ kind: fc.constant('delete' as const), at: fc.nat(base.length - 1), n: fc.integer({ min: 1, max: 64 }) }),
      fc.record({ kind: fc.constant('duplicate' as const), at: fc.nat(base.length - 1), n: fc.integer({ min: 1, max: 64 }) }),
    );
    fc.assert(
      fc.property(fc.array(mutation, { minLength: 1, maxLength: 4 }), (ms) => {
        let b = base;
        for (const m of ms) {
          const at = Math.min(m.at, b.length - 1);
          if (m.kind === 'truncate') b = b.slice(0, at);
          else if (m.kind === 'flip') {
            b = b.slice();
            b[at] = m.value;
          } else if (m.kind === 'delete') b = Uint8Array.from([...b.subarray(0, at), ...b.subarray(at + m.n)]);
          else b = Uint8Array.from([...b.subarray(0, at + m.n), ...b.subarray(at, at + m.n), ...b.subarray(at + m.n)]);
          if (b.length === 0) break;
        }
        try {
          toSnapshot(unpickle(b));
        } catch (e) {
          if (!(e instanceof PickleError || e instanceof SnapshotShapeError)) throw e;
        }
      }),
      { numRuns: 300 },
    );
  });

  it('fails cleanly at every truncation point of a real snapshot', () => {
    const real = fixtureBytes('memory_snapshot.pickle.gz');
    for (let k = 1; k < 40; k++) {
      const cut = Math.floor((real.length * k) / 40);
      expect(() => unpickle(real.subarray(0, cut))).toThrow(PickleError);
    }
  });
});
