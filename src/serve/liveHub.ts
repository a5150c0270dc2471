/**
 * The Live GPUs hub (shell): one sampler for every viewer. It samples the GPUs through the source `monitor`
 * uses (NVML through koffi, else nvidia-smi; src/live/sampler.ts), turns each sample into one frame
 * serialised once, keeps the charted figures in a fixed-size ring, sends each frame to every open page over
 * Server-Sent Events, and writes one sample a second into a `record` file in the store, so the history survives
 * a restart. Memory is bounded: the ring is allocated once, a viewer that reads too slowly misses frames instead
 * of queueing them, and the number of viewers is capped.
 */
import { mkdirSync, rmSync, statSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { join } from 'node:path';
import { RecordWriter } from '../io/recordStore.js';
import type { Snapshot } from '../telemetry/sample.js';
import { type GpuSource, LiveSampler, NoGpu, openLiveSource } from '../live/sampler.js';
import { type LiveFrame, type LiveHistory, SeriesRing, frameOf } from './liveFrame.js';
import { readRecordingSeries, recordingsIn } from './telemetryHistory.js';

export interface LiveHubOptions {
  intervalMs: number;
  /** Samples the ring holds (default 86 400: a day at 1 Hz). */
  capacity?: number;
  /** Folder of `record` files: history is read from it at start, and the hub's own recording goes there; null = neither. */
  telemetryDir: string | null;
  /** Extra recordings to show as history (`serve --history FILE`). */
  historyFiles?: string[];
  env?: NodeJS.ProcessEnv;
  /** The GPU source (tests and benchmarks); default: openLiveSource(env). */
  openSource?: () => Promise<GpuSource>;
  procfs?: boolean;
  maxViewers?: number;
  /** A viewer with more than this many bytes not yet sent misses frames until it catches up. */
  maxBufferedBytes?: number;
  /** Recordings older than this are removed from telemetryDir at start (only the hub's own, serve-*.sqlite). */
  keepDays?: number;
}

export interface LiveStatus {
  sampling: boolean;
  /** Why there is no live data (no GPU, the reasons found), or null. */
  problem: string | null;
  source: string | null;
  intervalMs: number;
  viewers: number;
  samples: number;
  droppedFrames: number;
  notes: string[];
}

const DAY_MS = 86_400_000;

function mtimeOf(path: string): number {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return 0;
  }
}
const RETRY_MS = 10_000;

/** What a viewer is told when sampling fails: the sampler's own "no GPU" answer, or the error. */
function problemOf(e: unknown): string {
  return e instanceof NoGpu ? e.message : `sampling failed: ${(e as Error).message}`;
}

export class LiveHub {
  readonly ring: SeriesRing;
  private sampler: LiveSampler | null = null;
  private timer: NodeJS.Timeout | null = null;
  private heartbeat: NodeJS.Timeout | null = null;
  private readonly viewers = new Set<ServerResponse>();
  private last: { frame: LiveFrame; json: string } | null = null;
  private problem: string | null = null;
  private writer: RecordWriter | null = null;
  private lastWrittenMs = 0;
  private stopped = false;
  private busy = false;
  private samples = 0;
  private dropped = 0;
  private readonly notes: string[] = [];
  private readonly listeners = new Set<(s: Snapshot) => void>();
  /** Adds what probes report to a frame before it is sent (runs in progress: allocator memory per process). */
  annotate: ((f: LiveFrame) => void) | null = null;

  constructor(private readonly o: LiveHubOptions) {
    this.ring = new SeriesRing(o.capacity ?? 86_400);
  }

  /** Loads the history of the last day, then starts sampling. */
  async start(): Promise<void> {
    await this.openFirst();
    const since = Date.now() - DAY_MS;
    const given = this.o.historyFiles ?? [];
    const files = [...given];
    if (this.o.telemetryDir !== null) {
      this.removeOld(this.o.telemetryDir);
      files.push(...recordingsIn(this.o.telemetryDir, since).filter((f) => !files.includes(f)));
    }
    // Oldest file first, each streamed into the ring (which keeps time ascending and drops overlaps).
    const byAge = files.map((f) => ({ f, m: mtimeOf(f) })).sort((a, b) => a.m - b.m);
    for (const { f } of byAge) {
      try {
        await readRecordingSeries(f, given.includes(f) ? 0 : since, (s) => this.ring.push(s.tMs, s.gpus));
      } catch (e) {
        this.notes.push(`${f}: not read (${(e as Error).message})`);
      }
    }
    this.heartbeat = setInterval(() => this.broadcastRaw(': keep-alive\n\n'), 15_000);
    this.heartbeat.unref();
    await this.tick();
  }

  /** The sampler's answer to "is there a GPU?", before the history is read, so a page can say "no GPU" at once. */
  private async openFirst(): Promise<void> {
    try {
      await this.open();
    } catch (e) {
      this.problem = problemOf(e);
    }
  }

