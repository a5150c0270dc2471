/**
 * The probe records doctor and tune keep in memory, bounded for a run of any length (pure). Every record
 * other than a step is kept (up to a cap); a process's step records are kept as a sample: the first
 * `headSteps`, the last `tailSteps`, and a stride sample of the middle whose stride doubles whenever it would
 * hold more than `middleSteps`. So a week-long run of 10 ms steps (60 million records) costs the same few MB
 * as a run of ten thousand steps, and the statistics of the report (medians, means, shares) are taken over an
 * evenly spread sample. The periodic readings of cumulative counts (`loader`, `cpu`: about one a second each) are a
 * series per process and kind, sampled the same way and outside the cap on other records, so a run of days keeps its
 * `end` and `exception` records; the difference between any two kept readings stays exact. The records themselves all
 * go to the run directory as they arrive (cli/probeRun.ts).
 */
import type { CpuRecord, LoaderRecord, ProbeRecord, StepRecord } from '../run/records.js';

export interface RecordSampleLimits {
  headSteps: number;
  tailSteps: number;
  middleSteps: number;
  /** Non-step records kept; more are counted, not kept (a probe gone wrong that floods the socket). */
  otherRecords: number;
}

export const DEFAULT_RECORD_LIMITS: RecordSampleLimits = { headSteps: 2000, tailSteps: 2000, middleSteps: 4096, otherRecords: 20000 };
/** A series of periodic readings keeps its first PERIODIC_HEAD and an even stride of the rest up to PERIODIC_MIDDLE. */
export const PERIODIC_HEAD = 64;
export const PERIODIC_MIDDLE = 1024;

type Periodic = LoaderRecord | CpuRecord;

/** One process's readings of one kind (one DataLoader's): the first, an even stride of the rest, and the latest. */
class PeriodicSeries {
  private seen = 0;
  private readonly head: Periodic[] = [];
  /** Readings after the head, with their index among them; every `stride`-th is kept. */
  private middle: [number, Periodic][] = [];
  private stride = 1;
  private latest: Periodic | null = null;

  add(r: Periodic): void {
    const i = this.seen++;
    if (this.head.length < PERIODIC_HEAD) {
      this.head.push(r);
      return;
    }
    this.latest = r;
    const j = i - PERIODIC_HEAD;
    if (j % this.stride !== 0) return;
    this.middle.push([j, r]);
    if (this.middle.length > PERIODIC_MIDDLE) {
      this.stride *= 2;
      this.middle = this.middle.filter(([k]) => k % this.stride === 0);
    }
  }

  records(): Periodic[] {
    const kept = this.middle.map(([, r]) => r);
    if (this.latest !== null && kept[kept.length - 1] !== this.latest) kept.push(this.latest);
    return [...this.head, ...kept];
  }
}

type Pair = [number, number];

interface Kept {
  record: StepRecord;
  /** Arrival index among this process's step records. */
  index: number;
  /**
   * `[step, seconds]` GPU step times that arrived on step records dropped before this one (and after the kept one
   * before it): they are this record's too, so the GPU times of the kept steps and how far the GPU was behind at each
   * kept step (run/steps.ts stepsInFlightOf: the running maximum over the pairs received so far) survive the sample.
   */
  carry: Pair[];
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
  /** Pairs of dropped records that no later record was kept to carry yet. */
  private pending: Pair[] = [];
  /** How many kept records have each step number (a step number may repeat: restarts, several loops). */
  private readonly keptSteps = new Map<number, number>();

  constructor(private readonly limits: RecordSampleLimits) {}

  add(r: StepRecord): void {
    const k: Kept = { record: r, index: this.count++, carry: this.pending };
    this.pending = [];
    this.keep(r.step);
    if (this.head.length < this.limits.headSteps) this.head.push(k);
    else if (this.limits.tailSteps === 0) this.toMiddle(k, null);
    else if (this.tail.length < this.limits.tailSteps) this.tail.push(k);
    else {
      const old = this.tail[this.tailStart] as Kept;
      this.tail[this.tailStart] = k;
      this.tailStart = (this.tailStart + 1) % this.tail.length;
      // the record after the evicted one in arrival order: now the oldest of the tail
      this.toMiddle(old, this.tail[this.tailStart] as Kept);
    }
  }

  private keep(step: number): void {
    this.keptSteps.set(step, (this.keptSteps.get(step) ?? 0) + 1);
  }

  private drop(k: Kept, next: Kept | null): void {
    const n = (this.keptSteps.get(k.record.step) ?? 1) - 1;
    if (n > 0) this.keptSteps.set(k.record.step, n);
    else this.keptSteps.delete(k.record.step);
    // What the next kept record must carry: the GPU times of kept steps, and the latest step the GPU had finished.
    const pairs = [...k.carry, ...((k.record.gpuStepTimes ?? []) as Pair[])];
    if (pairs.length === 0) return;
    const latest = pairs.reduce((a, p) => (p[0] > a[0] ? p : a));
    const moved = pairs.filter((p) => p === latest || this.keptSteps.has(p[0]));
    if (next) next.carry = [...moved, ...next.carry];
    else this.pending.push(...moved);
  }

  /** `next`: the kept record after `k` in arrival order when it leaves the tail (null: it is the newest). */
  private toMiddle(k: Kept, next: Kept | null): void {
    if (k.index % this.stride !== 0) {
      this.drop(k, next);
      return;
    }
    this.middle.push(k);
    while (this.middle.length > this.limits.middleSteps) {
      this.stride *= 2;
      const keep: Kept[] = [];
      const dropped: Kept[] = [];
      for (const m of this.middle) {
        if (m.index % this.stride === 0) {
          // the records dropped since the last one kept go onto it, oldest first
          for (const d of dropped) this.drop(d, m);
          dropped.length = 0;
          keep.push(m);
        } else dropped.push(m);
      }
      const after = this.tail.length > 0 ? (this.tail[this.tailStart] as Kept) : null;
      for (const d of dropped) this.drop(d, after);
      this.middle = keep;
    }
  }

  /** The kept records in arrival order, each with the GPU step times of the dropped records before it. */
  records(): StepRecord[] {
    const ring = [...this.tail.slice(this.tailStart), ...this.tail.slice(0, this.tailStart)];
    return [...this.head, ...this.middle, ...ring].map(({ record, carry }) =>
      carry.length === 0 ? record : { ...record, gpuStepTimes: [...carry, ...(record.gpuStepTimes ?? [])] },
    );
  }
}

export class RecordSample {
  private readonly other: ProbeRecord[] = [];
  private readonly steps = new Map<number, ProcessSteps>();
  private readonly periodic = new Map<string, PeriodicSeries>();
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
    } else if (r.type === 'loader' || r.type === 'cpu') {
      const key = `${r.pid}:${r.type}:${r.type === 'loader' ? r.loader : 0}`;
      let series = this.periodic.get(key);
      if (!series) {
        series = new PeriodicSeries();
        this.periodic.set(key, series);
      }
      series.add(r);
    } else if (this.other.length < this.limits.otherRecords) this.other.push(r);
    else this.droppedOther++;
  }

  /** Every kept record: the other records in arrival order, the periodic readings by series, each process's sampled steps. */
  records(): ProbeRecord[] {
    return [...this.other, ...[...this.periodic.values()].flatMap((p) => p.records()), ...[...this.steps.values()].flatMap((p) => p.records())];
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
