/**
 * The run's set-up as the planner reads it, inferred once in the run stage (pure): the precision its launch asked for,
 * the model as `plan` describes it, the set-up (run/setup.ts: micro-batch, accumulation, sequence, precision,
 * optimizer, compiled, checkpointing, parallel layout, GPU) with the assumptions it had to make, and the hardware.
 * The what-ifs (whatIfs.ts) and a split model's data-parallel fit (dataParallelFix.ts) read them.
 */
import { lookupGpu, type GpuSpec, gpuById } from '../gpus/catalogue.js';
import type { ModelDescription } from '../planner/model.js';
import { describeModel, MODEL_SUMMARY_FORMAT } from '../planner/modelSummary.js';
import { evaluatePlan, type PlanRequest } from '../planner/plan.js';
import type { Hardware, Precision, TrainingSetup } from '../planner/setup.js';
import type { HelloRecord, ModelRecord, StepRecord } from '../run/records.js';
import {
  askedPrecision,
  type Inferred,
  inferCheckpointing,
  inferCompiled,
  inferOptimizer,
  inferParallelism,
  inferPrecision,
  modelBytes,
  type RunSetup,
  type SetupInference,
} from '../run/setup.js';
import { batchOfSteps } from '../run/steps.js';
import type { TraceMetrics } from '../trace/metrics/types.js';
import type { ProcessRecords } from './stages/records.js';

/** The model as `gpuwise plan --model` reads it (`gpuwise-model/1`): its description and the format's name. */
export type PlanModelDescription = { format: typeof MODEL_SUMMARY_FORMAT } & ModelDescription;

/** The model as `gpuwise plan --model` reads it, or why there is none. */
export interface PlanModel {
  model: PlanModelDescription | null;
  problem: string | null;
}

/** The planner's description of the probe's model, from its Hugging Face config and the measured parameter count. */
export function planModelOf(model: ModelRecord | null): PlanModel {
  if (model === null) return { model: null, problem: 'no model summary (the probe saw no step)' };
  if (model.hfConfig === null)
    return { model: null, problem: `${model.name} has no Hugging Face config: plan cannot model its architecture yet` };
  try {
    const d = describeModel(model.hfConfig);
    // The counts stay the config's (plan's formulas are built on them); the report notes a mismatch with the probe's count.
    return { model: { format: MODEL_SUMMARY_FORMAT, ...d, architecture: model.name }, problem: null };
  } catch (e) {
    return { model: null, problem: `the model's config: ${(e as Error).message}` };
  }
}

/**
 * The precision the run asked for, from how it was launched (run/setup.ts askedPrecision): accelerate's state in the
 * model record, else a flag of the command or of a process's arguments. The set-up inference and the precision rules
 * read it.
 */
export function askedPrecisionOf(
  command: readonly string[],
  processes: readonly ProcessRecords[],
  model: ModelRecord | null,
): Inferred<Precision | null> {
  return askedPrecision({
    command,
    argv: processes.flatMap((p) => (p.hello ? [p.hello.argv] : [])),
    acceleratePrecision: model?.acceleratePrecision ?? null,
  });
}

/** What the set-up is inferred from: the records of the rank whose memory binds, its window, its median step. */
export interface SetupEvidence {
  hello: HelloRecord | null;
  model: ModelRecord | null;
  planModel: ModelDescription | null;
  /** Step records of the rank whose memory binds (rank 0 when all are alike). */
  steps: StepRecord[];
  medianStepS: number | null;
  worldSize: number | null;
  /** The captured window's metrics (precision of the matmuls, compiled kernels, the parallel layout), when analysed. */
  metrics: TraceMetrics | null;
  /** The precision the run's launch asked for (askedPrecisionOf); absent or null when not read. */
  askedPrecision?: Inferred<Precision | null> | null;
}

/**
 * The run's set-up from the records, null without the probe's model record; checkpointing is guessed from memory where
 * the planner can model the run (plannerRequestOf). The assumptions it had to make are listed in it.
 */
