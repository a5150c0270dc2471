/**
 * The levers of a generation loop (decode steps: run/steps.ts DecodeStats). A decode step runs every layer of the
 * model for one new token per sequence: hundreds of small kernels whose launches take longer than the GPU's work (a
 * GPT-2 with Hugging Face `generate()` at batch 1: 7.9 ms a decode step on an H200, its kernels a few microseconds
 * each). Its levers:
 *   - batching requests: k sequences per step cost about the same launches, so tokens/s grows about k-fold while the
 *     step is launch-bound (8 prompts per call: 6.5 ms a decode step, 8x the tokens per second, on that H200);
 *   - a static KV cache with CUDA graphs: the decoding forward replayed as one graph, the step falls to the GPU's work
 *     (launch-bound's own fix when its RunContext says decode: advice/rules/host.ts);
 *   - bf16 weights over fp32 ones: each GEMM costed by its bytes (advice/bf16Weights.ts, the `bf16-weights` rule), a
 *     gain only once the launches no longer set the pace (the pipeline composes it after the static cache);
 *   - torch.inference_mode: named in the static cache's fix (which then `includes` it); where the forwards ran with
 *     gradients (the probe counts them by grad mode) a finding of its own (`decode-autograd`), its gain the host's
 *     time without autograd's share (AUTOGRAD_HOST_RATIO) and without the graphs' release (`inferenceModeFix`).
 * Batching's effect is data (`decodeLeverEffects`); its finding's gain comes from it. bf16 weights and the static
 * cache are rules' fixes (advice/rules).
 */
import { adviceFinding, type Finding, finding } from '../findings/finding.js';
import type { Fix } from '../pace/fix.js';
import { gainOf, wholeStepFix, wholeStepGain } from '../pace/gain.js';
import type { Pipeline } from '../pace/pipeline.js';
import type { ForwardGradModes } from '../run/records.js';
import type { DecodeStats } from '../run/steps.js';
import type { TraceMetrics } from '../trace/metrics/types.js';
import { fmtInt, fmtMs, fmtPct } from '../util/format.js';

/** Batch multiples weighed for batching requests: the largest whose GPU work, grown in proportion, still fits in the step. */
const BATCH_SCALES = [8, 4, 2] as const;

export interface DecodeLeverEffects {
  /** The decode step the effects are of (the run's median, ns), and the GPU's work in it (the profiled window's busy time). */
  stepNs: number;
  gpuBusyNs: number | null;
  /**
   * k sequences per decode step: the GPU's work taken to grow k-fold (an upper bound: a decode step's matmuls read the
   * weights once whatever the batch), the step to stay while that fits in it. Null without the window or below 2x.
   */
  batching: { batchScale: number; batchAfter: number | null; stepNsAfter: number; tokensPerSAfter: number | null } | null;
}

/** Each decode lever's effect on the run's decode step; `metrics`: the profiled window of decode steps, when analysed. */
export function decodeLeverEffects(decode: DecodeStats, metrics: TraceMetrics | null): DecodeLeverEffects | null {
  if (decode.decodeStepS === null) return null;
  const stepNs = decode.decodeStepS * 1e9;
  const busy = metrics ? metrics.perStep.busyNs : null;
  const k = busy !== null && busy > 0 ? (BATCH_SCALES.find((x) => busy * x <= stepNs) ?? null) : null;
  return {
    stepNs,
    gpuBusyNs: busy,
    batching:
      k === null
        ? null
        : {
            batchScale: k,
            batchAfter: decode.batch !== null ? decode.batch * k : null,
            stepNsAfter: stepNs,
            tokensPerSAfter: decode.tokensPerS !== null ? decode.tokensPerS * k : null,
          },
  };
}

function batchingArithmetic(k: number, stepAfterNs: number, busyNs: number, stepNs: number): string {
  return `${k}x the sequences per decode step at about the same step (${fmtMs(stepAfterNs)}: the GPU's ${fmtMs(busyNs)} grown ${k}-fold stays within it): ${fmtMs(stepAfterNs / k)} per current batch of tokens instead of ${fmtMs(stepNs)}`;
}

/**
 * Batching requests, advice to weigh (it changes what a call computes, and each request's latency stays the step's):
 * the tokens of k sequences at the cost of about one decode step, while the GPU's work fits in it.
 */
