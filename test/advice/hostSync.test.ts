/**
 * host-sync's fix follows the loop it is in: a training loop's syncs are its logging (`loss.item()` each step: keep the
 * sum on the GPU), a generation loop's are the decoding loop's own (generate()'s stopping check at every token), where
 * the training fix would be no advice. The window is a real one with a sync every step: the eager GPT-2 of
 * examples/pace/memmap_gpt.py on an H200, whose loop calls `loss.item()` at each step.
 */
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { hostSync } from '../../src/advice/rules/host.js';
import { loadTrace } from '../../src/io/loadTrace.js';
import type { DecodeStats } from '../../src/run/steps.js';
import { analyzeTrace } from '../../src/trace/metrics/index.js';
import type { TraceMetrics } from '../../src/trace/metrics/types.js';
import { REPO } from '../doctor/helpers.js';

let m: TraceMetrics;
beforeAll(async () => {
  m = analyzeTrace(await loadTrace(join(REPO, 'examples', 'pace', 'runs', 'h200', 'memmap_gpt', 'trace-pid21514.json.gz')));
});

const decode: DecodeStats = {
  decodeSteps: 2540,
  prefillSteps: 20,
  batch: 1,
  decodeStepS: 0.007,
  prefillStepS: 0.009,
  promptLen: 32,
  tokensPerS: 140,
  decodeStepsPerPrefill: 127,
};

describe('host-sync', () => {
  it("in a training loop: the logging's syncs, the loss summed on the GPU", () => {
    const f = hostSync(m, { askedHalf: null })!;
    // The op the code called (aten::item), not also the op inside it that does the copy (aten::_local_scalar_dense).
    expect(f.evidence.join('\n')).toMatch(/aten::item forced a sync/);
    expect(f.evidence.join('\n')).not.toMatch(/aten::_local_scalar_dense/);
    expect(f.recommendation.code).toMatch(/running_loss/);
    expect(f.fix!.label).toBe('syncs out of the loop');
  });

  it("in a generation loop: the decoding loop's own stopping check, not a loss to accumulate", () => {
    const f = hostSync(m, { askedHalf: null, decode, inference: true })!;
    expect(f.recommendation.summary).toMatch(/stopping check/);
    expect(f.recommendation.code).not.toMatch(/running_loss/);
    expect(f.recommendation.code).toMatch(/i % 8 == 7/);
    expect(f.fix!.label).toBe('syncs out of the decoding loop (a loop of your own)');
    // the same cost either way: the fix's effect on the pipeline does not depend on its words
    expect(f.estimatedGain!.expectedStepTimeNs).toBe(hostSync(m, { askedHalf: null })!.estimatedGain!.expectedStepTimeNs);
  });

  it('in another loop that trains nothing: its results read on the host, read every N iterations instead', () => {
    const f = hostSync(m, { askedHalf: null, inference: true })!;
    expect(f.recommendation.summary).toMatch(/trains nothing/);
    expect(f.recommendation.code).toMatch(/i % 16 == 15/);
    expect(f.recommendation.code).not.toMatch(/running_loss/);
    expect(f.fix!.label).toBe('syncs out of the loop');
  });
});
