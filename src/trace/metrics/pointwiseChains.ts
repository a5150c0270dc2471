/**
 * Chains of pointwise kernels: consecutive cast and pointwise kernels of one stream with no other kernel between them.
 * Eager PyTorch launches one kernel per op, so an activation written out in Python (GPT-2's tanh GELU: mul, pow, mul,
 * add, mul, tanh, add, mul) is a chain of eight kernels, each reading and writing the whole activation; a compiler that
 * fuses the chain reads and writes it about once. How long the chains are decides what compiling removes: GPT-2s whose
 * GELU is one kernel (nanoGPT's nn.GELU) have chains of 1-5, those that write it out (Hugging Face's, llm.c's,
 * minGPT's) spend most of their pointwise time in chains of nine and more.
 */
import { forEachOpByStart, OpKind } from '../opLog.js';
import type { TraceModel } from '../model.js';
import type { AttentionKernelStarts } from './attention.js';
import { inWindows } from './kernels.js';
import { fusableKind } from './kernelMix.js';
import type { StepWindow } from './steps.js';
import type { ChainFigures, PointwiseChains } from './types.js';

interface Chain {
  kernels: number;
  ns: number;
}

/** Chains added up over the windows: each closed chain's time, its time as one kernel, the chains and their kernels. */
class ChainTotals {
  ns = 0;
  asOneKernelNs = 0;
  chains = 0;
  kernels = 0;

  add(c: Chain, ns: number): void {
    c.kernels++;
    c.ns += ns;
  }

  close(c: Chain): void {
    if (c.kernels === 0) return;
    this.ns += c.ns;
    this.asOneKernelNs += c.ns / c.kernels;
    this.chains++;
    this.kernels += c.kernels;
    c.kernels = 0;
    c.ns = 0;
  }

  perStep(steps: number): ChainFigures {
    const n = Math.max(1, steps);
    return { ns: this.ns / n, asOneKernelNs: this.asOneKernelNs / n, chainsPerStep: this.chains / n, kernelsPerStep: this.kernels / n };
  }
}

/**
 * The chains' time per analysed step, and what it would be with each chain one kernel as long as its mean member; and
 * the same with hand-written attention's kernels (`attentionKernels`, attention.ts) taken out of each stream's
 * sequence, as F.scaled_dot_product_attention leaves the step: its matmuls and the softmax, masking and dropout kernels
 * between them go, so the chains only they split join and the chains of their own pointwise kernels go with them.
 */
export function pointwiseChains(model: TraceModel, windows: StepWindow[], attentionKernels: AttentionKernelStarts = new Map()): PointwiseChains {
  const inside = inWindows(windows);
  const names = model.names;
  const all = new ChainTotals();
  const withoutAttention = new ChainTotals();
  // Per kernel name, whether it joins a chain (its regular expressions run once a name, not once a kernel); per log,
  // each lane's stream (its key split once a lane).
  const inChain = new Int8Array(names.length).fill(-1);
  const joins = (nameId: number, category: number): boolean => {
    if (inChain[nameId] === -1) {
      const kind = fusableKind(names[nameId]!, category);
      inChain[nameId] = kind === 'castNs' || kind === 'pointwiseNs' ? 1 : 0;
    }
    return inChain[nameId] === 1;
  };
  const streams = new Map<object, string[]>();
  for (const device of new Set(model.gpu.logs.map((l) => l.device))) {
    const lanes = new Map<string, { chain: Chain; rest: Chain; attention: ReadonlySet<number> | undefined }>();
    forEachOpByStart(
      model.gpu.logs.filter((l) => l.device === device),
      model.gpu.launches,
      (op, log) => {
        if (op.kind !== OpKind.kernel || !inside(op.startNs)) return;
        // Kernels of a stream run in order whatever thread launched them (the backward's come from autograd's).
        let keys = streams.get(log);
        if (keys === undefined) streams.set(log, (keys = log.laneKeys.map((k) => k.split('|')[0]!)));
        const stream = keys[op.lane]!;
        let lane = lanes.get(stream);
        if (lane === undefined)
          lanes.set(stream, (lane = { chain: { kernels: 0, ns: 0 }, rest: { kernels: 0, ns: 0 }, attention: attentionKernels.get(`${device}|${stream}`) }));
        const pointwise = joins(op.nameId, op.category);
        if (pointwise) all.add(lane.chain, op.durNs);
        else all.close(lane.chain);
        // Attention's own kernels neither join the rest's chains nor end them.
        if (lane.attention?.has(op.startNs)) return;
        if (pointwise) withoutAttention.add(lane.rest, op.durNs);
        else withoutAttention.close(lane.rest);
      },
    );
    for (const lane of lanes.values()) {
      all.close(lane.chain);
      withoutAttention.close(lane.rest);
    }
  }
  return {
    ...all.perStep(windows.length),
    ...(attentionKernels.size > 0 ? { withoutHandWrittenAttention: withoutAttention.perStep(windows.length) } : {}),
  };
}
