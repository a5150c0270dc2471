/**
 * `gpuwise tune --plan` (pure): which of doctor's plan steps the probe can make without an edit to the script, the
 * settings of each trial (python/gpuwise/probe/trial.py reads them), the worker counts around the plan's, a trial's
 * steady steps and the spread of their mean, whether a fix measured better beyond that spread, and the report
 * (`--json`, schemaVersion 2).
 *
 * The trials go in the plan's order, each on top of the fixes kept so far: a fix is kept when its trial's mean step is
 * shorter than the configuration it was tried on by more than both Z_SPREAD x the spread of the difference and
 * MIN_GAIN of the step. A step with several candidates (the worker counts) keeps the smallest candidate no worse than
 * the best beyond the spread (fewer workers hold less memory and CPU), when that one is better than where it started.
 */
import { autocastLines } from '../advice/snippets.js';
import type { DoctorReport } from '../doctor/reportTypes.js';
import type { ProbeRecord, StepRecord } from '../run/records.js';
import { gpuStepTimesOf, slowedByProbe, steadyStart } from '../run/steps.js';

export const PLAN_TUNE_SCHEMA_VERSION = 2;

/** Every constant of the method. */
export const PLAN_TUNE = {
  /** A fix is kept when it gains more than Z_SPREAD standard errors of the difference of the two means ... */
  zSpread: 2,
  /** ... and more than this share of the step (the drift between runs on a shared machine: one run against the next). */
  minGain: 0.03,
  /**
   * A gain under this share of the step is confirmed: the configuration it was tried on runs again right after, and
   * the fix must beat that run too (a shared machine's load moves one run against the next by more than the spread
   * within a run: on the 2-core development VM, 9% between two trials of the same loader).
   */
  confirmBelow: 0.15,
  /** Blocks of consecutive steady steps whose means give the spread (steps are correlated: a loader's rhythm). */
  blocks: 5,
  /**
   * A trial runs until its step is steady (python/gpuwise/probe/steady.py): the standard error of its steady steps' mean
   * at most this share of the mean, over at least minSteadySteps steady steps. Under it the keep rule's margin is the
   * MIN_GAIN floor, not the spread: 2 x sqrt(2) x 1% = 2.8% < 3%.
   */
  stopRelSpread: 0.01,
  minSteadySteps: 20,
  /** ... or until its steady steps add up to this many seconds (--trial-seconds): a noisy step's spread is what it is. */
  trialSeconds: 8,
  /** The cap of steps a trial runs (GPUWISE_MAX_STEPS); --steps N runs exactly N instead (no steadiness stop). */
  minSteps: 30,
  maxSteps: 600,
  /** The worker counts tried around the plan's: x below and x above (rounded, at least one apart). */
  workersBelow: 0.7,
  workersAbove: 1.4,
  /** A trial's losses are far from the baseline's when their mean passes the baseline's first ones by this share. */
  lossFar: 0.5,
} as const;

/** The settings of one trial, as the probe reads them (GPUWISE_TRIAL_SETTINGS): cumulative, the kept fixes included. */
export interface TrialSettings {
  loader?: {
    numWorkers?: number;
    pinMemory?: boolean;
    persistentWorkers?: boolean;
    prefetchFactor?: number;
    /** The training loader as the diagnosis saw it: only loaders built with these arguments are changed. */
    match?: { batchSize: number | null; numWorkers: number | null };
  };
  tf32?: boolean;
  cudnnBenchmark?: boolean;
  autocast?: 'bf16';
  channelsLast?: boolean;
  compile?: 'default' | 'reduce-overhead';
  /**
   * The batch (`--param NAME=LO..HI`): tune substitutes `{NAME}` in the command with `value`; the probe never sees it.
   * A trial's steps at another batch than the diagnosis's are compared per sample (`measure` is per the diagnosis's
   * batch of samples).
   */
  batch?: { name: string; value: number };
}

/** A lever as `--try` names it and as the history stores it. */
export type Lever =
  | 'workers'
  | 'pin-memory'
  | 'persistent-workers'
  | 'prefetch-factor'
  | 'tf32'
  | 'bf16'
  | 'channels-last'
  | 'compile'
  | 'compile-reduce-overhead'
  | 'batch';

/** The levers `--try` takes (the batch is --param's). */
export type TryLever = Exclude<Lever, 'batch'>;

export const LEVERS: readonly TryLever[] = [
  'workers',
  'pin-memory',
  'persistent-workers',
  'prefetch-factor',
  'tf32',
  'bf16',
  'channels-last',
  'compile',
  'compile-reduce-overhead',
];
const GPU_LEVERS: ReadonlySet<Lever> = new Set(['pin-memory', 'tf32', 'bf16', 'channels-last', 'compile', 'compile-reduce-overhead']);

/** What the diagnosis run tells about the script (from its doctor report). */
export interface RunFacts {
  cuda: boolean;
  /** The autocast dtype at the model's forward ('' off, null unknown). */
  autocast: string | null;
  compiled: boolean;
  framework: string | null;
  loader: {
    workers: number | null;
    batchSize: number | null;
    pinMemory: boolean | null;
    persistentWorkers: boolean | null;
    prefetchFactor: number | null;
  } | null;
  cpuCores: number | null;
  /** Steps an epoch of the training loader takes (its batches), where the diagnosis read it. */
  stepsPerEpoch: number | null;
}

