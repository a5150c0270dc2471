/**
 * The levers of issue 15 on real H100 runs: each scenario and its fixed twin (examples/scenarios/
 * resnet_precision.py, gpt_fusion.py) were traced and timed without the profiler on the same GPU
 * (median_step_ms in NAME.meta.json). Each finding must be the top one on its scenario, be gone on the twin, and
 * predict the twin's measured step within 25% (the window's expected/current ratio applied to the
 * scenario's own unprofiled step, as doctor re-bases it).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { diagnose } from '../../src/advice/engine.js';
import type { Finding } from '../../src/findings/finding.js';
import { loadTrace } from '../../src/io/loadTrace.js';
import { analyzeTrace } from '../../src/trace/metrics/index.js';
import type { TraceMetrics } from '../../src/trace/metrics/types.js';
import { TRACES } from '../helpers/fixtures.js';

const DIR = `${TRACES}scenarios/`;
const measuredMs = (name: string): number => JSON.parse(readFileSync(`${DIR}${name}.meta.json`, 'utf8')).median_step_ms;

async function run(name: string): Promise<{ metrics: TraceMetrics; findings: Finding[] }> {
  const metrics = analyzeTrace(await loadTrace(`${DIR}${name}.trace.json.gz`));
  return { metrics, findings: diagnose([metrics]) };
}

const PAIRS = [
  { scenario: 'resnet50', finding: 'mixed-precision', twin: 'resnet50_amp_channels_last', why: 'fp32 ResNet-50 -> bf16 autocast + channels_last' },
  { scenario: 'resnet50_amp', finding: 'channels-last', twin: 'resnet50_amp_channels_last', why: 'bf16 NCHW ResNet-50 -> channels_last' },
  { scenario: 'gpt2_fusion', finding: 'fusion', twin: 'gpt2_fusion_compiled', why: 'eager GPT-2 -> torch.compile' },
];

describe('levers measured on an H100: finding, fix, measured step', () => {
  for (const p of PAIRS) {
    it(`${p.scenario}: ${p.finding} (${p.why})`, async () => {
      const before = await run(p.scenario);
      const after = await run(p.twin);
      expect(before.findings[0]?.id, before.findings.map((f) => f.id).join(',')).toBe(p.finding);
      expect(after.findings.map((f) => f.id)).not.toContain(p.finding);
      const g = before.findings[0]!.estimatedGain!;
      const predictedMs = (g.expectedStepTimeNs / g.stepTimeNs) * measuredMs(p.scenario);
      const measured = measuredMs(p.twin);
      expect(Math.abs(predictedMs - measured) / measured, `predicted ${predictedMs.toFixed(1)} ms, measured ${measured.toFixed(1)} ms`).toBeLessThan(0.25);
    });
  }

  it('sync_refill: 4 syncs a step in a GPU-bound GPT-2 step are host-sync with their refill, not launch-bound; the twin without them confirms the gain', async () => {
    const before = await run('sync_refill');
    const ids = before.findings.map((f) => f.id);
    expect(ids).toContain('host-sync');
    expect(ids).not.toContain('launch-bound');
    const f = before.findings.find((x) => x.id === 'host-sync')!;
    expect(f.evidence.join('\n')).toMatch(/host waits a step found work queued and drained it \(a sync call or a copy into pageable memory, the profiler.s own included; a wait on an empty queue costs nothing\), each followed by/);
    expect(before.metrics.perStep.syncRefillNs).toBeGreaterThan(0);
    const after = await run('sync_refill_fixed');
    expect(after.findings.map((x) => x.id)).not.toContain('host-sync');
    const g = f.estimatedGain!;
    const predictedMs = (g.expectedStepTimeNs / g.stepTimeNs) * measuredMs('sync_refill');
    const measured = measuredMs('sync_refill_fixed');
    expect(Math.abs(predictedMs - measured) / measured).toBeLessThan(0.25);
  });

  it('a compiled bf16 run: no high-severity finding, no fusion finding, never "compile the model" again', async () => {
    const { metrics, findings } = await run('gpt2_fusion_compiled');
    expect(metrics.kernelMix.tritonKernels).toBeGreaterThan(0);
    expect(findings.filter((f) => f.severity === 'high').map((f) => f.id)).toEqual([]);
    expect(findings.map((f) => f.id)).not.toContain('fusion');
    for (const f of findings) expect(f.recommendation.summary).not.toMatch(/^Fewer, larger kernels: compile the model/);
    const launch = findings.find((f) => f.id === 'launch-bound');
    if (launch) expect(launch.recommendation.summary).toMatch(/already compiled/);
  });

  it('reports model FLOPs utilisation where the matmuls carry shapes, against the peak of the precision in use', async () => {
    const { metrics } = await run('gpt2_fusion');
    const f = metrics.modelFlops!;
    expect(f.peakPrecision).toBe('bf16');
    expect(f.gpu).toMatch(/H100/);
    // 6 x 124M parameters x 12,288 tokens = 9.1 TFLOP of GEMMs per step, and SDPA's causal attention from its ops'
    // shapes: 12 layers x 3 (forward, backward twice it) x 4 x 12 x 12 heads x 1024 x 1024 x 64 / 2 = 0.70 TFLOP.
    expect(f.gemmFlopsPerStep / 1e12).toBeGreaterThan(8.5);
    expect(f.gemmFlopsPerStep / 1e12).toBeLessThan(9.8);
    expect(f.fusedAttentionFlopsPerStep / 1e12).toBeCloseTo(0.696, 3);
    expect(f.flopsPerStep).toBeCloseTo(f.gemmFlopsPerStep + f.fusedAttentionFlopsPerStep, -3);
    expect(f.mfu).toBeGreaterThan(0.1);
    expect(f.mfu).toBeLessThan(0.5);
    // A convolutional net: its convolutions are counted (test/trace/convFlops.test.ts checks the count), fp32 ResNet-50
    // runs on TF32 tensor cores, so its MFU is against the TF32 dense peak.
    const resnet = (await run('resnet50')).metrics.modelFlops!;
    expect(resnet.peakPrecision).toBe('tf32');
    expect(resnet.convFlopsPerStep / resnet.flopsPerStep).toBeGreaterThan(0.99);
  });
});

describe('fp16 without a GradScaler (synthetic)', () => {
  it('is said for fp16 training without the scaler kernels, not with them, nor for inference', async () => {
    const { SynthTrace, metricsOfText } = await import('../helpers/synth.js');
    const make = (scaler: boolean, optimizer: boolean) => {
      const t = new SynthTrace();
      for (let i = 0; i < 2; i++) {
        const t0 = 1000 + i * 2000;
        t.step(i + 1, t0, 2000);
        t.kernel('sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel', t0 + 1, t0 + 10, 900);
        t.kernel('void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl<c10::Half>>', t0 + 2, t0 + 910, 100);
        if (optimizer) t.kernel('void at::native::multi_tensor_apply_kernel<FusedAdamMathFunctor>', t0 + 3, t0 + 1010, 100);
        if (scaler) t.kernel('void at::native::amp_update_scale_cuda_kernel(float*, int*, float const*, double, double, long)', t0 + 4, t0 + 1110, 5);
      }
      return diagnose([metricsOfText(t.toJSON())]).map((f) => f.id);
    };
    expect(make(false, true)).toContain('fp16-without-grad-scaler');
    expect(make(true, true)).not.toContain('fp16-without-grad-scaler');
    expect(make(false, false)).not.toContain('fp16-without-grad-scaler');
  });
});
