/**
 * A run's pipeline (src/pace/run.ts) on a real window: the GPT-2 of examples/traces/scenarios/sync_refill (H100, 124M,
 * 4 micro-batches of 12x1024, .item() and synchronize() after each), unprofiled step 169.5 ms (its meta). The run's
 * figures around it are put in by hand, as the eager GPT-2 measured them: the stepping thread's CPU time 55 ms
 * a step, and 0 steps in flight at every step end (a sync at the end of each step always leaves none).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { diagnose } from '../../src/advice/engine.js';
import { loadTrace } from '../../src/io/loadTrace.js';
import { stepOf } from '../../src/pace/pipeline.js';
import { runPipeline } from '../../src/pace/run.js';
import type { StepStats } from '../../src/run/steps.js';
import { analyzeTrace } from '../../src/trace/metrics/index.js';
import type { TraceMetrics } from '../../src/trace/metrics/types.js';
import { TRACES } from '../helpers/fixtures.js';

let m: TraceMetrics;
beforeAll(async () => {
  m = analyzeTrace(await loadTrace(`${TRACES}scenarios/sync_refill.trace.json.gz`));
}, 60_000);

const stats = { meanS: 0.1695, medianS: 0.1695, dataWaitShare: 0, medianHostCpuS: 0.055, medianStepsInFlight: 0, stalls: null } as unknown as StepStats;

describe('a sync at the end of every step', () => {
  it('0 steps in flight does not make the host the bound: the GPU binds, and fusion keeps its gain', () => {
    const p = runPipeline({ steps: stats, window: m, loader: [], batchesPerStep: 4 })!;
    expect(p.stages.host).toMatchObject({ ns: 55e6, how: 'measured' });
    expect(stepOf(p).bound).toBe('gpu');
    const fusion = diagnose([m], [], [{ askedHalf: null, pace: p }]).find((f) => f.id === 'fusion')!;
    expect(fusion.severity).toBe('high');
    expect(fusion.estimatedGain!.stepTimeNs).toBeCloseTo(169.5e6, -3);
    expect(fusion.estimatedGain!.boundAfter).toBe('gpu');
  });

  it('the window alone (analyze) rates it high too: there the profiled host binds, and compiling also cuts its launches', () => {
    const fusion = diagnose([m]).find((f) => f.id === 'fusion')!;
    expect(fusion.estimatedGain!.boundNow).toBe('host');
    expect(fusion.severity).toBe('high');
  });
});
