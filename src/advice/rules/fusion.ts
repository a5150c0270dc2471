/**
 * Fusion: a GPU kept busy by many memory-bound kernels between the GEMMs (eager PyTorch launches one
 * kernel per elementwise op, each reading and writing its tensors from memory); torch.compile fuses them.
 */

import { type EstimatedGain, finding } from '../../findings/finding.js';
import type { Fix, FixOp } from '../../pace/fix.js';
import type { Pipeline } from '../../pace/pipeline.js';
import { gainOf } from '../../pace/gain.js';
import { HALF_ALIGNMENT } from '../../trace/metrics/kernels.js';
import type { ChainFigures, KernelMix, TraceMetrics } from '../../trace/metrics/types.js';
import { fmtInt, fmtMs, fmtPct } from '../../util/format.js';
import { attentionFixEffect } from './attention.js';
import { FP32_DTYPES } from '../autocast.js';
import { misalignedGemms, tensorCoreEffect } from './compute.js';
import { mixedPrecisionEffect } from './precision.js';
import { isCompiled, matmulNs, pipelineOf, type RankRule, stepNs } from './rule.js';

/**
 * The GPU must be busy for its kernel time to matter: below this, input or launch rules apply. Low on purpose: a
 * profiled window of a GPU-bound run shows the profiler's CPU cost as idle (nanoGPT-style GPT-2 on an H100: 55%
 * busy profiled, 97% outside the window), and compiling also cuts the kernels a CPU-bound loop must launch.
 */
const MIN_BUSY_SHARE = 0.4;
/** Fusable (non-matmul, non-communication) kernel time below this share of busy time is not worth a finding. */
const MIN_FUSABLE_SHARE = 0.25;
/**
 * What torch.compile removes of each kind of fusable kernel time (KernelMix.fusable), measured on two eager/compiled
 * pairs of a GPT-2 124M in bf16 on an H100 whose traces show both sides: the nanoGPT-style scenario
 * (examples/traces/scenarios/gpt2_fusion*, 12x1024 tokens) and the nanoGPT-style loop of the real-code corpus
 * (examples/realworld/runs/nanogpt_style, 24x1024; its compiled twin's trace: 57.0 ms of kernels a step). Per kind,
 * eager ms -> compiled ms (Triton kernels assigned by the ops their names fuse), scenario | corpus:
 *   casts and pointwise ops  15.0 -> 4.0 (73%) | 24.7 -> 7.7 (69%): a chain of elementwise ops, and autocast's casts
 *                            of the weights into them, becomes one kernel reading and writing memory once;
 *   softmax and the loss     3.3 -> 1.8 (47%) | 5.6 -> 3.5 (37%): the log-softmax over the vocabulary and its
 *                            backward fuse with the loss but still read the logits;
 *   normalisations           4.5 -> 3.5 (23%) | 7.3 -> 6.4 (12%): a layer norm already is one kernel; fusion only
 *                            folds the residual add or the cast around it;
 *   other reductions         2.1 -> 1.9 | 3.1 -> 3.2 (none): bias-gradient sums stay;
 *   the optimizer            unchanged: compiling the model does not compile `opt.step()`.
 * Softmax and normalisations rounded to the lower pair; casts and pointwise ops by their chains (CHAIN_KEEPS): a
 * single factor for them (0.7) missed the GPT-2s whose GELU is a chain of eight elementwise ops (mul, pow, add, tanh
 * ...): llm.c's and minGPT's by +24% and +28% (docs/validation/compile.md).
 */
const COMPILE_REMOVES = { softmax: 0.4, norm: 0.15, reduce: 0, optimizer: 0 } as const;
/**
 * Casts and pointwise ops fuse by chains (trace/metrics/pointwiseChains.ts): a chain of n kernels becomes about one,
 * so what is left is this many times the chains' time as one kernel each (a fused kernel reads a chain's inputs once,
 * some chains fuse into the norm or reduction beside them: below 1). Fitted on the two nanoGPT pairs above alone
 * (scenario: chains at one kernel each 41.6% of their time, 73% removed, 0.64; corpus: 37.9%, 69%, 0.82; the mean);
 * judged on pairs not looked at while fitting (docs/validation/compile.md): Hugging Face's GPT-2, llm.c and minGPT,
 * whose written-out GELU makes chains of nine kernels and more.
 */
