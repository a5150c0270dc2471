/**
 * Stage 4 of the doctor report, what-ifs: the planner calibrated on the run's measured memory (whatIfs.ts).
 * In: the `Run` (its set-up, hardware and model, built in the run stage) and its `RunPace` (the set-up rank's pipeline,
 * how a bigger batch changes its step). Out: `WhatIfResult`: the set-up, the calibration, the what-ifs, or why there
 * are none. The what-if findings are a finding producer's (producers.ts), merged into the trace rules' own.
 */
import { buildWhatIfs, type WhatIfResult } from '../whatIfs.js';
import type { RunPace } from './pace.js';
import type { Run } from './run.js';

/** The what-ifs of the rank whose steps and memory the set-up was inferred on. */
export function whatIfsOf(run: Run, pace: RunPace): WhatIfResult {
  return buildWhatIfs({
    setup: run.setup,
    hardware: run.hardware,
    model: run.model,
    planModel: run.planModel.model,
    pace: pace.byRank.get(run.setupRank?.rank ?? 0) ?? null,
    outOfMemory: run.outcome.outcome === 'out-of-memory',
  });
}
