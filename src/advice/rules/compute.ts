/** GPU compute rules: fp32 matmuls (bf16 weights where the steps generate), misaligned GEMM shapes, an under-used GPU. */

import { largestWithinLimit } from '../../gpus/memoryFit.js';
import type { GemmShapeStat, TraceMetrics } from '../../trace/metrics/types.js';
import { kernelLabel } from '../../trace/kernelClass.js';
import { fmtBytes, fmtMs, fmtPct } from '../../util/format.js';
import { isHalfDtype } from '../../util/dtype.js';
import { type AutocastEffect, bf16AutocastEffect } from '../autocast.js';
import { bf16WeightsEffect, unshapedDecodeEffect } from '../bf16Weights.js';
import { BF16_AUTOCAST_SWITCHES } from '../framework.js';
import { autocastLines } from '../snippets.js';
import { modelParallelFigures } from './modelParallel.js';
import { autocastNotReaching } from './precision.js';
import { finding, fp32MatmulNsPerStep, gpuOf, matmulNs, ofWindowStep, paced, pacedParts, type RankRule, type RunContext, stepNs } from './rule.js';

const MISALIGNED_MIN_SHARE = 0.01;
const UNDERUSED_MAX_MEMORY_SHARE = 0.5;
const UNDERUSED_MAX_BUSY = 0.6;
const UNDERUSED_MAX_SM_EFFICIENCY = 0.6;
/** Never suggest more than this batch multiple, and keep 20% of memory as headroom. */
const MAX_BATCH_SCALE = 4;
const MEMORY_HEADROOM = 0.8;

/**
 * no-tensor-cores' fix on the step of `m`: bf16 autocast, the same model as mixed-precision's (advice/autocast.ts), TF32
 * at the peaks' ratio; null where fp32 matmuls are not a matmul share worth it or the GPU has no tensor cores. The
 * fusion rule judges compile on the step this fix leaves (a plan makes it first).
 */
export function tensorCoreEffect(m: TraceMetrics): AutocastEffect | null {
  if (fp32MatmulNsPerStep(m) === null) return null;
  const cc = Number(m.devices[0]?.computeCapability ?? '8.0');
  if (cc > 0 && cc < 7) return null; // no tensor cores before Volta
  const gpu = gpuOf(m);
  const tf32Ratio = gpu !== null && gpu.tf32Tflops > 0 && gpu.bf16Tflops > 0 ? gpu.tf32Tflops / gpu.bf16Tflops : 0.5;
  return bf16AutocastEffect(m, tf32Ratio, false);
}

export const noTensorCores: RankRule = (m, ctx) => {
  if (ctx?.inference) return null; // generation, evaluation: bf16 weights, not autocast (bf16Weights below)
  const step = stepNs(m);
  const p = m.precision;
  const fp32PerStep = fp32MatmulNsPerStep(m);
  const mm = matmulNs(m);
  const effect = tensorCoreEffect(m);
  if (step <= 0 || fp32PerStep === null || effect === null) return null;
  const parts = pacedParts(
    m,
    ctx?.pace,
    {
      id: 'no-tensor-cores',
      title: 'Matrix multiplies run in fp32 without tensor cores',
      ranks: [m.rank],
      evidence: [
        `fp32 (SIMT) matmul kernels: ${fmtMs(fp32PerStep)} per step ${ofWindowStep(fp32PerStep, step)}, ${fmtPct(fp32PerStep / Math.max(mm, 1))} of matmul time; tensor-core share of matmul time ${p.tensorCoreShare === null ? 'n/a' : fmtPct(p.tensorCoreShare)}`,
        ...p.topFp32Kernels.slice(0, 3).map((k) => `${kernelLabel(k.name)}: ${k.count} calls, ${fmtMs(k.totalNs)}`),
      ],
      data: { fp32MatmulNsPerStep: fp32PerStep, tensorCoreShare: p.tensorCoreShare, matmulNsPerStep: mm },
      recommendation: {
        summary: 'Run matmuls on tensor cores: bf16 autocast (best), or at least TF32 for fp32 matmuls (Ampere and newer).',
        code: [
          ...autocastLines('bfloat16'),
          '# or keep fp32 weights and allow TF32 math:',
          'torch.backends.cuda.matmul.allow_tf32 = True  # torch.set_float32_matmul_precision("high")',
          'torch.backends.cudnn.allow_tf32 = True',
        ].join('\n'),
        frameworks: BF16_AUTOCAST_SWITCHES,
      },
    },
    {
      label: 'bf16 autocast (tensor cores)',
      ops: effect.ops,
      arithmetic: effect.arithmetic,
    },
  );
  return finding(ctx?.askedHalf ? autocastNotReaching(parts, ctx.askedHalf) : parts);
};