export function runFactsOf(report: DoctorReport): RunFacts {
  const l = report.pace?.loader ?? null;
  return {
    cuda: report.environment.cuda !== null && report.environment.cuda !== undefined,
    autocast: report.model?.autocastDtype ?? null,
    compiled: report.model?.compiled === true,
    framework: report.model?.framework ?? null,
    loader: l
      ? {
          workers: l.workers,
          batchSize: l.samplesPerBatch ?? null,
          pinMemory: l.pinMemory ?? null,
          persistentWorkers: l.persistentWorkers ?? null,
          prefetchFactor: l.prefetchFactor ?? null,
        }
      : null,
    cpuCores: l?.cpuCores ?? null,
    stepsPerEpoch: l?.stepsPerEpoch ?? null,
  };
}

/** A plan step as tune --plan reads it (PlanStep's fields it needs, and the finding's data). */
export interface PlanStepIn {
  id: string;
  label: string;
  fromStepNs: number;
  expectedStepNs: number;
  workersNeeded: number | null;
  /** The finding's data (dataloader-bound: `workersRecommended`). */
  data?: Record<string, unknown> | null;
}

/** One candidate configuration of a step: its name and the change it makes on top of the kept ones. */
export interface Candidate {
  name: string;
  lever: Lever;
  change: TrialSettings;
}

/** A plan step (or a `--try` lever) as tune --plan treats it. */
export interface StepTrialPlan {
  stepId: string;
  label: string;
  source: 'plan' | 'try' | 'param';
  fromStepNs: number | null;
  predictedStepNs: number | null;
  /** The candidates to measure; empty when the step is not tried (`why`). */
  candidates: Candidate[];
  /** Needs a change to the code: stays predicted. */
  codeChange: boolean;
  why: string | null;
}

/** The worker counts tried for a plan that names `named` workers where the run has `have`: below, named, above. */
export function workerCounts(named: number, have: number | null): number[] {
  const floor = (have ?? 0) + 1;
  const below = Math.max(floor, Math.round(named * PLAN_TUNE.workersBelow));
  const above = Math.max(named + 1, Math.round(named * PLAN_TUNE.workersAbove));
  return [...new Set([below, named, above])].filter((n) => n >= floor).sort((a, b) => a - b);
}

/** The worker count a dataloader-bound step names: the finding's recommendation, else the label's `-> N`, else workersNeeded. */
export function namedWorkers(step: PlanStepIn): number | null {
  const rec = step.data?.workersRecommended;
  if (typeof rec === 'number' && Number.isInteger(rec) && rec > 0) return rec;
  const m = /num_workers \d+ -> (\d+)/.exec(step.label);
  if (m) return Number(m[1]);
  return step.workersNeeded;
}

/** The training loader as the diagnosis saw it: the DataLoader arguments a trial changes are given to it alone. */
function trainingLoaderMatch(facts: RunFacts): NonNullable<TrialSettings['loader']>['match'] {
  return { batchSize: facts.loader?.batchSize ?? null, numWorkers: facts.loader?.workers ?? null };
}

/** Why a step's fix needs the code changed (it stays predicted), by finding id. */
const CODE_CHANGE: Record<string, string> = {
  attention: 'F.scaled_dot_product_attention replaces the attention code',
  'host-sync': 'the syncs are in the loop’s code (.item(), .cpu(), printing a tensor)',
  'ddp-accum-without-no-sync': 'no_sync() goes around the accumulation steps in the loop',
  'bf16-weights': 'the weights are cast in the script (model.to(torch.bfloat16)) with an optimizer that keeps fp32 state',
  'misaligned-shapes': 'the model’s dimensions are set in its code',
  'gpu-underused': 'the batch: tune --param NAME=LO..HI with {NAME} in the command',
  dataparallel: 'DistributedDataParallel under torchrun replaces DataParallel',
  'small-comm-buckets': 'DDP(bucket_cap_mb=...) in the script',
  'comm-bound': 'the communication’s overlap is set in the script',
  'model-parallel-bubble': 'pipelining is written in the script',
  'rank-imbalance': 'the ranks’ work is split in the script',
  'fp16-without-grad-scaler': 'a GradScaler goes into the loop',
  'memory-near-limit': 'memory is a batch or checkpointing choice in the script',
};

function candidatesOfStep(step: PlanStepIn, facts: RunFacts): { candidates: Candidate[]; why: string | null; codeChange: boolean } {
  const none = (why: string, codeChange = false) => ({ candidates: [], why, codeChange });
  const gpuOnly = (c: Candidate[]) =>
    facts.cuda ? { candidates: c, why: null, codeChange: false } : none('not tried: no CUDA in this run');
  const match = trainingLoaderMatch(facts);
  switch (step.id) {
    case 'dataloader-bound': {
      const out: Candidate[] = [];
      const named = /num_workers/.test(step.label) || step.data?.workersRecommended !== undefined ? namedWorkers(step) : null;
      const have = facts.loader?.workers ?? null;
      // The step is one configuration: persistent workers, where it names them, go with each worker count tried (an
      // H100 JPEG ResNet's step "num_workers 4 -> 9, persistent DataLoader workers" had them tried apart, at 4 workers).
      const persistent = /persistent/.test(step.label) && facts.loader?.persistentWorkers !== true;
      const also = persistent ? { persistentWorkers: true } : {};
      if (named !== null && (have === null || named > have))
        for (const n of workerCounts(named, have))
          out.push({
            name: `num_workers=${n}${persistent ? ' + persistent_workers=True' : ''}`,
            lever: 'workers',
            change: { loader: { numWorkers: n, ...also, match } },
          });
      else if (persistent)
        out.push({ name: 'persistent_workers=True', lever: 'persistent-workers', change: { loader: { persistentWorkers: true, match } } });
      return out.length > 0
        ? { candidates: out, why: null, codeChange: false }
        : none('no worker count to try (the plan names none above the run’s)');
    }
    case 'pageable-h2d':
      return gpuOnly([{ name: 'pin_memory=True', lever: 'pin-memory', change: { loader: { pinMemory: true, match } } }]);
    case 'no-tensor-cores':
      return gpuOnly(
        facts.autocast
          ? [{ name: 'TF32 + cudnn.benchmark', lever: 'tf32', change: { tf32: true, cudnnBenchmark: true } }]
          : [
              { name: 'TF32 + cudnn.benchmark', lever: 'tf32', change: { tf32: true, cudnnBenchmark: true } },
              { name: 'bf16 autocast', lever: 'bf16', change: { autocast: 'bf16' } },
            ],
      );
    case 'mixed-precision':
      if (facts.autocast) return none(`the run has ${facts.autocast} autocast already`);
      return gpuOnly([
        {
          name: /channels_last/.test(step.label) ? 'bf16 autocast + channels_last' : 'bf16 autocast',
          lever: 'bf16',
          change: /channels_last/.test(step.label) ? { autocast: 'bf16', channelsLast: true, cudnnBenchmark: true } : { autocast: 'bf16' },
        },
      ]);
    case 'channels-last':
      return gpuOnly([
        { name: 'channels_last + cudnn.benchmark', lever: 'channels-last', change: { channelsLast: true, cudnnBenchmark: true } },
      ]);
    case 'fusion':
      if (facts.compiled) return none('the model is compiled already');
      return gpuOnly([{ name: 'torch.compile', lever: 'compile', change: { compile: 'default' } }]);
    case 'launch-bound':
      if (/static KV cache/.test(step.label)) return none('a static KV cache is set up in the generation code', true);
      return gpuOnly([
        { name: 'torch.compile(mode="reduce-overhead")', lever: 'compile-reduce-overhead', change: { compile: 'reduce-overhead' } },
      ]);
    default: {
      const why = CODE_CHANGE[step.id];
      return none(why ? `needs a code change: ${why}` : 'needs a code change', true);
    }
  }
}

