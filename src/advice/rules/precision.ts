/**
 * Precision and memory-format rules: a step that still runs in fp32/TF32 (bf16 autocast's effect on its GPU work:
 * advice/autocast.ts), and a convolutional net under autocast fed NCHW tensors (cuDNN transposes them around every
 * convolution, and NCHW normalisation kernels in bf16 are slow); and, from doctor's model record, weights and optimizer
 * state in bf16/fp16 without an fp32 master copy.
 */

import { catalogueName } from '../../gpus/catalogue.js';
import type { TraceMetrics } from '../../trace/metrics/types.js';
import { isHalfDtype } from '../../util/dtype.js';
import { fmtInt, fmtMs } from '../../util/format.js';
import { type AutocastEffect, bf16AutocastEffect } from '../autocast.js';
import { BF16_AUTOCAST_SWITCHES } from '../framework.js';
import { autocastLines } from '../snippets.js';
import { type FindingParts, finding, fp32MatmulNsPerStep, gpuOf, matmulNs, type ModelRule, paced, pacedParts, type RankRule, type RunContext, stepNs } from './rule.js';

/** Already mixed precision: at least this share of the known-precision matmul time on 16/8-bit tensor cores. */
const HALF_MATMUL_SHARE = 0.5;
/** Below this share of the step the lever is not worth a finding. */
const MIN_SAVED_SHARE = 0.05;
/** Conv time past this share of matmul time makes a convolutional net (channels_last applies). */
const CONV_NET_SHARE = 0.2;
/**
 * NCHW normalisation and pooling kernels in bf16 once channels_last: measured on a torchvision ResNet-50
 * (batch 128, H100, examples/traces/scenarios/resnet50_amp*): 41.7 ms -> 14.9 ms per step, 64% saved.
 */
const NCHW_NORM_POOL_SAVED = 0.64;

function isConvNet(m: TraceMetrics): boolean {
  return m.perStep.kernelNsByCategory.conv > CONV_NET_SHARE * matmulNs(m) || m.kernelMix.nchwTransposeNs > 0;
}

/**
 * A run that asks for mixed precision (doctor's RunContext: accelerate's state, a launcher's or script's flag) whose
 * window still runs its matmuls in fp32/TF32: autocast does not reach them. Recommending autocast would tell the run
 * what it already asks for, so the finding says that, and its fix is to bring the forward under the autocast it has.
 * The measured evidence and the gain (what those matmuls would save on 16-bit tensor cores) stay the rule's.
 */
export function autocastNotReaching(parts: FindingParts, asked: NonNullable<RunContext['askedHalf']>): FindingParts {
  const half = asked.dtype === 'bfloat16' ? 'bf16' : 'fp16';
  return {
    ...parts,
    title: `The run asks for ${half} mixed precision, yet its matmuls run in fp32/TF32: autocast does not reach them`,
    evidence: [`${half} asked for: ${asked.evidence}`, ...parts.evidence],
    recommendation: {
      summary: `Mixed precision is asked for, but the profiled matmuls ran in fp32/TF32: autocast does not cover the model's forward. Make the forward that trains run inside it: with accelerate, call the model accelerator.prepare() returned (not the object passed to it, nor model.module); in a hand-written loop, put the forward and the loss inside torch.autocast. A .float() cast or a custom autograd.Function inside the model also keeps its matmuls in fp32.`,
      code: [
        'model, optimizer, loader = accelerator.prepare(model, optimizer, loader)   # then train this model',
        '# a hand-written loop: the forward and the loss inside autocast',
        ...autocastLines(asked.dtype),
        'loss.backward()',
      ].join('\n'),
    },
  };
}

/** mixed-precision's fix and what the finding says of it: the 16-bit matmuls' time a step, the card and its rates. */
interface MixedPrecisionFix {
  effect: AutocastEffect;
  bf16: boolean;
  convNet: boolean;
  halfNs: number;
  gpu: NonNullable<ReturnType<typeof gpuOf>>;
  rate16Tflops: number;
  tf32Ratio: number;
}

/**
 * mixed-precision's fix on the step of `m` (bf16 autocast, with channels_last for a convnet), where the step's matmuls
 * run in fp32/TF32 and no-tensor-cores does not say it; null where it would not be a finding. The fusion rule judges
 * compile on the step it leaves, as on no-tensor-cores' (a plan makes it first).
 */
