/**
 * The planner's entry points (pure): evaluate one plan, find the largest batch, list memory savers, and
 * search the space of parallel layouts for the best feasible plans.
 */
import { type FitTerms, fitsMemory } from '../gpus/memoryFit.js';
import { PlanError } from './errors.js';
import { CALIBRATION as K } from './calibration.js';
import { type MemoryPrediction, predictMemory } from './memory.js';
import type { ModelDescription } from './model.js';
import type { Checkpointing, DataParallel, Hardware, Parallelism, TrainingSetup } from './setup.js';
import { predictStepTime, type StepTime } from './time.js';
import { fmtGiB } from '../util/format.js';

export interface PlanRequest {
  model: ModelDescription;
  setup: TrainingSetup;
  parallelism: Parallelism;
  hardware: Hardware;
}

export interface MemorySaver {
  /** The change, e.g. `--checkpointing full`. */
  change: string;
  /** Peak allocated bytes saved (positive). */
  savedBytes: number;
  /** Step time change in ms (positive = slower). */
  stepTimeDeltaMs: number;
}

export interface Plan {
  setup: TrainingSetup;
  parallelism: Parallelism;
  memory: MemoryPrediction;
  time: StepTime;
  /** Memory the allocator may use on one GPU: the card minus the CUDA context (and NCCL), or --memory-cap. */
  budgetBytes: number;
  fits: boolean;
  /** Sequences per optimizer step: micro-batch x accumulation x data-parallel size. */
  globalBatch: number;
}

export function budgetBytes(hw: Hardware, world: number): number {
  const card = hw.gpu.memoryBytes - K.cudaContextBytes - (world > 1 ? K.ncclBufferBytes : 0);
  return hw.memoryCapBytes !== undefined ? Math.min(hw.memoryCapBytes, card) : card;
}

/**
 * "of a 139.1 GiB budget": a peak against what the allocator may use on a GPU (its memory less the CUDA context),
 * said as a budget so it is not read as a second figure for the GPU's memory (139.8 GiB on an H200).
 */
export function ofBudgetText(budgetBytes: number): string {
  return `of a ${fmtGiB(budgetBytes)} budget`;
}

/** The fit rule: the peak with its slack, plus the hole fragmentation leaves for the largest blocks, within the budget. */
export function fitsIn(memory: { peakAllocatedBytes: number; fragmentationBytes: number }, budget: number): boolean {
  return fitsMemory(memory.peakAllocatedBytes, budget, plannerFitTerms(memory.fragmentationBytes));
}

/** The planner's terms of the fit rule (gpus/memoryFit.ts): its calibrated slack, and the fragmentation's hole. */
export function plannerFitTerms(fragmentationBytes = 0): FitTerms {
  return { slack: K.fitSlack, holeBytes: fragmentationBytes };
}

export function evaluatePlan(req: PlanRequest): Plan {
  const { model, setup, parallelism: par, hardware } = req;
  const memory = predictMemory(model, setup, par);
  const time = predictStepTime(model, setup, par, hardware);
  const world = par.dpSize * par.tp * par.pp;
  const budget = budgetBytes(hardware, world);
  return {
    setup,
    parallelism: par,
    memory,
    time,
    budgetBytes: budget,
    fits: fitsIn(memory, budget),
    globalBatch: setup.microBatch * (setup.mode === 'train' ? setup.gradAccum : 1) * par.dpSize,
  };
}

/** Largest micro-batch that fits (0 when even 1 does not). */
export function maxMicroBatch(req: PlanRequest, limit = 1 << 20): { microBatch: number; plan: Plan | null } {
  const at = (b: number) => evaluatePlan({ ...req, setup: { ...req.setup, microBatch: b } });
  let lo = 0;
  let loPlan: Plan | null = null;
  let hi = 1;
  // Memory grows monotonically with the batch: double, then bisect.
  while (hi <= limit) {
    const p = at(hi);
    if (!p.fits) break;
    lo = hi;
    loPlan = p;
    hi *= 2;
  }
  if (hi > limit) return { microBatch: lo, plan: loPlan };
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    const p = at(mid);
    if (p.fits) {
      lo = mid;
      loPlan = p;
    } else hi = mid;
  }
  return { microBatch: lo, plan: loPlan };
}