/**
 * A step's candidates with the DataLoader workers the step says it then needs ("needs about 3 DataLoader workers"):
 * they are part of the step, whose expected time was reached with them (pace/plan.ts). Without them the trial measures
 * another configuration: an H100 Lightning ResNet-50's bf16 + channels_last ran at its 2 workers' pace where the plan
 * counted on 3, and pinned memory (4 needed) measured slower than the step before it.
 */
function withStepWorkers(candidates: Candidate[], step: PlanStepIn, facts: RunFacts): Candidate[] {
  const need = step.workersNeeded;
  const have = facts.loader?.workers ?? null;
  if (step.id === 'dataloader-bound' || need === null || have === null || need <= have) return candidates;
  const loader = { numWorkers: need, match: trainingLoaderMatch(facts) };
  return candidates.map((c) => ({ ...c, name: `${c.name} + num_workers=${need}`, change: withChange(c.change, { loader }) }));
}

/** A `--try` lever (a fix the plan did not name, tried all the same): LEVER or LEVER=VALUE (workers=N, prefetch-factor=K). */
export function parseTry(text: string): { lever: TryLever; value: number | null } | { problem: string } {
  const m = /^([a-z0-9-]+)(?:=(\d+))?$/.exec(text.trim());
  if (!m || !LEVERS.includes(m[1] as TryLever))
    return { problem: `'${text}' is not one of ${LEVERS.join(', ')} (workers=N, prefetch-factor=K take a value)` };
  const lever = m[1] as TryLever;
  const value = m[2] !== undefined ? Number(m[2]) : null;
  if ((lever === 'workers' || lever === 'prefetch-factor') && (value === null || value < 1))
    return { problem: `${lever} needs a value: ${lever}=N` };
  if (lever !== 'workers' && lever !== 'prefetch-factor' && value !== null) return { problem: `${lever} takes no value` };
  return { lever, value };
}

function tryPlan(lever: TryLever, value: number | null, facts: RunFacts): StepTrialPlan {
  const match = trainingLoaderMatch(facts);
  const changes: Record<TryLever, { name: string; change: TrialSettings }> = {
    workers: { name: `num_workers=${value}`, change: { loader: { numWorkers: value ?? 0, match } } },
    'pin-memory': { name: 'pin_memory=True', change: { loader: { pinMemory: true, match } } },
    'persistent-workers': { name: 'persistent_workers=True', change: { loader: { persistentWorkers: true, match } } },
    'prefetch-factor': { name: `prefetch_factor=${value}`, change: { loader: { prefetchFactor: value ?? 2, match } } },
    tf32: { name: 'TF32 + cudnn.benchmark', change: { tf32: true, cudnnBenchmark: true } },
    bf16: { name: 'bf16 autocast', change: { autocast: 'bf16' } },
    'channels-last': { name: 'channels_last + cudnn.benchmark', change: { channelsLast: true, cudnnBenchmark: true } },
    compile: { name: 'torch.compile', change: { compile: 'default' } },
    'compile-reduce-overhead': { name: 'torch.compile(mode="reduce-overhead")', change: { compile: 'reduce-overhead' } },
  };
  const c = changes[lever];
  let why: string | null = null;
  if (GPU_LEVERS.has(lever) && !facts.cuda) why = 'not tried: no CUDA in this run';
  else if ((lever === 'persistent-workers' || lever === 'prefetch-factor') && !facts.loader?.workers)
    why = 'not tried: the training loader has no workers (torch takes these only with workers)';
  return {
    stepId: `try:${lever}`,
    label: c.name,
    source: 'try',
    fromStepNs: null,
    predictedStepNs: null,
    candidates: why === null ? [{ name: c.name, lever, change: c.change }] : [],
    codeChange: false,
    why,
  };
}

