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
 * Batching is a fix on the run's pipeline (`decodeBatching`: pace's batch op, whose model of a decode step's GPU work
 * is pace/batch.ts); bf16 weights and the static cache are rules' fixes (advice/rules).
 */
import { adviceFinding, type EstimatedGain, type Finding, finding } from '../findings/finding.js';
import type { Fix } from '../pace/fix.js';
import { gainOf } from '../pace/gain.js';
import type { Pipeline } from '../pace/pipeline.js';
import type { ForwardGradModes } from '../run/records.js';
import type { DecodeStats } from '../run/steps.js';
import type { TraceMetrics } from '../trace/metrics/types.js';
import { fmtInt, fmtMs, fmtPct } from '../util/format.js';

/** Batch multiples weighed for batching requests: the one the run's pipeline gives the most tokens per second. */
const BATCH_SCALES = [8, 4, 2] as const;
/** Batching requests under this many times the tokens per second is not worth the requests and the KV cache it needs. */
const MIN_TOKENS_FACTOR = 2;

/** Batching requests on the run's pipeline: k times the sequences per decode step, its fix and gain. */
export interface DecodeBatching {
  batchScale: number;
  fix: Fix;
  gain: EstimatedGain;
  /** Tokens per second after over now: the step per batch of the run's size now over after. */
  tokensFactor: number;
}

/** k times the sequences per decode step, as pace's batch op (pace/batch.ts says what grows with the sequences). */
export function decodeBatchingFix(k: number, decode: DecodeStats, p: Pipeline): Fix {
  const now = decode.batch ?? 1;
  return {
    label: `${k}x the sequences per decode step`,
    ops: [{ kind: 'batch', k }],
    arithmetic: `${k}x the sequences per decode step (${now} -> ${now * k}): the host's launches and Python stay a step's; ${p.gpuPerStep.evidence}`,
  };
}

/**
 * The batching that gives the most tokens per second on the run's pipeline `p`; null without a pipeline that times
 * the GPU apart (a profiled window), or where the best gives under MIN_TOKENS_FACTOR.
 */
export function decodeBatching(decode: DecodeStats, p: Pipeline | null): DecodeBatching | null {
  if (!p?.deviceTimed || decode.decodeStepS === null) return null;
  let best: DecodeBatching | null = null;
  for (const k of BATCH_SCALES) {
    const fix = decodeBatchingFix(k, decode, p);
    const gain = gainOf(p, fix);
    if (!gain || !(gain.expectedStepTimeNs > 0)) continue;
    const tokensFactor = gain.stepTimeNs / gain.expectedStepTimeNs;
    if (!best || tokensFactor > best.tokensFactor) best = { batchScale: k, fix, gain, tokensFactor };
  }
  return best && best.tokensFactor >= MIN_TOKENS_FACTOR ? best : null;
}

const times = (f: number) => (Math.abs(f - Math.round(f)) < 0.05 ? `${Math.round(f)}x` : `${f.toFixed(1)}x`);

/**
 * Batching requests, advice to weigh (it changes what a call computes, and each request's latency stays the step's):
 * the tokens of k sequences at about the cost of one decode step, while the GPU's work stays about a step's.
 * `metrics`: the profiled window of decode steps; `pace`: the rank's pipeline the gain is judged on.
 */
export function decodeBatchingFinding(decode: DecodeStats, metrics: TraceMetrics | null, pace: Pipeline | null, rank: number): Finding | null {
  const b = decodeBatching(decode, pace);
  const busy = metrics ? metrics.perStep.busyNs : null;
  if (b === null || busy === null || !(busy > 0) || decode.decodeStepS === null) return null;
  const k = b.batchScale;
  const step = decode.decodeStepS * 1e9;
  const now = decode.batch ?? 1;
  const after = decode.tokensPerS !== null ? decode.tokensPerS * b.tokensFactor : null;
  const rate = (x: number | null) => (x === null ? '?' : fmtInt(x));
  return adviceFinding({
    id: 'decode-batching',
    title: `Decode steps run ${now} sequence${now === 1 ? '' : 's'} at a time on a GPU busy ${fmtPct(busy / step)} of each: ${k}x the sequences per step would give about ${times(b.tokensFactor)} the tokens/s`,
    ranks: [rank],
    evidence: [
      `${decode.decodeSteps} decode steps measured: ${fmtMs(step)} a decode step at batch ${now}, ${rate(decode.tokensPerS)} tokens/s generated`,
      `the GPU works ${fmtMs(busy)} of each decode step (the profiled window), busy ${fmtPct(busy / step)}: the rest is launches and Python, which cost the same for ${k}x the sequences`,
      pace?.gpuPerStep.upToScale !== null && pace?.gpuPerStep.upToScale !== undefined
        ? `${pace.gpuPerStep.evidence}; measured on an H200, a decode step's GPU work grew 12% at 4x the sequences and 53% at 8x in fp32, so where the GPU binds the step is longer than modelled`
        : `the GPU's work is taken to grow ${k}-fold (an upper bound: a decode step's matmuls read the weights once whatever the batch, but without the batch or the GPU's ridge point no less is claimed)`,
      `on the run's pipeline, ${k}x the sequences give about ${times(b.tokensFactor)} the tokens/s: about ${rate(after)} tokens/s`,
    ],
    data: {
      decodeStepNs: step,
      gpuBusyNsPerStep: busy,
      batch: now,
      batchScale: k,
      tokensPerS: decode.tokensPerS,
      tokensPerSAfter: after,
    },
    recommendation: {
      summary: `Generate for ${k}x the sequences per call: batch the prompts (pad them on the left for a decoder-only model) or serve requests in batches; each request still waits a step per token, but the step yields about ${times(b.tokensFactor)} the tokens. Advice to weigh: it needs ${k}x the requests at once and ${k}x the KV cache.`,
      code: [
        'tokenizer.padding_side = "left"                      # decoder-only models pad on the left',
        'inputs = tokenizer(prompts, return_tensors="pt", padding=True).to("cuda")   # a list of prompts',
        'out = model.generate(**inputs, max_new_tokens=128)',
      ].join('\n'),
    },
    fix: b.fix,
    // A decode step's sequences each yield a token: its batch is told in tokens/s.
    estimatedGain: b.gain && b.gain.batchScale !== undefined ? { ...b.gain, batchUnit: 'tokens' } : b.gain,
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
