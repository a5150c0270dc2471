/**
 * Fusion: a GPU kept busy by many memory-bound kernels between the GEMMs (eager PyTorch launches one
 * kernel per elementwise op, each reading and writing its tensors from memory); torch.compile fuses them.
 */

import { gainFrom } from '../../findings/finding.js';
import type { TraceMetrics } from '../../trace/metrics/types.js';
import { fmtMs, fmtPct } from '../../util/format.js';
import { finding, matmulNs, type RankRule, stepNs } from './rule.js';

/**
 * The GPU must be busy for its kernel time to matter: below this, input or launch rules apply. Low on purpose: a
 * profiled window of a GPU-bound run shows the profiler's CPU cost as idle (nanoGPT-style GPT-2 on an H100: 55%
 * busy profiled, 97% outside the window), and compiling also cuts the kernels a CPU-bound loop must launch.
 */
const MIN_BUSY_SHARE = 0.4;
/** Fusable (non-matmul, non-communication) kernel time below this share of busy time is not worth a finding. */
const MIN_FUSABLE_SHARE = 0.25;
/**
 * Share of the fusable kernel time torch.compile removes: measured on a nanoGPT-style GPT-2 124M (bf16, batch
 * 12x1024, H100; examples/traces/scenarios/gpt2_fusion*): 26.8 ms -> 12.6 ms per step, 53%; rounded down.
 */
const FUSION_SAVED_SHARE = 0.5;
/** A convolutional net's normalisation cannot fuse into its convolutions in training: the factor was not measured there. */
const MAX_CONV_SHARE = 0.2;

export function isCompiled(m: TraceMetrics): boolean {
  return m.kernelMix.tritonKernels > 0;
}

function fusableNs(m: TraceMetrics): number {
  const k = m.perStep.kernelNsByCategory;
  return k.elementwise + k.reduction + k.optimizer + k.other;
}

export const fusion: RankRule = (m) => {
  const step = stepNs(m);
  if (step <= 0 || isCompiled(m) || m.gpuBusyShare < MIN_BUSY_SHARE) return null;
  const mm = matmulNs(m);
  if (mm <= 0 || m.perStep.kernelNsByCategory.conv > MAX_CONV_SHARE * mm) return null;
  const fusable = Math.min(fusableNs(m), m.perStep.busyNs - mm);
  if (fusable < MIN_FUSABLE_SHARE * m.perStep.busyNs) return null;
  const saved = fusable * FUSION_SAVED_SHARE;
  return finding({
    id: 'fusion',
    title: `Eager mode: ${fmtPct(fusable / m.perStep.busyNs)} of GPU time goes to unfused elementwise and normalisation kernels between the matmuls`,
    ranks: [m.rank],
    evidence: [
      `GPU busy ${fmtPct(m.gpuBusyShare)} of the step; matmul/attention kernels ${fmtMs(mm)}, elementwise ${fmtMs(m.perStep.kernelNsByCategory.elementwise)}, reductions/normalisation ${fmtMs(m.perStep.kernelNsByCategory.reduction)}, optimizer and casts ${fmtMs(m.perStep.kernelNsByCategory.optimizer)} per step`,
      `no compiler-generated (Triton) kernels in the trace: the model runs eagerly, one kernel per op, ${m.launch.kernelsPerStep.toFixed(0)} kernels per step`,
    ],
    data: { fusableNsPerStep: fusable, matmulNsPerStep: mm, kernelsPerStep: m.launch.kernelsPerStep },
    recommendation: {
      summary:
        'Compile the model: torch.compile fuses chains of elementwise ops, normalisations and casts into a few Triton kernels that read and write memory once. Try mode="max-autotune" once it works; keep the optimizer fused (AdamW(fused=True)).',
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
    estimatedGain: gainFrom(
      step,
      saved,
      `fusable kernel time ${fmtMs(fusable)} x ${FUSION_SAVED_SHARE} (what compile removed on a GPT-2 step) = ${fmtMs(saved)} saved per step`,
      { savesGpuWork: true },
    ),
  });
};