export function decodeBatchingFinding(decode: DecodeStats, effects: DecodeLeverEffects, rank: number): Finding | null {
  const b = effects.batching;
  const busy = effects.gpuBusyNs;
  if (b === null || busy === null) return null;
  const k = b.batchScale;
  const step = effects.stepNs;
  const now = decode.batch ?? 1;
  const rate = (x: number | null) => (x === null ? '?' : fmtInt(x));
  return adviceFinding({
    id: 'decode-batching',
    title: `Decode steps run ${now} sequence${now === 1 ? '' : 's'} at a time on a GPU busy ${fmtPct(busy / step)} of each: ${k}x the sequences per step would give about ${k}x the tokens/s`,
    ranks: [rank],
    evidence: [
      `${decode.decodeSteps} decode steps measured: ${fmtMs(step)} a decode step at batch ${now}, ${rate(decode.tokensPerS)} tokens/s generated`,
      `the GPU works ${fmtMs(busy)} of each decode step (the profiled window), busy ${fmtPct(busy / step)}: the rest is launches and Python, which cost the same for ${k}x the sequences`,
      `with ${k}x the sequences the GPU's work, even grown ${k}-fold, takes ${fmtMs(busy * k)}, within the step: about ${rate(b.tokensPerSAfter)} tokens/s`,
    ],
    data: {
      decodeStepNs: step,
      gpuBusyNsPerStep: busy,
      batch: now,
      batchScale: k,
      tokensPerS: decode.tokensPerS,
      tokensPerSAfter: b.tokensPerSAfter,
    },
    recommendation: {
      summary: `Generate for ${k}x the sequences per call: batch the prompts (pad them on the left for a decoder-only model) or serve requests in batches; each request still waits a step per token, but the step yields ${k}x the tokens. Advice to weigh: it needs ${k}x the requests at once and ${k}x the KV cache.`,
      code: [
        'tokenizer.padding_side = "left"                      # decoder-only models pad on the left',
        'inputs = tokenizer(prompts, return_tensors="pt", padding=True).to("cuda")   # a list of prompts',
        'out = model.generate(**inputs, max_new_tokens=128)',
      ].join('\n'),
    },
    // The batching's effect as a whole-step change per current batch of tokens (pace/gain.ts).
    fix: wholeStepFix(`${k}x the sequences per decode step`, step, b.stepNsAfter / k, batchingArithmetic(k, b.stepNsAfter, busy, step)),
    estimatedGain: wholeStepGain(step, b.stepNsAfter / k, batchingArithmetic(k, b.stepNsAfter, busy, step)),
  });
}

/** Forwards with gradients past this share of those seen: the generation runs with autograd on. */
const AUTOGRAD_MIN_SHARE = 0.5;
/**
 * A prefill step this many times a decode step or more, with gradients on, is said: the step that starts a sequence
 * also releases the previous one's graph and the activations it kept (on the H200, examples/levers/decode_loop.py: 71-74
 * ms against 5-6 under inference_mode, its decode steps 6.2 ms; a prompt's own forward is about a decode step's there).
 */
const PREFILL_RELEASE_RATIO = 3;
/**
 * A decode step's host time with gradients recorded over the same step's under inference_mode, where launches bind:
 * autograd's bookkeeping (a node per op, its saved inputs) on top of each op's dispatch and launch. Measured on an H200
 * host with bench/doctor/decode_grad_modes.py --device cuda (a 12-layer GPT of width 64, 184 kernels a decode step),
 * the ratio within each round of the modes run back to back: medians 1.39 and 1.43 in two calls
 * (bench/doctor/results/h200-2026-11-29-decode-grad-modes.txt). A ratio of two host times on one CPU, so it carries
 * across CPUs better than microseconds per op; it differs by model (examples/levers/decode_loop.py's GPT-2: 6.2 against
 * 4.75 ms, 1.31; its Llama: 15.9-19.4 against 12.2-13.3 ms).
 */
export const AUTOGRAD_HOST_RATIO = 1.4;

/**
 * inference_mode's change to a decode loop that records autograd graphs, as a fix on the run's pipeline: the host's
 * step falls to the decode steps' median over AUTOGRAD_HOST_RATIO. The mean's excess over that median goes too: with
 * gradients on, a sequence's first steps release the previous sequence's graph and the activations it kept (74 and 40
 * ms against a 6.3 ms decode step on the H200), and the graph that grows with the KV cache spreads the steps (the same
 * loop under inference_mode: mean 4.83 ms, median 4.75). Null without a decode median, a step, or a profiled window to
tell the host's time from the GPU's.
 */
