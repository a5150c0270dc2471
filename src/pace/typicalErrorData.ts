/**
 * Written by test/pace/typicalError.test.ts (UPDATE_TYPICAL_ERROR=1) from the validation records; do not edit. By kind
 * of fix: the plan steps measured plainly on an H100 or H200 and the band 4 in 5 of them came within (typicalError.ts).
 */
export const TYPICAL_ERROR_DATA: {
  all: { steps: number; share: number };
  levers: Record<string, { steps: number; share: number }>;
} = {
  all: { steps: 66, share: 0.2 },
  levers: {
    attention: { steps: 3, share: 0.25 },
    compile: { steps: 10, share: 0.1 },
    pinned: { steps: 15, share: 0.2 },
    precision: { steps: 18, share: 0.2 },
    syncs: { steps: 1, share: 0.05 },
    workers: { steps: 19, share: 0.2 },
  },
};
