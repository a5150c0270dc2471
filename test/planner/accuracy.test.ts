/**
 * Accuracy harness: runs the planner on every committed measurement (test/fixtures/planner/*.jsonl,
 * written by bench/memory/measure.py) and fails when the error grows past the issue's targets.
 */
import { describe, expect, it } from 'vitest';
import { gpuById } from '../../src/gpus/catalogue.js';
import { predictMemory } from '../../src/planner/memory.js';
import { maxMicroBatch } from '../../src/planner/plan.js';
import { predictStepTime } from '../../src/planner/time.js';
import { loadMeasurements, type Measurement, modelFor, requestFor } from './calibrationData.js';

const rows = loadMeasurements();
const gpu = gpuById('h200');
const hw = { gpu, gpusPerNode: 8, nodes: 1, intraNodeBandwidth: gpu.intraNodeBandwidth, interNodeBandwidth: 25e9, hostBandwidth: 25e9 };

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return Number.NaN;
  const i = (s.length - 1) * q;
  const lo = Math.floor(i);
  const hi = Math.ceil(i);
  return s[lo]! + (s[hi]! - s[lo]!) * (i - lo);
}

interface Row {
  label: string;
  alloc: number;
  reserved: number;
  nvml: number | null;
  step: number | null;
}

const covered: Row[] = [];
const skipped: string[] = [];
const maxBatchRows: { label: string; measured: number; predicted: number }[] = [];
for (const r of rows as (Measurement & { cap_bytes?: number; max_batch?: number })[]) {
  const m = modelFor(r.model);
  const label = `${r.model} ${r.mode ?? 'train'} ${r.strategy ?? 'single'}${r.world ? `x${r.world}` : ''} b${r.batch} s${r.seq ?? '-'} ${r.prec} ${r.opt}${r.ckpt ? ' ckpt' : ''}${r.reshard === false ? ' no-reshard' : ''}`;
  if (!m) {
    skipped.push(`${label}: no config.json (not a Hugging Face transformer; needs the probe's model summary)`);
    continue;
  }
  if (r.ok === false) continue;
  const { setup, par } = requestFor(r);
  if (r.cap_bytes !== undefined && r.max_batch !== undefined) {
    const pred = maxMicroBatch({ model: m, setup, parallelism: par, hardware: { ...hw, memoryCapBytes: r.cap_bytes } }).microBatch;
    maxBatchRows.push({ label: `${label} cap ${(r.cap_bytes / 2 ** 30).toFixed(0)} GiB`, measured: r.max_batch, predicted: pred });
    continue;
  }
  const p = predictMemory(m, setup, par);
  const single = par.dpSize === 1;
  covered.push({
    label,
    alloc: p.peakAllocatedBytes / r.peak_alloc_step - 1,
    reserved: p.peakReservedBytes / r.peak_reserved - 1,
    nvml: r.nvml_proc_used ? p.deviceUsedBytes / r.nvml_proc_used - 1 : null,
    step: single && setup.mode === 'train' && r.step_s ? predictStepTime(m, setup, par, hw).stepTimeMs / (r.step_s * 1000) - 1 : null,
  });
}

const pct = (x: number) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)}%`;
const abs = (xs: (number | null)[]) => xs.filter((x): x is number => x !== null).map(Math.abs);

describe('planner vs committed measurements (H200, torch 2.11)', () => {
  it('prints the error table', () => {
    const lines = [
      'row | alloc | reserved | nvidia-smi | step',
      ...covered.map(
        (r) =>
          `${r.label} | ${pct(r.alloc)} | ${pct(r.reserved)} | ${r.nvml === null ? '-' : pct(r.nvml)} | ${r.step === null ? '-' : pct(r.step)}`,
      ),
    ];
    for (const mb of maxBatchRows) lines.push(`${mb.label} | max batch measured ${mb.measured}, predicted ${mb.predicted}`);
    for (const s of skipped) lines.push(`skipped: ${s}`);
    const a = abs(covered.map((r) => r.alloc));
    lines.push(
      `peak allocated: median ${pct(quantile(a, 0.5))}, p90 ${pct(quantile(a, 0.9))} over ${a.length} rows`,
      `peak reserved: median ${pct(quantile(abs(covered.map((r) => r.reserved)), 0.5))}, p90 ${pct(quantile(abs(covered.map((r) => r.reserved)), 0.9))}`,
      `nvidia-smi: median ${pct(quantile(abs(covered.map((r) => r.nvml)), 0.5))}, p90 ${pct(quantile(abs(covered.map((r) => r.nvml)), 0.9))}`,
      `step time (single GPU): median ${pct(quantile(abs(covered.map((r) => r.step)), 0.5))}, p90 ${pct(quantile(abs(covered.map((r) => r.step)), 0.9))}`,
    );
    console.log(lines.join('\n'));
    expect(covered.length).toBeGreaterThanOrEqual(19);
  });

  it('peak allocated: median |error| <= 5%, p90 <= 10%', () => {
    const a = abs(covered.map((r) => r.alloc));
    expect(quantile(a, 0.5)).toBeLessThanOrEqual(0.05);
    expect(quantile(a, 0.9)).toBeLessThanOrEqual(0.1);
  });

  it('peak reserved and nvidia-smi: median |error| <= 8%', () => {
    expect(quantile(abs(covered.map((r) => r.reserved)), 0.5)).toBeLessThanOrEqual(0.08);
    expect(quantile(abs(covered.map((r) => r.nvml)), 0.5)).toBeLessThanOrEqual(0.08);
  });

  it('single-GPU step time: median |error| <= 25%', () => {
    expect(quantile(abs(covered.map((r) => r.step)), 0.5)).toBeLessThanOrEqual(0.25);
  });

  it('largest batch under a cap within 10% (when measured)', () => {
    for (const mb of maxBatchRows) expect(Math.abs(mb.predicted / mb.measured - 1), mb.label).toBeLessThanOrEqual(0.1 + 1 / mb.measured);
  });

  it('every transformer measurement is covered', () => {
    for (const s of skipped) expect(s).toMatch(/^resnet|^vit/);
  });
});
