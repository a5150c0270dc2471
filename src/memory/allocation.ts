/**
 * One allocation of the allocator's history and the categories it can fall in (types, pure): what replay.ts builds,
 * blocks.ts sizes and categorize.ts labels, kept apart so those three import none of each other in a circle.
 */
import type { Address, Frame } from './snapshot.js';

export const CATEGORIES = ['parameters', 'gradients', 'optimizer_state', 'activations', 'autograd_temporaries', 'other'] as const;
export type Category = (typeof CATEGORIES)[number];

export interface Allocation {
  addr: Address;
  /** Bytes requested (what the trace records). */
  requestedBytes: number;
  /** Bytes of the block: from the final state for blocks still allocated, else replayed (blocks.ts) or, failing that, the request rounded up to 512. */
  blockBytes: number;
  /** Index of its `alloc` entry; -1 when it was allocated before the history starts. */
  allocIndex: number;
  /** Index of its `free_requested` entry; `trace.length` when still allocated at the end. */
  freeIndex: number;
  /** Allocation stack (empty when unknown, e.g. allocated before the history). */
  frames: readonly Frame[];
  /** Stack of the free, when freed in the history. */
  freeFrames: readonly Frame[];
  /** Producer's category, when the trace has one. */
  producerCategory: string | null;
  /** What the allocation is (categorize.ts); 'other' until categorised. */
  category: Category;
}

