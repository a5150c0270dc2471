/**
 * Probe records checked at the edge: the real records of the H200 runs (protocol 1) all pass, protocol 2's fields are
 * read, anything else is left out with a note naming the field, and no mutation of a real record can make the report
 * fail, change the child's exit status, or produce a report the history cannot show again.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { renderDoctorHtml } from '../../src/serve/pages/runs.js';
import { renderDoctorMarkdown } from '../../src/doctor/markdown.js';
import { renderDoctorText } from '../../src/doctor/render.js';
import { buildDoctorReport } from '../../src/doctor/report.js';
import { doctorReportProblem } from '../../src/doctor/reportCheck.js';
import { parseProbeLines, type StepRecord } from '../../src/run/records.js';
import { doctorInput } from '../doctor/input.js';

const RUNS = join(__dirname, '..', '..', 'examples', 'doctor', 'runs', 'h200');
const lines = (name: string) => readFileSync(join(RUNS, name, 'probe.jsonl'), 'utf8').split('\n').filter((l) => l.trim() !== '');

describe('parseProbeLines', () => {
  it('accepts every record of the real protocol-1 runs, unchanged', () => {
    for (const name of readdirSync(RUNS).filter((d) => !d.endsWith('.json'))) {
      const text = lines(name);
      const parsed = parseProbeLines(text.join('\n'));
      expect([name, parsed.skippedLines, parsed.notes]).toEqual([name, 0, []]);
      expect(parsed.records).toEqual(text.map((l) => JSON.parse(l)));
    }
  });

  it("reads protocol 2's new fields", () => {
    const v2 = lines('starved_dataloader').map((l) => ({ ...JSON.parse(l), v: 2 }));
    const step = v2.find((r) => r.type === 'step');
    const model = v2.find((r) => r.type === 'model');
    const start = v2.find((r) => r.type === 'profile-start');
    Object.assign(step, { stepSource: 'backward', batchSource: 'model-input' });
    Object.assign(model, { compiled: true, compiledEvidence: 'OptimizedModule', framework: 'transformers', frameworkVersion: '4.57.0', autocastDtype: '', acceleratePrecision: 'bf16' });
    Object.assign(start, { reason: 'settled', settled: true, warmupSteps: 12 });
    const parsed = parseProbeLines(v2.map((r) => JSON.stringify(r)).join('\n'));
    expect(parsed.notes).toEqual([]);
    expect(parsed.records).toHaveLength(v2.length);
    expect(parsed.records.find((r) => r.type === 'model')).toMatchObject({ compiled: true, autocastDtype: '', acceleratePrecision: 'bf16' });
    expect((parsed.records.find((r) => r.type === 'step') as StepRecord).stepSource).toBe('backward');
  });

  it('leaves out what it does not understand, saying why', () => {
    const [hello, model, step] = lines('host_sync').map((l) => JSON.parse(l));
    const bad = [
      JSON.stringify({ ...hello, v: 4 }),
      JSON.stringify({ ...step, stepTimeS: 'fast' }),
      JSON.stringify({ ...step, step: 2, memory: { device: 0 } }),
      JSON.stringify({ ...step, step: 3, stepSource: 'vibes', gpuStepTimes: 'x' }),
      JSON.stringify({ ...model, type: 'telemetry' }),
      '{"torn": ',
    ];
    const parsed = parseProbeLines(bad.join('\n'));
    expect(parsed.records.map((r) => r.type)).toEqual(['step']); // the one whose optional fields were malformed
    expect(parsed.records[0]).not.toHaveProperty('stepSource');
    expect(parsed.records[0]).not.toHaveProperty('gpuStepTimes');
    expect(parsed.skippedLines).toBe(5);
    const notes = parsed.notes.join('\n');
    expect(notes).toMatch(/protocol version this gpuwise does not read .*: 1 \(first: 'hello' record with v 4\)/);
    expect(notes).toMatch(/malformed field: 2 \(first: 'step' record of pid 1116: stepTimeS: expected a number >= 0, got string\)/);
    expect(notes).toMatch(/type this gpuwise does not know .*: 1/);
    expect(notes).toMatch(/not JSON .*: 1/);
    expect(notes).toMatch(/optional probe fields ignored .*stepSource: expected one of optimizer, marker, batch, backward, forward, graph, time/);
  });
});

/** A JSON value of any shape, for mutated fields. */
const anyJson = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.integer({ min: -5, max: 5 }),
  fc.double({ noNaN: true }),
  fc.constantFrom(1e308, -1, 0, 2 ** 53 + 2),
  fc.string({ maxLength: 4 }),
  fc.constant([]),
  fc.constant({}),
  fc.constant([1, 'a']),
);

function mutate(rec: Record<string, unknown>, path: string[], value: unknown): void {
  let o: Record<string, unknown> = rec;
  for (const k of path.slice(0, -1)) {
    const next = o[k];
    if (typeof next !== 'object' || next === null) return;
    o = next as Record<string, unknown>;
  }
  const last = path[path.length - 1] as string;
  if (value === undefined) delete o[last];
  else o[last] = value;
}

/** Every field path of a record (objects and first array elements), for choosing what to break. */
function paths(o: unknown, prefix: string[] = []): string[][] {
  if (typeof o !== 'object' || o === null) return [];
  const out: string[][] = [];
  for (const [k, v] of Object.entries(o)) {
    out.push([...prefix, k]);
    if (Array.isArray(v)) {
      if (v.length > 0) out.push(...paths(v[0], [...prefix, k, '0']), [...prefix, k, '0']);
    } else out.push(...paths(v, [...prefix, k]));
  }
  return out;
}

describe('mutated real records never break the report', () => {
  const source = lines('accum_no_sync').map((l) => JSON.parse(l) as Record<string, unknown>);
  it('parse, report, render and re-read: no throw, the exit status kept', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(), fc.nat(), fc.option(anyJson, { nil: undefined })), { minLength: 1, maxLength: 6 }), (muts) => {
        const recs = source.map((r) => structuredClone(r));
        for (const [ri, pi, value] of muts) {
          const rec = recs[ri % recs.length] as Record<string, unknown>;
          const ps = paths(rec);
          mutate(rec, ps[pi % ps.length] as string[], value);
        }
        const { records } = parseProbeLines(recs.map((r) => JSON.stringify(r)).join('\n'));
        const report = buildDoctorReport(doctorInput(records, { exit: { code: 7, signal: null } }));
        expect(report.run.exitCode).toBe(7);
        renderDoctorText(report);
        renderDoctorMarkdown(report);
        renderDoctorHtml(report, { uplotJs: '', uplotCss: '' });
        // what the history stores must read back as a report
        expect(doctorReportProblem(JSON.parse(JSON.stringify(report)))).toBeNull();
      }),
      { numRuns: 300, seed: 13 },
    );
  });
});