  private removeOld(dir: string): void {
    const cut = Date.now() - (this.o.keepDays ?? 7) * DAY_MS;
    for (const f of recordingsIn(dir, 0)) {
      if (!/\/serve-[^/]*\.sqlite$/.test(f)) continue;
      try {
        if (statSync(f).mtimeMs < cut) rmSync(f);
      } catch {
        // a file that vanished or cannot be removed is left as it is
      }
    }
  }

  private async open(): Promise<void> {
    const env = this.o.env ?? process.env;
    const source = this.o.openSource ? await this.o.openSource() : await openLiveSource(env, { slowIntervalMs: Math.max(1000, this.o.intervalMs) });
    this.sampler = new LiveSampler(source, { procfs: this.o.procfs, cudaVisibleDevices: env.CUDA_VISIBLE_DEVICES });
    this.problem = null;
  }

  private async tick(): Promise<void> {
    if (this.stopped || this.busy) return;
    this.busy = true;
    let next = this.o.intervalMs;
    try {
      if (this.sampler === null) await this.open();
      const snap = await this.sampler!.sample();
      this.onSnapshot(snap);
    } catch (e) {
      this.problem = problemOf(e);
      if (!(e instanceof NoGpu)) {
        this.sampler?.close();
        this.sampler = null;
      }
      next = RETRY_MS;
      this.broadcastRaw(`event: status\ndata: ${JSON.stringify(this.status())}\n\n`);
    } finally {
      this.busy = false;
    }
    if (!this.stopped) {
      this.timer = setTimeout(() => void this.tick(), next);
    }
  }

  /** A snapshot from the sampler (or a test): one frame for every viewer, the ring, and the store at 1 Hz. */
  onSnapshot(snap: Snapshot): void {
    const now = Date.now();
    const frame = frameOf(snap, now);
    this.annotate?.(frame);
    this.samples++;
    this.ring.push(frame.tMs, frame.gpus);
    const json = JSON.stringify(frame);
    this.last = { frame, json };
    this.broadcastRaw(`data: ${json}\n\n`);
    for (const l of this.listeners) l(snap);
    if (this.o.telemetryDir !== null && frame.tMs - this.lastWrittenMs >= 1000) {
      this.lastWrittenMs = frame.tMs;
      try {
        if (this.writer === null) {
          mkdirSync(this.o.telemetryDir, { recursive: true });
          const stamp = new Date(now).toISOString().replace(/[-:]/g, '').replace(/\..*/, '');
          this.writer = new RecordWriter(join(this.o.telemetryDir, `serve-${stamp}-${process.pid}.sqlite`), { command: 'gpuwise serve', intervalMs: String(this.o.intervalMs) });
        }
        this.writer.write(snap);
      } catch (e) {
        // History on disk is a convenience: a store that cannot be written costs the note, not the live view.
        this.notes.push(`history not saved: ${(e as Error).message}`);
        this.writer?.close();
        this.writer = null;
        this.o.telemetryDir = null;
      }
    }
  }

  /** Called with every snapshot (a run in progress keeps the ones taken while it runs). */
  onSample(fn: (s: Snapshot) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private broadcastRaw(msg: string): void {
    const limit = this.o.maxBufferedBytes ?? 1 << 20;
    for (const res of this.viewers) {
      if (res.writableLength > limit) {
        this.dropped++;
        continue;
      }
      res.write(msg);
    }
  }

  status(): LiveStatus {
    return {
      sampling: this.sampler !== null,
      problem: this.problem,
      source: this.sampler?.source.kind ?? null,
      intervalMs: this.o.intervalMs,
      viewers: this.viewers.size,
      samples: this.samples,
      droppedFrames: this.dropped,
      notes: this.notes.slice(-10),
    };
  }

  latest(): LiveFrame | null {
    return this.last?.frame ?? null;
  }

  history(sinceMs: number, maxPoints: number): LiveHistory {
    return this.ring.history(sinceMs, maxPoints);
  }

  /** Opens an event stream on `res`; false when the viewer cap is reached (the caller answers 503). */
  subscribe(res: ServerResponse): boolean {
    if (this.viewers.size >= (this.o.maxViewers ?? 64)) return false;
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no' });
    res.write(`retry: 3000\nevent: status\ndata: ${JSON.stringify(this.status())}\n\n`);
    if (this.last) res.write(`data: ${this.last.json}\n\n`);
    this.viewers.add(res);
    res.on('close', () => this.viewers.delete(res));
    return true;
  }

  get viewerCount(): number {
    return this.viewers.size;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.heartbeat) clearInterval(this.heartbeat);
    for (const v of this.viewers) v.end();
    this.viewers.clear();
    this.sampler?.close();
    this.sampler = null;
    this.writer?.close();
    this.writer = null;
  }
}
