/**
 * Memory findings: the out-of-memory explanation and the patterns that waste
 * memory, each with its evidence and the change to make. Thresholds are
 * documented in docs/memory.md; nothing keys on a particular model. Each finding is built by the one factory
 * (findings/finding.ts) from the bytes it frees (`memoryGain`): high only when it lets a run that ran out of memory
 * go on, else medium or low by the share of the peak it frees. A snapshot has no rank: `ranks` is empty.
 */
import { ACCUMULATE_ON_GPU_CODE, ACCUMULATE_ON_GPU_SUMMARY } from '../advice/keepOnGpu.js';
import type { Category, Phases } from './categorize.js';
import { hasPythonFrame, sourceLineOf } from './frames.js';
import type { Allocation, Replay } from './replay.js';
import type { Trace } from './snapshot.js';
import type { MemoryReport } from './reportTypes.js';
import { type Finding, finding, type MemoryGain, memoryGainFrom } from '../findings/finding.js';
import { fmtBytes } from '../util/format.js';

export type { Finding };

export interface FindingInput {
  report: MemoryReport;
  replay: Replay;
  phases: Phases;
  batchSize: number | null;
}

/** Reserved-but-unallocated share of reserved memory (at the reserved peak) that counts as fragmentation. */
export const FRAGMENTATION_SHARE = 0.25;
export const FRAGMENTATION_MIN_BYTES = 1 << 30;
/** Bytes kept from earlier steps that make a finding: this share of the peak, and at least 64 MiB. */
export const KEPT_SHARE = 0.02;
export const KEPT_MIN_BYTES = 64 << 20;

export function findingsFor(inp: FindingInput): Finding[] {
  const out: Finding[] = [];
  const { report } = inp;
  if (report.oom) out.push(oomFinding(inp));
  const at = report.oom ? report.oom.entryIndex : report.peak.entryIndex;
  const kept = keptAcrossSteps(inp, at);
  if (kept) out.push(kept);
  const graphs = forwardGraphsWithoutBackward(inp, at);
  if (graphs) out.push(graphs);
  const grads = gradientsDuringForward(inp, at);
  if (grads) out.push(grads);
  if (!report.oom) {
    const frag = fragmentation(inp);
    if (frag) out.push(frag);
  }
  return out;
}

const EXPANDABLE = 'PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True python train.py';