const CHAIN_KEEPS = 0.73;
/** Where a trace has no chains read (an older analysis), the pointwise share removed on the fit pairs. */
const CAST_POINTWISE_REMOVES_WITHOUT_CHAINS = 0.7;

/**
 * What compiling leaves of the host's work a step where the trace has no chains read: the compiled nanoGPT-style GPT-2
 * launched 698 kernels a step against 960 eager (examples/traces/scenarios/gpt2_fusion*, H100); 0.7, rounded down.
 */
const COMPILE_HOST_KEEPS_WITHOUT_CHAINS = 0.7;

/**
 * The chains compile fuses: the window's, or, where the attention fix comes first in a plan (`attentionFixed`), the
 * window's with hand-written attention's kernels taken out (pointwiseChains.ts): SDPA removes them, so the chains they
 * alone split join, and attention's own short chains are no longer there to fuse. llm.c's GPT-2 on an H200: 226 chains
 * of 3.9 kernels on average written out, 154 of 4.4 once its attention's kernels are out, 166 of 4.1 in its SDPA twin.
 */
function chainsOf(m: TraceMetrics, attentionFixed: boolean): ChainFigures | undefined {
  const c = m.pointwiseChains;
  return attentionFixed ? (c?.withoutHandWrittenAttention ?? c) : c;
}

/**
 * What compiling leaves of the host's work: its kernels once each chain is one (the host's eager work is a dispatch per
 * op, and the compiled graph launches what is left); after the attention fix, of the kernels that fix left. Derived,
 * not fitted: the nanoGPT-style pair predicts 0.65 against the 0.73 of kernels it kept; llm.c's stepping thread
 * measured 43.8 -> 14.5 ms of CPU a step (0.33) against 0.49 predicted, minGPT's step 41.2 -> 22.5 ms host-bound against
 * 0.50 (docs/validation/compile.md).
 */
export function compileHostKeeps(m: TraceMetrics, attentionFixed = false): number {
  const c = chainsOf(m, attentionFixed);
  const kernels = m.launch.kernelsPerStep - (attentionFixed ? (attentionFixEffect(m)?.launchesRemoved ?? 0) : 0);
  if (!c || c.kernelsPerStep <= 0 || kernels <= 0) return COMPILE_HOST_KEEPS_WITHOUT_CHAINS;
  return Math.min(1, Math.max(0, kernels - c.kernelsPerStep + c.chainsPerStep) / kernels);
}

/** A convolutional net's normalisation cannot fuse into its convolutions in training: the factor was not measured there. */
const MAX_CONV_SHARE = 0.2;

type FusableKinds = KernelMix['fusable'];

/**
 * Hand-written attention's fusable kernels by kind: those between its matmuls (the device-to-device copies there are no
 * kernels, so neither in these kinds nor in the categories fusableNs adds), and the layout copies around them (a cast's
 * kind: copy kernels). They are the attention finding's (F.scaled_dot_product_attention removes them with the score
 * matrix they read; compile fuses them only in part, and rewrites the pattern into SDPA only for some shapes and masks),
 * so compile is credited with the rest. Taking the device-to-device copies off too hid 2.3 ms a step of llm.c's
 * pointwise kernels from compile (issue 44). Zero without such attention.
 */
function handWrittenKinds(m: TraceMetrics): FusableKinds {
  const h = m.attention.handWritten;
  const a = h?.betweenByKind ?? { castNs: 0, pointwiseNs: 0, normNs: 0, softmaxNs: 0, reduceNs: 0, optimizerNs: 0 };
  return { ...a, castNs: a.castNs + (h?.layoutCopyNs ?? 0) };
}

/** The fusable kernel time by kind, less hand-written attention's. */
function fusableKinds(m: TraceMetrics): FusableKinds {
  const f = m.kernelMix.fusable;
  const a = handWrittenKinds(m);
  const out = { ...f };
  for (const k of Object.keys(out) as (keyof FusableKinds)[]) out[k] = Math.max(0, f[k] - a[k]);
  return out;
}

function fusableNs(m: TraceMetrics): number {
  const k = m.perStep.kernelNsByCategory;
  const attention = Object.values(handWrittenKinds(m)).reduce((a, b) => a + b, 0);
  return Math.max(0, k.elementwise + k.reduction + k.optimizer + k.other - attention);
}

