/**
 * The JSON contract of `gpuwise plan --json` (schemaVersion 1; documented in docs/planner.md).
 */
import type { GpuSpec } from './gpus.js';
import type { MemoryComponent, Phase } from './memory.js';
import type { ModelDescription } from './model.js';
import type { MemorySaver, Plan } from './plan.js';
import type { Hardware, Parallelism, TrainingSetup } from './setup.js';

export const PLAN_SCHEMA_VERSION = 1;

export interface PlanJson {
  schemaVersion: number;
  model: {
    name: string;
    modelType: string;
    architecture: string;
    params: number;
    activeParams: number;
    layers: number;
    hidden: number;
    heads: number;
    kvHeads: number;
    vocab: number;
    paramGroups: { name: string; count: number }[];
    /** An encoder-decoder's stacks (`layers` is their sum); absent for one stack, and before 2026-12-07. */
    encoderDecoder?: { encoderLayers: number; decoderLayers: number };
    /** Where the description came from (set by the CLI, which reads it). */
    source?: ModelSourceJson;
  };
  hardware: {
    gpu: Pick<GpuSpec, 'id' | 'name' | 'memoryBytes' | 'bf16Tflops' | 'fp32Tflops' | 'memoryBandwidth' | 'source'>;
    gpusPerNode: number;
    nodes: number;
    intraNodeBandwidthBytesPerSec: number;
    interNodeBandwidthBytesPerSec: number;
    memoryCapBytes: number | null;
  };
  setup: TrainingSetup;
  parallelism: Parallelism;
  globalBatch: number;
  fits: boolean;
  memory: {
    peakAllocatedBytes: number;
    peakReservedBytes: number;
    deviceUsedBytes: number;
    bindingPhase: Phase;
    phases: { forwardBytes: number; backwardBytes: number; optimizerBytes: number };
    /** `name` is the stable key, `label` the same in words (what the human reports print). */
    components: { name: string; label: string; bytes: number; note: string }[];
    budgetBytes: number;
    /** Budget - max_memory_reserved (the larger of the two peaks: what the allocator holds); negative when over. */
    headroomBytes: number;
    /** Budget - max_memory_allocated (issue 47: said beside the reserved one, never alone). */
    headroomAllocatedBytes: number;
  };
  stepTimeMs: number;
  time: {
    computeMs: number;
    memoryBoundMs: number;
    cpuFloorMs: number;
    commMs: number;
    exposedCommMs: number;
    bubbleMs: number;
    bindingTerm: string;
    overlap: string;
    samplesPerSec: number;
    tokensPerSec: number;
    mfu: number;
  };
  savers: { change: string; savedBytes: number; stepTimeDeltaMs: number }[];
  /** Strategies that fit and shorten the step by 10% or more, fastest first (absent where none, and before 2026-12-07). */
  faster?: { change: string; stepTimeMs: number; peakAllocatedBytes: number }[];
  maxBatch?: { microBatch: number; peakAllocatedBytes: number | null; budgetBytes: number };
  /** The defaults this plan rests on that the user did not give (the GPU, the precision ...), in words. */
  assumed?: string[];
  /** When the plan does not fit (`fits: false`): why, and what would. */
  wouldFit?: { explanation: string; maxMicroBatch: number; changes: string[] };
  search?: { candidates: number; feasible: number; plans: PlanSummaryJson[]; choice?: SearchChoiceJson };
}

/** Why the search put plans[0] first: the plans that tie with the fastest, of which it is the simplest. */
export interface SearchChoiceJson {
  /** Relative throughput difference within which plans tie (0.02: 2%). */
  tolerance: number;
  /** Plans within the tolerance of the fastest one, plans[0] included. */
  tiedPlans: number;
  /** The fastest plan predicted (its rank in the search's order; savers not listed). */
  fastest: PlanSummaryJson;
}

/**
 * `file`: a path the user gave (`path`); `hf-cache`: the config.json of `hubId` in the Hugging Face cache (`path`);
 * `shipped`: `hubId`'s published config, shipped with gpuwise (no file).
 */
export interface ModelSourceJson {
  kind: 'file' | 'hf-cache' | 'shipped';
  path: string | null;
  hubId: string | null;
}