function oomFinding(inp: FindingInput): Finding {
  const oom = inp.report.oom!;
  const req = oom.requestedBytes;
  const free = oom.deviceFreeBytes;
  const ev: string[] = [
    `A request for ${fmtBytes(req)} failed during ${oom.phase === 'unknown' ? 'an unknown phase' : oom.phase}.`,
    `The allocator held ${fmtBytes(oom.reservedBytes)} reserved, ${fmtBytes(oom.allocatedBytes)} of it allocated; ${fmtBytes(oom.reservedUnallocatedBytes)} was cached but free.`,
  ];
  // More free on the device than was asked for: the allocator stopped at a per-process cap, not at the device's end.
  const capped = free !== null && free >= req;
  if (capped) {
    ev.push(
      `The device still had ${fmtBytes(free)} free, more than the request: the process hit its own limit (torch.cuda.set_per_process_memory_fraction), so only cached memory could have served it.`,
    );
  } else if (free !== null) ev.push(`The driver reported ${fmtBytes(free)} free on the device.`);
  const usableFree = capped ? 0 : (free ?? 0);
  if (oom.largestFreeBlockBytes !== null) ev.push(`The largest cached free block was ${fmtBytes(oom.largestFreeBlockBytes)}.`);
  const cats = oom.live.byCategory;
  if (cats.length > 0) ev.push(`Live at the failure: ${cats.map((c) => `${c.category.replace('_', ' ')} ${fmtBytes(c.bytes)}`).join(', ')}.`);
  const topSrc = oom.live.bySource[0];
  if (topSrc) ev.push(`Largest source: ${topSrc.shortSource} (${topSrc.function}) holds ${fmtBytes(topSrc.bytes)} in ${topSrc.allocations} allocations.`);

  const data: Finding['data'] = {
    requestedBytes: req,
    allocatedBytes: oom.allocatedBytes,
    reservedBytes: oom.reservedBytes,
    deviceFreeBytes: free,
    reservedUnallocatedBytes: oom.reservedUnallocatedBytes,
    largestFreeBlockBytes: oom.largestFreeBlockBytes,
    capped,
  };
  // Fragmentation blocked it when cached free bytes plus usable device bytes would have covered the request
  // but no single cached block could: expandable segments let the free pieces be used.
  const fragmented = (free !== null || oom.largestFreeBlockBytes !== null) && req <= usableFree + oom.reservedUnallocatedBytes && req > usableFree && req > (oom.largestFreeBlockBytes ?? 0);
  if (fragmented) {
    data.cause = 'fragmentation';
    return finding({
      id: 'oom-fragmentation',
      title: `Out of memory caused by fragmentation: ${fmtBytes(oom.reservedUnallocatedBytes)} cached free, but no piece of ${fmtBytes(req)}`,
      evidence: ev,
      data,
      recommendation: {
        summary: 'The free memory exists but is split into cached blocks smaller than the request. Let the allocator map memory into growing segments so free pieces can be reused.',
        code: EXPANDABLE,
      },
      ranks: [],
      estimatedGain: null,
      memoryGain: memoryGainFrom(
        oom.reservedUnallocatedBytes,
        oom.reservedBytes,
        true,
        `${fmtBytes(oom.reservedUnallocatedBytes)} cached but free covers the ${fmtBytes(req)} request once free pieces can be joined`,
      ),
    });
  }
  // A known category leads when it is there (uncategorised memory is often small and mixed); but when tensors made
  // outside forward, backward and the optimizer hold most of what is live (a notebook's list of 64 GiB tensors on an
  // H100), naming the optimizer's 1 MiB would send the user the wrong way.
  const liveTotal = cats.reduce((a, c) => a + c.bytes, 0);
  const first = cats[0];
  const dominant =
    first?.category === 'other' && first.bytes > 0.5 * liveTotal ? 'other' : ((cats.find((c) => c.category !== 'other') ?? first)?.category ?? 'other');
  data.cause = dominant;
  const capacity = oom.reservedBytes + usableFree;
  const rec = recommendationFor(dominant, inp, capacity, data);
  const dominantBytes = cats.find((c) => c.category === dominant)?.bytes ?? 0;
  return finding({
    id: `oom-${dominant.replace('_', '-')}`,
    title: `Out of memory: ${fmtBytes(req)} requested with ${fmtBytes(oom.allocatedBytes)} allocated; ${dominant === 'other' ? 'tensors made outside forward, backward and the optimizer (your code\'s) hold the most' : `${dominant.replace('_', ' ')} hold the most`}`,
    evidence: [...ev, ...rec.evidence],
    data,
    recommendation: rec.recommendation,
    ranks: [],
    estimatedGain: null,
    // The run failed: reducing what holds the most is what lets it go on (the request must fit).
    memoryGain: memoryGainFrom(
      Math.max(dominantBytes, req),
      oom.allocatedBytes,
      true,
      `${dominant.replace('_', ' ')} hold ${fmtBytes(dominantBytes)} of ${fmtBytes(oom.allocatedBytes)} allocated at the failure; the failed request was ${fmtBytes(req)}`,
    ),
  });
}

/**
 * Bytes that freeing live tensors must give back for the failed request to fit: the request less the larger of the
 * largest cached free block and the device's usable free memory (approximate: freed blocks may not be adjacent).
 * null without an out-of-memory failure.
 */
