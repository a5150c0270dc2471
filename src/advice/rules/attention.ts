/**
 * Attention written out by hand (`q @ k.transpose(-2, -1) * scale`, a mask, softmax, dropout, `@ v`): the T x T scores
 * go to memory and back through a chain of kernels, forward and backward; `F.scaled_dot_product_attention` computes the
 * same in one fused kernel that keeps them on chip. On an H200, a GPT-2 124M at 16 x 1024 tokens went from 174 to 103
 * ms a step with that one change; torch.compile is no substitute (Inductor rewrites such patterns into SDPA only for
 * some shapes and masks). The pattern is found in the trace (trace/metrics/attention.ts); a model that already runs a
 * fused attention kernel gets no finding.
 */
import type { Fix } from '../../pace/fix.js';
import { kernelLabel } from '../../trace/kernelClass.js';
import type { HandWrittenAttention, TraceMetrics } from '../../trace/metrics/types.js';
import { fmtBytes, fmtMs, fmtPct } from '../../util/format.js';
import { isHalfDtype } from '../../util/dtype.js';
import { finding, gpuOf, pacedParts, type RankRule, stepNs } from './rule.js';

/**
 * Shares of the dense peak a fused attention kernel reaches, in model FLOPs (causal halved; a backward counted as twice
 * its forward): measured on cuDNN's SDPA kernels (torch 2.11, cuDNN 9.19) in examples/levers/runs/h200/gpt_attention_sdpa
 * (H200, GPT-2 124M, 16 x 1024 tokens, 12 heads of 64, causal, dropout 0.1): a forward call 82.8 us for 25.8 GFLOP,
 * 311 TFLOP/s (0.31 of the bf16 peak of 989), a backward call 220.4 us for 51.5 GFLOP, 234 TFLOP/s (0.24). The same
 * model under an older torch (examples/traces/gpt2_amp) measured 0.14 and 0.19, so the estimate may be fast for older
 * stacks. A head dimension of 64 keeps the kernels far from the peak; larger ones run faster. For fp32 inputs the same
 * shares are taken of the fp32 (non-tensor-core) peak: an assumption, not a measurement (the fused kernels want 16-bit
 * inputs; see the recommendation).
 */
export const FUSED_ATTENTION_SHARE_OF_PEAK = { forward: 0.31, backward: 0.24 } as const;
/** The hand-written attention must take this share of the step to be worth a finding. */
const HAND_WRITTEN_MIN_SHARE = 0.02;

/** What replacing the hand-written attention with a fused kernel changes in a step (per step; data for the pace model). */
export interface AttentionFixEffect {
  /**
   * GPU time of the hand-written attention (its matmuls, the kernels between them and the layout copies around them),
   * and of the fused kernel.
   */
  unfusedNs: number;
  fusedNs: number;
  /** GPU work the fix removes: unfusedNs - fusedNs (never below 0). */
  gpuNsSaved: number;
  /** Kernels the fix removes: the matmuls', those between them and the layout copies, less one fused kernel per forward and per backward. */
  launchesRemoved: number;
  /** Bytes of score-sized tensors no longer written to memory. */
  scoreBytesRemoved: number;
  /** Model FLOPs the fused kernel does, and the rates assumed for them (TFLOP/s). */
  fusedFlops: number;
  forwardTflops: number;
  backwardTflops: number;
  /** The estimate halves the work for a causal mask (a masking kernel ran between the matmuls). */
  causalAssumed: boolean;
  /** The rate's basis, in words. */
  basis: string;
}

/**
 * The hand-written attention's GPU time a step: its matmuls, the kernels between them, and the copies that make its
 * operands and output contiguous (a fused kernel reads and writes the strided layouts; absent from older analyses).
 */
function handWrittenNs(h: HandWrittenAttention): number {
  return h.gemmNs + h.betweenNs + (h.layoutCopyNs ?? 0);
}