/** The steps of the plan in its order, then the `--try` levers, each with its candidates or why it is not tried. */
export function trialPlan(
  steps: readonly PlanStepIn[],
  facts: RunFacts,
  tries: readonly { lever: TryLever; value: number | null }[] = [],
  param: BatchParam | null = null,
): StepTrialPlan[] {
  const out: StepTrialPlan[] = steps.map((s) => {
    const c = param !== null && s.id === BATCH_STEP ? batchCandidatesOf(param, batchScaleOf(s)) : candidatesOfStep(s, facts);
    return {
      stepId: s.id,
      label: s.label,
      source: 'plan',
      fromStepNs: s.fromStepNs,
      predictedStepNs: s.expectedStepNs,
      candidates: withStepWorkers(c.candidates, s, facts),
      codeChange: c.codeChange,
      why: c.why,
    };
  });
  for (const t of tries) out.push(tryPlan(t.lever, t.value, facts));
  // --param where the plan names no batch step: the batch is sized last, on top of every fix kept (a loader-bound step
  // gains nothing from a larger batch until the loader keeps up; a larger batch changes the optimisation, so last).
  if (param !== null && !steps.some((s) => s.id === BATCH_STEP)) {
    const c = batchCandidatesOf(param, null);
    out.push({
      stepId: `param:${param.name}`,
      label: `${param.name} ${param.start} -> larger (--param ${param.name}=${param.lo}..${param.hi})`,
      source: 'param',
      fromStepNs: null,
      predictedStepNs: null,
      ...c,
    });
  }
  return out;
}

// ---------- the batch (--param) ----------

/** `--param NAME=LO..HI` beside `--plan`: the diagnosis and the baseline run at `start`. */
export interface BatchParam {
  name: string;
  lo: number;
  hi: number;
  start: number;
}

/** The plan's batch step: doctor's `gpu-underused` (`batch xK`, its data's `batchScale`). */
export const BATCH_STEP = 'gpu-underused';

function batchScaleOf(s: PlanStepIn): number | null {
  const k = s.data?.batchScale;
  if (typeof k === 'number' && k > 1) return k;
  const m = /batch x(\d+(?:\.\d+)?)/.exec(s.label);
  return m ? Number(m[1]) : null;
}

/**
 * The batch values tried, ascending, above `start` and within HI: the plan's (start x K) with a neighbour each side
 * (x0.5, x2), or, where the plan names none, start x2, x4, x8; HI itself where the ladder stops short of it and fewer
 * than three values are left.
 */
export function batchValues(p: BatchParam, scale: number | null): number[] {
  const named = scale !== null ? Math.round(p.start * scale) : null;
  const raw = named !== null ? [Math.round(named / 2), named, named * 2] : [p.start * 2, p.start * 4, p.start * 8];
  const out = [...new Set(raw.map((v) => Math.min(p.hi, v)))].filter((v) => v > p.start).sort((a, b) => a - b);
  if (out.length < 3 && p.hi > p.start && !out.includes(p.hi)) out.push(p.hi);
  return out;
}

function batchCandidatesOf(p: BatchParam, scale: number | null): { candidates: Candidate[]; why: string | null; codeChange: boolean } {
  const values = batchValues(p, scale);
  if (values.length === 0) return { candidates: [], why: `no ${p.name} above ${p.start} within ${p.lo}..${p.hi}`, codeChange: false };
  return {
    candidates: values.map((v) => ({ name: `${p.name}=${v}`, lever: 'batch' as const, change: { batch: { name: p.name, value: v } } })),
    why: null,
    codeChange: false,
  };
}

/** A measure at batch `value` per `start` samples (the diagnosis's batch): a step of twice the samples counts half. */
export function perStartBatch(m: Measure, value: number, start: number): Measure {
  const f = start / value;
  return f === 1 ? m : { ...m, meanNs: m.meanNs * f, spreadNs: m.spreadNs * f };
}

/** The settings as the probe reads them: the batch left out, the training loader matched at the trial's batch. */
export function probeSettings(s: TrialSettings, start: number | null): TrialSettings {
  const { batch, ...rest } = s;
  const m = rest.loader?.match;
  if (batch && rest.loader && m && start !== null && m.batchSize === start)
    return { ...rest, loader: { ...rest.loader, match: { ...m, batchSize: batch.value } } };
  return rest;
}

/** Merges a change into the settings kept so far (the loader's keys one by one; its workers the larger count). */
export function withChange(kept: TrialSettings, change: TrialSettings): TrialSettings {
  const out: TrialSettings = { ...kept, ...change };
  if (kept.loader || change.loader) out.loader = { ...kept.loader, ...change.loader };
  // Workers never go down from one step to the next: a step that needs N keeps the more an earlier step set.
  const workers = Math.max(kept.loader?.numWorkers ?? 0, change.loader?.numWorkers ?? 0);
  if (out.loader && workers > 0) out.loader.numWorkers = workers;
  for (const k of Object.keys(out) as (keyof TrialSettings)[]) if (out[k] === undefined) delete out[k];
  return out;
}

// ---------- measuring a trial ----------

export interface Measure {
  /** Steady steps measured. */
  steps: number;
  meanNs: number;
  /** The standard error of the mean, from the means of PLAN_TUNE.blocks blocks of consecutive steps. */
  spreadNs: number;
  /** Steps left out before the steady part (the first, warm-up, compilation) and what they cost over the steady pace. */
  warmupSteps: number;
  warmupCostNs: number;
  settled: boolean | null;
  timing: 'gpu' | 'host';
}

