/** Host-side rules: synchronisations in the loop, launch overhead. */
import { ACCUMULATE_ON_GPU_CODE } from '../keepOnGpu.js';
import { fmtMs, fmtPct, fmtWindow } from '../../util/format.js';
import type { Fix } from '../../pace/fix.js';
import { gainOf } from '../../pace/gain.js';
import { compileWarmupWords } from './fusion.js';
import { finding, isCompiled, ofWindowStep, paced, pipelineOf, type RankRule, stepNs, whenInSteps } from './rule.js';

const SYNC_MIN_SHARE = 0.01;
const LAUNCH_MIN_SHARE = 0.1;
/** Kernels shorter than this are cheaper to run than to launch (a launch costs ~5-10 us of CPU). */
const SHORT_KERNEL_NS = 20_000;
/** CUDA graphs / torch.compile remove most, not all, host overhead: we count this share of the launch idle as saved. */
const LAUNCH_RECOVERABLE = 0.7;

/**
 * host-sync's fix in a generation loop: the syncs there are the decoding loop's own (generate() reads its stopping
 * check, `unfinished_sequences.max() == 0`, on the host at every token: aten::is_nonzero), not a training loop's
 * logging, so the training fix (accumulate the loss on the GPU) would be no advice.
 */
const DECODE_SYNC_FIX = {
  summary:
    "The syncs are the decoding loop's own: at every token generate() reads its stopping check on the host (`unfinished_sequences.max() == 0`, an aten::is_nonzero), and a loop that reads each sampled token with .item() or .tolist() does the same. In a decoding loop of your own, keep the tokens on the GPU and check for the end every few tokens; with generate(), more sequences per call spread the same syncs over more tokens.",
  code: [
    '# a decoding loop of your own: tokens kept on the GPU, the end checked every 8 tokens (one sync instead of 8)',
    'for i in range(max_new_tokens):',
    '    tok = sample(model(tok, past_key_values=cache).logits[:, -1])   # no .item()',
    '    out[:, i] = tok',
    '    if i % 8 == 7 and bool((out[:, : i + 1] == eos_id).any(dim=1).all()):',
    '        break',
  ].join('\n'),
};

/**
 * host-sync's fix in another loop that trains nothing (evaluation, a generation whose steps are graph replays): its
 * syncs are results read on the host as they come, and a data-dependent `if` on a tensor (generate()'s stopping check
 * is one); there is no loss to accumulate.
 */
const INFERENCE_SYNC_FIX = {
  summary:
    "The loop trains nothing: its syncs are its results read on the host as they come (.item(), .cpu(), .tolist(), print) and data-dependent branches on tensors (an `if` on a tensor, an aten::is_nonzero: generate()'s stopping check at every token is one). Keep the results on the GPU and read them every N iterations, copy them out with non_blocking=True into pinned memory, and test a stopping condition every few iterations rather than at each.",
  code: [
    'outs.append(logits.argmax(-1))                      # stays on the GPU',
    'if i % 16 == 15:',
    '    done = torch.cat(outs).cpu()                    # one sync every 16 iterations',
  ].join('\n'),
};

/**
 * host-sync's fix where the Hugging Face Trainer runs the loop: the loop is the Trainer's, and it reads every batch's
 * loss on the host itself: with `logging_nan_inf_filter` (on by default) its inner training loop tests
 * `torch.isnan(tr_loss_step) or torch.isinf(tr_loss_step)`, two bool() of a CUDA tensor (aten::isnan, aten::isinf,
 * each an aten::is_nonzero: a sync); the filter only decides which losses are logged. The recorded Trainer GPT-2
 * (examples/realworld/runs/hf_trainer_gpt2) has these two and one more a step, transformers' packed-sequence check in
 * the mask preparation (`(packed_sequence_mask[:, -1] == 0).all()`, made when the batch has no attention_mask).
 */
const TRAINER_SYNC_SWITCH = [
  "TrainingArguments(..., logging_nan_inf_filter=False)   # the Trainer tests each batch's loss for nan/inf on the host: 2 syncs; the filter only changes the logged loss",
  "# and the third a step: give the batch an attention_mask (without one, transformers' mask preparation reads its packed-sequence check on the host)",
].join('\n');