/** The fused kernel's time for the hand-written attention, at FUSED_ATTENTION_SHARE_OF_PEAK; null on a GPU the catalogue lacks. */
export function attentionFixEffect(m: TraceMetrics): AttentionFixEffect | null {
  const h = m.attention.handWritten;
  const gpu = gpuOf(m);
  if (h === null || gpu === null) return null;
  const half = h.shapes.every((s) => isHalfDtype(s.dtype));
  const peak = half ? gpu.bf16Tflops : gpu.fp32Tflops;
  if (!(peak > 0)) return null;
  const causal = h.masked;
  const forwardFlops = h.forwardFlops * (causal ? 0.5 : 1);
  const backwardFlops = h.backward ? 2 * forwardFlops : 0;
  const forwardTflops = peak * FUSED_ATTENTION_SHARE_OF_PEAK.forward;
  const backwardTflops = peak * FUSED_ATTENTION_SHARE_OF_PEAK.backward;
  const fusedNs = forwardFlops / forwardTflops / 1e3 + backwardFlops / backwardTflops / 1e3;
  const unfusedNs = handWrittenNs(h);
  return {
    unfusedNs,
    fusedNs,
    gpuNsSaved: Math.max(0, unfusedNs - fusedNs),
    launchesRemoved: Math.max(0, h.gemmKernels + h.betweenKernels + (h.layoutCopyKernels ?? 0) - h.forwardCalls * (h.backward ? 2 : 1)),
    scoreBytesRemoved: h.scoreBytes,
    fusedFlops: forwardFlops + backwardFlops,
    forwardTflops,
    backwardTflops,
    causalAssumed: causal,
    basis: `${FUSED_ATTENTION_SHARE_OF_PEAK.forward} (forward) and ${FUSED_ATTENTION_SHARE_OF_PEAK.backward} (backward) of the ${gpu.name} ${half ? 'bf16' : 'fp32'} dense peak ${peak} TFLOP/s${half ? ', as cuDNN\'s SDPA kernels measured on an H200 GPT-2 (torch 2.11)' : ' (assumed)'}`,
  };
}

const tflop = (f: number) => `${(f / 1e12).toFixed(2)} TFLOP`;

function shapeText(h: HandWrittenAttention): string {
  return h.shapes
    .map((s) => `[${s.batch}, ${s.seq}, ${s.seq}] scores (batch x heads ${s.batch}, sequence ${s.seq}, head dim ${s.headDim}, ${s.dtype ?? 'dtype ?'})`)
    .join('; ');
}

