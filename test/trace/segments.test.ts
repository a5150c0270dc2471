import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { TraceModelBuilder } from '../../src/trace/builder.js';
import { mergeModels } from '../../src/trace/merge.js';
import type { TraceModel } from '../../src/trace/model.js';
import { analyzeTrace, collectiveTimings } from '../../src/trace/metrics/index.js';
import { TraceJsonParser } from '../../src/trace/parser.js';
import { SegmentCutter, findEventBoundary, firstTimestampUs } from '../../src/trace/segments.js';
import { tracePath } from '../helpers/fixtures.js';

function sequential(text: string) {
  const b = new TraceModelBuilder('x');
  const p = new TraceJsonParser(b);
  p.push(text);
  const s = p.end();
  return withTimings(b.finish(s.originUs, s.warnings));
}

function withTimings(model: TraceModel) {
  const metrics = analyzeTrace(model);
  return { ...metrics, timings: collectiveTimings(model, metrics.steps) };
}

/** What the parallel loader does, without threads: cut, parse segments into N builders, merge. */
function segmented(text: string, segmentChars: number, builders: number) {
  const originUs = firstTimestampUs(text)!;
  const bs = Array.from({ length: builders }, () => new TraceModelBuilder('x'));
  let rest = text;
  let k = 0;
  while (rest.length > 0) {
    let cut = rest.length > segmentChars ? findEventBoundary(rest, segmentChars) : -1;
    const last = cut <= 0;
    if (last) cut = rest.length;
    const p = new TraceJsonParser(bs[k % builders]!, { originUs, startInEvents: k > 0 });
    p.push(rest.slice(0, cut));
    if (last) p.end();
    else expect(p.endsBetweenEvents()).toBe(true);
    rest = rest.slice(cut);
    k++;
  }
  return { metrics: withTimings(mergeModels(bs.map((b) => b.finish(originUs, [])))), segments: k };
}

describe('segmented parsing (the parallel loader without threads)', () => {
  for (const name of ['ddp_gpt2.rank0', 'resnet_starved']) {
    it(`gives the same metrics as one parser on ${name}`, () => {
      const text = gunzipSync(readFileSync(tracePath(name))).toString('latin1');
      const one = sequential(text);
      const { metrics: many, segments } = segmented(text, 1_000_000, 3);
      expect(segments).toBeGreaterThan(5);
      expect(many.steps.map((s) => s.durNs)).toEqual(one.steps.map((s) => s.durNs));
      expect(many.perStep.idleByCauseNs).toEqual(one.perStep.idleByCauseNs);
      expect(many.launch).toEqual(one.launch);
      expect(many.gemmShapes).toEqual(one.gemmShapes);
      expect(many.attention).toEqual(one.attention);
      expect(many.modelFlops).toEqual(one.modelFlops);
      expect(many.timings).toEqual(one.timings);
      expect(many.memory).toEqual(one.memory);
      expect(many.smEfficiency).toBe(one.smEfficiency); // exact: summed by occupancy value, in any order
    });
  }

  it('finds boundaries only between events', () => {
    const text = '{"traceEvents": [{"ph":"X","name":"a}, {\\"x"},\n  {"ph":"X","args":{"k":[{"a":1}]}}, {"ph":"i"}]}';
    const cut = findEventBoundary(text, text.length - 1);
    expect(text.slice(cut)).toMatch(/^, \{"ph":"i"\}/);
    // A cut inside a string is caught: the segment does not end between events.
    const inString = text.indexOf('}, {\\"x') + 1;
    const p = new TraceJsonParser({ onEvent() {}, onMetadata() {} });
    p.push(text.slice(0, inString));
    expect(p.endsBetweenEvents()).toBe(false);
  });

  it('finds the same boundaries in the UTF-8 bytes as in the text', () => {
    const text = '{"traceEvents": [{"name":"é}, {\\"数"}, {"name":"ü"},\n {"ph":"i"}]}';
    const bytes = new TextEncoder().encode(text);
    const inText = findEventBoundary(text, text.length - 1);
    const inBytes = findEventBoundary(bytes, bytes.length - 1);
    expect(new TextDecoder().decode(bytes.subarray(0, inBytes))).toBe(text.slice(0, inText));
    // Searching from the very start finds nothing (and does not wrap around to the end of the bytes).
    expect(findEventBoundary(bytes, 0)).toBe(-1);
    expect(findEventBoundary(new Uint8Array(0), -1)).toBe(-1);
  });
});

describe('event counts', () => {
  it('count every event once, whatever the chunk boundaries (a cut event is re-read, not re-counted)', () => {
    const text = gunzipSync(readFileSync(tracePath('resnet_starved'))).toString('utf8');
    const total = (JSON.parse(text).traceEvents as unknown[]).length;
    for (const chunk of [text.length, 65536, 4099]) {
      const b = new TraceModelBuilder('x');
      const p = new TraceJsonParser(b);
      for (let i = 0; i < text.length; i += chunk) p.push(text.slice(i, i + chunk));
      const s = p.end();
      const counts = b.finish(s.originUs, s.warnings).eventCounts;
      expect(Object.values(counts).reduce((a, c) => a + c, 0)).toBe(total);
      expect(s.events).toBe(total);
    }
  });
});

describe('SegmentCutter', () => {
  const bytes = gunzipSync(readFileSync(tracePath('resnet_starved')));
  for (const inPlace of [false, true]) {
    it(`hands out the whole input in segments that end between events (${inPlace ? 'in place' : 'copies'})`, () => {
      const cutter = new SegmentCutter(256 * 1024, 64 * 1024 * 1024);
      const parts: Buffer[] = [];
      let at = 0;
      let step = 1;
      while (at < bytes.length) {
        // Chunks of changing sizes, as a decompressor gives them.
        step = (step * 7919) % 200_003;
        const chunk = bytes.subarray(at, at + 1 + step);
        at += chunk.length;
        cutter.append(chunk);
        const seg = cutter.next(inPlace);
        expect(seg).not.toBe('no-boundary');
        // An in-place segment is valid until the next call: copy it now.
        if (seg instanceof Uint8Array) parts.push(Buffer.from(seg));
      }
      parts.push(Buffer.from(cutter.rest(inPlace)));
      expect(parts.length).toBeGreaterThan(10);
      expect(Buffer.concat(parts).equals(bytes)).toBe(true);
      for (const p of parts.slice(1)) expect(p.toString('latin1', 0, 3).trimStart()[0]).toBe(',');
    });
  }

  it('says when no event boundary came within its limit', () => {
    const cutter = new SegmentCutter(1024, 4096);
    cutter.append(Buffer.from(`[${'"x",'.repeat(2000)}`));
    expect(cutter.next(false)).toBe('no-boundary');
  });
});