/**
 * What compiling costs before the first step, s: a compiled ResNet-50 (bf16, channels_last) on an H200 ran its first
 * step 31.7 s after its first forward (examples/levers/runs/h200/compiled_cnn, torch 2.11); first compiled steps of
 * larger models are reported at minutes (129 s, pytorch#111180). A GPT-2 124M (bf16, SDPA, AdamW) paid 34 s over its
 * steady steps in a tune --plan trial on an H200 (examples/pace/runs/h200-tune). The finding says how many steps its
 * saving takes to pay that back.
 */
export const COMPILE_WARMUP_S = 32;

/**
 * The compile's warm-up against what the compiling fix's gain saves a step, in words: the steps it takes to pay it back
 * (null when it saves nothing). Said wherever a fix compiles a model that is not compiled yet (fusion, launch-bound);
 * with CUDA graphs (`mode="reduce-overhead"`) jpeg_resnet's first 10 steps took 43 s on the H200
 * (examples/pace/measured/README.md).
 */
export function compileWarmupWords(gain: EstimatedGain | null): string | null {
  const savedNs = gain === null ? 0 : gain.stepTimeNs - gain.expectedStepTimeNs;
  return savedNs > 0
    ? `compiling takes time before the first step: about ${COMPILE_WARMUP_S} s for a ResNet-50 or a GPT-2 124M on an H200 (measured), minutes for larger models (gpuwise tune --plan measures yours); at ${fmtMs(savedNs)} saved a step that is paid back after about ${fmtInt(Math.ceil((COMPILE_WARMUP_S * 1e9) / savedNs))} steps`
    : null;
}

/**
 * The share of cast and pointwise kernel time compile removes: all but CHAIN_KEEPS of its chains at one kernel each;
 * `attentionFixed`: the chains once the attention fix removed hand-written attention's kernels (chainsOf).
 */
export function castPointwiseRemoved(m: TraceMetrics, attentionFixed = false): number {
  const c = chainsOf(m, attentionFixed);
  if (!c || c.ns <= 0) return CAST_POINTWISE_REMOVES_WITHOUT_CHAINS;
  return Math.max(0, 1 - CHAIN_KEEPS * (c.asOneKernelNs / c.ns));
}

/** What compile would save per step, by kind (before the cap to the GPU's non-matmul time); `attentionFixed` as above. */
export function compileSavings(
  m: TraceMetrics,
  attentionFixed = false,
): {
  castPointwise: number;
  softmax: number;
  norm: number;
  kinds: FusableKinds;
} {
  const f = fusableKinds(m);
  return {
    castPointwise: (f.castNs + f.pointwiseNs) * castPointwiseRemoved(m, attentionFixed),
    softmax: f.softmaxNs * COMPILE_REMOVES.softmax,
    norm: f.normNs * COMPILE_REMOVES.norm,
    kinds: f,
  };
}

/** Compile's saving of GPU work a step, by kind, where the busy time caps the fusable time (`fusable`) shrunk with it. */
function fusedNs(m: TraceMetrics, fusable: number, attentionFixed: boolean): number {
  const c = compileSavings(m, attentionFixed);
  return (c.castPointwise + c.softmax + c.norm) * Math.min(1, fusable / Math.max(1, fusableNs(m)));
}

/** Chains in words: "226 chains of 3.9 kernels on average". */
function chainWords(c: ChainFigures | undefined): string {
  return `${(c?.chainsPerStep ?? 0).toFixed(0)} chains of ${((c?.kernelsPerStep ?? 0) / Math.max(1, c?.chainsPerStep ?? 0)).toFixed(1)} kernels on average`;
}

/**
 * The GPU's busy share of the step: the run's, outside the profiler, where doctor measured one (its GPU stage over its
 * mean step), else the window's. The profiler's own cost lengthens a host-bound window: minGPT at GPT-2 size in bf16
 * with SDPA ran a 41 ms step whose window took 84 ms, its GPU read 39.5% busy there and 81% in the run, and compile,
 * which measured 22.5 ms, was never offered.
 */
function busyShareOf(m: TraceMetrics, pace: Pipeline | null | undefined): number {
  const gpu = pace?.source === 'run' ? pace.stages.gpu.ns : null;
  return gpu !== null && gpu !== undefined && pace && pace.stepNs > 0 ? Math.min(1, gpu / pace.stepNs) : m.gpuBusyShare;
}