/** The three changes that cut the peak most, with their GB deltas and time cost. */
export function memorySavers(req: PlanRequest, base: Plan = evaluatePlan(req), top = 3): MemorySaver[] {
  const { setup: s, parallelism: p } = req;
  const variants: [string, Partial<TrainingSetup>, Partial<Parallelism>][] = [];
  if (s.mode === 'infer') return [];
  if (s.checkpointing !== 'full') variants.push(['--checkpointing full', { checkpointing: 'full' }, {}]);
  if (s.checkpointing === 'none') variants.push(['--checkpointing selective', { checkpointing: 'selective' }, {}]);
  if (s.microBatch > 1) {
    const half = Math.floor(s.microBatch / 2);
    variants.push([`--batch ${half} --grad-accum ${s.gradAccum * 2}`, { microBatch: half, gradAccum: s.gradAccum * 2 }, {}]);
  }
  if (s.optimizer === 'adamw' || s.optimizer === 'adam') variants.push(['--optimizer adamw-8bit', { optimizer: 'adamw-8bit' }, {}]);
  if (s.precision === 'fp32') variants.push(['--precision amp-bf16', { precision: 'amp-bf16' }, {}]);
  if (s.precision === 'amp-bf16') variants.push(['--precision bf16', { precision: 'bf16' }, {}]);
  if (p.dpSize > 1) {
    const nodes = req.hardware.nodes;
    // The strategies that shard more than the run's (HSDP beside FSDP too: it shards less, but across nodes it is faster).
    const more = (['zero2', 'fsdp', 'hsdp'] as const).filter((dp) => (dp === 'hsdp' ? p.dp !== 'hsdp' : SHARDING_ORDER[p.dp] < SHARDING_ORDER[dp]));
    for (const dp of more) {
      const c = strategyChange(dp, p, nodes);
      if (c) variants.push([c[0], {}, c[1]]);
    }
    if ((p.dp === 'fsdp' || p.dp === 'hsdp') && !p.reshardAfterForward)
      variants.push(['reshard after forward (drop --no-reshard)', {}, { reshardAfterForward: true }]);
  }
  if (!p.cpuOffload) variants.push(['--offload', {}, { cpuOffload: true }]);
  const out: MemorySaver[] = [];
  for (const [change, ds, dp] of variants) {
    const v = evaluatePlan({ ...req, setup: { ...s, ...ds }, parallelism: { ...p, ...dp } });
    const saved = base.memory.peakAllocatedBytes - v.memory.peakAllocatedBytes;
    if (saved > 0) out.push({ change, savedBytes: saved, stepTimeDeltaMs: v.time.stepTimeMs - base.time.stepTimeMs });
  }
  const picked = out.sort((a, b) => b.savedBytes - a.savedBytes).slice(0, top);
  // HSDP saves less than FSDP, so the largest savings leave it out; where the model puts it ahead of every other
  // change of strategy offered, it takes the last place (issue 47: 528 ms against FSDP's 3,137, not suggested).
  const hsdp = out.find((x) => x.change === '--strategy hsdp');
  const strategies = picked.filter((x) => x.change.startsWith('--strategy '));
  if (hsdp && !picked.includes(hsdp) && (strategies.length > 0 || hsdp.stepTimeDeltaMs < 0) && strategies.every((x) => hsdp.stepTimeDeltaMs < x.stepTimeDeltaMs)) {
    const at = picked.length < top ? picked.length : picked.length - 1;
    picked.splice(at, picked.length - at, hsdp);
  }
  return picked;
}

/**
 * The flag and the parallelism of data-parallel strategy `dp` over `p`'s ranks; null for HSDP where it is FSDP or cannot
 * be laid out (one node, ranks that do not split over the nodes). Across nodes HSDP shards within a node and replicates
 * across, so its all-gathers stay on NVLink (issue 47).
 */