export function mixedPrecisionEffect(m: TraceMetrics): MixedPrecisionFix | null {
  const step = stepNs(m);
  const p = m.precision;
  const n = Math.max(1, m.steps.length);
  const half = (p.tensorCore16Ns + p.tensorCore8Ns) / n;
  const known = half + p.tensorCoreTf32Ns / n + p.fp32Ns / n;
  if (step <= 0 || known <= 0 || half >= HALF_MATMUL_SHARE * known) return null;
  if (fp32MatmulNsPerStep(m) !== null) return null; // no-tensor-cores says it (compute.ts), with the GEMMs' own rates
  const cc = Number(m.devices[0]?.computeCapability ?? '0');
  const gpu = gpuOf(m);
  const bf16 = cc >= 8 || cc === 0;
  const rate16 = gpu ? (bf16 ? gpu.bf16Tflops : gpu.fp16Tflops) : 0;
  if (!(rate16 > 0) || gpu === null) return null;
  const convNet = isConvNet(m);
  const tf32Ratio = gpu.tf32Tflops > 0 ? gpu.tf32Tflops / rate16 : 0.5;
  // With channels_last beside autocast the layout transposes go: cuDNN runs bf16 convolutions in NHWC.
  const effect = bf16AutocastEffect(m, tf32Ratio, convNet);
  return effect.savedNs / step < MIN_SAVED_SHARE ? null : { effect, bf16, convNet, halfNs: half, gpu, rate16Tflops: rate16, tf32Ratio };
}

export const mixedPrecision: RankRule = (m, ctx) => {
  if (ctx?.inference) return null; // generation, evaluation: bf16 weights, not autocast (compute.ts bf16Weights)
  const found = mixedPrecisionEffect(m);
  if (found === null) return null;
  const { effect, bf16, convNet, halfNs: half, gpu, rate16Tflops: rate16, tf32Ratio } = found;
  const p = m.precision;
  const mix = m.kernelMix;
  const n = Math.max(1, m.steps.length);
  const tf32 = p.tensorCoreTf32Ns / n;
  const simt = p.fp32Ns / n;
  const dtype = bf16 ? 'bfloat16' : 'float16';
  const code = [
    ...autocastLines(dtype),
    'loss.backward()   # outside autocast; the optimizer keeps fp32 master weights',
    ...(bf16
      ? []
      : ['# fp16 needs loss scaling: scaler = torch.amp.GradScaler(); scaler.scale(loss).backward(); scaler.step(opt); scaler.update()']),
    ...(convNet ? ['model = model.to(memory_format=torch.channels_last)   # and x = x.to(memory_format=torch.channels_last)'] : []),
  ].join('\n');
  const parts = pacedParts(
    m,
    ctx?.pace,
    {
      id: 'mixed-precision',
      title: `The step runs in fp32/TF32: bf16 autocast${convNet ? ' with channels_last' : ''} would run its matmuls on the 16-bit tensor cores and move fewer bytes`,
      ranks: [m.rank],
      evidence: [
        `matmul time by precision per step: TF32 ${fmtMs(tf32)}, fp32 ${fmtMs(simt)}, bf16/fp16 ${fmtMs(half)} (${catalogueName(gpu.name)}: bf16 ${rate16} vs TF32 ${gpu.tf32Tflops} vs fp32 ${gpu.fp32Tflops} dense TFLOP/s)`,
        `memory-bound kernels (elementwise, normalisation, losses) in fp32: ${fmtMs(mix.memoryBoundFp32Ns)} per step; in bf16/fp16: ${fmtMs(mix.memoryBoundHalfNs)}`,
        ...(convNet && mix.nchwTransposeNs > 0
          ? [`NCHW<->NHWC layout transposes around the convolutions: ${fmtMs(mix.nchwTransposeNs)} per step`]
          : []),
      ],
      data: {
        tf32MatmulNsPerStep: tf32,
        fp32MatmulNsPerStep: simt,
        halfMatmulNsPerStep: half,
        memoryBoundFp32NsPerStep: mix.memoryBoundFp32Ns,
        nchwTransposeNsPerStep: mix.nchwTransposeNs,
        convNet,
      },
      recommendation: {
        summary: `Train under ${bf16 ? 'bf16' : 'fp16'} autocast (mixed precision): matmuls and convolutions run at the ${bf16 ? 'bf16' : 'fp16'} tensor-core rate (${(1 / tf32Ratio).toFixed(1)}x TF32 here) and activations take half the memory traffic${convNet ? "; put the model and its input in channels_last, or cuDNN transposes every bf16 convolution's input and output" : ''}.`,
        code,
        frameworks: BF16_AUTOCAST_SWITCHES,
      },
    },
    {
      label: `${bf16 ? 'bf16' : 'fp16'} autocast${convNet ? ' + channels_last' : ''}`,
      ops: effect.ops,
      arithmetic: effect.arithmetic,
    },
  );
  return finding(ctx?.askedHalf ? autocastNotReaching(parts, ctx.askedHalf) : parts);
};