export const fusion: RankRule = (m, ctx) => {
  const step = stepNs(m);
  // Compiled already, by the trace's Triton kernels or the probe's sight of torch.compile's wrapper.
  if (step <= 0 || isCompiled(m, ctx) || busyShareOf(m, ctx?.pace) < MIN_BUSY_SHARE) return null;
  const mm = matmulNs(m);
  if (mm <= 0 || m.perStep.kernelNsByCategory.conv > MAX_CONV_SHARE * mm) return null;
  const fusable = Math.min(fusableNs(m), m.perStep.busyNs - mm);
  // The share is of the GPU's work once hand-written attention is fused and the matmuls run on tensor cores (their own
  // findings, first in a plan): score-sized kernels and fp32 matmuls would otherwise hide what compile fuses after them
  // (a GPT-2 with attention written out: 23% of the busy time before SDPA, 54% after; compile then measured 45.2 ->
  // 35.1 ms on an H200; minGPT at GPT-2 size in fp32: 24% before bf16, about half after it, and compile measured
  // 36.8 -> 22.5 ms once bf16 and SDPA were in).
  // The run's precision fix, whichever rule makes it: fp32 GEMMs on the SIMT cores, or fp32/TF32 matmuls (nanoGPT turns
  // TF32 on: 24% fusable before bf16, 55% after it, and compile measured 36.5 -> 29.4 ms once bf16 was in).
  const precision = ctx?.inference ? null : (tensorCoreEffect(m) ?? mixedPrecisionEffect(m)?.effect ?? null);
  const memoryBoundSaved = (precision?.ops ?? []).filter((o) => o.kind === 'gpu' && o.work === 'memory-bound').reduce((a, o) => a + (o.kind === 'gpu' ? o.ns * (1 - o.factor) : 0), 0);
  const busyAfter = m.perStep.busyNs - (attentionFixEffect(m)?.gpuNsSaved ?? 0) - (precision?.savedNs ?? 0);
  if (fusable - memoryBoundSaved < MIN_FUSABLE_SHARE * busyAfter) return null;
  const c = compileSavings(m);
  const fused = fusedNs(m, fusable, false);
  // Where the attention fix comes first in a plan, compile meets the chains without hand-written attention's kernels.
  const afterAttention = m.attention.handWritten !== null && m.pointwiseChains?.withoutHandWrittenAttention !== undefined;
  const fusedAfterAttention = afterAttention ? fusedNs(m, fusable, true) : fused;
  // Inductor also pads misaligned matmuls when that is faster (its pad_mm pass, shape_padding on by default): what
  // misaligned-shapes would save, at the rate this trace's aligned GEMMs reach.
  const padded = misalignedGemms(m).savedNs;
  const saved = fused + padded;
  const k = c.kinds;
  const kindsNs = k.castNs + k.pointwiseNs + k.softmaxNs + k.normNs;
  const bad = misalignedGemms(m).badNs;
  const fp32Misaligned = m.gemmShapes.some((g) => g.dtype !== null && FP32_DTYPES.has(g.dtype) && [g.m, g.n, g.k].some((d) => d % HALF_ALIGNMENT !== 0));
  const hostKeeps = compileHostKeeps(m);
  const hostKeepsAfterAttention = compileHostKeeps(m, afterAttention);
  const keeps = (savedNs: number) => (kindsNs > 0 ? Math.max(0, 1 - savedNs / kindsNs) : 1);
  const fix: Fix = {
    label: 'torch.compile',
    ops: [
      {
        kind: 'gpu',
        work: 'memory-bound',
        ns: kindsNs,
        factor: keeps(fused),
        ...(afterAttention ? { onceFixed: { gpu: 'attention', factor: keeps(fusedAfterAttention) } } : {}),
      },
      ...(padded > 0
        ? [{ kind: 'gpu', work: 'misaligned-gemms', ns: bad, factor: Math.max(0, 1 - padded / bad) } satisfies FixOp]
        : fp32Misaligned
          ? // fp32 GEMMs with a dimension not a multiple of 8 lose nothing to it on the SIMT cores; after bf16 autocast
            // (a plan's earlier step) they do, and compile pads them: the excess that fix added goes.
            [{ kind: 'gpu', work: 'misaligned-gemms', ns: 0, factor: 0 } satisfies FixOp]
          : []),
      {
        kind: 'host',
        work: 'launches',
        factor: hostKeeps,
        ...(afterAttention ? { onceFixed: { gpu: 'attention', factor: hostKeepsAfterAttention } } : {}),
      },
    ],
    compiles: true,
    arithmetic: `casts + pointwise ${fmtMs(k.castNs + k.pointwiseNs)} in ${chainWords(m.pointwiseChains)}, each fused to about one: x ${castPointwiseRemoved(m).toFixed(2)} + softmax and loss ${fmtMs(k.softmaxNs)} x ${COMPILE_REMOVES.softmax} + normalisation ${fmtMs(k.normNs)} x ${COMPILE_REMOVES.norm} = ${fmtMs(fused)}${padded > 0 ? ` + misaligned GEMMs padded ${fmtMs(padded)} = ${fmtMs(saved)}` : ''} of GPU work saved per step (other reductions and the optimizer unchanged); compiled, the step launches ${fmtPct(hostKeeps)} of its ${m.launch.kernelsPerStep.toFixed(0)} kernels, so the host's work a step is taken to shrink to that share${afterAttention ? `; after F.scaled_dot_product_attention, hand-written attention's kernels are gone from the streams and the chains they split join (${chainWords(m.pointwiseChains?.withoutHandWrittenAttention)}): casts + pointwise x ${castPointwiseRemoved(m, true).toFixed(2)}, ${fmtMs(fusedAfterAttention)} of GPU work saved, the host keeps ${fmtPct(hostKeepsAfterAttention)} of the kernels that fix leaves` : ''}`,
  };
  const gain = gainOf(pipelineOf(m, ctx?.pace), fix);
  const warmup = compileWarmupWords(gain);
  return finding({
    id: 'fusion',
    title: 'Eager mode: unfused elementwise and normalisation kernels run between the matmuls',
    ranks: [m.rank],
    evidence: [
      `fusable kernels (by kind below): ${fmtMs(fusable)} per step, ${fmtPct(fusable / m.perStep.busyNs)} of GPU busy time`,
      `GPU busy ${fmtPct(m.gpuBusyShare)} of the step; matmul/attention kernels ${fmtMs(mm)}, elementwise ${fmtMs(m.perStep.kernelNsByCategory.elementwise)}, reductions/normalisation ${fmtMs(m.perStep.kernelNsByCategory.reduction)}, optimizer and casts ${fmtMs(m.perStep.kernelNsByCategory.optimizer)} per step`,
      `no compiler-generated (Triton) kernels in the trace: the model runs eagerly, one kernel per op, ${m.launch.kernelsPerStep.toFixed(0)} kernels per step`,
      `fusable time by kind per step: casts ${fmtMs(k.castNs)}, pointwise ops ${fmtMs(k.pointwiseNs)}, softmax and loss ${fmtMs(k.softmaxNs)}, normalisation ${fmtMs(k.normNs)}, other reductions ${fmtMs(k.reduceNs)}, optimizer ${fmtMs(k.optimizerNs)}`,
      ...(padded > 0 ? [`misaligned GEMMs that compile pads: ${fmtMs(padded)} per step to gain (see misaligned-shapes)`] : []),
      ...(m.attention.handWritten
        ? [
            `left out: hand-written attention's ${fmtMs(m.attention.handWritten.betweenNs)} of kernels between its matmuls per step (see attention: a fused attention kernel removes them)`,
          ]
        : []),
    ],
    data: {
      fusableNsPerStep: fusable,
      matmulNsPerStep: mm,
      kernelsPerStep: m.launch.kernelsPerStep,
      fusedSavedNsPerStep: fused,
      paddedSavedNsPerStep: padded,
    },
    recommendation: {
      summary: `Compile the model: torch.compile fuses chains of elementwise ops, normalisations and casts into a few Triton kernels that read and write memory once. Try mode="max-autotune" once it works; keep the optimizer fused (AdamW(fused=True)).${warmup ? ` Worth it for a run that is long enough: ${warmup}.` : ''}`,
      code: [
        'model = torch.compile(model)            # before the training loop; the first steps compile',
        '# model = torch.compile(model, mode="max-autotune")  # longer compile, faster kernels',
      ].join('\n'),
      frameworks: {
        transformers: 'TrainingArguments(..., torch_compile=True)',
        lightning: 'model = torch.compile(model)  # the LightningModule, before trainer.fit(model)',
        accelerate: 'accelerate launch --dynamo_backend inductor train.py',
      },
    },
    fix,
    estimatedGain: gain,
  });
};
