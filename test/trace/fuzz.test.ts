/**
 * Property-based robustness: real traces, mutated (truncated, bytes flipped,
 * events duplicated or deleted), must either analyse or be refused with a
 * TraceFormatError: never another exception, never a hang. And honesty: a
 * truncated trace yields findings only from steps it holds whole (each step
 * analysed equals that step of the whole trace), never from a step without
 * GPU work.
 */
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { diagnose } from '../../src/advice/engine.js';
import { buildAnalyzeReport } from '../../src/report/analyzeReport.js';
import { TraceModelBuilder } from '../../src/trace/builder.js';
import { analyzeTrace } from '../../src/trace/metrics/index.js';
import { type AssessedTrace, assessTrace } from '../../src/trace/coverage.js';
import { TraceFormatError, TraceJsonParser, endedEarly } from '../../src/trace/parser.js';
import { tracePath } from '../helpers/fixtures.js';

/** A real trace cut down to its first ~1500 events, so each run is fast. */
function smallRealTrace(name: string): { text: string; events: unknown[]; head: Record<string, unknown> } {
  const full = JSON.parse(gunzipSync(readFileSync(tracePath(name))).toString('utf8'));
  const { traceEvents, ...head } = full;
  const events = (traceEvents as unknown[]).slice(0, 1500);
  return { text: JSON.stringify({ ...head, traceEvents: events }, null, 1), events, head };
}

function assess(text: string, chunk: number): AssessedTrace | 'refused' {
  const b = new TraceModelBuilder('fuzz');
  const p = new TraceJsonParser(b);
  try {
    for (let i = 0; i < text.length; i += chunk) p.push(text.slice(i, i + chunk));
    const s = p.end();
    return assessTrace(b.finish(s.originUs, s.warnings, endedEarly(s)));
  } catch (e) {
    if (e instanceof TraceFormatError) return 'refused';
    throw e;
  }
}

function analyse(text: string, chunk: number): 'ok' | 'refused' {
  const a = assess(text, chunk);
  if (a === 'refused') return a;
  // The raw metrics of any model must still compute; the findings come from the whole steps only.
  JSON.stringify(analyzeTrace(a.model));
  const findings = a.metrics === null ? [] : diagnose([a.metrics]);
  JSON.stringify({ metrics: a.metrics, findings, coverage: a.coverage });
  if (findings.some((f) => f.severity === 'high')) {
    // Every step a high finding rests on holds GPU work.
    for (const st of a.metrics!.steps) expect(st.devices.some((d) => d.busyNs > 0)).toBe(true);
  }
  return 'ok';
}

/** A whole real trace (small: 0.4 MB), its steps as the full analysis sees them. */
function wholeRealTrace(name: string): { text: string; steps: Map<number, string> } {
  const text = gunzipSync(readFileSync(tracePath(name))).toString('utf8');
  const a = assess(text, 1 << 20);
  if (a === 'refused' || a.metrics === null) throw new Error(`${name} must analyse`);
  return { text, steps: new Map(a.metrics.steps.map((st) => [st.step, stepKey(st)])) };
}

function stepKey(st: { startNs: number; endNs: number; devices: { device: number; busyNs: number; kernels: number; idleNs: number }[] }): string {
  return JSON.stringify([st.startNs, st.endNs, st.devices.map((d) => [d.device, d.busyNs, d.kernels, d.idleNs])]);
}

const base = smallRealTrace('resnet_starved');
const ddp = smallRealTrace('ddp_gpt2.rank0');

const pageable = wholeRealTrace('scenarios/pageable_copy');

describe('mutated real traces', () => {
  it('a cut trace gets a high finding only from steps it holds whole, each as the whole trace sees it', () => {
    let judged = 0;
    fc.assert(
      fc.property(fc.integer({ min: 0, max: pageable.text.length - 1 }), fc.integer({ min: 1000, max: 70000 }), (cut, chunk) => {
        const a = assess(pageable.text.slice(0, cut), chunk);
        if (a === 'refused') return;
        expect(a.coverage.endedEarly).not.toBeNull();
        if (a.metrics === null) {
          expect(a.coverage.nothingToJudge).toMatch(/\S/);
          return;
        }
        judged++;
        // Every step analysed has GPU work; none is one the whole trace does not have.
        for (const st of a.metrics.steps) {
          expect(st.devices.some((d) => d.busyNs > 0)).toBe(true);
          expect(pageable.steps.has(st.step)).toBe(true);
        }
        const input = { path: 'cut', rank: a.metrics.rank, events: a.coverage.events, warnings: [], coverage: a.coverage };
        const report = buildAnalyzeReport('test', [input], [a.metrics]);
        if (report.findings.some((f) => f.severity === 'high')) {
          for (const st of a.metrics.steps) expect(stepKey(st)).toBe(pageable.steps.get(st.step));
        }
      }),
      { numRuns: 80 },
    );
    // Cuts late in the GPU part leave steps to judge: the property is not vacuous.
    expect(judged).toBeGreaterThan(0);
  });

  it('a cut after the GPU activity keeps every step and the high finding', () => {
    const end = pageable.text.lastIndexOf('"ph": "M"');
    const a = assess(pageable.text.slice(0, end > 0 ? end : pageable.text.length - 200), 65536);
    if (a === 'refused' || a.metrics === null) throw new Error('must analyse');
    expect(a.coverage.endedEarly).not.toBeNull();
    expect(a.coverage.severityCap).toBeNull();
    expect(a.metrics.steps.map(stepKey)).toEqual([...pageable.steps.values()]);
    const input = { path: 'cut', rank: 0, events: a.coverage.events, warnings: [], coverage: a.coverage };
    expect(buildAnalyzeReport('test', [input], [a.metrics]).findings[0]).toMatchObject({ id: 'pageable-h2d', severity: 'high' });
  });

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