/** Mean and spread of `timesNs` (steady steps in order): the spread from block means (k blocks, k >= 2). */
export function meanAndSpread(timesNs: readonly number[]): { meanNs: number; spreadNs: number } | null {
  const n = timesNs.length;
  if (n === 0) return null;
  const mean = timesNs.reduce((a, b) => a + b, 0) / n;
  const k = Math.min(PLAN_TUNE.blocks, Math.floor(n / 2));
  if (k < 2) return { meanNs: mean, spreadNs: mean }; // one or two steps: nothing known of the spread
  const size = Math.floor(n / k);
  const means: number[] = [];
  for (let b = 0; b < k; b++) {
    const part = timesNs.slice(b * size, b === k - 1 ? n : (b + 1) * size);
    means.push(part.reduce((a, x) => a + x, 0) / part.length);
  }
  const m = means.reduce((a, b) => a + b, 0) / k;
  const variance = means.reduce((a, x) => a + (x - m) ** 2, 0) / (k - 1);
  return { meanNs: mean, spreadNs: Math.sqrt(variance / k) };
}

/** A steady step this many times the steady median, not spent waiting for the DataLoader, is a one-time stall. */
const ONE_TIME_STALL_X = 10;
/** ... and at most this many of them in a trial: more is the run's own rhythm (an evaluation, a checkpoint), kept. */
const ONE_TIME_STALLS_MAX = 2;

/**
 * The steady steps less one-time stalls: a step ONE_TIME_STALL_X times the median whose time is not the loop's wait for
 * its batch is a warm-up at a new shape (cudnn.benchmark autotuning the partial last batch of an epoch, a compiled
 * model recompiling for it), paid once in a run and not again at that shape: an H100 JPEG ResNet's bf16 +
 * channels_last trial took 5.9 s at its epoch's partial batch, among steps of 40 ms, and read 151 ms a step. Such
 * stalls count as warm-up (a cost, not in the mean); a DataLoader's stalls (their time is waiting) always stay.
 */
export function withoutOneTimeStalls(timesNs: readonly number[], waitsNs: readonly number[]): { kept: number[]; once: number[] } {
  if (timesNs.length < 10) return { kept: [...timesNs], once: [] };
  const sorted = [...timesNs].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)] as number;
  const stall = (t: number, i: number) => t > ONE_TIME_STALL_X * median && (waitsNs[i] ?? 0) < 0.5 * t;
  const once = timesNs.filter(stall);
  if (once.length === 0 || once.length > ONE_TIME_STALLS_MAX) return { kept: [...timesNs], once: [] };
  return { kept: timesNs.filter((t, i) => !stall(t, i)), once };
}

/** The share of the second epoch's steps a trial must have timed for its mean to be that epoch's. */
const EPOCH_COVERED = 0.9;

/** Of the timed steps, those of the second epoch (steps E+1 to 2E), where the trial timed nearly all of them. */
function secondEpoch(stepNumbers: readonly number[], epochSteps: number | null): { from: number; to: number } | null {
  if (epochSteps === null || epochSteps < 2) return null;
  const inside = stepNumbers.filter((n) => n > epochSteps && n <= 2 * epochSteps).length;
  return inside >= EPOCH_COVERED * epochSteps ? { from: epochSteps + 1, to: 2 * epochSteps } : null;
}

/**
 * Which timed steps make a trial's mean (indices [from, to) of `times`) and where its warm-up ends: the second epoch
 * whole where it is known and timed and the warm-up ended inside the first; else every steady step.
 */
function measuredSpan(
  stepNumbers: readonly number[],
  times: readonly number[],
  epochSteps: number | null,
): { warmEnd: number; from: number; to: number; settled: boolean | null; opensWithEpochStart: boolean } {
  const epoch = secondEpoch(stepNumbers, epochSteps);
  if (epoch !== null) {
    const from = stepNumbers.findIndex((n) => n >= epoch.from);
    // The warm-up is judged on the first epoch alone: the second may run at another pace (the loader's), which is
    // what it is measured for.
    const warm = steadyStart(times.slice(0, from));
    if (from > 0 && warm.start < from)
      return {
        warmEnd: warm.start,
        from,
        to: stepNumbers.findLastIndex((n) => n <= epoch.to) + 1,
        settled: warm.settled,
        opensWithEpochStart: stepNumbers[from] === epoch.from,
      };
  }
  const steady = steadyStart(times);
  return { warmEnd: steady.start, from: steady.start, to: times.length, settled: steady.settled, opensWithEpochStart: false };
}

/**
 * The steady steps of a trial's slowest process (the one definition of run/steps.ts: the first step and the warm-up
 * left out, GPU times where the CUDA events cover the steps), their mean and its spread; null without timed steps.
 * Where the epoch is short (`epochSteps`, trialEpochSteps) and the trial timed its second epoch, the mean is that
 * epoch's, its start included: a long run is a sequence of such epochs, while the first runs on the queue the workers
 * filled during the warm-up (an H100 Lightning ResNet-50 in bf16: 67 ms a step in its first epoch, 80 in its second,
 * where its 2 workers bind; a trial mixing the two read 74.3 ms against 84.3 run plainly).
 */