function strategyChange(dp: Exclude<DataParallel, 'none'>, p: Parallelism, nodes: number): [string, Partial<Parallelism>] | null {
  if (dp === 'hsdp')
    return nodes > 1 && p.dpSize % nodes === 0 && p.dpSize > nodes ? ['--strategy hsdp', { dp, hsdpShardSize: p.dpSize / nodes, reshardAfterForward: true }] : null;
  return [`--strategy ${dp}`, dp === 'fsdp' ? { dp, reshardAfterForward: true } : { dp }];
}

/** A change of data-parallel strategy that fits and shortens the step (FASTER_MIN_SHARE or more). */
export interface FasterLayout {
  /** The flag, e.g. `--strategy hsdp`. */
  change: string;
  stepTimeMs: number;
  peakAllocatedBytes: number;
}

/** A layout is worth naming when it takes this share off the step or more. */
export const FASTER_MIN_SHARE = 0.1;

/**
 * The data-parallel strategies that fit this set-up and shorten its step, fastest first (at most `top`): a plan across
 * nodes that FSDP's all-gathers leave communication-bound is told HSDP keeps them inside a node (issue 47: 430 ms
 * against FSDP's 2,676 on 4 x 8 H100s, never named, since HSDP frees no memory and only memory savers were listed).
 */
export function fasterLayouts(req: PlanRequest, base: Plan = evaluatePlan(req), top = 2): FasterLayout[] {
  const p = req.parallelism;
  if (req.setup.mode === 'infer' || p.dpSize <= 1) return [];
  const out: FasterLayout[] = [];
  for (const dp of ['ddp', 'zero1', 'zero2', 'fsdp', 'hsdp'] as const) {
    const c = dp === p.dp ? null : strategyChange(dp, p, req.hardware.nodes);
    if (!c) continue;
    const [change, parallelism] = c;
    const v = evaluatePlan({ ...req, parallelism: { ...p, ...parallelism } });
    if (v.fits && v.time.stepTimeMs <= base.time.stepTimeMs * (1 - FASTER_MIN_SHARE))
      out.push({ change, stepTimeMs: v.time.stepTimeMs, peakAllocatedBytes: v.memory.peakAllocatedBytes });
  }
  return out.sort((a, b) => a.stepTimeMs - b.stepTimeMs).slice(0, top);
}

export interface SearchOptions {
  /** Sequences per optimizer step; when absent every micro-batch runs without accumulation. */
  globalBatch?: number;
  /** Largest micro-batch tried (powers of two up to it, or every integer with everyMicroBatch). */
  maxMicroBatch?: number;
  /** Try every micro-batch size, not only powers of two (with a global batch: every divisor). */
  everyMicroBatch?: boolean;
  strategies?: DataParallel[];
  checkpointing?: Checkpointing[];
  allowOffload?: boolean;
}

export interface SearchResult {
  /**
   * Feasible plans, best first: by predicted throughput, except that plans within SEARCH_TIE_TOLERANCE of each other
   * are a tie, ordered simplest first (layoutSimplicity), so plans[0] is the simplest of those tied with the fastest.
   */
  plans: Plan[];
  candidates: number;
  feasible: number;
  /** How plans[0] was chosen: the plans tied with the fastest (it included) and the fastest of them. */
  choice: { tolerance: number; tied: number; fastest: Plan } | null;
}

/**
 * Predicted throughputs this close are a tie (2%): the layouts differ in terms the step-time model estimates, not
 * measures (its single-GPU median error is 8.6%, docs/planner.md), so an order inside 2% is the model's noise, and a
 * layout that much slower is not one a user would notice. A tie goes to the simplest layout.
 */
export const SEARCH_TIE_TOLERANCE = 0.02;

const SHARDING_ORDER: Record<DataParallel, number> = { none: 0, ddp: 0, zero1: 1, zero2: 2, fsdp: 3, hsdp: 4 };
const CHECKPOINTING_ORDER: Record<Checkpointing, number> = { none: 0, selective: 1, full: 2 };

