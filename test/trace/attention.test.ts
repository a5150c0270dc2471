/**
 * Attention in a step (trace/metrics/attention.ts): fused attention recognised on a real trace (gpt2_amp: cuDNN's SDPA
 * on an H200) and counted in the model FLOPs; hand-written attention found on the same trace with its attention
 * written out (test/helpers/handAttention.ts: the kernels, ops and shapes that code makes on CUDA), and on llm.c's
 * GPT-2 run with its attention written out, with the layout copies around it.
 */
import { describe, expect, it } from 'vitest';
import { buildAnalyzeReport } from '../../src/report/analyzeReport.js';
import { flopsLeftOut } from '../../src/report/flopsText.js';
import { renderTerminal } from '../../src/report/terminal.js';
import { PLAIN } from '../../src/report/style.js';
import { attentionCausal, attentionOpFlops } from '../../src/trace/attentionOps.js';
import { isLayoutCopy } from '../../src/trace/kernelClass.js';
import { loadTrace } from '../../src/io/loadTrace.js';
import { analyzeTrace } from '../../src/trace/metrics/index.js';
import { metricsOf } from '../helpers/fixtures.js';
import { handWrittenAttentionTrace } from '../helpers/handAttention.js';
import { metricsOfText } from '../helpers/synth.js';

/** One attention forward at 16 x 12 heads x 1024 x 64: Q·Kᵀ and P·V, 2·B·H·T·T·d each. */
const FORWARD_FLOPS = 4 * 16 * 12 * 1024 * 1024 * 64;

describe('fused attention (gpt2_amp: cuDNN SDPA, causal, 12 layers)', () => {
  it('is recognised with its backend, calls and causal model FLOPs', async () => {
    const m = await metricsOf('gpt2_amp');
    expect(m.attention.handWritten).toBeNull();
    const f = m.attention.fused!;
    expect(f.backends).toEqual(['cudnn']);
    expect(f.callsPerStep).toBe(24); // a forward and a backward per layer
    expect(f.causal).toBe(true);
    // causal halves the forward; the backward does twice the forward: 12 x 1.5 x FORWARD_FLOPS
    expect(f.flops).toBeCloseTo(12 * 1.5 * FORWARD_FLOPS, -6);
    expect(f.topKernel).toMatch(/sdpa/);
  });

  it('counts in the MFU: its FLOPs, its kernels covered, none left uncounted', async () => {
    const mf = (await metricsOf('gpt2_amp')).modelFlops!;
    expect(mf.fusedAttentionFlopsPerStep).toBeCloseTo(12 * 1.5 * FORWARD_FLOPS, -6);
    expect(mf.flopsPerStep).toBeCloseTo(mf.gemmFlopsPerStep + mf.fusedAttentionFlopsPerStep, -3);
    expect(mf.uncountedAttentionNsPerStep).toBe(0);
    expect(mf.coveredShare).toBeGreaterThan(0.75);
  });

  it('the MFU line counts it and stops saying attention kernels were left out; a report saved before still says it', async () => {
    const m = await metricsOf('gpt2_amp');
    const text = renderTerminal(buildAnalyzeReport('gpt2_amp', [], [m]), PLAIN);
    expect(text).toMatch(/MFU 12% of the bf16 dense peak 989\.4 TFLOP\/s of the catalogue.s NVIDIA H200 141GB \(13\.07 TFLOP: GEMMs 12\.14, fused attention 0\.93 per median step\)/);
    expect(text).not.toMatch(/not counted/);
    const { fusedAttentionFlopsPerStep: _f, handWrittenAttentionFlopsPerStep: _h, uncountedAttentionNsPerStep: _u, ...older } = m.modelFlops!;
    expect(flopsLeftOut(older as typeof m.modelFlops & object)).toBe('attention kernels without shapes not counted');
  });

  it('reads is_causal and the FLOPs of each backend\'s ops as ATen declares them', () => {
    const q = [2, 4, 128, 64];
    expect(attentionCausal('aten::_scaled_dot_product_flash_attention', ['', '', '', '0.0', 'True', 'False', ''])).toBe(true);
    expect(attentionCausal('aten::_scaled_dot_product_efficient_attention', ['', '', '', '', 'True', '0.0', 'False', ''])).toBe(false);
    // torch 2.0's efficient kernel: (query, key, value, compute_log_sumexp, is_causal)
    expect(attentionCausal('aten::_scaled_dot_product_efficient_attention', ['', '', '', 'True', 'True'])).toBe(true);
    expect(attentionCausal('aten::_scaled_dot_product_flash_attention', null)).toBeNull();
    const fwd = 2 * 2 * 4 * 128 * 128 * (64 + 64);
    expect(attentionOpFlops('aten::_scaled_dot_product_flash_attention', [q, q, q], false)).toBe(fwd);
    expect(attentionOpFlops('aten::_scaled_dot_product_flash_attention', [q, q, q], true)).toBe(fwd / 2);
    expect(attentionOpFlops('aten::_scaled_dot_product_flash_attention_backward', [q, q, q, q, q], true)).toBe(fwd);
    expect(attentionOpFlops('aten::_scaled_dot_product_attention_math', [q, q, q], true)).toBeNull();
  });
});