export function measureTrial(records: readonly ProbeRecord[], epochSteps: number | null = null): Measure | null {
  const byPid = new Map<number, ProbeRecord[]>();
  for (const r of records) byPid.set(r.pid, [...(byPid.get(r.pid) ?? []), r]);
  let worst: Measure | null = null;
  for (const recs of byPid.values()) {
    const steps = recs.filter((r): r is StepRecord => r.type === 'step').sort((a, b) => a.step - b.step);
    if (steps.length < 2) continue;
    const gpu = gpuStepTimesOf(recs);
    const slowed = slowedByProbe(steps);
    const hostTimed = steps.filter((s, i) => i > 0 && s.stepTimeS !== null && Number.isFinite(s.stepTimeS) && !slowed.has(s.step));
    const gpuTimed = steps.filter((s, i) => i > 0 && gpu.has(s.step) && !slowed.has(s.step));
    const timing: 'gpu' | 'host' = gpuTimed.length > 0 && gpuTimed.length * 2 >= hostTimed.length ? 'gpu' : 'host';
    const timed = timing === 'gpu' ? gpuTimed : hostTimed;
    const times = timed.map((s) => (timing === 'gpu' ? (gpu.get(s.step) as number) : (s.stepTimeS as number)) * 1e9);
    if (times.length === 0) continue;
    const { warmEnd, from, to, settled, opensWithEpochStart } = measuredSpan(
      timed.map((s) => s.step),
      times,
      epochSteps,
    );
    const waits = timed.slice(from, to).map((s) => s.dataWaitS * 1e9);
    const { kept, once } = withoutOneTimeStalls(times.slice(from, to), waits);
    const ms = meanAndSpread(kept);
    if (ms === null) continue;
    // An epoch's start is a cost every epoch pays once, not noise: the spread of an epoch's mean is its other steps'
    // (in one of the blocks it made the spread 4 to 9 times larger, and an H100 Lightning run's pinned memory, 72.9 ->
    // 57.8 ms a step, was not kept).
    const startKept = opensWithEpochStart && kept[0] === times[from];
    const rest = startKept && kept.length > 4 ? meanAndSpread(kept.slice(1)) : null;
    const spreadNs = rest !== null ? (rest.spreadNs * (kept.length - 1)) / kept.length : ms.spreadNs;
    const first = steps[0]?.stepTimeS;
    const before = [...(typeof first === 'number' && Number.isFinite(first) ? [first * 1e9] : []), ...times.slice(0, warmEnd), ...once];
    const m: Measure = {
      steps: kept.length,
      meanNs: ms.meanNs,
      spreadNs,
      warmupSteps: before.length,
      warmupCostNs: Math.max(0, before.reduce((a, b) => a + b, 0) - before.length * ms.meanNs),
      settled,
      timing,
    };
    if (worst === null || m.meanNs > worst.meanNs) worst = m;
  }
  return worst;
}

/** Whether `cand` measured better than `cur` beyond the spread (and by more than MIN_GAIN), with the margin used. */
export function betterBeyondSpread(cur: Measure, cand: Measure): { better: boolean; gainNs: number; marginNs: number } {
  const gainNs = cur.meanNs - cand.meanNs;
  const marginNs = Math.max(PLAN_TUNE.zSpread * Math.hypot(cur.spreadNs, cand.spreadNs), PLAN_TUNE.minGain * cur.meanNs);
  return { better: gainNs > marginNs, gainNs, marginNs };
}

/** Steps per trial: about `seconds` of steps at the diagnosis's pace, in [minSteps, maxSteps]. */
export function stepsPerTrial(diagnosisStepNs: number | null, seconds: number = PLAN_TUNE.trialSeconds): number {
  if (diagnosisStepNs === null || !(diagnosisStepNs > 0)) return PLAN_TUNE.minSteps * 2;
  return Math.min(PLAN_TUNE.maxSteps, Math.max(PLAN_TUNE.minSteps, Math.ceil((seconds * 1e9) / diagnosisStepNs)));
}

/** When a trial stops (GPUWISE_TRIAL_STOP, python/gpuwise/probe/steady.py): its mean known, or its seconds of steady steps. */
export interface TrialStop {
  relSpread: number;
  /** The floor of steady steps; each trial's probe is given its own, at least this (leastSteadySteps). */
  minSteps: number;
  maxSeconds: number;
}

export function trialStopOf(seconds: number = PLAN_TUNE.trialSeconds): TrialStop {
  return { relSpread: PLAN_TUNE.stopRelSpread, minSteps: PLAN_TUNE.minSteadySteps, maxSeconds: seconds };
}

/** A DataLoader's prefetch_factor where the run does not set it (torch's default, with workers). */
const DEFAULT_PREFETCH = 2;
/** Prefetched batches a trial's steady steps outlast: they came during the first step, faster than the loader's pace. */
const PREFETCH_TIMES = 3;
/** Epochs this short are measured whole (their start included), as a long run is a sequence of them. */
const MAX_EPOCH_STEPS = 300;

/**
 * The steps of an epoch in a trial: the diagnosis's (`stepsPerEpoch`), at the trial's batch where --param changes it
 * (`start` the diagnosis's value); null where unknown or longer than MAX_EPOCH_STEPS.
 */
export function trialEpochSteps(facts: RunFacts, settings: TrialSettings, start: number | null = null): number | null {
  const e = facts.stepsPerEpoch;
  if (e === null || !(e > 0)) return null;
  const value = settings.batch?.value;
  const steps = value !== undefined && start !== null && start > 0 ? Math.ceil((e * start) / value) : e;
  return steps <= MAX_EPOCH_STEPS ? steps : null;
}

/**
 * The least steady steps a trial takes to stand for the run it verifies. A DataLoader's workers fill their queue
 * (workers x prefetch_factor batches) while the first step waits, so the next steps take batches at no wait and a short
 * trial reads the loader faster than it is (an H200 JPEG ResNet: 57 ms a step in 46 steps, 87 ms in a plain run of
 * 120): the steady steps outlast that queue PREFETCH_TIMES over. Where an epoch is short, a trial runs through two,
 * so that the second is measured whole, its start included (measureTrial); where two do not fit under `capSteps`,
 * through one. Bounded by `capSteps` less a margin for the warm-up.
 */
