/**
 * What each allocation is: parameters, gradients, optimizer state,
 * activations, autograd temporaries or other.
 *
 * A `category` written by the producer wins. Otherwise the allocation's stack
 * says in which phase it was made (frames.ts), and its lifetime says whether
 * it outlived that phase:
 * - setup stack (module construction, `.to()`/`.cuda()`) that outlives setup: parameters;
 * - forward stack: activations;
 * - backward (autograd engine; or no Python frame while backward runs) and
 *   outliving the backward pass: gradients; freed within it: autograd temporaries;
 * - `torch/optim` stack outliving the step: optimizer state;
 * - anything else: other (inputs, losses, optimizer temporaries, unknown stacks).
 * Allocations made before the history starts only have their free stack: a
 * free in `zero_grad` marks a gradient.
 */
import { type StackPhase, hasPythonFrame, isGradAccumulation, phaseOf } from './frames.js';
import type { Allocation, Category } from './allocation.js';
import type { Replay } from './replay.js';

export { CATEGORIES, type Category } from './allocation.js';


/** Phase of each entry after filling the backward thread's frameless entries. */
export interface Phases {
  phase: StackPhase[];
  /** For each entry, the index of the next entry in a different known phase (`trace.length` if none). */
  nextChange: Int32Array;
  /** Optimizer steps completed before each entry (0-based step number of the entry). */
  step: Int32Array;
}

export function phases(r: Replay): Phases {
  const t = r.trace;
  const n = t.length;
  const phase: StackPhase[] = new Array(n);
  let last: StackPhase = 'unknown';
  for (let i = 0; i < n; i++) {
    const act = t.action(i);
    const frames = t.frames[i]!;
    const allocOrFree = act === 'alloc' || act === 'free_requested';
    let p: StackPhase = allocOrFree ? phaseOf(frames) : 'unknown';
    // The autograd engine runs backward on its own thread, which has no Python frames in `stacks="python"` histories.
    if (p === 'unknown' && allocOrFree && last === 'backward' && !hasPythonFrame(frames)) p = 'backward';
    phase[i] = p;
    if (p !== 'unknown') last = p;
  }
  // Backwards: the nearest known entry after i, and where the run of its phase ends.
  const nextChange = new Int32Array(n);
  let nextKnown = n;
  let nextPhase: StackPhase = 'unknown';
  let runEnd = n;
  for (let i = n - 1; i >= 0; i--) {
    const p = phase[i]!;
    if (p === 'unknown') {
      nextChange[i] = nextKnown;
      continue;
    }
    if (p !== nextPhase) runEnd = nextKnown;
    nextChange[i] = runEnd;
    nextKnown = i;
    nextPhase = p;
  }
  const step = new Int32Array(n);
  let s = 0;
  let inOpt = false;
  for (let i = 0; i < n; i++) {
    const p = phase[i]!;
    if (inOpt && p !== 'optimizer' && p !== 'unknown') {
      s++;
      inOpt = false;
    }
    if (p === 'optimizer') inOpt = true;
    step[i] = s;
  }
  return { phase, nextChange, step };
}

const PRODUCER_CATEGORIES: Record<string, Category> = {
  parameter: 'parameters',
  parameters: 'parameters',
  gradient: 'gradients',
  gradients: 'gradients',
  optimizer_state: 'optimizer_state',
  activation: 'activations',
  activations: 'activations',
  autograd_detail: 'autograd_temporaries',
  temporary: 'other',
  input: 'other',
};

export function categorize(a: Allocation, ph: Phases, n: number): Category {
  if (a.producerCategory !== null) return PRODUCER_CATEGORIES[a.producerCategory.toLowerCase()] ?? 'other';
  if (a.allocIndex < 0) {
    const p = phaseOf(a.frames);
    if (p === 'setup') return 'parameters';
    if (p === 'optimizer') return 'optimizer_state';
    if (phaseOf(a.freeFrames) === 'zero_grad') return 'gradients';
    return 'other';
  }
  const p = ph.phase[a.allocIndex]!;
  const outlives = a.freeIndex > ph.nextChange[a.allocIndex]! || a.freeIndex >= n;
  switch (p) {
    case 'setup':
      return outlives ? 'parameters' : 'other';
    case 'forward':
      return 'activations';
    case 'backward':
      return outlives || isGradAccumulation(a.frames) || phaseOf(a.freeFrames) === 'zero_grad' ? 'gradients' : 'autograd_temporaries';
    case 'optimizer':
      return outlives ? 'optimizer_state' : 'other';
    default:
      return 'other';
  }
}
