/**
 * The batch read from the full batches: the mode over the steps, never a last partial batch. The records are a real
 * H200 run's (examples/doctor/runs/h200/starved_dataloader: ResNet-50, DataLoader batches of 64, 40 steps), edited
 * here so that every 8th step holds 40 samples, as a dataset of 7 x 64 + 40 = 488 samples without drop_last would
 * give (the issue's `FakeData(1000)` in batches of 64 ends each 16-step epoch on 40); the run ends on such a step.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildDoctorReport } from '../../src/doctor/report.js';
import { groupProcesses } from '../../src/doctor/stages/records.js';
import { partialBatchNote } from '../../src/doctor/notes.js';
import { parseProbeLines, type ProbeRecord } from '../../src/run/records.js';
import { batchOfSteps } from '../../src/run/steps.js';
import { doctorInput } from '../doctor/input.js';
import { REPO } from '../doctor/helpers.js';

const RUN = join(REPO, 'examples', 'doctor', 'runs', 'h200', 'starved_dataloader');
const real = (): ProbeRecord[] => parseProbeLines(readFileSync(join(RUN, 'probe.jsonl'), 'utf8')).records;
/** The real records with every 8th step's batch cut to 40 samples (the last, step 40, among them). */
const withPartialLastBatches = (): ProbeRecord[] => real().map((r) => (r.type === 'step' && r.step % 8 === 0 ? { ...r, samples: 40 } : r));

describe('the batch from the full batches', () => {
  it('reads 64 from the real run, with no partial batch', () => {
    const steps = groupProcesses(real())[0]!.steps;
    expect(batchOfSteps(steps)).toMatchObject({ microBatch: 64, gradAccum: 1, partialSteps: 0 });
    expect(partialBatchNote(groupProcesses(real())[0]!)).toBeNull();
  });

  it('reads 64, not the last step\'s 40, when each epoch ends on a partial batch, and says so', () => {
    const p = groupProcesses(withPartialLastBatches())[0]!;
    expect(p.steps.at(-1)!.samples).toBe(40);
    expect(batchOfSteps(p.steps)).toMatchObject({ microBatch: 64, samplesPerStep: 64, partialSteps: 5, partialSamples: [40], partialEvery: 8 });
    const report = buildDoctorReport(doctorInput(withPartialLastBatches()));
    expect(report.whatIfBasis?.setup?.microBatch).toBe(64);
    const note = report.notes.find((n) => /partial batch/.test(n));
    expect(note).toMatch(/5 of 40 steps ran a partial batch \(40 samples; the full batches hold 64\), every 8 steps: the last batch of each epoch.*drop_last=False.*read as 64/);
    expect(note).not.toMatch(/recompiles/);
  });

  it('finds the partial batches\' period when the records kept skip steps (sampled runs)', () => {
    // Steps 21-28 left out, as the probe leaves out a long run's steps between bursts: the gap across them (16 -> 32)
    // must not hide the period the others show.
    const steps = groupProcesses(withPartialLastBatches())[0]!.steps.filter((s) => s.step <= 20 || s.step > 28);
    expect(batchOfSteps(steps)).toMatchObject({ microBatch: 64, partialSamples: [40], partialEvery: 8 });
  });

  it('names the recompilation a compiled model pays for the partial batch', () => {
    const recs = withPartialLastBatches().map((r) => (r.type === 'model' ? { ...r, compiled: true } : r));
    expect(partialBatchNote(groupProcesses(recs)[0]!)).toMatch(/recompiles for the partial batch's shape: DataLoader\(\.\.\., drop_last=True\)/);
  });

  it('reads bucketed batches (no size holds half the steps) by their median, none partial', () => {
    const recs = real().map((r) => (r.type === 'step' ? { ...r, samples: 48 + (r.step % 5) * 8 } : r));
    expect(batchOfSteps(groupProcesses(recs)[0]!.steps)).toMatchObject({ microBatch: 64, partialSteps: 0 });
  });
});
