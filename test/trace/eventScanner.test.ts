/**
 * The WebAssembly event scanner against the parser it stands in for: on every shipped trace, cut into segments, and
 * on hand-made and mutated segments, the sink must see the same events, the same skipped counts and the same notes,
 * or the scanner must decline the segment before anything reached the sink.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TraceModelBuilder } from '../../src/trace/builder.js';
import type { RawEvent, TraceSink } from '../../src/trace/event.js';
import { EventScanner, type ScanOutcome } from '../../src/trace/eventScanner.js';
import { TraceJsonParser } from '../../src/trace/parser.js';
import { findEventBoundary, firstTimestampUs } from '../../src/trace/segments.js';
import { TRACES } from '../helpers/fixtures.js';

/** Records every call, with the builder's own filter. */
class Recorder implements TraceSink {
  readonly calls: string[] = [];
  readonly skipped = new Map<string, number>();
  private readonly filter = new TraceModelBuilder('test');
  onEvent(ev: RawEvent): void {
    this.calls.push(JSON.stringify(ev));
  }
  onMetadata(): void {}
  wants(ph: string, cat: string, name: string): boolean {
    return this.filter.wants(ph, cat, name);
  }
  onSkipped(ph: string, cat: string, count: number): void {
    const key = `${ph}/${cat}`;
    this.skipped.set(key, (this.skipped.get(key) ?? 0) + count);
  }
}

interface Read {
  calls: string[];
  skipped: [string, number][];
  notes: string[];
}

function byParser(segment: Uint8Array, originUs: number): Read | 'error' {
  const sink = new Recorder();
  const parser = new TraceJsonParser(sink, { originUs, startInEvents: true });
  try {
    parser.push(Buffer.from(segment).toString('latin1'));
    if (!parser.endsBetweenEvents()) return 'error';
  } catch {
    return 'error';
  }
  return { calls: sink.calls, skipped: [...sink.skipped].sort(), notes: parser.notesSoFar() };
}

function byScanner(segment: Uint8Array, originUs: number, scanner?: EventScanner, sink = new Recorder()): { outcome: ScanOutcome; read: Read; scanned: number } {
  const s = scanner ?? EventScanner.create(sink, originUs)!;
  const parser = new TraceJsonParser(sink, { originUs, startInEvents: true });
  const before = s.events;
  const outcome = s.scanSegment(segment, parser);
  return { outcome, read: { calls: sink.calls, skipped: [...sink.skipped].sort(), notes: parser.notesSoFar() }, scanned: s.events - before };
}

/** The middle segments of a trace (as the parallel loader cuts them), and its time origin. */
function middleSegments(bytes: Buffer, size: number): { segments: Buffer[]; originUs: number } {
  const originUs = firstTimestampUs(bytes.subarray(0, 1 << 20).toString('latin1'))!;
  const cuts = [0];
  for (;;) {
    const want = cuts.at(-1)! + size;
    if (want >= bytes.length) break;
    const cut = findEventBoundary(bytes.subarray(0, want), want - 1);
    if (cut <= cuts.at(-1)!) break;
    cuts.push(cut);
  }
  const segments = [];
  for (let i = 1; i + 1 < cuts.length; i++) segments.push(bytes.subarray(cuts[i], cuts[i + 1]));
  return { segments, originUs };
}

const traceFiles = [
  ...readdirSync(TRACES).map((f) => `${TRACES}${f}`),
  ...readdirSync(`${TRACES}ddp_gpt2`).map((f) => `${TRACES}ddp_gpt2/${f}`),
  ...readdirSync(`${TRACES}scenarios`).map((f) => `${TRACES}scenarios/${f}`),
].filter((f) => f.endsWith('.trace.json.gz'));

describe('event scanner on real traces', () => {
  it('gives the sink what the parser gives it, segment by segment, and decodes nearly every event itself', () => {
    expect(traceFiles.length).toBeGreaterThan(10);
    let events = 0;
    let scanned = 0;
    for (const file of traceFiles) {
      const { segments, originUs } = middleSegments(gunzipSync(readFileSync(file)), 256 * 1024);
      const sink = new Recorder();
      const scanner = EventScanner.create(sink, originUs)!;
      for (const segment of segments) {
        const parsed = byParser(segment, originUs);
        const first = sink.calls.length;
        const { outcome, read, scanned: n } = byScanner(segment, originUs, scanner, sink);
        expect(outcome, file).toEqual({ kind: 'done' });
        expect(read.calls.slice(first)).toEqual((parsed as Read).calls);
        expect(read.notes).toEqual((parsed as Read).notes);
        events += (parsed as Read).calls.length + (parsed as Read).skipped.reduce((s, [, k]) => s + k, 0);
        scanned += n;
        sink.skipped.clear();
        sink.calls.length = 0;
      }
    }
    // The rest (CPU ops whose shapes are read) went to the parser.
    expect(scanned / events).toBeGreaterThan(0.97);
  });

  it('skipped counts per phase and category match the parser', () => {
    const { segments, originUs } = middleSegments(gunzipSync(readFileSync(`${TRACES}gpt2_amp.trace.json.gz`)), 1 << 20);
    for (const segment of segments.slice(0, 4)) {
      const parsed = byParser(segment, originUs) as Read;
      expect(parsed.skipped.length).toBeGreaterThan(0);
      expect(byScanner(segment, originUs).read.skipped).toEqual(parsed.skipped);
    }
  });

  it('pauses when its record buffer fills and resumes where it stopped', () => {
    const kernel = (i: number) =>
      `,{"ph":"X","cat":"kernel","name":"k${i % 7}","pid":0,"tid":7,"ts":${1000 + i}.5,"dur":2.25,"args":{"device":0,"stream":7,"correlation":${i},"blocks per SM":0.5,"grid":[1,1,1]}}`;
    const segment = Buffer.from(Array.from({ length: 9000 }, (_, i) => kernel(i)).join('\n'));
    const parsed = byParser(segment, 1000) as Read;
    const { outcome, read } = byScanner(segment, 1000);
    expect(outcome).toEqual({ kind: 'done' });
    expect(read.calls.length).toBe(9000);
    expect(read.calls).toEqual(parsed.calls);
  });
});

