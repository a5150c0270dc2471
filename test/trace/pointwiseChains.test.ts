/**
 * Chains of pointwise kernels (trace/metrics/pointwiseChains.ts), over generated kernel sequences on two streams: the
 * chains' time is the cast and pointwise kernels' time; each chain's "as one kernel" is its time over its length; a
 * GEMM, a norm or a reduction between two pointwise kernels of a stream ends a chain, a kernel of another stream does
 * not; and on the shipped GPT-2s, a GELU written out (Hugging Face's) makes longer chains than nn.GELU (nanoGPT's).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadTrace } from '../../src/io/loadTrace.js';
import { analyzeTrace } from '../../src/trace/metrics/index.js';
import { metricsOf } from '../helpers/fixtures.js';
import { metricsOfText, SynthTrace } from '../helpers/synth.js';

const KINDS = {
  pointwise: 'void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>(int, float*)',
  gemm: 'sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64',
  norm: 'void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float, float const*)',
} as const;

type Kernel = { kind: keyof typeof KINDS; stream: 7 | 8; durUs: number };

function traceOf(kernels: Kernel[]): string {
  const t = new SynthTrace();
  t.step(1, 0, 1_000_000);
  let ts = 10;
  for (const k of kernels) {
    t.kernel(KINDS[k.kind], ts, ts + 5, k.durUs, { stream: k.stream });
    ts += k.durUs + 10;
  }
  return t.toJSON();
}

/** The chains as the module should find them: per stream, maximal runs of pointwise kernels. */
function expected(kernels: Kernel[]): { ns: number; asOneKernelNs: number; chains: number } {
  const out = { ns: 0, asOneKernelNs: 0, chains: 0 };
  for (const stream of [7, 8]) {
    let run: number[] = [];
    const close = () => {
      if (run.length === 0) return;
      const ns = run.reduce((a, b) => a + b, 0) * 1000;
      out.ns += ns;
      out.asOneKernelNs += ns / run.length;
      out.chains++;
      run = [];
    };
    for (const k of kernels.filter((x) => x.stream === stream)) {
      if (k.kind === 'pointwise') run.push(k.durUs);
      else close();
    }
    close();
  }
  return out;
}

describe('pointwise chains', () => {
  it('are the runs of pointwise kernels of each stream, over generated sequences', () => {
    const kernel = fc.record({
      kind: fc.constantFrom<Kernel['kind']>('pointwise', 'pointwise', 'gemm', 'norm'),
      stream: fc.constantFrom<Kernel['stream']>(7, 8),
      durUs: fc.integer({ min: 1, max: 50 }),
    });
    fc.assert(
      fc.property(fc.array(kernel, { minLength: 1, maxLength: 40 }), (kernels) => {
        const got = metricsOfText(traceOf(kernels)).pointwiseChains;
        const want = expected(kernels);
        expect(got.ns).toBeCloseTo(want.ns, 3);
        expect(got.asOneKernelNs).toBeCloseTo(want.asOneKernelNs, 3);
        expect(got.chainsPerStep).toBe(want.chains);
        expect(got.kernelsPerStep).toBe(kernels.filter((k) => k.kind === 'pointwise').length);
      }),
      { numRuns: 150, seed: 44 },
    );
  });

  it("a GELU written out makes longer chains than nn.GELU: the Trainer's GPT-2 against the nanoGPT-style one", async () => {
    const nano = (await metricsOf('scenarios/gpt2_fusion')).pointwiseChains;
    const hf = analyzeTrace(await loadTrace(new URL('../../examples/realworld/runs/hf_trainer_gpt2_bf16/trace-pid1416.json.gz', import.meta.url).pathname));
    const meanLen = (c: typeof nano): number => c.kernelsPerStep / c.chainsPerStep;
    expect(meanLen(hf.pointwiseChains)).toBeGreaterThan(meanLen(nano));
    expect(hf.pointwiseChains.asOneKernelNs / hf.pointwiseChains.ns).toBeLessThan(0.2);
  });
});
