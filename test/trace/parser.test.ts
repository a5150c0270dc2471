import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { RawEvent, TraceSink } from '../../src/trace/event.js';
import { TraceFormatError, TraceJsonParser } from '../../src/trace/parser.js';

interface Seen {
  ph: string;
  cat: string;
  name: string;
  pid: number | string;
  tid: number | string;
  tsNs: number;
  durNs: number;
  correlation: number;
  externalId: number;
  seq: unknown;
  inputDims: unknown;
}

function parse(text: string, chunk = text.length): { events: Seen[]; meta: Record<string, unknown>; summary: ReturnType<TraceJsonParser['end']> } {
  const events: Seen[] = [];
  const meta: Record<string, unknown> = {};
  const sink: TraceSink = {
    onEvent(e: RawEvent) {
      events.push({ ph: e.ph, cat: e.cat, name: e.name, pid: e.pid, tid: e.tid, tsNs: e.tsNs, durNs: e.durNs, correlation: e.args.correlation, externalId: e.args.externalId, seq: e.args.seq, inputDims: e.args.inputDims });
    },
    onMetadata(k, v) {
      meta[k] = v;
    },
  };
  const p = new TraceJsonParser(sink);
  for (let i = 0; i < text.length; i += Math.max(1, chunk)) p.push(text.slice(i, i + Math.max(1, chunk)));
  return { events, meta, summary: p.end() };
}

const KINETO = `{
  "schemaVersion": 1,
  "deviceProperties": [{"id": 0, "name": "NVIDIA H200", "totalGlobalMem": 150109880320}],
  "distributedInfo": {"backend": "nccl", "rank": 1, "world_size": 2},
  "baseTimeNanoseconds": 1790857026000000001,
  "traceEvents": [
  {
    "ph": "X", "cat": "user_annotation", "name": "ProfilerStep#4", "pid": 1358, "tid": 1462,
    "ts": 4378075232103.635, "dur": 155.534,
    "args": {"External id": 1025, "Record function id": 0}
  },
  {
    "ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "pid": 0, "tid": 7,
    "ts": 4378075232104.001, "dur": 0.999,
    "args": {"device": 0, "stream": 7, "correlation": 9007199254740993, "Seq": 18446744073709551615, "Collective name": "allreduce", "Comms Id": 123456789012345678901234}
  },
  {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": "Spans", "tid": "PyTorch Profiler", "ts": 4378075232105, "dur": 2,
   "args": {"External id": 7, "Input Dims": [[16384, 768], [768, 50257]], "Input type": ["c10::BFloat16", "c10::BFloat16"]}},
  {"ph": "i", "s": "g", "name": "Record Window End", "pid": "", "tid": "", "ts": 4378075232110.5}
  ],
  "traceName": "x"
}`;

describe('TraceJsonParser', () => {
  it('keeps nanosecond timestamps exact relative to the first whole microsecond', () => {
    const { events, summary } = parse(KINETO);
    expect(summary.originUs).toBe(4378075232103);
    expect(events[0]!.tsNs).toBe(635);
    expect(events[0]!.durNs).toBe(155534);
    expect(events[1]!.tsNs).toBe(1001);
    expect(events[1]!.durNs).toBe(999);
    expect(events[2]!.tsNs).toBe(2000);
    expect(events[3]!.tsNs).toBe(7500);
  });

  it('keeps ids above 2^53 exact and accepts string pids and tids', () => {
    const { events, meta } = parse(KINETO);
    expect(events[1]!.seq).toBe('18446744073709551615');
    expect(events[2]!.pid).toBe('Spans');
    expect(events[2]!.tid).toBe('PyTorch Profiler');
    expect(meta.baseTimeNanoseconds).toBe('1790857026000000001');
    expect(events[2]!.inputDims).toEqual([
      [16384, 768],
      [768, 50257],
    ]);
  });

  it('reads metadata placed after traceEvents', () => {
    const text = '{"traceEvents": [{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1.5,"dur":2}], "distributedInfo": {"rank": 3, "world_size": 4}}';
    const { meta, events } = parse(text);
    expect(events).toHaveLength(1);
    expect(meta.distributedInfo).toEqual({ rank: 3, world_size: 4 });
  });

  it('accepts the bare-array form, escapes, NaN and old unquoted words', () => {
    const text = '[{"ph":"X","cat":"cpu_op","name":"a\\"b\\\\c\\u00e9","pid":1,"tid":1,"ts":NaN,"dur":N/A,"args":{"External id": 3}}]';
    const { events, summary } = parse(text);
    expect(events[0]!.name).toBe('a"b\\cé');
    expect(events[0]!.tsNs).toBeNaN();
    expect(events[0]!.durNs).toBeNaN();
    expect(summary.truncated).toBe(false);
  });

  it('gives the same events whatever the chunk boundaries', () => {
    const whole = parse(KINETO).events;
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 200 }), (chunk) => {
        expect(parse(KINETO, chunk).events).toEqual(whole);
      }),
      { numRuns: 60 },
    );
  });

  it('reports truncation but keeps the events read', () => {
    const cut = KINETO.slice(0, KINETO.indexOf('"ph": "X", "cat": "kernel"') + 60);
    const { events, summary } = parse(cut);
    expect(events).toHaveLength(1);
    expect(summary.truncated).toBe(true);
    expect(summary.warnings.join(' ')).toMatch(/truncated/);
  });

  it('rejects text that is not a trace', () => {
    expect(() => parse('hello world')).toThrow(TraceFormatError);
    expect(() => parse('')).toThrow(/empty/);
    expect(() => parse('{"a": 1')).toThrow(TraceFormatError);
    expect(() => parse('\x1f\x8b\x08\x00binary')).toThrow(/not JSON/);
  });

  it('stops at a syntax error after some events and keeps them', () => {
    const text = '{"traceEvents": [{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":2}, {"ph": }]}';
    const { events, summary } = parse(text);
    expect(events).toHaveLength(1);
    expect(summary.stoppedAt).toMatch(/expected a value/);
  });
});