/** Segments the parser reads in its own ways: the scanner must agree with it or decline. */
const EDGE_CASES: Record<string, string> = {
  'escaped name': ',{"ph":"X","cat":"kernel","name":"a\\"b\\\\c\\u00e9","pid":0,"tid":7,"ts":5,"dur":1,"args":{"correlation":3}}',
  'quoted numbers and string ids': ',{"ph":"X","cat":"kernel","name":"k","pid":"0","tid":"stream 7","ts":"5.5","dur":"1","args":{"correlation":"3"}}',
  'ids above 2^53': ',{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":2,"ts":5,"dur":1,"id":18446744073709551615,"args":{"correlation":9007199254740993}}',
  'ts rounding and long fractions': ',{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1000.0004999,"dur":0.0005,"args":{"correlation":1}},{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1000.12345678,"dur":12.9999,"args":{}}',
  'negative and exponent numbers': ',{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":-5.25,"dur":1e3,"args":{"correlation":-4,"blocks per SM":1.5e-3,"bytes":-0}}',
  'floats of many digits': ',{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":5,"dur":1,"args":{"blocks per SM":3045.8789062500001,"device":0.1}}',
  'bare words': ',{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":NaN,"dur":null,"args":{"correlation":NaN,"queued":Infinity}}',
  'unknown category and phase strings': ',{"ph":"Xx","cat":"my_cat","name":"k","pid":0,"tid":7,"ts":5,"dur":1},{"ph":"","cat":"","name":"","ts":1}',
  'args before cat and name': ',{"args":{"correlation":4,"device":0},"ph":"X","ts":5,"dur":1,"pid":0,"tid":7,"cat":"kernel","name":"k"}',
  'repeated keys': ',{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":5,"dur":1,"args":{"correlation":4},"args":{"device":2},"ts":7}',
  'shapes of a GEMM': ',{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":5,"dur":9,"args":{"External id":3,"Input Dims":[[16,50257],[50257,8]],"Input type":["float","float"]}}',
  'a convolution with Concrete Inputs': ',{"ph":"X","cat":"cpu_op","name":"aten::cudnn_convolution","pid":1,"tid":1,"ts":5,"dur":9,"args":{"External id":15,"Concrete Inputs":["","","[3, 3]","[2, 2]","[1, 1]","1","False","False","True"],"Input type":["float","float","ScalarList"],"Input Dims":[[128,3,224,224],[64,3,7,7],[]]}}',
  'Python frames, one naming a framework': ',{"ph":"X","cat":"python_function","name":"transformers/trainer.py(2245): _inner_training_loop","pid":1,"tid":1,"ts":5,"dur":9,"args":{"Python parent id":3,"Python id":4}},{"ph":"X","cat":"python_function","name":"torch/nn/modules/module.py(1751): _call_impl","pid":1,"tid":1,"ts":6,"dur":1,"args":{"Python id":5}}',
  'a Lightning label': ',{"ph":"X","cat":"user_annotation","name":"[LightningModule]ResNetModule.training_step","pid":1,"tid":1,"ts":5,"dur":9,"args":{"External id":7}},{"ph":"X","cat":"cpu_op","name":"[Strategy]SingleDeviceStrategy.training_step","pid":1,"tid":1,"ts":5,"dur":9}',
  'flows and skipped ops': ',{"ph":"f","id":3,"pid":0,"tid":7,"ts":5,"cat":"ac2g","name":"ac2g","bp":"e"},{"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":5,"dur":1,"args":{"x":{"y":{"z":"}"}}}}',
  'memory events': ',{"ph":"i","cat":"cpu_instant_event","s":"t","name":"[memory]","pid":1,"tid":1,"ts":5,"args":{"Total Reserved":26258440192,"Total Allocated":22099493888,"Bytes":-131072,"Device Id":0,"Device Type":1,"Addr":140514116501504}}',
  'collective strings': ',{"ph":"X","cat":"kernel","name":"ncclDevKernel_AllReduce","pid":0,"tid":7,"ts":5,"dur":1,"args":{"Collective name":"allreduce","dtype":"BFloat16","In msg nelems":1024,"Process Group Name":"0","Process Group Description":"default_pg","Seq":12,"Group size":2}}',
  'null string args': ',{"ph":"X","cat":"kernel","name":"ncclDevKernel_AllReduce","pid":0,"tid":7,"ts":5,"dur":1,"args":{"Collective name":null,"dtype":7}}',
  'whitespace everywhere': ' ,\n { "ph" : "X" , "cat" : "kernel" , "name" : "k" , "pid" : 0 , "tid" : 7 , "ts" : 5.5 , "dur" : 1 , "args" : { "correlation" : 3 , "grid" : [ 1 , 1 ] } } \n',
  'end of traceEvents': ',{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":5,"dur":1}],"deviceProperties":[]',
  'an element that is not an object': ',{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":5,"dur":1},17',
  'a syntax error': ',{"ph":"X","cat":"kernel","name":"k","pid":0 "tid":7,"ts":5,"dur":1}',
  'a cut event': ',{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":5,"d',
  'deep nesting in a skipped op': ',{"ph":"X","cat":"cpu_op","name":"aten::add","args":{"a":{"b":{"c":{"d":{"e":1}}}}}}',
  'an escaped key': ',{"p\\u0068":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":5,"dur":1}',
};