export function leastSteadySteps(facts: RunFacts, settings: TrialSettings, capSteps: number, start: number | null = null): number {
  const workers = settings.loader?.numWorkers ?? facts.loader?.workers ?? 0;
  const prefetch = workers > 0 ? (settings.loader?.prefetchFactor ?? facts.loader?.prefetchFactor ?? DEFAULT_PREFETCH) : 0;
  const room = capSteps - PLAN_TUNE.minSteadySteps;
  const epoch = trialEpochSteps(facts, settings, start) ?? 0;
  const epochs = 2 * epoch <= room ? 2 * epoch : epoch;
  const least = Math.max(PLAN_TUNE.minSteadySteps, PREFETCH_TIMES * workers * prefetch, epochs);
  return Math.max(PLAN_TUNE.minSteadySteps, Math.min(least, room));
}

/**
 * The cap of steps of a trial that stops once steady: enough for the slowest stop (warm-up, then `seconds` of steady
 * steps, twice over where the steps never settle) at the diagnosis's pace, within [minSteps, maxSteps].
 */
export function stepCapOf(diagnosisStepNs: number | null, seconds: number = PLAN_TUNE.trialSeconds): number {
  return stepsPerTrial(diagnosisStepNs, 3 * seconds);
}

/** How a trial ended, as its probe said (trial-PID.json's `stop`): steady, its seconds of steady steps, or null (the cap, --steps, or the command's own end). */
export interface TrialStopped {
  why: 'steady' | 'seconds';
  step: number;
  steadySteps: number;
}

// ---------- divergence ----------

/** The losses a trial's probe saw (trial-PID.json): numbers, or 'nan' / 'inf' for values that were not finite. */
export interface Losses {
  first: (number | string)[];
  last: (number | string)[];
}

/**
 * Why a trial diverged, or null: a loss that was not finite, or losses whose mean passes the baseline's first losses'
 * largest by more than PLAN_TUNE.lossFar of their mean (a fix that makes training blow up). Only where the probe saw
 * the losses (a scalar `loss.backward()`).
 */
export function divergence(baseline: Losses | null, trial: Losses | null): string | null {
  if (trial === null) return null;
  const all = [...trial.first, ...trial.last];
  const bad = all.find((x) => typeof x !== 'number');
  if (bad !== undefined) return `the loss became ${String(bad)}`;
  const base = (baseline?.first ?? []).filter((x): x is number => typeof x === 'number');
  const nums = all as number[];
  if (base.length === 0 || nums.length === 0) return null;
  const baseMean = base.reduce((a, b) => a + b, 0) / base.length;
  const limit = Math.max(...base) + PLAN_TUNE.lossFar * Math.abs(baseMean);
  const mean = nums.reduce((a, b) => a + b, 0) / nums.length;
  return mean > limit
    ? `the loss went far from the baseline's first losses (mean ${mean.toPrecision(4)} against at most ${limit.toPrecision(4)})`
    : null;
}

// ---------- the report ----------

export type TrialOutcome = 'ok' | 'oom' | 'failed' | 'timeout' | 'interrupted' | 'diverged' | 'no-steps';

export interface PlanTrial {
  index: number;
  /** What the trial measured: `baseline`, or the candidate's name. */
  name: string;
  stepId: string | null;
  /** The settings the probe ran with (the kept fixes and this candidate's change). */
  settings: TrialSettings;
  outcome: TrialOutcome;
  detail: string;
  measure: Measure | null;
  /** What the probe did and did not apply (trial-PID.json). */
  applied: string[];
  notApplied: { lever: string; why: string }[];
  /** Why the probe stopped it before its cap (null: the cap, --steps, or the command's own end). */
  stopped: TrialStopped | null;
  /**
   * With --param: the value its command ran with, and its own mean step at that value (`measure` is per the
   * diagnosis's batch of samples: the same as this at the diagnosis's value). Null without --param.
   */
  batch: number | null;
  batchStepNs: number | null;
  wallS: number;
  runDir: string;
}

export interface PlanTuneStep {
  stepId: string;
  label: string;
  source: 'plan' | 'try' | 'param';
  /** Whether the probe can make it (else it stays predicted: `why`). */
  injectable: boolean;
  codeChange: boolean;
  why: string | null;
  /** The plan's step before the fix and after (as predicted), ns. */
  fromStepNs: number | null;
  predictedStepNs: number | null;
  /** predicted / from. */
  predictedRatio: number | null;
  /** The measured mean step of the configuration it was tried on, and of the candidate chosen, ns. */
  measuredFromStepNs: number | null;
  measuredStepNs: number | null;
  measuredSpreadNs: number | null;
  /** measured / measuredFrom. */
  measuredRatio: number | null;
  /**
   * A small gain's confirmation: the configuration tried on, run again after the fix's trial; whether the fix beat it
   * too, and whether the two runs of that configuration moved apart beyond their spread (then nothing is kept).
   */
  recheck: { trial: number; stepNs: number | null; spreadNs: number | null; better: boolean; moved?: boolean } | null;
  /** The candidate chosen (the best measured, or the smallest worker count as good), and its change. */
  chosen: string | null;
  applied: TrialSettings | null;
  kept: boolean;
  /** The trials of this step (indexes into `trials`). */
  trials: number[];
}

export interface PermanentChange {
  framework: string;
  lines: string[];
}

export interface PlanTuneReport {
  schemaVersion: typeof PLAN_TUNE_SCHEMA_VERSION;
  tool: 'gpuwise';
  command: 'tune --plan';
  version: string;
  cmd: string[];
  outDir: string;
  /** The cap of steps of a trial (exactly its steps with --steps, when `trialStop` is null). */
  stepsPerTrial: number;
  /** When a trial stops before its cap: its steady mean known (null: --steps N, every trial runs N steps). */
  trialStop: TrialStop | null;
  /**
   * `--param` beside `--plan`: the batch placeholder, its range and the value the diagnosis and the baseline ran at.
   * Every step time of the report is then per `start` samples (a step of a larger batch scaled down to it).
   */
  param: BatchParam | null;
  diagnosis: {
    runDir: string;
    runId: string | null;
    stepNs: number | null;
    planExpectedStepNs: number | null;
    bound: string | null;
    wallS: number;
  };
  baseline: PlanTrial | null;
  steps: PlanTuneStep[];
  trials: PlanTrial[];
  best: {
    settings: TrialSettings;
    names: string[];
    stepNs: number | null;
    spreadNs: number | null;
    baselineStepNs: number | null;
    speedup: number | null;
  };
  permanent: PermanentChange[];
  /** Seconds the trials took (the diagnosis apart), and compilation's warm-up over the trials (its cost, not in the steps). */
  trialsS: number;
  totalS: number;
  warmupCostS: number;
  notes: string[];
  exitCode: number;
}

