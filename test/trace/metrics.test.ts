import { describe, expect, it } from 'vitest';
import { collectiveKey } from '../../src/trace/metrics/collectives.js';
import { IDLE_CAUSES } from '../../src/trace/metrics/types.js';
import { meta, metricsOf, rankOf } from '../helpers/fixtures.js';

describe('metrics on real H200 traces', () => {
  it('busy + idle causes add up to the step window on every step and device', async () => {
    for (const name of ['resnet_starved', 'resnet_tuned', 'mlp_launch_bound', 'gpt2_amp', 'ddp_gpt2.rank0']) {
      const m = await metricsOf(name);
      expect(m.steps.length).toBeGreaterThan(0);
      for (const s of m.steps) {
        for (const d of s.devices) {
          const causes = IDLE_CAUSES.reduce((a, c) => a + d.idleByCauseNs[c], 0);
          expect(Math.abs(d.busyNs + d.idleNs - s.durNs)).toBeLessThan(1);
          expect(Math.abs(causes - d.idleNs)).toBeLessThan(1);
        }
      }
    }
  });

  it('agrees with the utilisation NVML sampled while the trace was taken', async () => {
    // NVML's "utilisation" is the share of time a kernel ran: the same idea as busy share.
    for (const name of ['resnet_starved', 'mlp_launch_bound', 'resnet_tuned']) {
      const m = await metricsOf(name);
      expect(Math.abs(m.gpuBusyShare * 100 - meta(name).nvml_util_mean)).toBeLessThan(10);
    }
  });

  it('attributes the starved ResNet idle time to the DataLoader and sees its pageable copies', async () => {
    const m = await metricsOf('resnet_starved');
    const idle = m.perStep.idleByCauseNs;
    expect(idle.dataloader / m.perStep.durNs).toBeGreaterThan(0.8);
    const pageable = m.copies.find((c) => c.kind === 'HtoD pageable');
    expect(pageable?.bytes).toBeGreaterThan(100e6);
    expect(pageable!.bandwidthGBs).toBeLessThan(20);
    // fp32 convolutions run as TF32 on tensor cores (cuDNN allows TF32 by default).
    expect(m.precision.tensorCoreTf32Ns).toBeGreaterThan(m.precision.fp32Ns);
  });

  it('sees the tuned ResNet step time drop by the measured throughput ratio', async () => {
    const starved = await metricsOf('resnet_starved');
    const tuned = await metricsOf('resnet_tuned');
    const measured = meta('resnet_tuned').items_per_s / meta('resnet_starved').items_per_s;
    const fromTrace = starved.stepTime.meanNs / tuned.stepTime.meanNs;
    // The starved step matches the wall-clock measurement; the tuned run's profiled steps were faster than
    // its timed ones (41 vs 66 ms), so the trace shows at least the measured speed-up.
    const measuredStarvedNs = 1e9 / (meta('resnet_starved').items_per_s / 64);
    expect(Math.abs(starved.stepTime.meanNs / measuredStarvedNs - 1)).toBeLessThan(0.1);
    expect(fromTrace / measured).toBeGreaterThan(0.9);
    expect(tuned.copies.find((c) => c.kind === 'HtoD pinned')).toBeDefined();
    expect(tuned.precision.tensorCore16Ns).toBeGreaterThan(0);
  });

  it('finds the launch-bound MLP: tiny kernels, CPU launching slower than the GPU runs them', async () => {
    const m = await metricsOf('mlp_launch_bound');
    expect(m.steps).toHaveLength(10);
    expect(m.perStep.idleByCauseNs.launch / m.perStep.durNs).toBeGreaterThan(0.7);
    expect(m.launch.medianKernelNs).toBeLessThan(5000);
    expect(m.launch.cpuLaunchNs).toBeGreaterThan(m.launch.gpuKernelNs);
    expect(m.precision.tensorCoreShare).toBe(0);
  });

  it('sees the GPT-2 run as GPU-bound with bf16 tensor cores and the 50257 vocabulary misaligned', async () => {
    const m = await metricsOf('gpt2_amp');
    expect(m.gpuBusyShare).toBeGreaterThan(0.9);
    expect(m.precision.tensorCoreShare).toBeGreaterThan(0.95);
    expect(m.precision.tensorCore16Ns).toBeGreaterThan(m.precision.tensorCoreTf32Ns);
    const vocab = m.gemmShapes.filter((g) => g.misalignedDims.some((d) => d.endsWith('=50257')));
    expect(vocab.length).toBeGreaterThanOrEqual(2);
    const aligned = m.gemmShapes.filter((g) => g.misalignedDims.length === 0 && g.dtype === 'c10::BFloat16');
    expect(Math.max(...aligned.map((g) => g.tflops))).toBeGreaterThan(3 * Math.max(...vocab.map((g) => g.tflops)));
  });

  it('measures DDP communication overlap close to what HTA reports (77.7% / 69.8%)', async () => {
    const { metrics: r0, collectives: c0 } = await rankOf('ddp_gpt2.rank0');
    const { metrics: r1, collectives: c1 } = await rankOf('ddp_gpt2.rank1');
    expect(r0.worldSize).toBe(2);
    expect(r1.rank).toBe(1);
    expect(r0.comm.allReducesPerStep).toBeGreaterThan(5);
    expect(r0.comm.overlapShare!).toBeGreaterThan(0.6);
    expect(r1.comm.overlapShare!).toBeGreaterThan(0.6);
    // Both ranks ran the same collectives; this trace's NCCL kernels carry no sequence numbers, so they key by order.
    expect(c0.count).toBeGreaterThan(10);
    expect(c1.count).toBe(c0.count);
    expect(c0.matchedBy).toBe('order');
    const keys = (c: typeof c0) => Array.from({ length: c.count }, (_, k) => collectiveKey(c, k));
    expect(keys(c1)).toEqual(keys(c0));
    expect(new Set(keys(c0)).size).toBe(c0.count);
    expect(r0.memory[0]!.peakReservedBytes).toBe(meta('ddp_gpt2.rank0').peak_reserved);
  });
});