/**
 * How much a layout asks of the user, lowest first, compared term by term: data parallelism before tensor or
 * pipeline parallelism (then fewer GPUs per model copy); replicated (DDP) before sharded, less state sharded first
 * (ZeRO-1, ZeRO-2, FSDP, HSDP); resharding after forward (FSDP's default) before not; no CPU offload; no activation
 * checkpointing before selective before full; fewer accumulation steps; a larger micro-batch.
 */
export function layoutSimplicity(p: Plan): number[] {
  const par = p.parallelism;
  return [
    par.tp > 1 || par.pp > 1 ? 1 : 0,
    par.tp * par.pp,
    SHARDING_ORDER[par.dp],
    par.reshardAfterForward ? 0 : 1,
    par.cpuOffload ? 1 : 0,
    CHECKPOINTING_ORDER[p.setup.checkpointing],
    p.setup.gradAccum,
    -p.setup.microBatch,
  ];
}

function bySimplicity(a: Plan, b: Plan): number {
  const x = layoutSimplicity(a);
  const y = layoutSimplicity(b);
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return (x[i] as number) - (y[i] as number);
  return b.time.tokensPerSec - a.time.tokensPerSec || a.memory.peakAllocatedBytes - b.memory.peakAllocatedBytes;
}

/**
 * The search's order: fastest first in bands; a band is the fastest plan left and every plan within the tolerance
 * of it, ordered simplest first. The first band is the tie with the fastest plan.
 */
function rankPlans(plans: Plan[]): Pick<SearchResult, 'plans' | 'choice'> {
  const byRate = [...plans].sort((a, b) => b.time.tokensPerSec - a.time.tokensPerSec || a.memory.peakAllocatedBytes - b.memory.peakAllocatedBytes);
  const ranked: Plan[] = [];
  let choice: SearchResult['choice'] = null;
  for (let i = 0; i < byRate.length; ) {
    const head = byRate[i] as Plan;
    const floor = head.time.tokensPerSec * (1 - SEARCH_TIE_TOLERANCE);
    let j = i + 1;
    while (j < byRate.length && (byRate[j] as Plan).time.tokensPerSec >= floor) j++;
    if (i === 0) choice = { tolerance: SEARCH_TIE_TOLERANCE, tied: j, fastest: head };
    ranked.push(...byRate.slice(i, j).sort(bySimplicity));
    i = j;
  }
  return { plans: ranked, choice };
}

/** More GPUs than any cluster holds: the search (and `--gpus 1e12`) stops with one line instead of looping for hours. */
export const MAX_WORLD_GPUS = 1 << 20;

/** The divisors of n in increasing order, in O(sqrt n). */
function divisors(n: number): number[] {
  const low: number[] = [];
  const high: number[] = [];
  for (let i = 1; i * i <= n; i++) {
    if (n % i !== 0) continue;
    low.push(i);
    if (i * i !== n) high.push(n / i);
  }
  return [...low, ...high.reverse()];
}