export const channelsLast: RankRule = (m, ctx) => {
  const step = stepNs(m);
  const mix = m.kernelMix;
  const n = Math.max(1, m.steps.length);
  const conv = m.perStep.kernelNsByCategory.conv;
  if (step <= 0 || conv <= 0 || !isConvNet(m)) return null;
  // Under autocast only: in fp32 the mixed-precision finding already carries channels_last.
  if (m.precision.tensorCore16Ns / n < 0.5 * conv) return null;
  const nchwHalf = Math.min(mix.nchwNormPoolNs, mix.halfNormPoolNs);
  const saved = mix.nchwTransposeNs + NCHW_NORM_POOL_SAVED * nchwHalf;
  if (saved / step < MIN_SAVED_SHARE) return null;
  return paced(
    m,
    ctx?.pace,
    {
      id: 'channels-last',
      title: `A convolutional net under autocast runs in NCHW: cuDNN transposes around every convolution (${fmtMs(mix.nchwTransposeNs)} of transposes a step)`,
      ranks: [m.rank],
      evidence: [
        `nchwToNhwc / nhwcToNchw transposes: ${fmtMs(mix.nchwTransposeNs)} per step (convolutions themselves: ${fmtMs(conv)})`,
        `NCHW normalisation and pooling kernels: ${fmtMs(mix.nchwNormPoolNs)} per step; channels_last ones: ${fmtMs(mix.channelsLastNormPoolNs)}`,
      ],
      data: { nchwTransposeNsPerStep: mix.nchwTransposeNs, nchwNormPoolNsPerStep: mix.nchwNormPoolNs, convNsPerStep: conv },
      recommendation: {
        summary:
          'Convert the model and every input batch to channels_last (NHWC), the layout bf16/fp16 tensor-core convolutions run in; normalisation and pooling then use their channels_last kernels too.',
        code: [
          'model = model.to(memory_format=torch.channels_last)',
          'x = x.to(device, memory_format=torch.channels_last, non_blocking=True)',
        ].join('\n'),
      },
    },
    {
      label: 'channels_last',
      ops: [
        { kind: 'gpu', work: 'nchw-transposes', ns: mix.nchwTransposeNs, factor: 0 },
        { kind: 'gpu', work: 'nchw-norm-pool', ns: nchwHalf, factor: 1 - NCHW_NORM_POOL_SAVED },
      ],
      arithmetic: `transposes ${fmtMs(mix.nchwTransposeNs)} removed + NCHW bf16 normalisation/pooling ${fmtMs(nchwHalf)} x ${NCHW_NORM_POOL_SAVED} (measured on ResNet-50) = ${fmtMs(saved)} of GPU work saved per step`,
    },
  );
};