function shortfallBytes(inp: FindingInput): number | null {
  const oom = inp.report.oom;
  if (!oom) return null;
  const free = oom.deviceFreeBytes;
  const usableFree = free !== null && free >= oom.requestedBytes ? 0 : (free ?? 0);
  return Math.max(0, oom.requestedBytes - Math.max(usableFree, oom.largestFreeBlockBytes ?? 0));
}

/** The gain of freeing `bytes` of live memory: a share of the peak (or of the allocated bytes at the failure). */
function liveBytesGain(inp: FindingInput, bytes: number, ofBytes: number, what: string): MemoryGain | null {
  const short = shortfallBytes(inp);
  const unblocks = short !== null && bytes >= short;
  const arithmetic =
    short === null
      ? `${fmtBytes(bytes)} of ${what} out of ${fmtBytes(ofBytes)} allocated at the peak`
      : `${fmtBytes(bytes)} of ${what} out of ${fmtBytes(ofBytes)} allocated at the failure; the request lacked ${fmtBytes(short)}${unblocks ? ': freeing them lets it fit' : ''}`;
  return memoryGainFrom(bytes, ofBytes, unblocks, arithmetic);
}

function recommendationFor(
  cat: Category,
  inp: FindingInput,
  capacityBytes: number,
  data: Finding['data'],
): { evidence: string[]; recommendation: Finding['recommendation'] } {
  const oom = inp.report.oom!;
  const liveOf = (c: Category): number => oom.live.byCategory.find((x) => x.category === c)?.bytes ?? 0;
  switch (cat) {
    case 'activations': {
      const act = liveOf('activations');
      const measured = activationPeakOfCompletedSteps(inp, oom.entryIndex);
      // The forward was cut short, so what was live plus the failed request is a lower bound on a step's need.
      const needed = Math.max(act + oom.requestedBytes, measured);
      const other = oom.allocatedBytes - act;
      const available = capacityBytes - other;
      data.activationBytesNeeded = needed;
      data.activationNeedIsLowerBound = measured < act + oom.requestedBytes;
      const evidence = [
        `Activations need at least ${fmtBytes(needed)} for the batch${measured >= act + oom.requestedBytes ? ' (measured over a completed step)' : ' (the forward was cut short: a lower bound)'}; everything else holds ${fmtBytes(other)} of the ${fmtBytes(capacityBytes)} this process could reach.`,
      ];
      let batchLine = 'Pass `--batch N` (the batch size of the run) to get the batch that fits.';
      if (inp.batchSize !== null && needed > 0) {
        const perSample = needed / inp.batchSize;
        const fit = Math.max(0, Math.floor(available / perSample));
        data.perSampleActivationBytes = Math.round(perSample);
        data.batchThatFits = Math.min(fit, inp.batchSize - 1);
        batchLine = `At ${fmtBytes(perSample)} of activations per sample, a batch of at most ${Math.min(fit, inp.batchSize - 1)} fits (batch ${inp.batchSize} failed).`;
        evidence.push(batchLine);
      }
      return {
        evidence,
        recommendation: {
          summary: `Activations saved for backward dominate. Recompute them in backward (activation checkpointing), or lower the batch and keep the effective batch with gradient accumulation. ${batchLine}`,
          code: 'model.gradient_checkpointing_enable()  # Hugging Face models\n# or per block: torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)',
        },
      };
    }
    case 'optimizer_state':
      return {
        evidence: [`Optimizer state holds ${fmtBytes(liveOf('optimizer_state'))}, parameters ${fmtBytes(liveOf('parameters'))}.`],
        recommendation: {
          summary:
            'Optimizer state dominates. Use a fused optimizer (no per-step temporaries), keep the state in bf16 or 8 bits, or shard it across GPUs (FSDP / ZeRO).',
          code: 'torch.optim.AdamW(model.parameters(), lr=lr, fused=True)\n# 8-bit state: bitsandbytes.optim.AdamW8bit(model.parameters(), lr=lr)\n# sharded: torch.distributed.fsdp.fully_shard(model)',
        },
      };
    case 'gradients':
      return {
        evidence: [`Gradients hold ${fmtBytes(liveOf('gradients'))}.`],
        recommendation: {
          summary: 'Gradients dominate. Free them between steps instead of zero-filling, and shard them across GPUs if they still do not fit.',
          code: 'optimizer.zero_grad(set_to_none=True)',
        },
      };
    case 'parameters':
      return {
        evidence: [`Parameters hold ${fmtBytes(liveOf('parameters'))}.`],
        recommendation: {
          summary: 'The weights alone take most of the memory. Keep them in bf16, or shard the model across GPUs.',
          code: 'model = model.to(torch.bfloat16)\n# or: torch.distributed.fsdp.fully_shard(model)',
        },
      };
    case 'autograd_temporaries':
      return {
        evidence: [`Temporaries of the backward pass hold ${fmtBytes(liveOf('autograd_temporaries'))}.`],
        recommendation: {
          summary: 'Backward temporaries dominate: lower the batch, or checkpoint activations so backward works on smaller pieces.',
          code: 'model.gradient_checkpointing_enable()',
        },
      };
    default:
      return {
        evidence: [],
        recommendation: {
          summary: 'Memory not made by forward, backward or the optimizer dominates (inputs, losses, tensors kept by your code): see the largest sources.',
          code: `${ACCUMULATE_ON_GPU_CODE}\n# and \`del\` large tensors you no longer need`,
        },
      };
  }
}

