import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { TraceModelBuilder } from '../../src/trace/builder.js';
import { analyzeTrace } from '../../src/trace/metrics/index.js';
import type { TraceModel } from '../../src/trace/model.js';
import { type ChunkStore, type GpuOp, OpKind, OpLogWriter, OpReader, emptyGpuOp, forEachOp, forEachOpByStart } from '../../src/trace/opLog.js';
import { TraceJsonParser } from '../../src/trace/parser.js';
import { tracePath } from '../helpers/fixtures.js';

function op(over: Partial<GpuOp>): GpuOp {
  const o = emptyGpuOp();
  Object.assign(o, over);
  o.launch = { ...emptyGpuOp().launch, ...over.launch };
  return o;
}

/** A store that takes every chunk (a copy), as the temporary file does past its budget. */
class MemoryStore implements ChunkStore {
  readonly chunks: Uint8Array[] = [];
  /** Small chunks, so that a shipped trace's logs fill many. */
  readonly chunkBytes = 4096;
  reads = 0;
  offer(bytes: Uint8Array, length: number): number {
    this.chunks.push(bytes.slice(0, length));
    return this.chunks.length - 1;
  }
  read(handle: number, length: number, into: Uint8Array): void {
    this.reads++;
    into.set(this.chunks[handle]!.subarray(0, length));
  }
}

