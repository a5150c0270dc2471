/**
 * A fix as data (pure): what it changes in the pipeline, never the step it gives. A rule detects its cause and computes
 * its fix's figures from its evidence (the kernels bf16 speeds up, the syncs per step); `applyFix` changes the pipeline
 * and `stepOf` (pipeline.ts) answers the new step and the stage that binds next. GPU and host figures are in the
 * profiled window's ns; the pipeline's `scale` takes them to its own (a run outside the profiler).
 */
import type { FindingId } from '../findings/ids.js';
import { fmtMs } from '../util/format.js';
import { batchedGpuNs } from './batch.js';
import { type Pipeline, type SerialKind, type Stage, type StageName, stageLabel } from './pipeline.js';
import type { GpuWork, HostWork } from './work.js';

export { GPU_WORK, type GpuWork, HOST_WORK, type HostWork } from './work.js';

/**
 * Another factor for an op where an earlier fix of the plan shortened the GPU work item `gpu`: the item's kernels are
 * gone from between the op's own, so what the op removes is read off the step without them (compile after SDPA: the
 * pointwise chains hand-written attention's kernels split join, pointwiseChains.ts).
 */
export interface OnceFixed {
  gpu: GpuWork;
  factor: number;
}

export type FixOp =
  /** The DataLoader's worker count: a number, or `enough` for the demand of the other stages (capped by the cores). */
  | { kind: 'workers'; to: number | 'enough' }
  /** persistent_workers=True: the workers' start-up at each epoch start goes (the fill of the first batch stays). */
  | { kind: 'persistent-workers' }
  /**
   * A work item of the GPU (`work` names it, work.ts GPU_WORK: `fp32-matmul`, `memory-bound`, `nchw-transposes`, ...):
   * `ns` of it per step now, of which `factor` remains. Two fixes naming the same item compose (bf16 halves what fusion
   * then fuses). `addNs`: window ns of the item the fix adds beside it (autocast: fp32 GEMMs with a dimension not a
   * multiple of 8 run slower than the aligned rate in bf16); a later fix naming the item leaves its `factor` of them.
   * `onceFixed`: its factor instead where an earlier fix shortened that item.
   */
  | { kind: 'gpu'; work: GpuWork; ns: number; factor: number; addNs?: number; onceFixed?: OnceFixed }
  /**
   * The host's own work per step (`work` names it, work.ts HOST_WORK): `ns` of it (window ns) goes, or all of it is
   * multiplied by `factor` (`onceFixed`'s where an earlier fix shortened its GPU item).
   */
  | { kind: 'host'; work: HostWork; ns?: number; factor?: number; onceFixed?: OnceFixed }
  /** A serial cost of this kind (or every one) multiplied by `factor` (0: gone), or `ns` (window ns) of it removed. */
  | { kind: 'serial'; cost: SerialKind | 'all'; factor?: number; ns?: number }
  /** Exposed communication: `ns` of it (window ns) hidden under compute. */
  | { kind: 'comm'; ns: number }
  /**
   * The batch k times larger: per-sample work (the GPU's, the loader's batches, copies) grows k times, per-step costs
   * do not (the host's launches, syncs, the GPU's work once a step: batch.ts).
   */
  | { kind: 'batch'; k: number }
  /** The whole step multiplied by `factor`: a change measured elsewhere or modelled as a whole (another layout). */
  | { kind: 'step'; factor: number }
  /**
   * The ranks of a job balanced: each takes the mean across the ranks of the work they do (job.ts `balanced`). Work
   * moves between ranks, none goes, so it means nothing to one rank's pipeline: applyFix leaves it, the job applies it.
   */
  | { kind: 'balance' };

export interface Fix {
  /** The change in a few words, for the plan ("bf16 autocast + channels_last"). */
  label: string;
  ops: FixOp[];
  /** How the rule computed the ops' figures from its evidence, in words and numbers. */
  arithmetic: string;
  /**
   * The fix compiles the model (torch.compile, CUDA graphs): an input of a new shape then costs a recompilation and
   * new graphs, so a loader's partial last batch asks for drop_last=True with it (plan.ts).
   */
  compiles?: boolean;
  /**
   * Findings whose change this fix makes too (its code does it: a static cache's CUDA graphs run under
   * inference_mode): once it is in a plan, theirs leave it, so one change is not counted twice.
   */
  includes?: readonly FindingId[];
  /**
   * The change runs this many times the run's samples a step while its ops give the time per the run's batch directly
   * (a what-if's throughput, modelled whole: a `step` op of 1 / the samples/s factor). Its gain then reads per the
   * run's batch of samples, as a `batch` op's does, with the pipeline's own figures left as they were modelled.
   */
  batchScale?: number;
}

function withStage(p: Pipeline, s: StageName, ns: number | null, evidence?: string): Pipeline {
  const old = p.stages[s];
  const stage: Stage = { ...old, ns, ...(evidence ? { evidence } : {}) };
  return { ...p, stages: { ...p.stages, [s]: stage } };
}

/** An op's factor on `p`: its `onceFixed` one where an earlier fix shortened that GPU work item. */
function factorOn(p: Pipeline, factor: number, onceFixed: OnceFixed | undefined): number {
  return onceFixed !== undefined && (p.work.gpu[onceFixed.gpu] ?? 1) < 1 ? onceFixed.factor : factor;
}