/** Peak of live activation bytes within steps that finished (a backward ran after their forward) before `end`. */
function activationPeakOfCompletedSteps(inp: FindingInput, end: number): number {
  const { replay: r, phases } = inp;
  let lastBackward = -1;
  for (let i = end; i >= 0; i--) {
    if (phases.phase[i] === 'backward') {
      lastBackward = i;
      break;
    }
  }
  if (lastBackward < 0) return 0;
  const delta = new Float64Array(lastBackward + 2);
  let base = 0;
  for (const a of r.allocations) {
    if (a.category !== 'activations') continue;
    if (a.allocIndex < 0) base += a.blockBytes;
    else if (a.allocIndex <= lastBackward) delta[a.allocIndex]! += a.blockBytes;
    if (a.freeIndex <= lastBackward) delta[a.freeIndex]! -= a.blockBytes;
  }
  let cur = base;
  let peak = base;
  for (let i = 0; i <= lastBackward; i++) {
    cur += delta[i]!;
    if (cur > peak) peak = cur;
  }
  return peak;
}

function liveAtIndex(inp: FindingInput, at: number): Allocation[] {
  return inp.replay.allocations.filter((a) => a.allocIndex <= at && a.freeIndex > at);
}

function keptAcrossSteps(inp: FindingInput, at: number): Finding | null {
  if (at < 0) return null;
  const step = inp.phases.step[at]!;
  if (step === 0) return null;
  let bytes = 0;
  let count = 0;
  const sources = new Map<string, number>();
  for (const a of liveAtIndex(inp, at)) {
    const c = a.category;
    if (a.allocIndex < 0 || inp.phases.step[a.allocIndex]! >= step) continue;
    if (c !== 'activations' && c !== 'autograd_temporaries' && c !== 'other') continue;
    bytes += a.blockBytes;
    count++;
    const key = sourceLineOf(a.frames).key;
    sources.set(key, (sources.get(key) ?? 0) + a.blockBytes);
  }
  const ref = inp.report.oom ? inp.report.oom.allocatedBytes : inp.report.totals.peakAllocatedBytes;
  if (bytes < KEPT_MIN_BYTES || bytes < KEPT_SHARE * ref) return null;
  const top = [...sources].sort((x, y) => y[1] - x[1]).slice(0, 3);
  return finding({
    id: 'kept-across-steps',
    title: `${fmtBytes(bytes)} made during earlier steps is still alive in step ${step + 1}`,
    evidence: [
      `${count} activation, temporary or other allocations from before step ${step + 1} are live ${inp.report.oom ? 'at the failure' : 'at the peak'}.`,
      ...top.map(([k, b]) => `${k}: ${fmtBytes(b)}`),
    ],
    data: { bytes, allocations: count, step: step + 1 },
    recommendation: {
      summary: `Something keeps tensors of a previous iteration alive (a loss kept for logging, outputs stored in a list, a reference held across the loop). Detach what you keep: ${ACCUMULATE_ON_GPU_SUMMARY}; move kept outputs to the CPU.`,
      code: `${ACCUMULATE_ON_GPU_CODE}\nkept.append(out.detach().cpu())  # not: kept.append(out)`,
    },
    ranks: [],
    estimatedGain: null,
    memoryGain: liveBytesGain(inp, bytes, ref, 'tensors from earlier steps'),
  });
}