/** bf16-weights' fix: the weights loaded in bf16, never a per-step cast of them (autocast). */
const BF16_WEIGHTS_FIX = {
  summary:
    "Load the weights in bf16 for generation: a decode step reads every weight once, so its matrix-vector products read half the bytes, and its larger matmuls run on the bf16 tensor cores. Generation keeps no fp32 master weights to protect, and bf16 keeps fp32's range (fp16 may overflow). Autocast over fp32 weights would cast them again at every step.",
  code: [
    'model = AutoModelForCausalLM.from_pretrained(name, torch_dtype=torch.bfloat16).to("cuda")',
    '# a model of your own:',
    'model = model.to(device="cuda", dtype=torch.bfloat16).eval()',
  ].join('\n'),
};

/** How bf16-weights names the loop it speaks of: decode steps, or another loop that trains nothing. */
function inferenceLoop(decode: RunContext['decode']): { steps: string; evidence: string } {
  return decode
    ? { steps: 'Decode steps', evidence: `the steps are decode steps (one new token per sequence): ${decode.decodeSteps} measured` }
    : { steps: 'Inference steps', evidence: 'the loop trains nothing: its forwards ran without gradients and it built no optimizer' };
}

/**
 * A loop that trains nothing (generation, evaluation: RunContext.inference) whose matmuls run on fp32 weights: its
 * precision lever is the weights themselves in bf16 (advice/bf16Weights.ts costs each GEMM by its bytes), not autocast,
 * which would cast every weight again at each step; no-tensor-cores and mixed-precision leave such loops to it.
 */
export const bf16Weights: RankRule = (m, ctx) => {
  if (!ctx?.inference) return null;
  const step = stepNs(m);
  // fp32 matmuls a share of the matmuls worth a finding: a Llama in bf16 keeps its rotary embedding's small matmul in
  // fp32 (2.8 us a decode step of 22 ms), which bf16 weights would not change.
  if (step <= 0 || fp32MatmulNsPerStep(m) === null) return null;
  const loop = inferenceLoop(ctx.decode);
  const effect = bf16WeightsEffect(m);
  if (effect === null) return unshapedFp32Weights(m, ctx, loop);
  const line = effect.line;
  return paced(
    m,
    ctx.pace,
    {
      id: 'bf16-weights',
      title: `${loop.steps} read fp32 weights: in bf16 their matmuls would take ${fmtMs(effect.fp32GemmNs - effect.savedNs)} instead of ${fmtMs(effect.fp32GemmNs)} a step`,
      ranks: [m.rank],
      evidence: [
        `fp32 GEMMs: ${fmtMs(effect.fp32GemmNs)} per ${ctx.decode ? 'decode ' : ''}step of ${fmtMs(step)} (the profiled window)`,
        ...(effect.memoryBoundNs > 0
          ? [
              line !== null
                ? `memory-bound GEMMs (matrix-vector products) ${fmtMs(effect.memoryBoundNs)} a step: a call here takes ${fmtMs(line.fixedNs)} + its bytes at ${(1 / line.nsPerByte / 1e3).toFixed(1)} TB/s (fitted on ${line.shapes} shapes), so half the bytes save only the second term`
                : `memory-bound GEMMs (matrix-vector products) ${fmtMs(effect.memoryBoundNs)} a step, no two sizes here to fit a line on: their bytes taken at the GPU's peak bandwidth, the rest of each call as fixed`,
            ]
          : []),
        ...(effect.fp32GemmNs > effect.memoryBoundNs
          ? [
              `compute-bound GEMMs (a prefill, a large batch) ${fmtMs(effect.fp32GemmNs - effect.memoryBoundNs)} a step: bf16 runs them on the tensor cores`,
            ]
          : []),
        loop.evidence,
      ],
      data: {
        fp32GemmNsPerStep: effect.fp32GemmNs,
        gpuNsSavedPerStep: effect.savedNs,
        fixedNsPerCall: line?.fixedNs ?? null,
        nsPerByte: line?.nsPerByte ?? null,
      },
      recommendation: BF16_WEIGHTS_FIX,
    },
    {
      label: 'bf16 weights',
      ops: effect.ops,
      arithmetic: effect.arithmetic,
    },
  );
};

