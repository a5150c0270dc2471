/**
 * The `attention` rule: hand-written attention replaced by F.scaled_dot_product_attention, on a real H200 trace with
 * its attention written out (test/helpers/handAttention.ts) and on the same trace as recorded (cuDNN's fused SDPA:
 * nothing to say).
 */
import { describe, expect, it } from 'vitest';
import { loadTrace } from '../../src/io/loadTrace.js';
import { analyzeTrace } from '../../src/trace/metrics/index.js';
import { diagnose } from '../../src/advice/engine.js';
import { attentionFixEffect } from '../../src/advice/rules/attention.js';
import { metricsOf } from '../helpers/fixtures.js';
import { handWrittenAttentionTrace } from '../helpers/handAttention.js';
import { metricsOfText } from '../helpers/synth.js';
import { contradictions } from '../helpers/claims.js';

describe('attention', () => {
  const written = metricsOfText(handWrittenAttentionTrace());

  it('is not told to a model that already runs fused attention (gpt2_amp: cuDNN SDPA)', async () => {
    expect(diagnose([await metricsOf('gpt2_amp')]).find((f) => f.id === 'attention')).toBeUndefined();
  });

  it('names the hand-written attention, with SDPA as the fix and its shapes, kernels and time as evidence', () => {
    const fs = diagnose([written]);
    const f = fs.find((x) => x.id === 'attention')!;
    expect(f.severity).toBe('medium'); // 45.9 of 197 ms: this trace's steps carry the profiler's start-up
    expect(f.title).toMatch(/Attention is written out by hand: .* take \d+% of the step/);
    const ev = f.evidence.join('\n');
    expect(ev).toMatch(/\[192, 1024, 1024\] scores \(batch x heads 192, sequence 1024, head dim 64, c10::BFloat16\)/);
    expect(ev).toMatch(/12 attention forwards per step, each with its backward/);
    const top = /the kernels between them that take the most time: (.*)/.exec(ev)![1]!.split('; ').sort();
    expect(top).toEqual(['copy to BFloat16 8.28 ms', 'copy to float 8.28 ms', 'softmax_warp_backward 8.28 ms']);
    expect(ev).toMatch(/takes the mask as causal/);
    expect(f.recommendation.code).toMatch(/F\.scaled_dot_product_attention\(q, k, v, is_causal=True/);
    expect(f.recommendation.frameworks?.transformers).toMatch(/attn_implementation="sdpa"/);
    expect(contradictions(f)).toEqual([]);
  });

  it('expects the step of the recorded SDPA run: the written-out attention less a fused kernel at the measured rate', async () => {
    const fused = await metricsOf('gpt2_amp');
    const effect = attentionFixEffect(written)!;
    // 12 layers of 4.29 ms written out (800 us of matmuls, 3.49 ms between them) replaced by the fused kernels
    expect(effect.unfusedNs / 1e6).toBeCloseTo(12 * 4.289, 1);
    expect(effect.causalAssumed).toBe(true);
    // at the rates cuDNN's kernels reached under torch 2.11 (examples/levers/runs/h200/gpt_attention_sdpa: 12 x (82.8 +
    // 220.4) us = 3.64 ms a step); this older recording's took 5.5 ms (12 x (185.6 + 276.2) us)
    expect(effect.fusedNs / 1e6).toBeGreaterThan(3.4);
    expect(effect.fusedNs / 1e6).toBeLessThan(3.9);
    expect(effect.launchesRemoved).toBe(72 + 144 - 24);
    const g = diagnose([written]).find((x) => x.id === 'attention')!.estimatedGain!;
    expect(g.boundAfter).toBe('gpu');
    const err = (g.expectedStepTimeNs - fused.perStep.durNs) / fused.perStep.durNs;
    expect(Math.abs(err), `expected ${(g.expectedStepTimeNs / 1e6).toFixed(1)} ms, recorded ${(fused.perStep.durNs / 1e6).toFixed(1)} ms`).toBeLessThan(0.1);
  });

  it('leaves the kernels between its matmuls out of what compiling is credited with', async () => {
    const fusion = diagnose([written]).find((x) => x.id === 'fusion')!;
    const h = written.attention.handWritten!;
    expect(fusion.evidence.join('\n')).toMatch(/left out: hand-written attention's 41\.9 ms of kernels between its matmuls per step/);
    // compile's casts are the trace's casts less the attention's (the casts around its fp32 softmax)
    const casts = Number(/casts ([\d.]+) ms, pointwise/.exec(fusion.evidence.join('\n'))![1]);
    expect(casts).toBeCloseTo((written.kernelMix.fusable.castNs - h.betweenByKind.castNs) / 1e6, 1);
    expect(h.betweenByKind.castNs).toBeGreaterThan(0);
  });

  it('on SDPA\'s math fallback, says so and asks for the fused kernel', () => {
    const f = diagnose([metricsOfText(handWrittenAttentionTrace({ mathFallback: true }))]).find((x) => x.id === 'attention')!;
    expect(f.title).toMatch(/math fallback/);
    expect(f.recommendation.code).toMatch(/sdpa_kernel\(SDPBackend\.FLASH_ATTENTION\)/);
  });
});

describe("attention's fix on llm.c's GPT-2 written out (H200), against its SDPA twin's window", () => {
  it("leaves the twin's kernels: the layout copies around the matmuls go with them (53.5 ms left when they stayed, 51.7 measured)", async () => {
    const runs = new URL('../../examples/pace/runs/h200-d/', import.meta.url).pathname;
    const hand = analyzeTrace(await loadTrace(`${runs}llmc_hand/trace-pid15263.json.gz`));
    const twin = analyzeTrace(await loadTrace(`${runs}llmc_sdpa/trace-pid16095.json.gz`));
    const effect = attentionFixEffect(hand)!;
    const left = hand.perStep.busyNs - effect.gpuNsSaved;
    expect(Math.abs(left / twin.perStep.busyNs - 1)).toBeLessThan(0.01);
    expect((left + hand.attention.handWritten!.layoutCopyNs) / twin.perStep.busyNs - 1).toBeGreaterThan(0.03);
  });
});
