/**
 * A blocking host-to-device copy's own stream sync (PyTorch's `x.to(device)` without `non_blocking` issues the copy,
 * then syncs the stream) is the copy's: the queue it drains is counted as the copy's idle, not a sync's, and the loop's
 * sync calls leave it out. On real H200 windows: torchvision FakeData batches copied from pageable memory (two copies
 * and two such syncs a step, a `loss.item()` every 10 steps), and a loop that calls `.item()` every step.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadTrace } from '../../src/io/loadTrace.js';
import { analyzeTrace } from '../../src/trace/metrics/index.js';
import { REPO } from '../doctor/helpers.js';

const metricsOf = async (path: string) => analyzeTrace(await loadTrace(join(REPO, path)));
const ms = 1e6;

describe("a blocking copy's own sync", () => {
  it("FakeData through pageable copies: the drain after each copy is the copy's idle, and no stream sync is left to the loop", async () => {
    const m = await metricsOf('examples/pace/runs/h200/fakedata_resnet/trace-pid537.json.gz');
    const idle = m.perStep.idleByCauseNs;
    // 29 ms a step after the copies (28.6 ms counted as the syncs' before), under 0.1 ms after a real sync
    expect(idle.h2dCopy).toBeGreaterThan(20 * ms);
    expect(idle.hostSync).toBeLessThan(0.5 * ms);
    expect(m.examples.syncCalls.find((c) => c.name === 'cudaStreamSynchronize')).toBeUndefined();
  });

  it(".item() every step: its syncs stay the loop's, and drain the queue", async () => {
    const m = await metricsOf('examples/doctor/runs/h200/host_sync/trace.json.gz');
    expect(m.perStep.idleByCauseNs.hostSync).toBeGreaterThan(m.perStep.idleByCauseNs.h2dCopy);
    expect(m.examples.syncCalls.reduce((a, c) => a + c.count, 0)).toBeGreaterThanOrEqual(m.steps.length);
  });
});
