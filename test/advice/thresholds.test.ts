/**
 * The documented severity edges (5% and 25% of the step) and a rule's firing edge, on hand-built metrics: the real
 * starved-ResNet window's metrics with the per-step figures set by hand, so only the figure under test moves.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { dataloaderBound } from '../../src/advice/rules/input.js';
import { HIGH_GAIN, MEDIUM_GAIN } from '../../src/findings/finding.js';
import type { TraceMetrics } from '../../src/trace/metrics/types.js';
import { fmtPct } from '../../src/util/format.js';
import { metricsOf } from '../helpers/fixtures.js';

let real: TraceMetrics;
beforeAll(async () => {
  real = await metricsOf('resnet_starved');
});

/** A 100 ms step, 10 ms of GPU work, `loaderNs` of it idle waiting on the DataLoader. */
function withLoaderIdle(loaderNs: number): TraceMetrics {
  return {
    ...real,
    perStep: {
      ...real.perStep,
      durNs: 100e6,
      busyNs: 10e6,
      idleByCauseNs: { ...real.perStep.idleByCauseNs, dataloader: loaderNs, hostSync: 0, h2dCopy: 0, launch: 0, other: 90e6 - loaderNs },
    },
  };
}

describe('severity edges on hand-built metrics', () => {
  it('are the documented 5% and 25%', () => {
    expect([MEDIUM_GAIN, HIGH_GAIN]).toEqual([0.05, 0.25]);
  });

  const cases: [number, string | null][] = [
    [4.99e6, null], // under the rule's 5% firing share: no finding
    [5e6, 'medium'], // 5% exactly: fires, medium
    [24.99e6, 'medium'],
    [25e6, 'high'], // 25% exactly: high
    [80e6, 'high'],
  ];
  for (const [idle, severity] of cases)
    it(`dataloader-bound at ${idle / 1e6} ms of a 100 ms step: ${severity ?? 'no finding'}`, () => {
      const f = dataloaderBound(withLoaderIdle(idle));
      expect(f?.severity ?? null).toBe(severity);
      if (f) {
        expect(f.estimatedGain?.savedFraction).toBeCloseTo(idle / 100e6, 12);
        // the share is the evidence's (and the expected line's), never the title's
        expect(f.title).toBe('The GPU waits on the DataLoader');
        expect(f.evidence[0]).toContain(`(${fmtPct(idle / 100e6)} of the profiled window's 100 ms step)`);
      }
    });
});