/** fp16 kernels in a training step and no GradScaler kernels: small gradients underflow to zero in fp16. */
export const fp16WithoutScaler: RankRule = (m) => {
  const mix = m.kernelMix;
  // Training only (an optimizer ran): inference in fp16 needs no loss scaling.
  if (mix.fp16Kernels < 1 || mix.gradScalerKernels > 0 || m.perStep.kernelNsByCategory.optimizer <= 0) return null;
  const bf16 = Number(m.devices[0]?.computeCapability ?? '0') >= 8;
  return finding({
    id: 'fp16-without-grad-scaler',
    title: "fp16 training without a GradScaler: gradients below fp16's range become zero",
    ranks: [m.rank],
    evidence: [
      `${mix.fp16Kernels.toFixed(0)} fp16 (c10::Half) kernels per step and none of the GradScaler's (unscale / update-scale) kernels`,
    ],
    data: { fp16KernelsPerStep: mix.fp16Kernels, gradScalerKernelsPerStep: mix.gradScalerKernels },
    recommendation: {
      summary: bf16
        ? "This GPU has bf16, which has fp32's range and needs no loss scaling: autocast to bfloat16. To stay in fp16, scale the loss with torch.amp.GradScaler."
        : 'Scale the loss with torch.amp.GradScaler so small gradients survive in fp16.',
      code: [
        'scaler = torch.amp.GradScaler("cuda")',
        ...autocastLines('float16'),
        'scaler.scale(loss).backward()',
        'scaler.step(opt); scaler.update()',
      ].join('\n'),
      frameworks: {
        transformers: 'TrainingArguments(..., fp16=True)  # the Trainer scales the loss itself',
        lightning: 'Trainer(..., precision="16-mixed")',
        accelerate: 'accelerate launch --mixed_precision fp16 train.py',
      },
    },
    estimatedGain: null,
  });
};

/** Half-precision weights and optimizer state past this share of the parameters: no fp32 master copy exists. */
const HALF_WEIGHTS_MIN_SHARE = 0.9;

/**
 * The model's weights and the optimizer's state are bf16/fp16 (`model.to(torch.bfloat16)` before the optimizer):
 * updates smaller than the weight's last bit (lr x update below about 1/256 of the weight in bf16) are lost, so
 * training stalls or drifts. Autocast keeps fp32 master weights and runs the matmuls in bf16 all the same. No time
 * gain: a correctness word (severity info). Doctor's: it reads the probe's model record, not a window.
 */
export const halfMasterWeights: ModelRule = (model) => {
  const opt = model.optimizer;
  if (!opt) return null;
  let half = 0;
  let all = 0;
  for (const m of model.modules)
    for (const [dtype, n] of Object.entries(m.dtypes)) {
      all += n;
      if (isHalfDtype(dtype)) half += n;
    }
  const stateHalf = Object.entries(opt.stateDtypes).reduce((a, [d, b]) => a + (isHalfDtype(d) ? b : 0), 0);
  const stateAll = Object.values(opt.stateDtypes).reduce((a, b) => a + b, 0);
  // An optimizer that keeps fp32 state for half weights (a mixed-precision optimizer) holds the master copy itself.
  if (all === 0 || half / all < HALF_WEIGHTS_MIN_SHARE || (stateAll > 0 && stateHalf / stateAll < HALF_WEIGHTS_MIN_SHARE)) return null;
  const dtype = Object.entries(model.modules[0]?.dtypes ?? {}).find(([d]) => isHalfDtype(d))?.[0] ?? 'bfloat16';
  return finding({
    id: 'half-master-weights',
    title: `The weights and ${opt.class}'s state are ${dtype}: no fp32 master copy, small updates are lost`,
    ranks: [model.rank ?? 0],
    evidence: [
      `${((half / all) * 100).toFixed(0)}% of ${fmtInt(all)} parameters in bf16/fp16; ${opt.class} state ${stateAll > 0 ? `${((stateHalf / stateAll) * 100).toFixed(0)}% bf16/fp16` : 'not created yet'}`,
    ],
    data: { halfParamShare: half / all, optimizer: opt.class },
    recommendation: {
      summary:
        'Keep the parameters and the optimizer state in fp32 and run the forward under bf16 autocast: the matmuls still run on bf16 tensor cores, and the optimizer adds each update to an fp32 weight. (Pure-bf16 training needs an optimizer that keeps fp32 state or compensates the rounding.)',
      code: [
        'model = Model().cuda()                      # fp32 weights: no model.to(torch.bfloat16)',
        'opt = torch.optim.AdamW(model.parameters(), lr=lr, fused=True)',
        ...autocastLines('bfloat16'),
      ].join('\n'),
      frameworks: {
        transformers: 'load the model in fp32 and pass TrainingArguments(..., bf16=True)',
        lightning: 'Trainer(..., precision="bf16-mixed")  # not "bf16-true"',
      },
    },
    estimatedGain: null,
  });
};