describe('TraceJsonParser limits', () => {
  it('refuses absurd nesting instead of overflowing the stack', () => {
    const deep = `{"traceEvents": [], "x": ${'['.repeat(100000)}${']'.repeat(100000)}}`;
    expect(() => parse(deep)).toThrow(/nesting/);
  });

  it('re-reads an item cut by chunks in O(n log n), even with one-character chunks', () => {
    const big = `{"deviceProperties": [${Array.from({ length: 3000 }, (_, i) => `{"id": ${i}, "name": "gpu"}`).join(',')}], "traceEvents": [{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":2}]}`;
    const r = parse(big, 1);
    expect(r.events).toHaveLength(1);
    expect((r.meta.deviceProperties as unknown[]).length).toBe(3000);
  });
});

describe('TraceJsonParser skipping unwanted events', () => {
  // Events a sink turns down are jumped over without being parsed (a regular expression for
  // up to three nested levels, a character loop beyond): braces and quotes inside strings,
  // escapes and deep nesting must not derail the events that follow.
  const tricky = [
    '{"ph":"X","cat":"cpu_op","name":"skip me","pid":1,"tid":1,"ts":1,"dur":1,"args":{"a":"}}}","b":"\\"}{\\\\","c":[{"d":{"e":{"f":{"g":"}"}}}}]}}',
    '{"ph": "X", "cat": "cpu_op", "name": "skip {me} too", "pid": 1, "tid": 1, "ts": 2, "dur": 1, "args": {"x": ["]", "[", {"y": "\\\\"}]}}',
    '{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":3,"dur":2,"args":{"correlation":42}}',
    '{"ph":"f","id":1,"pid":1,"tid":1,"ts":4,"cat":"ac2g","name":"ac2g","bp":"e","args":{"s":"}"}}',
    '{"ph":"X","cat":"kernel","name":"k2","pid":0,"tid":7,"ts":5,"dur":2,"args":{"correlation":43}}',
  ];
  const text = `{"traceEvents": [\n${tricky.join(',\n')}\n]}`;

  function kept(chunk: number): { names: string[]; correlations: number[]; skipped: number; events: number } {
    const names: string[] = [];
    const correlations: number[] = [];
    let skipped = 0;
    const sink: TraceSink = {
      onEvent(e) {
        names.push(e.name);
        correlations.push(e.args.correlation);
      },
      onMetadata() {},
      wants: (ph, cat) => ph !== 'f' && ph !== 's' && cat !== 'cpu_op',
      onSkipped() {
        skipped++;
      },
    };
    const p = new TraceJsonParser(sink);
    for (let i = 0; i < text.length; i += chunk) p.push(text.slice(i, i + chunk));
    const summary = p.end();
    return { names, correlations, skipped, events: summary.events };
  }

  it('reads the events after skipped ones, and reports each skipped event once, whatever the chunks', () => {
    for (const chunk of [text.length, 97, 13, 1]) {
      expect(kept(chunk)).toEqual({ names: ['k', 'k2'], correlations: [42, 43], skipped: 3, events: 5 });
    }
  });
});
