/**
 * Issue 44: does the DataLoader workers' start-up at an epoch start grow with the worker count? From the probe records
 * of tune --plan trials on one H100 (examples/pace/runs/h100-tune-b, h100-tune-c), each read as doctor reads a run
 * (test/pace/corpus.ts runReport): the worker count, the epoch-start steps, the probe's wait for an epoch's first batch
 * (epochFillS) and the start-up the model derives from it (pace/run.ts withStartUp: that wait less the model's fill).
 * Then the model startUp(w) = startUp(w0) x (1 + k w) / (1 + k w0) is fitted on the JPEG ResNet's trials alone (k from
 * 0, the constant model, to infinity, the proportional one) and judged on the Lightning trials (held out), beside the
 * constant and proportional models.
 *
 *   npx vite-node scripts/workerStartUp.ts
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { firstBatchFillNs, type LoaderFacts } from '../src/pace/pipeline.js';
import { runReport } from '../test/pace/corpus.js';

const RUNS = join(import.meta.dirname, '..', 'examples', 'pace', 'runs');

interface Trial {
  file: string;
  workers: number;
  /** The epoch-start steps' times, ms (the step that took each later epoch's first batch). */
  epochStepsMs: number[];
  /** The probe's epochFillS, ms. */
  waitMs: number;
  /** The model's first-batch fill at the trial's own worker count, ms. */
  fillMs: number;
  /** The start-up the model derives (wait less fill), ms. */
  startMs: number;
  loader: LoaderFacts;
}

async function trial(file: string): Promise<Trial> {
  const dir = mkdtempSync(join(tmpdir(), 'gpuwise-startup-'));
  try {
    copyFileSync(join(RUNS, file), join(dir, 'probe.jsonl'));
    const { pace } = await runReport(dir, file);
    const l = pace.loader;
    if (!l || l.workers === null || l.epochFillNs === null || l.startNs === null) throw new Error(`${file}: no measured epoch wait`);
    const lines = readFileSync(join(RUNS, file), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((s) => JSON.parse(s));
    const steps = new Map<number, number>(lines.filter((r) => r.type === 'step').map((r) => [r.step, r.stepTimeS * 1e3]));
    const starts = [...new Set(lines.filter((r) => r.type === 'loader' && r.epoch > 1).map((r) => r.epochStartStep as number))];
    return {
      file,
      workers: l.workers,
      epochStepsMs: starts.flatMap((s) => (steps.has(s + 1) ? [steps.get(s + 1) as number] : [])),
      waitMs: l.epochFillNs / 1e6,
      fillMs: firstBatchFillNs(l, l.workers) / 1e6,
      startMs: l.startNs / 1e6,
      loader: l,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const scale = (k: number, w: number, w0: number) => (k === Number.POSITIVE_INFINITY ? w / w0 : (1 + k * w) / (1 + k * w0));

/** k minimising the squared relative errors of the start-ups predicted from `base` (a grid, 0 to 1e6, then infinity). */
function fitK(base: Trial, others: Trial[]): number {
  const cost = (k: number) => others.reduce((a, t) => a + ((base.startMs * scale(k, t.workers, base.workers)) / t.startMs - 1) ** 2, 0);
  const grid = [...Array.from({ length: 801 }, (_, i) => 10 ** (-4 + i / 80)), Number.POSITIVE_INFINITY];
  return grid.reduce((best, k) => (cost(k) < cost(best) ? k : best), 0);
}

const fit = await Promise.all(
  ['h100-tune-c/jpeg_resnet/trial-1-baseline.probe.jsonl', 'h100-tune-c/jpeg_resnet/trial-2-workers-6.probe.jsonl'].map(trial),
);
const held = await Promise.all(
  [
    'h100-tune-b/lightning_datamodule/trial-2-bf16-channels-last.probe.jsonl',
    'h100-tune-c/lightning_datamodule/trial-2-bf16-channels-last-workers-3.probe.jsonl',
    'h100-tune-c/lightning_datamodule/trial-3-pinned-workers-5.probe.jsonl',
  ].map(trial),
);
const f1 = (x: number) => x.toFixed(1);
console.log('| trial | workers | epoch-start steps, ms | epoch wait (epochFillS), ms | model fill, ms | start-up, ms |');
console.log('|---|---|---|---|---|---|');
for (const t of [...fit, ...held])
  console.log(`| ${t.file} | ${t.workers} | ${t.epochStepsMs.map(f1).join(', ')} | ${f1(t.waitMs)} | ${f1(t.fillMs)} | ${f1(t.startMs)} |`);

const [fitBase, ...fitRest] = fit as [Trial, ...Trial[]];
const k = fitK(fitBase, fitRest);
console.log(`\nk fitted on the JPEG ResNet (base ${fitBase.workers} workers): ${k}`);
const [heldBase, ...heldRest] = held as [Trial, ...Trial[]];
const pct = (x: number) => `${x >= 0 ? '+' : ''}${(x * 100).toFixed(0)}%`;
for (const [name, kk] of [
  ['constant', 0],
  ['proportional', Number.POSITIVE_INFINITY],
  [`fitted (k = ${k})`, k],
] as const) {
  const errs = heldRest.map((t) => {
    const startMs = heldBase.startMs * scale(kk, t.workers, heldBase.workers);
    const waitMs = firstBatchFillNs(heldBase.loader, t.workers) / 1e6 + startMs;
    return `${t.workers} workers: start-up ${f1(startMs)} vs ${f1(t.startMs)} (${pct(startMs / t.startMs - 1)}), wait ${f1(waitMs)} vs ${f1(t.waitMs)} (${pct(waitMs / t.waitMs - 1)})`;
  });
  console.log(`held out (Lightning, from ${heldBase.workers} workers), ${name}: ${errs.join('; ')}`);
}