export const attention: RankRule = (m, ctx) => {
  const step = stepNs(m);
  const h = m.attention.handWritten;
  if (step <= 0 || h === null) return null;
  const unfused = handWrittenNs(h);
  if (unfused < HAND_WRITTEN_MIN_SHARE * step) return null;
  const effect = attentionFixEffect(m);
  const fused = m.attention.fused;
  const evidence = [
    `hand-written attention: ${fmtMs(unfused)} per step, ${fmtPct(unfused / step)} of the step: the score and value matmuls ${fmtMs(h.gemmNs)} (${h.gemmKernels.toFixed(0)} kernels, ${tflop(h.gemmFlops)}), the kernels between them ${fmtMs(h.betweenNs)} (${h.betweenKernels.toFixed(0)} kernels: scaling, masking, softmax, dropout, casts)${(h.layoutCopyKernels ?? 0) > 0 ? `, the copies that make its operands and output contiguous ${fmtMs(h.layoutCopyNs)} (${h.layoutCopyKernels.toFixed(0)} kernels; a fused kernel reads the strided layouts)` : ''}`,
    `batched matmuls over ${shapeText(h)}; ${h.forwardCalls.toFixed(0)} attention forwards per step${h.backward ? ', each with its backward' : ''}`,
    `the kernels between them that take the most time: ${h.topBetween.map((k) => `${kernelLabel(k.name)} ${fmtMs(k.ns)}`).join('; ')}`,
    `score-sized tensors written per step: ${fmtBytes(h.scoreBytes)} (each of those kernels reads and writes the whole score matrix; a fused kernel keeps it on chip)`,
  ];
  if (h.masked)
    evidence.push(
      'a masking kernel (masked_fill / where) runs between the matmuls: the estimate takes the mask as causal (is_causal=True, half the work); with a padding mask the fused kernel does about twice its estimate',
    );
  if (h.mathFallback)
    evidence.push('aten::_scaled_dot_product_attention_math ran: F.scaled_dot_product_attention is called, but no fused kernel took its inputs');
  if (fused !== null)
    evidence.push(
      `fused attention also runs here (${fused.backends.length ? fused.backends.join(', ') : 'kernels by name'}: ${fmtMs(fused.kernelNs)} per step${fused.topKernel ? `, ${kernelLabel(fused.topKernel)}` : ''}): only the written-out part is counted`,
    );
  if (effect)
    evidence.push(
      `a fused kernel: ${tflop(effect.fusedFlops)} per step (forward${h.backward ? ' and backward' : ''}) at ${effect.forwardTflops.toFixed(0)}/${effect.backwardTflops.toFixed(0)} TFLOP/s = ${fmtMs(effect.fusedNs)}; about ${effect.launchesRemoved.toFixed(0)} fewer kernels per step`,
    );
  const mathFix = h.mathFallback;
  // The effect as the pace model's fix: the GPU's attention work at the fused kernel's time, and the kernels it removes
  // off the host's launches.
  const fix: Fix | null = effect
    ? {
        label: mathFix ? 'a fused SDPA kernel' : 'F.scaled_dot_product_attention',
        ops: [
          { kind: 'gpu', work: 'attention', ns: effect.unfusedNs, factor: effect.unfusedNs > 0 ? effect.fusedNs / effect.unfusedNs : 1 },
          { kind: 'host', work: 'launches', factor: Math.max(0, 1 - effect.launchesRemoved / Math.max(1, m.launch.kernelsPerStep)) },
        ],
        arithmetic: `hand-written attention ${fmtMs(effect.unfusedNs)} per step -> a fused kernel's ${tflop(effect.fusedFlops)}${effect.causalAssumed ? ' (causal: half the scores)' : ''} at ${effect.basis}: ${fmtMs(effect.fusedNs)}; ${fmtMs(effect.gpuNsSaved)} of GPU work saved per step, ${effect.launchesRemoved.toFixed(0)} of ${m.launch.kernelsPerStep.toFixed(0)} kernels a step fewer to launch`,
      }
    : null;
  const parts = {
    id: 'attention' as const,
    title: mathFix
      ? `Attention runs on SDPA's math fallback, unfused: ${fmtPct(unfused / step)} of the step`
      : `Attention is written out by hand: its matmuls and the softmax and masking kernels between them take ${fmtPct(unfused / step)} of the step`,
    ranks: [m.rank],
    evidence,
    data: {
      attentionNsPerStep: unfused,
      attentionGemmNsPerStep: h.gemmNs,
      betweenNsPerStep: h.betweenNs,
      betweenKernelsPerStep: h.betweenKernels,
      layoutCopyNsPerStep: h.layoutCopyNs ?? 0,
      scoreBytesPerStep: h.scoreBytes,
      fusedNsPerStep: effect?.fusedNs ?? null,
      gpuNsSavedPerStep: effect?.gpuNsSaved ?? null,
      launchesRemovedPerStep: effect?.launchesRemoved ?? null,
      causalAssumed: h.masked,
      mathFallback: h.mathFallback,
      seq: h.shapes[0]?.seq ?? null,
      headDim: h.shapes[0]?.headDim ?? null,
    },
    recommendation: mathFix
      ? {
          summary:
            'F.scaled_dot_product_attention falls back to its math path (separate matmuls and a softmax, the scores in memory): no fused kernel accepted the inputs. The usual causes: fp32 inputs (the flash and cuDNN kernels want bf16/fp16: run under bf16 autocast), an attn_mask where is_causal=True would do, a head dimension over 256 or not a multiple of 8. Ask for the fused kernel alone to see why it refuses.',
          code: [
            'from torch.nn.attention import SDPBackend, sdpa_kernel   # torch >= 2.3',
            'with sdpa_kernel(SDPBackend.FLASH_ATTENTION):           # raises with the reason the kernel refuses these inputs',
            '    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)',
          ].join('\n'),
        }
      : {
          summary:
            "Replace the written-out attention with F.scaled_dot_product_attention: one fused kernel (flash, memory-efficient or cuDNN) computes softmax(Q·Kᵀ·scale + mask)·V without writing the T x T scores to memory, forward and backward. Where the model has a switch, use it (Hugging Face: attn_implementation=\"sdpa\"; timm: fused_attn; a `flash` flag in nanoGPT-style code). torch.compile is no substitute: Inductor rewrites such patterns into SDPA only for some shapes and masks.",
          code: [
            'import torch.nn.functional as F',
            '# in the attention module\'s forward; q, k, v: [batch, heads, seq, head_dim]; replaces (q @ k.transpose(-2, -1)) * scale, masked_fill, softmax, dropout, @ v',
            'y = F.scaled_dot_product_attention(q, k, v, is_causal=True)',
            '# with attention dropout: dropout_p=<its probability> if self.training else 0.0 (minGPT: self.attn_dropout.p)',
            '# another mask (padding): attn_mask=mask (bool, True = attend) instead of is_causal',
          ].join('\n'),
          frameworks: {
            transformers: 'AutoModelForCausalLM.from_pretrained(name, attn_implementation="sdpa")  # or "flash_attention_2" with the flash-attn package',
          },
        },
  };
  return finding(fix ? pacedParts(m, ctx?.pace, parts, fix) : { ...parts, estimatedGain: null });
};