/** The best of several measured candidates: the smallest-indexed one (fewest workers) no worse than the fastest beyond the spread. */
export function chooseCandidate(measured: readonly { index: number; measure: Measure }[]): number | null {
  if (measured.length === 0) return null;
  const fastest = measured.reduce((a, b) => (b.measure.meanNs < a.measure.meanNs ? b : a));
  for (const m of measured) if (m === fastest || !betterBeyondSpread(m.measure, fastest.measure).better) return m.index;
  return fastest.index;
}

/** The change that makes the kept settings permanent, in plain PyTorch and in the framework the run used (and the others). */
export function permanentChanges(s: TrialSettings, framework: string | null): PermanentChange[] {
  const l = s.loader ?? {};
  const loaderArgs: string[] = [];
  const b = s.batch?.value;
  if (l.numWorkers !== undefined) loaderArgs.push(`num_workers=${l.numWorkers}`);
  if (l.pinMemory) loaderArgs.push('pin_memory=True');
  if (l.persistentWorkers) loaderArgs.push('persistent_workers=True');
  if (l.prefetchFactor !== undefined) loaderArgs.push(`prefetch_factor=${l.prefetchFactor}`);
  const torchLines: string[] = [];
  if (loaderArgs.length || b !== undefined)
    torchLines.push(`loader = DataLoader(dataset, ${[`batch_size=${b ?? 'B'}`, ...loaderArgs].join(', ')})`);
  if (s.tf32) torchLines.push('torch.set_float32_matmul_precision("high")  # TF32 matmuls', 'torch.backends.cudnn.allow_tf32 = True');
  if (s.cudnnBenchmark) torchLines.push('torch.backends.cudnn.benchmark = True');
  if (s.channelsLast)
    torchLines.push('model = model.to(memory_format=torch.channels_last)', 'x = x.to(device, memory_format=torch.channels_last)');
  if (s.compile)
    torchLines.push(s.compile === 'default' ? 'model = torch.compile(model)' : `model = torch.compile(model, mode="${s.compile}")`);
  if (s.autocast) torchLines.push(...autocastLines('bfloat16'));
  if (torchLines.length === 0) return [];
  const out: PermanentChange[] = [{ framework: 'pytorch', lines: torchLines }];
  const hf: string[] = [];
  if (b !== undefined) hf.push(`per_device_train_batch_size=${b}`);
  if (s.autocast) hf.push('bf16=True');
  if (s.tf32) hf.push('tf32=True');
  if (l.numWorkers !== undefined) hf.push(`dataloader_num_workers=${l.numWorkers}`);
  if (l.pinMemory) hf.push('dataloader_pin_memory=True');
  if (l.persistentWorkers) hf.push('dataloader_persistent_workers=True');
  if (l.prefetchFactor !== undefined) hf.push(`dataloader_prefetch_factor=${l.prefetchFactor}`);
  if (s.compile) hf.push('torch_compile=True', ...(s.compile !== 'default' ? [`torch_compile_mode="${s.compile}"`] : []));
  const hfLines = hf.length ? [`TrainingArguments(..., ${hf.join(', ')})`] : [];
  if (s.channelsLast) hfLines.push('model = model.to(memory_format=torch.channels_last)  # before Trainer(model=model, ...)');
  const lightning: string[] = [];
  if (s.autocast) lightning.push('Trainer(..., precision="bf16-mixed")');
  if (s.tf32) lightning.push('torch.set_float32_matmul_precision("high")');
  if (s.cudnnBenchmark) lightning.push('Trainer(..., benchmark=True)');
  const dl = [...(b !== undefined ? [`batch_size=${b}`] : []), ...loaderArgs];
  if (dl.length) lightning.push(`DataLoader(..., ${dl.join(', ')})  # in the LightningDataModule's *_dataloader()`);
  if (s.channelsLast) lightning.push('model = model.to(memory_format=torch.channels_last)');
  if (s.compile)
    lightning.push(
      s.compile === 'default'
        ? 'model = torch.compile(model)  # before trainer.fit(model)'
        : `model = torch.compile(model, mode="${s.compile}")`,
    );
  const acc: string[] = [];
  if (s.autocast) acc.push('Accelerator(mixed_precision="bf16")  # or accelerate launch --mixed_precision bf16');
  if (s.compile) acc.push('Accelerator(dynamo_backend="inductor")');
  if (s.tf32) acc.push('torch.set_float32_matmul_precision("high")');
  if (dl.length) acc.push(`DataLoader(..., ${dl.join(', ')})  # before accelerator.prepare(...)`);
  const forms: PermanentChange[] = [
    ...(hfLines.length ? [{ framework: 'transformers', lines: hfLines }] : []),
    ...(lightning.length ? [{ framework: 'lightning', lines: lightning }] : []),
    ...(acc.length ? [{ framework: 'accelerate', lines: acc }] : []),
  ];
  // The run's own framework first, after plain PyTorch; the others only where the run used none.
  const own = forms.filter((f) => f.framework === framework);
  return framework && own.length ? [...own, ...out] : [...out, ...forms];
}