export const hostSync: RankRule = (m, ctx) => {
  const step = stepNs(m);
  const idle = m.perStep.idleByCauseNs.hostSync;
  if (step <= 0 || idle / step < SYNC_MIN_SHARE) return null;
  const nSteps = Math.max(1, m.steps.length);
  const calls = m.examples.syncCalls.filter((c) => c.name !== 'cudaDeviceSynchronize' || c.count > nSteps);
  const culprits = m.examples.syncOps;
  // Without the syncs the CPU no longer waits and runs ahead: the drain, the refill and the launch gaps it would fill
  // go (the pipeline's serial `syncs` cost); the step becomes the larger of the GPU's work and the host's own time.
  const blocked = m.examples.syncCalls.reduce((a, c) => a + c.totalNs, 0) / nSteps;
  return paced(
    m,
    ctx?.pace,
    {
      id: 'host-sync',
      title: `Host synchronisations drain the GPU queue (${fmtMs(idle)} idle per step)`,
      ranks: [m.rank],
      evidence: [
        `GPU idle after the host blocked on the GPU: ${fmtMs(idle)} per step ${ofWindowStep(idle, step)}`,
        ...(m.perStep.syncRefillNs > 0 && m.perStep.syncDrains > 0
          ? [
              `${m.perStep.syncDrains.toFixed(1)} host waits a step found work queued and drained it (a sync call or a copy into pageable memory, the profiler's own included; a wait on an empty queue costs nothing), each followed by ${fmtMs(m.perStep.syncRefillNs / m.perStep.syncDrains)} of launch gaps until the CPU was ahead again: those gaps are the syncs' cost, not a launch bottleneck (the CPU does run ahead between syncs)`,
            ]
          : []),
        ...calls
          .slice(0, 3)
          .map((c) => `${c.name}: ${(c.count / nSteps).toFixed(1)} calls per step, ${fmtMs(c.totalNs / nSteps)} blocked per step`),
        ...culprits
          .slice(0, 3)
          .map((c) => `${c.name} forced a sync ${(c.count / nSteps).toFixed(1)} times per step, first ${whenInSteps(m, c.firstAtNs)}`),
      ],
      data: {
        hostSyncIdleNsPerStep: idle,
        syncBlockedNsPerStep: blocked,
        stepNs: step,
        syncCallsPerStep: calls.reduce((a, c) => a + c.count, 0) / nSteps,
      },
      recommendation: ctx?.decode
        ? DECODE_SYNC_FIX
        : ctx?.inference
          ? INFERENCE_SYNC_FIX
          : {
              summary:
                'Keep values on the GPU inside the loop: every .item(), .cpu(), .tolist(), print(tensor), torch.cuda.synchronize() or data-dependent shape (nonzero, boolean masks) waits for all queued work. Log every N steps, and accumulate metrics on the GPU.',
              code: [ACCUMULATE_ON_GPU_CODE, '# find hidden syncs: torch.cuda.set_sync_debug_mode("warn")'].join('\n'),
              frameworks: { transformers: TRAINER_SYNC_SWITCH },
            },
    },
    {
      label: ctx?.decode ? 'syncs out of the decoding loop (a loop of your own)' : 'syncs out of the loop',
      ops: [
        { kind: 'serial', cost: 'syncs', factor: 0 },
        { kind: 'serial', cost: 'refill', factor: 0 },
      ],
      arithmetic: `the host is blocked ${fmtMs(blocked)} per step in syncs and the GPU idles ${fmtMs(idle)} after them; without them the host runs ahead and the GPU no longer drains`,
    },
  );
};

/**
 * Launch-bound's fix in a generation loop: a static KV cache and CUDA graphs. Its code leads with generate()'s own
 * switch, so it carries no framework line (a Trainer's switch is no fix for generation).
 */
const DECODE_LAUNCH_FIX = {
  summary:
    "The decode steps are launch-bound: replay the decoding forward as CUDA graphs over a static KV cache (fixed shapes, so one graph serves every step): the step falls to the GPU's own work. Generate under torch.inference_mode() (no autograd bookkeeping per op).",
  code: [
    '# Hugging Face generate(): a static KV cache; recent transformers then compile the decoding step with CUDA graphs',
    'out = model.generate(**inputs, max_new_tokens=128, cache_implementation="static")',
    '# older transformers, or a loop of your own over a static cache:',
    'model.forward = torch.compile(model.forward, mode="reduce-overhead", fullgraph=True)',
    'with torch.inference_mode():',
    '    out = model.generate(**inputs, max_new_tokens=128, cache_implementation="static")',
  ].join('\n'),
};

/**
 * Launch-bound's fix where each step already replays a CUDA graph (a `cudaGraphLaunch` a step or more in the window: a
 * static KV cache that transformers compiles with CUDA graphs, `mode="reduce-overhead"`, a graph captured by hand): the
 * launches the GPU waits for are those left outside the graph, with the loop's own Python around them. "Use CUDA
 * graphs" would be advice the run already follows (issue 26: a static-cache generate() at batch 8 on an H200 was told
 * so, 2.27 -> 1.43 ms), and how much of the rest a graph can take depends on code the trace does not show (generate()'s
 * per-token sampling and stopping check), so no gain is claimed.
 */
const GRAPHED_LAUNCH_FIX = {
  summary:
    "Each step already replays a CUDA graph: what keeps the GPU waiting is the work left outside it (kernels launched one by one around the replay, and the loop's Python between them). Bring that work inside the captured region (in training, the optimizer step with the forward and backward), or do less of it per step (in a generation loop: sample on the GPU without a sync, check for the end every few tokens, more sequences per step).",
  code: [
    '# training: the whole step in one captured region (torch.compile over a function of forward, backward and optimizer step)',
    'train_step = torch.compile(train_step, mode="reduce-overhead")',
    '# a decoding loop of your own: the sampling captured with the forward',
    'decode_step = torch.compile(lambda ids, pos: sample(model(ids, cache_position=pos).logits[:, -1]), mode="reduce-overhead", fullgraph=True)',
  ].join('\n'),
};

