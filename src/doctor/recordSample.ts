/**
 * The probe records doctor and tune keep in memory, bounded for a run of any length (pure). Every record
 * other than a step is kept (up to a cap); a process's step records are kept as a sample: the first
 * `headSteps`, the last `tailSteps`, and a stride sample of the middle whose stride doubles whenever it would
 * hold more than `middleSteps`. So a week-long run of 10 ms steps (60 million records) costs the same few MB
 * as a run of ten thousand steps, and the statistics of the report (medians, means, shares) are taken over an
 * evenly spread sample. The records themselves all go to the run directory as they arrive (cli/probeRun.ts).
 */
import type { ProbeRecord, StepRecord } from './records.js';

export interface RecordSampleLimits {
  headSteps: number;
  tailSteps: number;
  middleSteps: number;
  /** Non-step records kept; more are counted, not kept (a probe gone wrong that floods the socket). */
  otherRecords: number;
}

export const DEFAULT_RECORD_LIMITS: RecordSampleLimits = { headSteps: 2000, tailSteps: 2000, middleSteps: 4096, otherRecords: 20000 };

interface Kept {
  record: StepRecord;
  /** Arrival index among this process's step records. */
  index: number;
}

/** One process's step records. */
class ProcessSteps {
  count = 0;
  readonly head: Kept[] = [];
  /** The last `tailSteps` records, a ring in arrival order starting at `tailStart`. */
  readonly tail: Kept[] = [];
  private tailStart = 0;
  middle: Kept[] = [];
  stride = 1;
  /** GPU step times (`[step, seconds]` pairs of later records) of the kept steps, by step number. */
  readonly gpu = new Map<number, number>();
  /** How many kept records have each step number (a step number may repeat: restarts, several loops). */
  private readonly keptSteps = new Map<number, number>();

  constructor(private readonly limits: RecordSampleLimits) {}

  add(r: StepRecord): void {
    const k: Kept = { record: r, index: this.count++ };
    this.keep(r.step);
    if (this.head.length < this.limits.headSteps) this.head.push(k);
    else if (this.limits.tailSteps === 0) this.toMiddle(k);
    else if (this.tail.length < this.limits.tailSteps) this.tail.push(k);
    else {
      const old = this.tail[this.tailStart] as Kept;
      this.tail[this.tailStart] = k;
      this.tailStart = (this.tailStart + 1) % this.tail.length;
      this.toMiddle(old);
    }
    if (Array.isArray(r.gpuStepTimes))
      for (const pair of r.gpuStepTimes) if (Array.isArray(pair) && this.keptSteps.has(pair[0])) this.gpu.set(pair[0], pair[1]);
  }

  private keep(step: number): void {
    this.keptSteps.set(step, (this.keptSteps.get(step) ?? 0) + 1);
  }

  private drop(step: number): void {
    const n = (this.keptSteps.get(step) ?? 1) - 1;
    if (n > 0) this.keptSteps.set(step, n);
    else {
      this.keptSteps.delete(step);
      this.gpu.delete(step);
    }
  }

  private toMiddle(k: Kept): void {
    if (k.index % this.stride !== 0) {
      this.drop(k.record.step);
      return;
    }
    this.middle.push(k);
    while (this.middle.length > this.limits.middleSteps) {
      this.stride *= 2;
      const keep: Kept[] = [];
      for (const m of this.middle) {
        if (m.index % this.stride === 0) keep.push(m);
        else this.drop(m.record.step);
      }
      this.middle = keep;
    }
  }

  /** The kept records in arrival order, each carrying its own GPU step time (the pairs of dropped steps are gone). */
  records(): StepRecord[] {
    const ring = [...this.tail.slice(this.tailStart), ...this.tail.slice(0, this.tailStart)];
    return [...this.head, ...this.middle, ...ring].map(({ record }) => {
      const t = this.gpu.get(record.step);
      return Array.isArray(record.gpuStepTimes) || t !== undefined
        ? { ...record, gpuStepTimes: t === undefined ? [] : [[record.step, t]] }
        : record;
    });
  }
}

export class RecordSample {
  private readonly other: ProbeRecord[] = [];
  private readonly steps = new Map<number, ProcessSteps>();
  /** Non-step records beyond `otherRecords`, counted only. */
  droppedOther = 0;

  constructor(private readonly limits: RecordSampleLimits = DEFAULT_RECORD_LIMITS) {}

  add(r: ProbeRecord): void {
    if (r.type === 'step') {
      let p = this.steps.get(r.pid);
      if (!p) {
        p = new ProcessSteps(this.limits);
        this.steps.set(r.pid, p);
      }
      p.add(r);
    } else if (this.other.length < this.limits.otherRecords) this.other.push(r);
    else this.droppedOther++;
  }

  /** Every kept record: the non-step records in arrival order, then each process's sampled steps. */
  records(): ProbeRecord[] {
    return [...this.other, ...[...this.steps.values()].flatMap((p) => p.records())];
  }

  /** Step records received per process (all of them, kept or not). */
  stepCounts(): Record<number, number> {
    const out: Record<number, number> = {};
    for (const [pid, p] of this.steps) out[pid] = p.count;
    return out;
  }

  /** Whether any step record was left out of the sample. */
  sampled(): boolean {
    for (const p of this.steps.values()) if (p.count > p.head.length + p.tail.length + p.middle.length) return true;
    return false;
  }
}
