/**
 * Chains of pointwise kernels (trace/metrics/pointwiseChains.ts), over generated kernel sequences on two streams: the
 * chains' time is the cast and pointwise kernels' time; each chain's "as one kernel" is its time over its length; a
 * GEMM, a norm or a reduction between two pointwise kernels of a stream ends a chain, a kernel of another stream does
 * not; hand-written attention's kernels taken out neither join nor end a chain. On the shipped GPT-2s, a GELU written
 * out (Hugging Face's) makes longer chains than nn.GELU (nanoGPT's); on llm.c's, the chains without its written-out
 * attention's kernels are its SDPA twin's.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadTrace } from '../../src/io/loadTrace.js';
import { forEachOpByStart, OpKind } from '../../src/trace/opLog.js';
import { analyzeTrace } from '../../src/trace/metrics/index.js';
import { pointwiseChains } from '../../src/trace/metrics/pointwiseChains.js';
import type { PointwiseChains } from '../../src/trace/metrics/types.js';
import { metricsOf } from '../helpers/fixtures.js';
import { handWrittenAttentionTrace } from '../helpers/handAttention.js';
import { metricsOfText, modelOfText, SynthTrace } from '../helpers/synth.js';

const KINDS = {
  pointwise: 'void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>(int, float*)',
  gemm: 'sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64',
  norm: 'void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, float, float const*)',
} as const;

/** `attention`: the kernel is hand-written attention's (taken out for the chains as SDPA leaves the step). */
type Kernel = { kind: keyof typeof KINDS; stream: 7 | 8; durUs: number; attention?: boolean };

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
  for (const stream of [7, 8] as const) {
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

  it("without attention's kernels: they neither join a chain nor end one, over generated sequences", () => {
    const kernel = fc.record({
      kind: fc.constantFrom<Kernel['kind']>('pointwise', 'pointwise', 'gemm', 'norm'),
      stream: fc.constantFrom<Kernel['stream']>(7, 8),
      durUs: fc.integer({ min: 1, max: 50 }),
      attention: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(kernel, { minLength: 1, maxLength: 40 }), (kernels) => {
        const model = modelOfText(traceOf(kernels));
        const windows = analyzeTrace(model).steps;
        // Attention's kernels by stream and start, as the attention pass gives them: the generated ones in start order.
        const marks = new Map<string, Set<number>>();
        const queue = [...kernels];
        forEachOpByStart(model.gpu.logs, model.gpu.launches, (op, log) => {
          if (op.kind !== OpKind.kernel) return;
          const k = queue.shift()!;
          if (!k.attention) return;
          const stream = `${log.device}|${log.laneKeys[op.lane]!.split('|')[0]}`;
          if (!marks.has(stream)) marks.set(stream, new Set());
          marks.get(stream)!.add(op.startNs);
        });
        const got = pointwiseChains(model, windows, marks);
        const rest = kernels.filter((k) => !k.attention);
        const want = expected(rest);
        const without = got.withoutHandWrittenAttention;
        if (marks.size === 0) {
          expect(without).toBeUndefined();
          return;
        }
        expect(without!.ns).toBeCloseTo(want.ns, 3);
        expect(without!.asOneKernelNs).toBeCloseTo(want.asOneKernelNs, 3);
        expect(without!.chainsPerStep).toBe(want.chains);
        expect(without!.kernelsPerStep).toBe(rest.filter((k) => k.kind === 'pointwise').length);
        expect(got.chainsPerStep).toBe(expected(kernels).chains);
      }),
      { numRuns: 150, seed: 44 },
    );
  });

  it("without a written-out attention's kernels: the chains lose the attention's own pointwise time, all of it", () => {
    const m = metricsOfText(handWrittenAttentionTrace());
    const h = m.attention.handWritten!;
    const c = m.pointwiseChains;
    expect(c.withoutHandWrittenAttention!.ns).toBeCloseTo(c.ns - h.betweenByKind.castNs - h.betweenByKind.pointwiseNs, -3);
    expect(c.withoutHandWrittenAttention!.chainsPerStep).toBeLessThan(c.chainsPerStep);
  });

  it("llm.c's GPT-2 with its attention written out, without that attention's kernels, has its SDPA twin's chains (H200)", async () => {
    const runs = new URL('../../examples/pace/runs/h200-d/', import.meta.url).pathname;
    const hand = analyzeTrace(await loadTrace(`${runs}llmc_hand/trace-pid15263.json.gz`)).pointwiseChains;
    const twin = analyzeTrace(await loadTrace(`${runs}llmc_sdpa/trace-pid16095.json.gz`)).pointwiseChains;
    const asOne = (c: Omit<PointwiseChains, 'withoutHandWrittenAttention'>) => c.asOneKernelNs / c.ns;
    expect(twin.withoutHandWrittenAttention).toBeUndefined();
    // Written out, attention's own short chains and the chains its kernels split: 0.29 of the chains' time at one
    // kernel each; without them (its matmuls, the kernels between them, the layout copies around them) 0.21, as the
    // twin's.
    expect(Math.abs(asOne(hand.withoutHandWrittenAttention!) - asOne(twin))).toBeLessThan(0.02);
    expect(asOne(hand) - asOne(twin)).toBeGreaterThan(0.05);
  });

  it("a GELU written out makes longer chains than nn.GELU: the Trainer's GPT-2 against the nanoGPT-style one", async () => {
    const nano = (await metricsOf('scenarios/gpt2_fusion')).pointwiseChains;
    const hf = analyzeTrace(await loadTrace(new URL('../../examples/realworld/runs/hf_trainer_gpt2_bf16/trace-pid1416.json.gz', import.meta.url).pathname));
    const meanLen = (c: typeof nano): number => c.kernelsPerStep / c.chainsPerStep;
    expect(meanLen(hf.pointwiseChains)).toBeGreaterThan(meanLen(nano));
    expect(hf.pointwiseChains.asOneKernelNs / hf.pointwiseChains.ns).toBeLessThan(0.2);
  });
});