describe('hand-written attention (gpt2_amp with its attention written out)', () => {
  const metrics = metricsOfText(handWrittenAttentionTrace());

  it('finds the [192, 1024, 1024] score matmuls and the kernels between them, forward and backward', () => {
    const h = metrics.attention.handWritten!;
    expect(h).not.toBeNull();
    expect(h.shapes).toEqual([{ batch: 192, seq: 1024, headDim: 64, dtype: 'c10::BFloat16' }]);
    expect(h.forwardCalls).toBe(12);
    expect(h.backward).toBe(true);
    expect(h.masked).toBe(true);
    expect(h.mathFallback).toBe(false);
    // 6 matmuls a layer (2 forward, 4 backward), 12 layers; 7 kernels between them forward (mul, eq, masked_fill, two
    // casts, softmax, v made contiguous) and 5 backward (two casts, softmax's backward, masked_fill, mul)
    expect(h.gemmKernels).toBe(72);
    expect(h.betweenKernels).toBe(12 * 12);
    // v's copy is between the matmuls; no layout copy runs next to them outside (this trace made none)
    expect(h.layoutCopyKernels).toBe(0);
    expect(h.gemmNs / 1e6).toBeCloseTo(12 * (140 + 130 + 140 + 130 + 130 + 130) / 1e3, 3);
    expect(h.betweenNs / 1e6).toBeCloseTo(12 * (230 + 4 + 240 + 345 + 460 + 345 + 15 + 345 + 690 + 345 + 240 + 230) / 1e3, 3);
    expect(h.gemmFlops).toBeCloseTo(12 * 6 * (FORWARD_FLOPS / 2), -6);
    expect(h.forwardFlops).toBeCloseTo(12 * FORWARD_FLOPS, -6);
    expect(h.topBetween.map((k) => k.name).join('\n')).toMatch(/softmax_warp_backward/);
    expect(h.topBetween[0]!.ns / 1e6).toBeCloseTo(12 * 0.69, 3); // softmax's backward and the two casts to fp32: 690 us a layer each
    // the softmax's time is softmax, the casts casts, masking and scaling pointwise
    expect(h.betweenByKind.softmaxNs / 1e6).toBeCloseTo(12 * (460 + 690) / 1e3, 3);
    expect(h.betweenByKind.castNs / 1e6).toBeCloseTo(12 * (4 * 345 + 15) / 1e3, 3);
    // score-sized tensors: two score matmuls and 12 kernels a layer, bf16 (2 B) but fp32 (4 B) for softmax and the casts to float
    expect(h.scoreBytes).toBeGreaterThan(12 * 14 * 192 * 1024 * 1024 * 2);
  });

  it('counts its matmuls among the GEMMs of the MFU, with no fused attention left', () => {
    const mf = metrics.modelFlops!;
    expect(mf.handWrittenAttentionFlopsPerStep).toBeCloseTo(12 * 6 * (FORWARD_FLOPS / 2), -6);
    expect(mf.fusedAttentionFlopsPerStep).toBe(0);
    expect(mf.uncountedAttentionNsPerStep).toBe(0);
    expect(metrics.attention.fused).toBeNull();
  });

  it('is told apart from the same kernels without a softmax between the matmuls (not attention)', () => {
    const text = handWrittenAttentionTrace().replace(/softmax_warp_(forward|backward)/g, 'exp_kernel_$1');
    expect(metricsOfText(text).attention.handWritten).toBeNull();
  });

  it('says when it is SDPA\'s own math fallback', () => {
    expect(metricsOfText(handWrittenAttentionTrace({ mathFallback: true })).attention.handWritten!.mathFallback).toBe(true);
  });
});

describe("hand-written attention's layout copies (llm.c's GPT-2 on an H200: 12 layers, batch 8 x 1024, bf16)", () => {
  it("are the copies next to its matmuls that make q, k and the output contiguous, forward and backward; its SDPA twin runs none", async () => {
    const runs = new URL('../../examples/pace/runs/h200-d/', import.meta.url).pathname;
    const h = analyzeTrace(await loadTrace(`${runs}llmc_hand/trace-pid15263.json.gz`)).attention.handWritten!;
    // a layer: q and k before Q·Kᵀ, the output after P·V; the incoming gradient before dP, dQ and dK after the last
    expect(h.layoutCopyKernels).toBe(12 * 6);
    expect(h.layoutCopyNs / 1e6).toBeGreaterThan(1.6);
    expect(h.layoutCopyNs / 1e6).toBeLessThan(1.7);
    const twin = await loadTrace(`${runs}llmc_sdpa/trace-pid16095.json.gz`);
    expect(analyzeTrace(twin).attention.handWritten).toBeNull();
    expect(twin.names.some(isLayoutCopy)).toBe(false);
  });
});
