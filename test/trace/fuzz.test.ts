/**
 * Property-based robustness: real traces, mutated (truncated, bytes flipped,
 * events duplicated or deleted), must either analyse or be refused with a
 * TraceFormatError: never another exception, never a hang.
 */
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { diagnose } from '../../src/advice/engine.js';
import { TraceModelBuilder } from '../../src/trace/builder.js';
import { analyzeTrace } from '../../src/trace/metrics/index.js';
import { TraceFormatError, TraceJsonParser } from '../../src/trace/parser.js';
import { tracePath } from '../helpers/fixtures.js';

/** A real trace cut down to its first ~1500 events, so each run is fast. */
function smallRealTrace(name: string): { text: string; events: unknown[]; head: Record<string, unknown> } {
  const full = JSON.parse(gunzipSync(readFileSync(tracePath(name))).toString('utf8'));
  const { traceEvents, ...head } = full;
  const events = (traceEvents as unknown[]).slice(0, 1500);
  return { text: JSON.stringify({ ...head, traceEvents: events }, null, 1), events, head };
}

function analyse(text: string, chunk: number): 'ok' | 'refused' {
  const b = new TraceModelBuilder('fuzz');
  const p = new TraceJsonParser(b);
  try {
    for (let i = 0; i < text.length; i += chunk) p.push(text.slice(i, i + chunk));
    const s = p.end();
    const metrics = analyzeTrace(b.finish(s.originUs, s.warnings));
    const findings = diagnose([metrics]);
    JSON.stringify({ metrics, findings });
    return 'ok';
  } catch (e) {
    if (e instanceof TraceFormatError) return 'refused';
    throw e;
  }
}

const base = smallRealTrace('resnet_starved');
const ddp = smallRealTrace('ddp_gpt2.rank0');

describe('mutated real traces', () => {
  it('survive truncation anywhere', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: base.text.length }), fc.integer({ min: 1, max: 70000 }), (cut, chunk) => {
        expect(['ok', 'refused']).toContain(analyse(base.text.slice(0, cut), chunk));
      }),
      { numRuns: 40 },
    );
  });

  it('survive flipped bytes', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 20 }), fc.integer({ min: 1, max: 70000 }), (flips, chunk) => {
        const chars = base.text.split('');
        for (const [at, byte] of flips) chars[at % chars.length] = String.fromCharCode(byte);
        expect(['ok', 'refused']).toContain(analyse(chars.join(''), chunk));
      }),
      { numRuns: 40 },
    );
  });

  it('survive duplicated and deleted events with the same findings shape', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(), fc.boolean()), { maxLength: 200 }), (edits) => {
        const events = [...ddp.events];
        for (const [at, dup] of edits) {
          const i = at % events.length;
          if (dup) events.splice(i, 0, events[i]);
          else events.splice(i, 1);
        }
        expect(analyse(JSON.stringify({ ...ddp.head, traceEvents: events }), 65536)).toBe('ok');
      }),
      { numRuns: 25 },
    );
  });

  it('survive absurd values in the fields gpuwise reads', () => {
    const absurd = fc.constantFrom(-1, 0, -1e300, 1e300, 'NaN', null, '', 'x', [], {}, 2 ** 64, -(2 ** 63));
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(), fc.constantFrom('ts', 'dur', 'pid', 'tid', 'name', 'cat', 'ph', 'args'), absurd), { maxLength: 40 }), (edits) => {
        const events = base.events.map((e) => ({ ...(e as object) })) as Record<string, unknown>[];
        for (const [at, key, v] of edits) events[at % events.length]![key] = v;
        expect(analyse(JSON.stringify({ ...base.head, traceEvents: events }), 65536)).toBe('ok');
      }),
      { numRuns: 30 },
    );
  });
});
