/**
 * The planner's view of the GPU catalogue, which lives in gpus/catalogue.ts (every pillar reads it). Kept so the
 * planner's modules name their GPU type where they always did; a lookup returns null for an unknown GPU and the
 * caller (the CLI) words the error.
 */
export { closeGpuMatches, type GpuQuery, type GpuSpec, GPUS, gpuById, lookupGpu } from '../gpus/catalogue.js';