/** Enumerates layouts for the request's model, set-up and hardware; the request's own parallelism is ignored. */
export function searchPlans(req: PlanRequest, opts: SearchOptions = {}): SearchResult {
  const { model: m, hardware: hw, setup } = req;
  const world = hw.gpusPerNode * hw.nodes;
  if (!(world <= MAX_WORLD_GPUS))
    throw new PlanError(`${world} GPUs (${hw.nodes} x ${hw.gpusPerNode}) is more than the planner searches (at most ${MAX_WORLD_GPUS})`);
  const ckpts = opts.checkpointing ?? (setup.mode === 'infer' ? ['none'] : ['none', 'selective', 'full']);
  const maxMb = opts.maxMicroBatch ?? 64;
  const plans: Plan[] = [];
  let candidates = 0;
  for (const tp of divisors(world)) {
    if (tp > hw.gpusPerNode || m.heads % tp !== 0 || m.kvHeads % tp !== 0) continue;
    for (const pp of divisors(world / tp)) {
      if (pp > m.layers) continue;
      const dpSize = world / (tp * pp);
      const dps: DataParallel[] =
        dpSize === 1 ? ['none'] : (opts.strategies ?? ['ddp', 'zero1', 'zero2', 'fsdp', ...(hw.nodes > 1 ? (['hsdp'] as const) : [])]);
      for (const dp of dps) {
        if (pp > 1 && (dp === 'fsdp' || dp === 'hsdp' || dp === 'zero2')) continue; // not combined with PP here
        for (const reshard of dp === 'fsdp' || dp === 'hsdp' ? [true, false] : [true]) {
          for (const offload of opts.allowOffload === false || setup.mode === 'infer' ? [false] : [false, true]) {
            for (const ckpt of ckpts) {
              for (let mb = 1; mb <= maxMb; mb = opts.everyMicroBatch || opts.globalBatch !== undefined ? mb + 1 : mb * 2) {
                let accum = 1;
                if (opts.globalBatch !== undefined) {
                  const perStep = mb * dpSize;
                  if (opts.globalBatch % perStep !== 0) continue;
                  accum = opts.globalBatch / perStep;
                }
                if (pp > 1 && accum < pp) continue; // 1F1B needs at least p micro-batches
                candidates++;
                const plan = evaluatePlan({
                  model: m,
                  hardware: hw,
                  setup: { ...setup, microBatch: mb, gradAccum: accum, checkpointing: ckpt },
                  parallelism: {
                    dp,
                    dpSize,
                    tp,
                    pp,
                    reshardAfterForward: reshard,
                    cpuOffload: offload,
                    ...(dp === 'hsdp' ? { hsdpShardSize: dpSize / hw.nodes } : {}),
                  },
                });
                if (plan.fits) plans.push(plan);
              }
            }
          }
        }
      }
    }
  }
  return { ...rankPlans(plans), candidates, feasible: plans.length };
}

/** The `gpuwise plan` flags that reproduce a plan's layout and set-up. */
export function planFlags(plan: Plan): string {
  const p = plan.parallelism;
  const s = plan.setup;
  const flags = [p.dp === 'none' ? (p.dpSize * p.tp * p.pp > 1 ? '' : '--strategy single') : `--strategy ${p.dp}`];
  if (p.tp > 1) flags.push(`--tp ${p.tp}`);
  if (p.pp > 1) flags.push(`--pp ${p.pp}`);
  if ((p.dp === 'fsdp' || p.dp === 'hsdp') && !p.reshardAfterForward) flags.push('--no-reshard');
  if (p.cpuOffload) flags.push('--offload');
  flags.push(`--batch ${s.microBatch}`);
  if (s.gradAccum > 1) flags.push(`--grad-accum ${s.gradAccum}`);
  if (s.checkpointing !== 'none') flags.push(`--checkpointing ${s.checkpointing}`);
  return flags.filter((f) => f !== '').join(' ');
}

/** Why nothing fits, and the nearest thing that would: one line for the user. */
export function explainNoFit(req: PlanRequest, plan: Plan): string {
  const gib = (b: number) => fmtGiB(b);
  const parts = [`needs ${gib(plan.memory.peakAllocatedBytes)} at ${plan.memory.bindingPhase} but the budget is ${gib(plan.budgetBytes)}`];
  const mb = maxMicroBatch(req);
  if (mb.microBatch > 0) parts.push(`--batch ${mb.microBatch} fits`);
  const savers = memorySavers(req, plan, 6)
    .map((sv) => ({ sv, p: plan.memory.peakAllocatedBytes - sv.savedBytes }))
    .filter((x) => fitsIn({ peakAllocatedBytes: x.p, fragmentationBytes: plan.memory.fragmentationBytes }, plan.budgetBytes));
  const first = savers[0];
  if (first) parts.push(`${mb.microBatch > 0 ? 'or ' : ''}${first.sv.change} fits`);
  if (mb.microBatch === 0 && !first) {
    const s = searchPlans(req, { maxMicroBatch: 1 });
    const best = s.plans[0];
    if (best) parts.push(`this fits: ${planFlags(best)}`);
    else parts.push('no layout with micro-batch 1 fits these GPUs: add GPUs or use a larger card');
  }
  return parts.join('; ');
}