export function runSetupOf(ev: SetupEvidence): RunSetup | null {
  if (!ev.model) return null;
  const setup = inferredSetup(ev, ev.model);
  const hw = hardwareOf(setup);
  const req = hw ? plannerRequestOf(setup, ev.planModel, hw) : null;
  return req ? withCheckpointing(setup, req, inferCompiled(ev.model, ev.metrics)) : setup;
}

function inferredSetup(ev: SetupEvidence, model: ModelRecord): RunSetup {
  const assumptions: string[] = [];
  const steps = [...ev.steps].sort((a, b) => a.step - b.step);
  const batch = batchAndSequence(steps, assumptions);
  const gpu = gpuOf(ev.hello, assumptions);
  const worldSize = Math.max(1, ev.worldSize ?? 1);
  const inferred = inferencesOf(ev, model, worldSize, assumptions);
  const peak = steps.reduce((m, s) => Math.max(m, s.memory?.peakAllocatedBytes ?? 0), 0);
  return {
    ...batch,
    precision: inferred.precision,
    optimizer: inferred.optimizer,
    optimizerClass: model.optimizer?.class ?? null,
    checkpointing: 'none',
    gpuName: gpu.device?.name ?? null,
    gpuCatalogId: gpu.catalogId,
    gpuMemoryBytes: gpu.device?.totalMemoryBytes ?? null,
    worldSize,
    visibleGpus: gpu.visible,
    measuredPeakAllocatedBytes: peak > 0 ? peak : null,
    measuredStepS: ev.medianStepS,
    assumptions,
    inferences: inferred.inferences,
    compiled: inferred.compiled,
  };
}

/** Precision, optimizer, compiled and parallel layout, each with how it is known; the guessed ones are assumptions too. */
function inferencesOf(ev: SetupEvidence, model: ModelRecord, worldSize: number, assumptions: string[]) {
  const precision = inferPrecision(modelBytes(model), model.autocastDtype, ev.metrics, ev.askedPrecision ?? null);
  const optimizer = inferOptimizer(model.optimizer?.class ?? null, model.optimizer?.stateBytes ?? 0);
  const compiled = inferCompiled(model, ev.metrics);
  const parallelism = inferParallelism(worldSize, ev.metrics);
  const named: [SetupInference['name'], Inferred<string | boolean | null>][] = [
    ['precision', precision],
    ['optimizer', optimizer],
    ['compiled', compiled],
    ['parallelism', parallelism],
  ];
  const inferences: SetupInference[] = named.map(([name, i]) => ({ name, value: i.value, how: i.how, evidence: i.evidence }));
  for (const i of inferences) if (i.how === 'guessed') assumptions.push(i.evidence);
  return { precision: precision.value, optimizer: optimizer.value, compiled: compiled.value, inferences };
}

/** The full batches' size (the mode over the steps, never a last partial batch's), accumulation and sequence. */
function batchAndSequence(steps: readonly StepRecord[], assumptions: string[]): Pick<RunSetup, 'microBatch' | 'gradAccum' | 'seq'> {
  const { microBatch, gradAccum, samplesPerStep } = batchOfSteps(steps);
  if (microBatch !== null && samplesPerStep !== null && gradAccum > 1 && samplesPerStep % gradAccum !== 0)
    assumptions.push(`micro-batch: ${samplesPerStep} samples over ${gradAccum} batches per step, rounded to ${microBatch}`);
  const seqStep = [...steps].reverse().find((s) => typeof s.seqLen === 'number');
  return { microBatch, gradAccum, seq: seqStep?.seqLen ?? null };
}