/**
 * bf16 weights where the fp32 matmuls carry no shapes to cost (kernels replayed from a CUDA graph: the profiler records
 * them without the ops that launched them, as in a static-cache generate()): the same advice, its saving not
 * estimated, so that a loop that trains nothing is not left with no precision advice at all (autocast's rules leave it
 * to this one).
 */
function unshapedFp32Weights(m: TraceMetrics, ctx: RunContext, loop: { steps: string; evidence: string }) {
  const fp32 = fp32MatmulNsPerStep(m);
  if (fp32 === null) return null;
  const effect = unshapedDecodeEffect(m, fp32, ctx.decode?.batch ?? null);
  const parts = {
    id: 'bf16-weights' as const,
    title: `${loop.steps} run fp32 matmuls (${fmtMs(fp32)} a step): load the weights in bf16`,
    ranks: [m.rank],
    evidence: [
      `fp32 matmul kernels: ${fmtMs(fp32)} per step of ${fmtMs(stepNs(m))} (the profiled window), ${fmtPct(fp32 / Math.max(matmulNs(m), 1))} of matmul time`,
      effect
        ? 'their shapes were not recorded (kernels replayed from a CUDA graph come without the ops that launched them): costed as decode GEMMs of the run\'s batch'
        : 'their shapes were not recorded (kernels replayed from a CUDA graph come without the ops that launched them), and the decode batch is not known or the GEMMs are not bound by their bytes, so what bf16 saves of them is not estimated',
      loop.evidence,
    ],
    data: { fp32MatmulNsPerStep: fp32, gpuNsSavedPerStep: effect?.savedNs ?? null },
    recommendation: BF16_WEIGHTS_FIX,
  };
  if (!effect) return finding({ ...parts, estimatedGain: null });
  return paced(m, ctx.pace, parts, { label: 'bf16 weights', ops: effect.ops, arithmetic: effect.arithmetic });
}

/**
 * The GEMMs whose dimensions miss the tensor-core alignment and that run slower than the aligned GEMMs of the same
 * dtype in this very trace, and the time per step padding them would save (each at the aligned rate). A misaligned
 * GEMM with no aligned one of its dtype to compare with, or one that runs as fast, is not slow: it is left out (fp32
 * GEMMs on SIMT cores run 50 TFLOP/s misaligned against 47 aligned in a Hugging Face GPT-2). The fusion rule reads it
 * too (compile pads them).
 */