describe('op log: compact records read back exactly', () => {
  for (const stored of [false, true])
    it(`round-trips every field, including fractions, huge and negative values, across many chunks${stored ? ', chunks in a store' : ''}`, () => {
      roundTrip(stored ? new MemoryStore() : null, 9);
    });

  it('keeps occupancy exact when a log has more distinct values than its table holds', () => {
    roundTrip(null, 5000);
  });

  function roundTrip(store: MemoryStore | null, distinctSmShares: number) {
    const w = new OpLogWriter(3, store);
    const lanes = [w.lane('7|1'), w.lane('7|2'), w.lane('13|1')];
    const written: GpuOp[] = [];
    for (let i = 0; i < 40_000; i++) {
      const o = op({
        kind: (i % 3) as OpKind,
        category: i % 3 === 0 ? i % 10 : i % 3 === 1 ? 7 : 8,
        copyKind: i % 3 === 1 ? i % 8 : 0,
        startNs: i === 5 ? 1.5 : i === 6 ? -(2 ** 60) : i * 1000 - (i % 7 === 0 ? 50_000 : 0),
        durNs: i === 9 ? 0.25 : (i * 37) % 100_000,
        nameId: i % 500,
        bytes: i % 3 === 0 ? -1 : i === 10 ? 2 ** 55 : i * 4096,
        smShare: i % 4 === 0 ? -1 : i % 4 === 1 ? 1 : Math.fround((1 + (i % distinctSmShares)) / (distinctSmShares + 2)),
        launch: i % 5 === 0 ? { startNs: Number.NaN, durNs: 0, kind: 0, externalId: -1 } : { startNs: i * 1000 - 20_000, durNs: 3000 + i, kind: i % 4, externalId: i % 11 === 0 ? -1 : 1e6 + i },
        ownsLaunch: i % 5 !== 0 && i % 2 === 0,
        correlation: i % 5 === 0 && i % 10 === 0 ? 2 ** 40 + i : -1,
        lane: lanes[(i >> 4) % 3]!,
      });
      if (o.kind === OpKind.memcpy) o.category = 7;
      if (o.kind === OpKind.memset) o.category = 8;
      w.append(o);
      written.push(structuredClone(o));
    }
    const log = w.finish();
    expect(log.chunks.length).toBeGreaterThan(1);
    if (store) expect(log.chunks.filter((c) => c === null).length).toBe(log.chunks.length - 1);
    const r = new OpReader(log, new Map());
    for (const want of written) {
      expect(r.next()).toBe(true);
      expect(r.op).toEqual(want);
    }
    expect(r.next()).toBe(false);
    if (store) expect(store.reads).toBe(log.chunks.length - 1);
    // Lane by lane through the runs, as the time-ordered merge reads them.
    let n = 0;
    forEachOpByStart([log], new Map(), () => n++);
    expect(n).toBe(written.length);
  }

  it('keeps a run per lane when lanes interleave, and merges them in start order (ties in write order)', () => {
    const w = new OpLogWriter(0);
    const [main, backward] = [w.lane('7|100'), w.lane('7|200')];
    // Two launching threads, each in time order, interleaved as Kineto writes them.
    const ops = [
      [main, 0],
      [backward, 5_000],
      [main, 10],
      [main, 20],
      [backward, 20],
      [main, 30],
      [backward, 5_010],
    ] as const;
    for (const [i, [lane, s]] of ops.entries()) w.append(op({ lane, startNs: s, nameId: i }));
    const log = w.finish();
    expect(log.runs.map((r) => [r.lane, r.count])).toEqual([
      [main, 4],
      [backward, 1], // 5000, then 20 starts earlier: a new run of the lane
      [backward, 2],
    ]);
    const seen: number[] = [];
    forEachOpByStart([log], new Map(), (o) => seen.push(o.nameId));
    expect(seen).toEqual([0, 2, 3, 4, 5, 1, 6]);
  });

  it('merges its ordered runs into start order, equal starts in the order written', () => {
    const w = new OpLogWriter(0);
    w.lane('7|1');
    const starts = [10, 20, 30, 5, 15, 25, 35, 20, 0, 40, 30];
    for (const [i, s] of starts.entries()) w.append(op({ startNs: s, nameId: i }));
    const log = w.finish();
    expect(log.runs.map((r) => r.count)).toEqual([3, 4, 1, 2, 1]);
    const seen: [number, number][] = [];
    forEachOpByStart([log], new Map(), (o) => seen.push([o.startNs, o.nameId]));
    const expected = starts.map((s, i) => [s, i] as [number, number]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    expect(seen).toEqual(expected);
  });

  it('merges the logs of one device (the parts of a parallel parse), equal starts in the order of logs, names mapped', () => {
    const part = (starts: number[], firstName: number) => {
      const w = new OpLogWriter(0);
      w.lane('7|1');
      for (const [i, s] of starts.entries()) w.append(op({ startNs: s, nameId: firstName + i }));
      return w.finish();
    };
    const a = part([10, 30, 50, 20], 0);
    // The second part's name ids 0..2 are the merged model's 100..102.
    const b = { ...part([10, 20, 40], 0), nameIds: Int32Array.from([100, 101, 102]) };
    const seen: [number, number][] = [];
    forEachOpByStart([a, b], new Map(), (o) => seen.push([o.startNs, o.nameId]));
    expect(seen).toEqual([
      [10, 0],
      [10, 100],
      [20, 3],
      [20, 101],
      [30, 1],
      [40, 102],
      [50, 2],
    ]);
  });
});

/**
 * The fixture's trace text with its events rearranged. A step marker goes first in every arrangement:
 * the first event gpuwise keeps sets the time origin, and the outputs are compared in absolute terms.
 */
function rearranged(name: string, arrange: (events: Record<string, unknown>[]) => Record<string, unknown>[]): string {
  const trace = JSON.parse(gunzipSync(readFileSync(tracePath(name))).toString('utf8'));
  const events: Record<string, unknown>[] = trace.traceEvents;
  const marker = events.findIndex((e) => String(e.name).startsWith('ProfilerStep#'));
  trace.traceEvents = [events[marker], ...arrange(events.filter((_, i) => i !== marker))];
  return JSON.stringify(trace);
}

function modelOf(text: string, store: ChunkStore | null = null): TraceModel {
  const b = new TraceModelBuilder('test', store);
  const p = new TraceJsonParser(b);
  p.push(text);
  const s = p.end();
  return b.finish(s.originUs ?? 0, s.warnings);
}

/** Paths where two outputs differ; numbers may differ in the last bits (sums taken in another order). */
function differences(a: unknown, b: unknown, path = '', out: string[] = []): string[] {
  if (typeof a === 'number' && typeof b === 'number') {
    if (a !== b && Math.abs(a - b) > 1e-9 * Math.max(Math.abs(a), Math.abs(b))) out.push(`${path}: ${a} vs ${b}`);
  } else if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') {
    if (a !== b) out.push(`${path}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
  } else {
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) differences((a as never)[k], (b as never)[k], `${path}.${k}`, out);
  }
  return out;
}

const isGpu = (e: Record<string, unknown>) => e.cat === 'kernel' || e.cat === 'gpu_memcpy' || e.cat === 'gpu_memset';
const isRuntime = (e: Record<string, unknown>) => e.cat === 'cuda_runtime' || e.cat === 'cuda_driver';

describe('linking GPU ops to their launches does not depend on the order of events', () => {
  // Kineto writes each op just before its launch; these orders force the other paths: launches kept by id
  // until their op arrives, ops that give up waiting and are resolved when read, logs of many runs.
  for (const name of ['gpt2_amp', 'resnet_starved', 'ddp_gpt2.rank0']) {
    it(`${name}: every runtime call first, GPU ops reversed, or all shuffled: the same metrics`, () => {
      const base = analyzeTrace(modelOf(rearranged(name, (ev) => ev)));
      const runtimeFirst = modelOf(rearranged(name, (ev) => [...ev.filter(isRuntime), ...ev.filter((e) => !isRuntime(e))]));
      expect(differences(analyzeTrace(runtimeFirst), base)).toEqual([]);
      const opsLate = modelOf(rearranged(name, (ev) => [...ev.filter((e) => !isGpu(e)), ...ev.filter(isGpu).reverse()]));
      expect(opsLate.gpu.logs.reduce((n, l) => n + l.runs.length, 0)).toBeGreaterThan(100); // reversed ops: a run each
      expect(differences(analyzeTrace(opsLate), base)).toEqual([]);
      // The same with every full chunk of the op logs in a store: read back by many runs at once.
      const store = new MemoryStore();
      const opsLateStored = modelOf(rearranged(name, (ev) => [...ev.filter((e) => !isGpu(e)), ...ev.filter(isGpu).reverse()]), store);
      expect(store.chunks.length).toBeGreaterThan(0);
      expect(differences(analyzeTrace(opsLateStored), base)).toEqual([]);
      let ops = 0;
      forEachOp(opsLateStored.gpu.logs, opsLateStored.gpu.launches, () => ops++);
      expect(ops).toBe(opsLate.gpu.count);
      let seed = 11;
      const random = () => {
        seed = (seed * 1103515245 + 12345) % 2 ** 31;
        return seed / 2 ** 31;
      };
      const shuffled = modelOf(
        rearranged(name, (ev) => {
          const out = [...ev];
          for (let i = out.length - 1; i > 0; i--) {
            const j = Math.floor(random() * (i + 1));
            [out[i], out[j]] = [out[j]!, out[i]!];
          }
          return out;
        }),
      );
      expect(differences(analyzeTrace(shuffled), base)).toEqual([]);
    });
  }

  it('a CUDA graph launch (one call, several kernels) links all of them and counts its CPU time once', () => {
    const ev = (o: Record<string, unknown>) => ({ ph: 'X', pid: 1, tid: 1, ...o });
    const kernel = (ts: number, corr: number) => ev({ cat: 'kernel', name: 'k', pid: 0, tid: 7, ts, dur: 2, args: { device: 0, correlation: corr } });
    const text = (order: 'ops first' | 'call first') => {
      const call = ev({ cat: 'cuda_runtime', name: 'cudaGraphLaunch', ts: 100, dur: 10, args: { correlation: 5 } });
      const ops = [kernel(120, 5), kernel(130, 5), kernel(140, 5)];
      return JSON.stringify({
        traceEvents: [
          ev({ cat: 'user_annotation', name: 'ProfilerStep#1', ts: 90, dur: 40 }),
          ...(order === 'ops first' ? [...ops, call] : [call, ...ops]),
          ev({ cat: 'cuda_runtime', name: 'cudaLaunchKernel', ts: 112, dur: 3, args: { correlation: 6 } }),
          kernel(150, 6),
        ],
      });
    };
    for (const order of ['ops first', 'call first'] as const) {
      const m = analyzeTrace(modelOf(text(order)));
      expect(m.launch.kernels, order).toBe(4);
      expect(m.launch.cpuLaunchNs, order).toBe(13_000);
      expect(m.launch.shorterThanLaunchFraction, order).toBe(1);
      // The window runs to the end of the last kernel launched inside the step's CPU span.
      expect(m.steps[0]!.endNs - m.steps[0]!.startNs, order).toBe(62_000);
    }
  });
});