/** The rank's current CUDA device, its catalogue id (null, and an assumption, for one the catalogue lacks). */
function gpuOf(hello: HelloRecord | null, assumptions: string[]) {
  const devices = hello?.cuda.devices ?? [];
  const cur = hello?.cuda.currentDevice ?? 0;
  const device = devices.find((d) => d.index === cur) ?? devices[0] ?? null;
  let catalogId: string | null = null;
  if (device) {
    catalogId = lookupGpu({ name: device.name, memoryBytes: device.totalMemoryBytes })?.id ?? null;
    if (catalogId === null)
      assumptions.push(`GPU ${device.name} is not in the planner's catalogue: memory from the device, no step-time estimate`);
  }
  return { device, catalogId, visible: devices.length };
}

/** Checkpointing guessed from memory (run/setup.ts inferCheckpointing), added to the set-up's inferences. */
function withCheckpointing(setup: RunSetup, req: PlanRequest, compiled: Inferred<boolean | null>): RunSetup {
  const ck = inferCheckpointing(
    setup.measuredPeakAllocatedBytes,
    (c) => evaluatePlan({ ...req, setup: { ...req.setup, checkpointing: c } }).memory.peakAllocatedBytes,
    compiled,
  );
  return {
    ...setup,
    checkpointing: ck.value,
    assumptions: ck.value !== 'none' ? [...setup.assumptions, ck.evidence] : setup.assumptions,
    inferences: [...(setup.inferences ?? []), { name: 'checkpointing', value: ck.value, how: ck.how, evidence: ck.evidence }],
  };
}

/** The run's set-up as the planner takes it, at `microBatch` sequences a GPU; null without the sequence, precision or optimizer. */
export function trainingSetupOf(setup: RunSetup, microBatch: number): TrainingSetup | null {
  if (setup.seq === null || setup.precision === null || setup.optimizer === null) return null;
  return {
    microBatch,
    seq: setup.seq,
    precision: setup.precision,
    optimizer: setup.optimizer,
    checkpointing: setup.checkpointing,
    gradAccum: setup.gradAccum,
    mode: 'train',
  };
}

/**
 * The planner's request for the run as it ran (its model, hardware, set-up and data-parallel layout), when the planner
 * can model it: a block layout, a batch, the sequence, precision and optimizer known; else null.
 */
export function plannerRequestOf(setup: RunSetup, planModel: ModelDescription | null, hw: Hardware): PlanRequest | null {
  const training = setup.microBatch !== null && setup.microBatch >= 1 ? trainingSetupOf(setup, setup.microBatch) : null;
  if (!planModel || training === null) return null;
  const world = setup.worldSize;
  return {
    model: planModel,
    hardware: hw,
    setup: training,
    parallelism: { dp: world > 1 ? 'ddp' : 'none', dpSize: world, tp: 1, pp: 1, reshardAfterForward: true, cpuOffload: false },
  };
}

/** The hardware the planner sees for the run: its GPU from the catalogue (with the device's own memory), or memory only. */
export function hardwareOf(setup: RunSetup): Hardware | null {
  if (setup.gpuMemoryBytes === null) return null;
  const gpu: GpuSpec =
    setup.gpuCatalogId !== null ? { ...gpuById(setup.gpuCatalogId), memoryBytes: setup.gpuMemoryBytes } : measuredGpu(setup);
  const gpus = Math.max(setup.worldSize, setup.visibleGpus, 1);
  return {
    gpu,
    gpusPerNode: gpus,
    nodes: 1,
    intraNodeBandwidth: gpu.intraNodeBandwidth,
    interNodeBandwidth: 25e9,
    hostBandwidth: 25e9,
  };
}

/** A GPU the catalogue lacks: its memory as the device reported it, no peaks (no step-time estimate). */
function measuredGpu(setup: RunSetup): GpuSpec {
  return {
    id: 'measured',
    name: setup.gpuName ?? 'GPU',
    memoryBytes: setup.gpuMemoryBytes as number,
    bf16Tflops: 0,
    fp16Tflops: 0,
    tf32Tflops: 0,
    fp32Tflops: 0,
    memoryBandwidth: 0,
    intraNodeBandwidth: 0,
    source: 'memory as the device reported it',
  };
}