export function misalignedGemms(m: TraceMetrics): { bad: GemmShapeStat[]; badNs: number; savedNs: number; lines: string[] } {
  const nSteps = Math.max(1, m.steps.length);
  const shapes = m.gemmShapes;
  // The rate to expect once padded: what aligned GEMMs of the same dtype achieved in this very trace.
  // Like with like: a batched GEMM's (attention's scores written out, [B*H, T, T]) rate says little of a plain one's, so
  // a plain GEMM is set against the plain aligned GEMMs where the trace has any (llm.c's GPT-2 with its attention written
  // out: 489 TFLOP/s with the score matmuls, 687 without, as its SDPA twin's linear layers ran).
  const rateFor = (dtype: string | null, batched: boolean): number | null => {
    const same = shapes.filter((g) => g.misalignedDims.length === 0 && g.dtype === dtype);
    const kind = same.filter((g) => g.batch > 1 === batched);
    const good = kind.length > 0 ? kind : same;
    const flops = good.reduce((a, g) => a + g.flopsPerCall * g.calls, 0);
    const ns = good.reduce((a, g) => a + g.gpuNs, 0);
    return ns > 0 ? flops / ns : null; // flop per ns
  };
  const slow = shapes
    .filter((g) => g.misalignedDims.length > 0)
    .map((g) => ({ g, rate: rateFor(g.dtype, g.batch > 1) }))
    .filter((x): x is { g: GemmShapeStat; rate: number } => x.rate !== null && x.g.tflops * 1e3 < x.rate);
  const bad = slow.map((x) => x.g);
  const badNs = bad.reduce((a, g) => a + g.gpuNs, 0) / nSteps;
  let saved = 0;
  const lines: string[] = [];
  for (const { g, rate } of slow) {
    const perStep = g.gpuNs / nSteps;
    saved += perStep - (g.flopsPerCall * g.calls) / rate / nSteps;
    if (lines.length < 8)
      lines.push(
        `${g.op} ${g.batch > 1 ? `${g.batch}x` : ''}${g.m}x${g.n}x${g.k} (MxNxK, ${g.dtype ?? '?'}; ${g.misalignedDims.join(', ')} not a multiple of ${alignLabel(g.dtype)}): ${fmtMs(perStep)} per step at ${g.tflops.toFixed(0)} TFLOP/s vs ${(rate / 1e3).toFixed(0)} TFLOP/s for aligned GEMMs here`,
      );
  }
  return { bad, badNs, savedNs: saved, lines };
}

export const misalignedShapes: RankRule = (m, ctx) => {
  const step = stepNs(m);
  const { bad, badNs, savedNs: saved, lines } = misalignedGemms(m);
  if (step <= 0 || bad.length === 0) return null;
  if (badNs / step < MISALIGNED_MIN_SHARE) return null;
  const dims = [...new Set(bad.flatMap((g) => g.misalignedDims.map((d) => Number(d.split('=')[1]))))].sort((a, b) => b - a);
  const example = dims[0] ?? 0;
  const padded = Math.ceil(example / 64) * 64;
  return paced(
    m,
    ctx?.pace,
    {
      id: 'misaligned-shapes',
      title: 'GEMMs with dimensions that are not multiples of 8 run slower than the aligned ones',
      ranks: [m.rank],
      evidence: [
        `misaligned GEMMs slower than the aligned ones: ${fmtMs(badNs)} per step ${ofWindowStep(badNs, step)}`,
        ...lines,
      ],
      data: { misalignedGemmNsPerStep: badNs, shapes: bad.length, worstDim: example, paddedTo: padded },
      recommendation: {
        summary: `Pad the offending dimensions to a multiple of 64 (at least 8 for bf16/fp16): e.g. ${example} -> ${padded}. For a vocabulary, pad the embedding and output layer and ignore the extra logits; for hidden sizes and batch x sequence pick multiples of 64.`,
        code: [
          `vocab_size = ${padded}  # was ${example}: round up to a multiple of 64`,
          '# Hugging Face: model.resize_token_embeddings(len(tokenizer), pad_to_multiple_of=64)',
        ].join('\n'),
      },
    },
    {
      label: `dimensions padded to multiples of 64`,
      ops: [{ kind: 'gpu', work: 'misaligned-gemms', ns: badNs, factor: badNs > 0 ? Math.max(0, 1 - saved / badNs) : 1 }],
      arithmetic: `misaligned GEMMs take ${fmtMs(badNs)} per step; at the rate aligned GEMMs reach in this trace they would take ${fmtMs(badNs - saved)}: ${fmtMs(saved)} saved`,
    },
  );
};