export const launchBound: RankRule = (m, ctx) => {
  const step = stepNs(m);
  const idle = m.perStep.idleByCauseNs.launch;
  const l = m.launch;
  if (step <= 0 || idle / step < LAUNCH_MIN_SHARE) return null;
  const manySmall = l.medianKernelNs < SHORT_KERNEL_NS || l.cpuLaunchNs >= 0.5 * l.gpuKernelNs;
  if (!manySmall) return null;
  const saved = idle * LAUNCH_RECOVERABLE;
  const graphs = l.graphLaunchesPerStep ?? 0;
  const graphed = graphs >= 1;
  const compiled = isCompiled(m, ctx);
  const fix: Fix = {
    label: ctx?.decode ? 'static KV cache + CUDA graphs' : compiled ? 'CUDA graphs (mode="reduce-overhead")' : 'fewer launches (compile, CUDA graphs)',
    ops: [{ kind: 'host', work: 'launches', ns: saved }],
    compiles: true,
    // The decode fix's code generates under inference_mode: a loop that records autograd graphs loses them with it.
    ...(ctx?.decode ? { includes: ['decode-autograd'] } : {}),
    arithmetic: `launch idle ${fmtMs(idle)} x ${LAUNCH_RECOVERABLE} recoverable = ${fmtMs(saved)} of the host's work a step`,
  };
  const gain = graphed ? null : gainOf(pipelineOf(m, ctx?.pace), fix);
  // A model not compiled yet pays the compilation first: the steps the saving takes to pay it back.
  const warmup = !graphed && !ctx?.decode && !compiled ? compileWarmupWords(gain) : null;
  const parts = {
    id: 'launch-bound' as const,
    title: graphed
      ? 'CPU-bound around a CUDA graph: the GPU waits for the launches left outside it'
      : 'CPU-bound: the GPU waits for kernel launches',
    ranks: [m.rank],
    evidence: [
      `GPU idle because the next kernel had not been launched yet: ${fmtMs(idle)} per step ${ofWindowStep(idle, step)}`,
      `${l.kernelsPerStep.toFixed(0)} kernels per step, median kernel ${fmtMs(l.medianKernelNs)}; ${fmtPct(l.shorterThanLaunchFraction)} of kernels ran shorter than their launch call`,
      `CPU time in launch calls ${fmtMs(l.cpuLaunchNs)} vs GPU kernel time ${fmtMs(l.gpuKernelNs)} ${fmtWindow(m.steps.length)}; the GPU starts a kernel ${fmtMs(l.medianLaunchToStartNs)} after its launch returns (median)`,
      ...(ctx?.decode ? [`the steps are decode steps (one new token per sequence): ${ctx.decode.decodeSteps} measured`] : []),
      ...(graphed
        ? [
            `${graphs.toFixed(1)} CUDA graph launches per step: the step already replays captured graphs, and these launches are the ones left outside them`,
          ]
        : []),
    ],
    data: {
      launchIdleNsPerStep: idle,
      kernelsPerStep: l.kernelsPerStep,
      medianKernelNs: l.medianKernelNs,
      cpuLaunchNs: l.cpuLaunchNs,
      gpuKernelNs: l.gpuKernelNs,
      graphLaunchesPerStep: graphs,
    },
    recommendation: graphed
      ? GRAPHED_LAUNCH_FIX
      : ctx?.decode
        ? DECODE_LAUNCH_FIX
        : compiled
          ? {
              // Already compiled (Triton kernels in the trace): "compile the model" would be no advice at all.
              summary:
                'The model is already compiled, yet the CPU still cannot launch fast enough: capture the step as CUDA graphs (one launch replays the whole graph), fuse the optimizer, or raise the batch so each kernel does more work.',
              code: [
                'model = torch.compile(model, mode="reduce-overhead")   # compiled regions replayed as CUDA graphs',
                'opt = torch.optim.AdamW(model.parameters(), lr=lr, fused=True)',
              ].join('\n'),
              frameworks: { transformers: 'TrainingArguments(..., torch_compile=True, torch_compile_mode="reduce-overhead")' },
            }
          : {
              summary: `Fewer, larger kernels: compile the model (fuses elementwise ops and can capture CUDA graphs), use fused/foreach optimizers, or replay the step as a CUDA graph. A larger batch also amortises the per-kernel cost.${warmup ? ` Worth it for a run that is long enough: ${warmup}.` : ''}`,
              code: [
                'model = torch.compile(model, mode="reduce-overhead")   # CUDA graphs + fusion',
                'opt = torch.optim.AdamW(model.parameters(), lr=lr, fused=True)',
                '# or by hand: g = torch.cuda.CUDAGraph(); with torch.cuda.graph(g): out = model(static_x)',
              ].join('\n'),
              frameworks: { transformers: 'TrainingArguments(..., torch_compile=True)' },
            },
  };
  if (graphed) return finding({ ...parts, estimatedGain: null });
  return finding({ ...parts, fix, estimatedGain: gain });
};