/** Forward passes whose activations are alive together, with no backward between them, that make a finding. */
export const GRAPHS_MIN_PASSES = 3;

/**
 * Activations of several forward passes alive with no backward between them: evaluation under autograd, or kept graphs.
 * A forward pass ends at the first entry from code outside the model (the next batch, a loss) or from another phase.
 */
function forwardGraphsWithoutBackward(inp: FindingInput, at: number): Finding | null {
  if (at < 0) return null;
  const { phase } = inp.phases;
  const trace = inp.replay.trace;
  const runOf = new Int32Array(at + 1);
  const backwardBefore: boolean[] = [false];
  let run = 0;
  let inForward = false;
  for (let i = 0; i <= at; i++) {
    const p = phase[i]!;
    if (p === 'forward') {
      if (!inForward) {
        run++;
        backwardBefore[run] = false;
      }
      inForward = true;
    } else if (p !== 'unknown' || isUserAllocOrFree(trace, i)) {
      inForward = false;
      if (p === 'backward') backwardBefore[run + 1] = true;
    }
    runOf[i] = run;
  }
  const perRun = new Map<number, number>();
  const freedInBackward = new Map<number, number>();
  for (const a of liveAtIndex(inp, at)) {
    if (a.allocIndex < 0 || a.category !== 'activations') continue;
    const rr = runOf[a.allocIndex]!;
    perRun.set(rr, (perRun.get(rr) ?? 0) + a.blockBytes);
    if (a.freeIndex < phase.length && phase[a.freeIndex] === 'backward') freedInBackward.set(rr, (freedInBackward.get(rr) ?? 0) + a.blockBytes);
  }
  // A pass whose activations a later backward frees (most of their bytes) had its backward: the one running at the peak
  // consumes the pass before it, and a GAN keeps its generator's graph while the discriminator runs, for the
  // generator's own backward (a DCGAN on an H200 was told "5 forward passes with no backward" for that).
  const runs = [...perRun.keys()].filter((k) => (freedInBackward.get(k) ?? 0) < 0.5 * perRun.get(k)!).sort((x, y) => x - y);
  if (runs.length < GRAPHS_MIN_PASSES) return null;
  // Only runs that no backward separates count: a backward consumes the graph of the forward before it.
  for (let k = runs[0]! + 1; k <= runs[runs.length - 1]!; k++) if (backwardBefore[k]) return null;
  const olderBytes = runs.slice(0, -1).reduce((s, k) => s + perRun.get(k)!, 0);
  if (olderBytes < KEPT_MIN_BYTES) return null;
  const ref = inp.report.oom ? inp.report.oom.allocatedBytes : inp.report.totals.peakAllocatedBytes;
  return finding({
    id: 'forward-without-backward',
    title: `Activations of ${runs.length} forward passes are alive with no backward between them (${fmtBytes(olderBytes)} from the earlier passes)`,
    evidence: [`${runs.length} separate forward passes each still hold activations ${inp.report.oom ? 'at the failure' : 'at the peak'}, and no backward pass ran between them.`],
    data: { forwardPasses: runs.length, olderBytes },
    recommendation: {
      summary: 'Forward passes that are not followed by backward keep their autograd graphs while their outputs live. Run evaluation without autograd, and detach outputs you keep.',
      code: 'model.eval()\nwith torch.inference_mode():\n    out = model(batch)',
    },
    ranks: [],
    estimatedGain: null,
    memoryGain: liveBytesGain(inp, olderBytes, ref, 'activations of the earlier forward passes'),
  });
}

