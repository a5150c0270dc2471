/**
 * Idle time by root cause: the launch gaps after a sync that drained the GPU's queue are the sync's
 * cost where the CPU gets ahead again afterwards (issue 15), and stay launch-bound where it never does.
 */
import { describe, expect, it } from 'vitest';
import { diagnose } from '../../src/advice/engine.js';
import { SynthTrace, metricsOfText } from '../helpers/synth.js';

/**
 * Steps of 4 ms (µs below). Each: a 400 µs kernel the host syncs on (loss.item()), then 10 small kernels
 * launched one by one as the CPU restarts (30 µs apart, 20 µs each: 10 µs gaps waiting for launches),
 * then, if `recovers`, big kernels queued 1.5 ms ahead of the GPU; else more small ones, never ahead.
 */
function trace(recovers: boolean): SynthTrace {
  const t = new SynthTrace();
  for (let i = 0; i < 3; i++) {
    const t0 = 1000 + i * 4000;
    t.step(i + 1, t0, 4000);
    t.kernel('void at::native::vectorized_elementwise_kernel<4>', t0 + 1, t0 + 10, 390);
    t.cpu('aten::item', t0 + 20, 385);
    t.runtime('cudaStreamSynchronize', t0 + 25, 376); // returns when the GPU is done at t0+400
    for (let k = 0; k < 10; k++) t.kernel('void at::native::vectorized_elementwise_kernel<4>', t0 + 410 + 30 * k, t0 + 418 + 30 * k, 20);
    if (recovers) {
      // The CPU launches the rest in 100 µs; the GPU starts each 1.5 ms after its launch: the queue is full again.
      for (let k = 0; k < 5; k++) t.kernel('sm90_xmma_gemm_bf16bf16_bf16f32', t0 + 720 + 20 * k, t0 + 2220 + 300 * k, 300);
    } else {
      for (let k = 10; k < 100; k++) t.kernel('void at::native::vectorized_elementwise_kernel<4>', t0 + 410 + 30 * k, t0 + 418 + 30 * k, 20);
    }
  }
  return t;
}

describe('idle after a sync, by root cause', () => {
  it('counts the refill after each sync as the sync cost when the CPU gets ahead again', () => {
    const m = metricsOfText(trace(true).toJSON());
    // 9 refill gaps of 10 µs between the 10 small kernels, after the gap the sync itself covered.
    expect(m.perStep.syncDrains).toBeCloseTo(1, 5);
    expect(m.perStep.syncRefillNs).toBeGreaterThan(80_000);
    expect(m.perStep.idleByCauseNs.hostSync).toBeGreaterThanOrEqual(m.perStep.syncRefillNs);
    const ids = diagnose([m]).map((f) => f.id);
    expect(ids).toContain('host-sync');
    expect(ids).not.toContain('launch-bound');
    const f = diagnose([m]).find((x) => x.id === 'host-sync')!;
    expect(f.evidence.join('\n')).toMatch(/1\.0 host waits a step found work queued and drained it \(a sync call or a copy into pageable memory, the profiler.s own included; a wait on an empty queue costs nothing\), each followed by/);
  });

  it('leaves the gaps to launch-bound when the CPU never gets ahead, syncs or not', () => {
    const m = metricsOfText(trace(false).toJSON());
    expect(m.perStep.syncRefillNs).toBe(0);
    expect(m.perStep.idleByCauseNs.launch).toBeGreaterThan(m.perStep.idleByCauseNs.hostSync);
  });
});
