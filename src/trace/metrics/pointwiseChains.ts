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
import { inWindows } from './kernels.js';
import { fusableKind } from './kernelMix.js';
import type { StepWindow } from './steps.js';
import type { PointwiseChains } from './types.js';

interface Chain {
  kernels: number;
  ns: number;
}

/** The chains' time per analysed step, and what it would be with each chain one kernel as long as its mean member. */
export function pointwiseChains(model: TraceModel, windows: StepWindow[]): PointwiseChains {
  const inside = inWindows(windows);
  const names = model.names;
  const totals = { ns: 0, asOneKernelNs: 0, chains: 0, kernels: 0 };
  const close = (c: Chain) => {
    if (c.kernels === 0) return;
    totals.ns += c.ns;
    totals.asOneKernelNs += c.ns / c.kernels;
    totals.chains++;
    totals.kernels += c.kernels;
    c.kernels = 0;
    c.ns = 0;
  };
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
    const lanes = new Map<string, Chain>();
    forEachOpByStart(
      model.gpu.logs.filter((l) => l.device === device),
      model.gpu.launches,
      (op, log) => {
        if (op.kind !== OpKind.kernel || !inside(op.startNs)) return;
        // Kernels of a stream run in order whatever thread launched them (the backward's come from autograd's).
        let keys = streams.get(log);
        if (keys === undefined) streams.set(log, (keys = log.laneKeys.map((k) => k.split('|')[0]!)));
        const stream = keys[op.lane]!;
        let chain = lanes.get(stream);
        if (chain === undefined) lanes.set(stream, (chain = { kernels: 0, ns: 0 }));
        if (joins(op.nameId, op.category)) {
          chain.kernels++;
          chain.ns += op.durNs;
        } else close(chain);
      },
    );
    for (const chain of lanes.values()) close(chain);
  }
  const n = Math.max(1, windows.length);
  return { ns: totals.ns / n, asOneKernelNs: totals.asOneKernelNs / n, chainsPerStep: totals.chains / n, kernelsPerStep: totals.kernels / n };
}