export interface PlanSummaryJson {
  rank: number;
  setup: TrainingSetup;
  parallelism: Parallelism;
  globalBatch: number;
  peakAllocatedBytes: number;
  deviceUsedBytes: number;
  bindingPhase: Phase;
  stepTimeMs: number;
  tokensPerSec: number;
  bindingTerm: string;
  savers: MemorySaver[];
}

function componentsJson(c: MemoryComponent[]) {
  return c.map(({ name, label, bytes, note }) => ({ name, label, bytes, note }));
}

export function planJson(model: ModelDescription, hw: Hardware, plan: Plan, savers: MemorySaver[]): PlanJson {
  const t = plan.time;
  return {
    schemaVersion: PLAN_SCHEMA_VERSION,
    model: {
      name: model.name,
      modelType: model.modelType,
      architecture: model.architecture,
      params: model.paramCount,
      activeParams: model.activeParamCount,
      layers: model.layers,
      hidden: model.hidden,
      heads: model.heads,
      kvHeads: model.kvHeads,
      vocab: model.vocab,
      paramGroups: model.paramGroups,
      ...(model.encoderDecoder
        ? { encoderDecoder: { encoderLayers: model.encoderDecoder.encoderLayers, decoderLayers: model.encoderDecoder.decoderLayers } }
        : {}),
    },
    hardware: {
      gpu: {
        id: hw.gpu.id,
        name: hw.gpu.name,
        memoryBytes: hw.gpu.memoryBytes,
        bf16Tflops: hw.gpu.bf16Tflops,
        fp32Tflops: hw.gpu.fp32Tflops,
        memoryBandwidth: hw.gpu.memoryBandwidth,
        source: hw.gpu.source,
      },
      gpusPerNode: hw.gpusPerNode,
      nodes: hw.nodes,
      intraNodeBandwidthBytesPerSec: hw.intraNodeBandwidth,
      interNodeBandwidthBytesPerSec: hw.interNodeBandwidth,
      memoryCapBytes: hw.memoryCapBytes ?? null,
    },
    setup: plan.setup,
    parallelism: plan.parallelism,
    globalBatch: plan.globalBatch,
    fits: plan.fits,
    memory: {
      peakAllocatedBytes: plan.memory.peakAllocatedBytes,
      peakReservedBytes: plan.memory.peakReservedBytes,
      deviceUsedBytes: plan.memory.deviceUsedBytes,
      bindingPhase: plan.memory.bindingPhase,
      phases: {
        forwardBytes: plan.memory.phases.forward,
        backwardBytes: plan.memory.phases.backward,
        optimizerBytes: plan.memory.phases.optimizer,
      },
      components: componentsJson(plan.memory.components),
      budgetBytes: plan.budgetBytes,
      headroomBytes: plan.budgetBytes - Math.max(plan.memory.peakReservedBytes, plan.memory.peakAllocatedBytes),
      headroomAllocatedBytes: plan.budgetBytes - plan.memory.peakAllocatedBytes,
    },
    stepTimeMs: round3(t.stepTimeMs),
    time: {
      computeMs: round3(t.computeMs),
      memoryBoundMs: round3(t.memoryBoundMs),
      cpuFloorMs: round3(t.cpuFloorMs),
      commMs: round3(t.commMs),
      exposedCommMs: round3(t.exposedCommMs),
      bubbleMs: round3(t.bubbleMs),
      bindingTerm: t.bindingTerm,
      overlap: t.overlap,
      samplesPerSec: round3(t.samplesPerSec),
      tokensPerSec: Math.round(t.tokensPerSec),
      mfu: round3(t.mfu),
    },
    savers,
  };
}

export function planSummaryJson(rank: number, p: Plan, savers: MemorySaver[]): PlanSummaryJson {
  return {
    rank,
    setup: p.setup,
    parallelism: p.parallelism,
    globalBatch: p.globalBatch,
    peakAllocatedBytes: p.memory.peakAllocatedBytes,
    deviceUsedBytes: p.memory.deviceUsedBytes,
    bindingPhase: p.memory.bindingPhase,
    stepTimeMs: round3(p.time.stepTimeMs),
    tokensPerSec: Math.round(p.time.tokensPerSec),
    bindingTerm: p.time.bindingTerm,
    savers,
  };
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}