/** An allocation or free made by code outside the model and outside torch (the next batch, a loss): it ends a forward pass. */
function isUserAllocOrFree(trace: Trace, i: number): boolean {
  const act = trace.action(i);
  return (act === 'alloc' || act === 'free_requested') && hasPythonFrame(trace.frames[i]!);
}

function gradientsDuringForward(inp: FindingInput, at: number): Finding | null {
  if (at < 0) return null;
  let p = 'unknown';
  for (let i = at; i >= 0 && p === 'unknown'; i--) p = inp.phases.phase[i]!;
  if (p !== 'forward') return null;
  let bytes = 0;
  for (const a of liveAtIndex(inp, at)) if (a.category === 'gradients') bytes += a.blockBytes;
  const ref = inp.report.oom ? inp.report.oom.allocatedBytes : inp.report.totals.peakAllocatedBytes;
  if (bytes < KEPT_MIN_BYTES || bytes < 0.1 * ref) return null;
  return finding({
    id: 'gradients-during-forward',
    title: `${fmtBytes(bytes)} of gradients is alive during the forward pass`,
    evidence: [`Gradients from the previous backward are still allocated ${inp.report.oom ? 'at the failure' : 'at the peak'}, which is in a forward pass.`],
    data: { bytes },
    recommendation: {
      summary: 'Unless you accumulate gradients over micro-batches, free them before the forward pass instead of keeping (or zero-filling) them.',
      code: 'optimizer.zero_grad(set_to_none=True)  # before the forward pass',
    },
    ranks: [],
    estimatedGain: null,
    memoryGain: liveBytesGain(inp, bytes, ref, 'gradients'),
  });
}

function fragmentation(inp: FindingInput): Finding | null {
  const r = inp.replay;
  const n = r.trace.length;
  if (n === 0) return null;
  // Among the moments at the reserved peak, the one with the most allocated: the waste the peak could not avoid.
  let idx = 0;
  for (let i = 1; i < n; i++) {
    const rs = r.reservedBytes[i]!;
    const best = r.reservedBytes[idx]!;
    if (rs > best || (rs === best && r.allocatedBytes[i]! > r.allocatedBytes[idx]!)) idx = i;
  }
  const reserved = r.reservedBytes[idx]!;
  const unallocated = reserved - r.allocatedBytes[idx]!;
  if (unallocated < FRAGMENTATION_MIN_BYTES || unallocated < FRAGMENTATION_SHARE * reserved) return null;
  return finding({
    id: 'fragmentation',
    title: `${fmtBytes(unallocated)} of ${fmtBytes(reserved)} reserved was cached but unallocated at the reserved peak`,
    evidence: [`At the reserved peak the caching allocator held ${fmtBytes(unallocated)} in free blocks it could not hand out or return.`],
    data: { reservedBytes: reserved, reservedUnallocatedBytes: unallocated },
    recommendation: {
      summary: 'Segments of fixed size leave free pieces that later, larger requests cannot use. Expandable segments grow in place and cut this waste.',
      code: EXPANDABLE,
    },
    ranks: [],
    estimatedGain: null,
    memoryGain: memoryGainFrom(unallocated, reserved, false, `${fmtBytes(unallocated)} cached but unallocated of ${fmtBytes(reserved)} reserved`),
  });
}