export function inferenceModeFix(decode: DecodeStats, p: Pipeline): Fix | null {
  // A host-time change: it needs the host told apart from the GPU (a profiled window).
  if (decode.decodeStepS === null || !(p.stepNs > 0) || !p.deviceTimed) return null;
  const medianNs = decode.decodeStepS * 1e9;
  const tailNs = Math.max(0, p.stepNs - medianNs);
  const scale = p.scale.host > 0 ? p.scale.host : 1;
  return {
    label: 'torch.inference_mode()',
    ops: [
      { kind: 'host', work: 'autograd', ns: tailNs / scale },
      { kind: 'host', work: 'autograd', factor: 1 / AUTOGRAD_HOST_RATIO },
    ],
    arithmetic: `the mean step ${fmtMs(p.stepNs)} exceeds the decode steps' median ${fmtMs(medianNs)} by ${fmtMs(tailNs)} a step (the sequences' first steps releasing the graphs, the spread of a graph growing with the cache): gone with the graph; the host's time then / ${AUTOGRAD_HOST_RATIO} (autograd's bookkeeping per op, bench/doctor/decode_grad_modes.py)`,
  };
}

/**
 * Decode steps whose forwards ran with gradients enabled (a loop of the script's own, without `no_grad`): every op
 * records its graph for a backward that never comes, and the graph keeps each step's activations alive as long as
 * what references them (a KV cache built from them holds every step's). Its fix is `torch.inference_mode()`, its gain
 * `inferenceModeFix` on the run's pipeline (`pace`; none without it).
 */
export function decodeAutogradFinding(
  decode: DecodeStats,
  modes: ForwardGradModes,
  rank: number,
  pace: Pipeline | null,
): Finding | null {
  const seen = modes.grad + modes.noGrad + modes.inference;
  if (seen === 0 || modes.grad / seen < AUTOGRAD_MIN_SHARE) return null;
  const fix = pace ? inferenceModeFix(decode, pace) : null;
  const gain = fix && pace ? gainOf(pace, fix) : null;
  return finding({
    id: 'decode-autograd',
    title: `Decode steps run with autograd on: ${fmtPct(modes.grad / seen)} of the model's forwards record a graph for a backward that never comes`,
    ranks: [rank],
    evidence: [
      `of ${fmtInt(seen)} forward calls of the outermost module, ${fmtInt(modes.grad)} ran with gradients enabled, ${fmtInt(modes.noGrad)} under no_grad, ${fmtInt(modes.inference)} under inference_mode`,
      `${decode.decodeSteps} decode steps measured: each op of them builds an autograd node and keeps its inputs for the backward, so a KV cache built from them holds every step's activations until the generation ends`,
      ...(decode.prefillStepS !== null && decode.decodeStepS !== null && decode.prefillStepS >= PREFILL_RELEASE_RATIO * decode.decodeStepS
        ? [
            `a prefill step (a sequence's first forward) takes ${fmtMs(decode.prefillStepS * 1e9)}, ${(decode.prefillStepS / decode.decodeStepS).toFixed(1)}x a decode step (${fmtMs(decode.decodeStepS * 1e9)}): with gradients on, the step that starts a sequence also releases the previous one's graph and the activations it kept`,
          ]
        : []),
      ...(fix
        ? []
        : ["the gain is not estimated: without a profiled window the host's time is not told apart from the GPU's"]),
    ],
    data: {
      forwardsWithGrad: modes.grad,
      forwardsNoGrad: modes.noGrad,
      forwardsInference: modes.inference,
      decodeSteps: decode.decodeSteps,
    },
    recommendation: {
      summary:
        'Generate under torch.inference_mode() (or at least torch.no_grad(), which still pays part of the bookkeeping): no graph is recorded, no activation kept for a backward, and each op does less host work. Hugging Face generate() does it itself; a loop of your own must.',
      code: [
        'with torch.inference_mode():',
        '    for _ in range(max_new_tokens):',
        '        logits = model(input_ids, past_key_values=cache).logits',
        '        ...',
      ].join('\n'),
    },
    ...(fix ? { fix } : {}),
    estimatedGain: gain,
  });
}