function applyOp(p: Pipeline, op: FixOp): Pipeline {
  switch (op.kind) {
    case 'workers': {
      if (p.loader && p.loader.batchNsPerWorker !== null) return { ...p, loader: { ...p.loader, workersTo: op.to } };
      // No per-worker rate: enough workers take the input stage off the critical path, whatever it was.
      return withStage(p, 'input', null, 'assumed to keep up once the loader has enough workers');
    }
    case 'persistent-workers': {
      // Without the loader's records the epoch starts are a serial cost measured from the stalls: it goes whole.
      const serial = p.serial.filter((c) => c.kind !== 'epoch-starts');
      return { ...p, serial, loader: p.loader ? { ...p.loader, persistentTo: true } : null };
    }
    case 'gpu': {
      const gpu = p.stages.gpu.ns;
      if (gpu === null) return p;
      const left = p.work.gpu[op.work] ?? 1;
      const added = p.work.gpuAdded?.[op.work] ?? 0;
      const factor = factorOn(p, op.factor, op.onceFixed);
      const saved = (op.ns * left + added) * (1 - factor) * p.scale.gpu - (op.addNs ?? 0) * p.scale.gpu;
      const work = {
        ...p.work,
        gpu: { ...p.work.gpu, [op.work]: left * factor },
        gpuAdded: { ...p.work.gpuAdded, [op.work]: added * factor + (op.addNs ?? 0) },
      };
      return { ...withStage(p, 'gpu', Math.max(0, gpu - saved)), work };
    }
    case 'host': {
      const host = p.stages.host.ns;
      const left = p.work.host[op.work] ?? 1;
      const factor = factorOn(p, op.factor ?? 1, op.onceFixed);
      const work = { ...p.work, host: { ...p.work.host, [op.work]: left * factor } };
      // Launch gaps and a drain's refill are the host's too: what shortens its work shortens them.
      const serial = p.serial.map((c) => (c.kind === 'gaps' || c.kind === 'refill' ? { ...c, ns: c.ns * factor } : c));
      if (host === null) return { ...p, serial, work };
      const next = op.ns !== undefined ? host - op.ns * left * p.scale.host : host * factor;
      return { ...withStage({ ...p, serial }, 'host', Math.max(0, next)), work };
    }
    case 'serial':
      return {
        ...p,
        serial: p.serial
          .map((c) => (c.kind !== op.cost && op.cost !== 'all' ? c : { ...c, ns: op.ns !== undefined ? Math.max(0, c.ns - op.ns) : c.ns * (op.factor ?? 1) }))
          .filter((c) => c.ns > 0),
      };
    case 'comm': {
      const comm = p.stages.comm.ns;
      const whole = p.stages.gpu.ns;
      // Without a window (a rank of a job whose window another rank's stands for) the whole-step stage holds the
      // communication, not told apart: it goes from there.
      if (!p.deviceTimed && !comm && whole !== null) return withStage(p, 'gpu', Math.max(0, whole - op.ns * p.scale.gpu));
      return comm === null ? p : withStage(p, 'comm', Math.max(0, comm - op.ns * p.scale.gpu));
    }
    case 'batch': {
      const k = op.k;
      const scaled = (s: StageName) => (p.stages[s].ns === null ? null : (p.stages[s].ns as number) * k);
      let q = withStage(p, 'gpu', batchedGpuNs(p, k));
      if (!(p.loader && p.loader.batchNsPerWorker !== null)) q = withStage(q, 'input', scaled('input'));
      return {
        ...q,
        serial: q.serial.map((c) => (c.kind === 'copy' ? { ...c, ns: c.ns * k } : c)),
        batchScale: p.batchScale * k,
      };
    }
    case 'step': {
      const f = op.factor;
      const stages = Object.fromEntries(Object.entries(p.stages).map(([k, s]) => [k, { ...s, ns: s.ns === null ? null : s.ns * f }])) as Pipeline['stages'];
      const l = p.loader;
      const loader =
        l && l.batchNsPerWorker !== null
          ? { ...l, batchNsPerWorker: l.batchNsPerWorker * f, cpuNsPerBatch: l.cpuNsPerBatch === null ? null : l.cpuNsPerBatch * f }
          : l;
      const gpuPerStep = { ...p.gpuPerStep, ns: p.gpuPerStep.ns * f };
      return { ...p, stages, loader, gpuPerStep, serial: p.serial.map((c) => ({ ...c, ns: c.ns * f })) };
    }
    case 'balance':
      return p;
  }
}

/** The pipeline once the fix is made. */
export function applyFix(p: Pipeline, fix: Fix): Pipeline {
  return fix.ops.reduce(applyOp, p);
}

/** What a fix changes, in words ("the GPU -12.0 ms, syncs gone"), for the arithmetic. */
export function fixEffect(before: Pipeline, after: Pipeline): string {
  const parts: string[] = [];
  for (const s of ['input', 'host', 'gpu', 'comm'] as const) {
    const a = before.stages[s].ns;
    const b = after.stages[s].ns;
    if (a !== null && b === null) parts.push(`${stageLabel(before, s)} off the critical path`);
    else if (a !== null && b !== null && Math.abs(a - b) > 1e3) parts.push(`${stageLabel(before, s)} ${fmtMs(a)} -> ${fmtMs(b)}`);
  }
  if (before.loader?.workersTo !== after.loader?.workersTo && after.loader?.workersTo !== undefined)
    parts.push(`DataLoader workers ${before.loader?.workers ?? '?'} -> ${after.loader?.workersTo === 'enough' ? 'enough for the demand' : after.loader?.workersTo}`);
  const serialBefore = before.serial.reduce((a, c) => a + c.ns, 0);
  const serialAfter = after.serial.reduce((a, c) => a + c.ns, 0);
  if (Math.abs(serialBefore - serialAfter) > 1e3) parts.push(`blocking waits ${fmtMs(serialBefore)} -> ${fmtMs(serialAfter)}`);
  if (after.batchScale !== before.batchScale) parts.push(`batch x${(after.batchScale / before.batchScale).toFixed(after.batchScale / before.batchScale >= 10 ? 0 : 1)}`);
  return parts.join(', ') || 'no stage changes';
}