function alignLabel(dtype: string | null): string {
  if (dtype === null || isHalfDtype(dtype)) return '8';
  return /^(float|double)$/.test(dtype) ? '4' : '8';
}

export const gpuUnderused: RankRule = (m, ctx) => {
  // Generation: more sequences per decode step is decode-batching's advice (doctor/decode.ts), without a learning rate.
  if (ctx?.decode) return null;
  const step = stepNs(m);
  const mem = m.memory[0];
  const total = mem?.deviceTotalBytes ?? m.devices[0]?.totalMemoryBytes ?? 0;
  if (step <= 0 || !mem || total <= 0) return null;
  const memShare = mem.peakReservedBytes / total;
  const lowBusy = m.gpuBusyShare < UNDERUSED_MAX_BUSY;
  const lowSm = m.smEfficiency !== null && m.smEfficiency < UNDERUSED_MAX_SM_EFFICIENCY;
  if (memShare >= UNDERUSED_MAX_MEMORY_SHARE || !(lowBusy || lowSm)) return null;
  const idle = m.perStep.idleNs;
  // A bigger batch does not help a GPU that waits for data: leave that to dataloader-bound.
  if (idle > 0 && m.perStep.idleByCauseNs.dataloader / idle > 0.5) return null;
  // A model split over GPUs idles each one while another works: that bubble grows with the batch (model-parallel-bubble).
  if (modelParallelFigures(m)) return null;
  // The batch multiple whose reserved memory stays within the card less the share kept free (gpus/memoryFit.ts).
  const scale = Math.max(1, Math.min(MAX_BATCH_SCALE, largestWithinLimit(0, Math.max(mem.peakReservedBytes, 1), MEMORY_HEADROOM * total)));
  if (scale < 2) return null;
  return paced(
    m,
    ctx?.pace,
    {
      id: 'gpu-underused',
      title: `The GPU is under-used and ${1 - memShare > 0.99 ? 'over 99%' : fmtPct(1 - memShare)} of its memory is free: a ${scale}x larger batch fits`,
      ranks: [m.rank],
      evidence: [
        `GPU busy ${fmtPct(m.gpuBusyShare)} of the step${m.smEfficiency !== null ? `; estimated SM efficiency ${fmtPct(m.smEfficiency)}` : ''}`,
        `peak reserved memory ${fmtBytes(mem.peakReservedBytes)} of ${fmtBytes(total)} (${fmtPct(memShare)} used, ${fmtPct(1 - memShare)} free)`,
      ],
      data: {
        gpuBusyShare: m.gpuBusyShare,
        smEfficiency: m.smEfficiency,
        peakReservedBytes: mem.peakReservedBytes,
        deviceTotalBytes: total,
        batchScale: scale,
      },
      recommendation: {
        summary: `Raise the per-GPU batch about ${scale}x (scale the learning rate accordingly, or keep the global batch with fewer accumulation steps). Use \`gpuwise plan --max-batch\` or \`gpuwise tune\` to find the largest batch that fits.`,
        code: `DataLoader(dataset, batch_size=${scale} * B, ...)   # lr = base_lr * ${scale} (linear scaling) or sqrt(${scale}) for Adam`,
      },
    },
    {
      label: `batch x${scale}`,
      ops: [{ kind: 'batch', k: scale }],
      arithmetic: `a ${scale}x batch fits in memory (peak reserved ${fmtBytes(mem.peakReservedBytes)} of ${fmtBytes(total)}, ${fmtPct(1 - MEMORY_HEADROOM)} kept free); per-sample work (the GPU's, the loader's batches, copies) grows ${scale}x, per-step costs (launches, syncs, the optimizer's update) do not`,
    },
  );
};