describe('event scanner on edge cases', () => {
  for (const [name, text] of Object.entries(EDGE_CASES)) {
    it(name, () => {
      const segment = Buffer.from(text);
      const parsed = byParser(segment, 0);
      const { outcome, read } = byScanner(segment, 0);
      if (outcome.kind === 'done') expect(read).toEqual(parsed);
      else {
        expect(outcome.kind).toBe('declined');
        expect(read.calls).toEqual([]);
      }
    });
  }

  it('reads the common cases itself and declines what the parser would reject', () => {
    const decoded = (text: string) => byScanner(Buffer.from(text), 0).scanned;
    expect(decoded(EDGE_CASES['memory events']!)).toBe(1);
    expect(decoded(EDGE_CASES['whitespace everywhere']!)).toBe(1);
    expect(decoded(EDGE_CASES['collective strings']!)).toBe(1);
    expect(decoded(EDGE_CASES['flows and skipped ops']!)).toBe(2);
    // Python frames are read by the scanner itself (the one naming a framework reaches the sink, the other is skipped).
    expect(decoded(EDGE_CASES['Python frames, one naming a framework']!)).toBe(2);
    expect(byParser(Buffer.from(EDGE_CASES['Python frames, one naming a framework']!), 0)).toMatchObject({ calls: [expect.stringContaining('transformers/trainer.py')] });
    for (const bad of ['end of traceEvents', 'an element that is not an object', 'a syntax error', 'a cut event', 'deep nesting in a skipped op']) {
      expect(byScanner(Buffer.from(EDGE_CASES[bad]!), 0).outcome.kind, bad).toBe('declined');
    }
  });
});

describe('event scanner on mutated real segments', () => {
  const { segments, originUs } = middleSegments(gunzipSync(readFileSync(`${TRACES}ddp_gpt2/ddp_gpt2.rank0.trace.json.gz`)), 16 * 1024);
  const pick = segments.filter((_, i) => i % 17 === 3).slice(0, 12);
  const check = (segment: Buffer) => {
    const parsed = byParser(segment, originUs);
    const { outcome, read } = byScanner(segment, originUs);
    if (outcome.kind === 'done') {
      // What the scanner finished, the parser reads the same way (a segment the parser rejects may not be finished).
      expect(parsed).not.toBe('error');
      expect(read).toEqual(parsed);
    } else if (outcome.kind === 'declined') expect(read.calls).toEqual([]);
    // 'failed' (the parser rejected an event the scanner handed it): the loader drops the whole parallel parse.
  };

  it('agree with the parser or decline: bytes replaced by JSON punctuation', () => {
    fc.assert(
      fc.property(
        fc.nat({ max: pick.length - 1 }),
        fc.array(fc.tuple(fc.double({ min: 0, max: 1, noNaN: true }), fc.constantFrom(...'",{}[]:\\ 0-.eNa')), { minLength: 1, maxLength: 4 }),
        (which, edits) => {
          const segment = Buffer.from(pick[which]!);
          for (const [where, ch] of edits) segment[Math.floor(where * (segment.length - 1))] = ch.charCodeAt(0);
          check(segment);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('agree with the parser or decline: truncated anywhere', () => {
    fc.assert(
      fc.property(fc.nat({ max: pick.length - 1 }), fc.double({ min: 0, max: 1, noNaN: true }), (which, where) => {
        const segment = pick[which]!;
        check(segment.subarray(0, Math.floor(where * segment.length)));
      }),
      { numRuns: 100 },
    );
  });
});
