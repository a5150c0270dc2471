/**
 * Live history from `record` files (shell): reads the per-GPU rows of recordings (src/io/recordStore.ts's
 * `gpu` table, no snapshot blobs) newer than a cut-off, so the Live GPUs page shows history that survived a
 * restart. A recording another process is still writing (its lock directory exists) is skipped with a note.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { sqlite } from '../io/sqlite.js';
import type { LiveGpu } from './liveFrame.js';

export interface HistorySample {
  tMs: number;
  gpus: LiveGpu[];
}

function gpuOf(r: Record<string, unknown>): LiveGpu {
  const n = (k: string) => (typeof r[k] === 'number' || typeof r[k] === 'bigint' ? Number(r[k]) : null);
  return {
    index: Number(r.gpu),
    cudaIndex: null,
    name: `GPU ${Number(r.gpu)}`,
    uuid: String(r.uuid),
    lost: Number(r.lost) === 1,
    utilPercent: n('utilization_gpu_percent'),
    memUtilPercent: n('utilization_memory_percent'),
    memUsedBytes: n('memory_used_bytes'),
    memReservedBytes: null,
    memTotalBytes: n('memory_total_bytes'),
    powerW: n('power_watts'),
    powerLimitW: null,
    tempC: n('temperature_c'),
    smClockMhz: n('sm_clock_mhz'),
    smClockMaxMhz: null,
    memClockMhz: null,
    throttle: null,
  };
}

/** Samples read per query: bounds the rows held at once however long the recording. */
const CHUNK_SAMPLES = 2_000;

/**
 * Hands one recording's samples at or after `sinceMs` to `onSample`, oldest first, a chunk of samples at a time (a
 * day at 1 Hz of 8 GPUs is 700 000 rows: never all in memory), yielding to the event loop between chunks. Throws
 * with a short reason when unreadable.
 */
export async function readRecordingSeries(path: string, sinceMs: number, onSample: (s: HistorySample) => void): Promise<number> {
  if (existsSync(`${path}.lock`)) throw new Error('being recorded by another process right now');
  if (!readFileSync(path).subarray(0, 15).toString('latin1').startsWith('SQLite format 3')) throw new Error('not a SQLite file');
  const Database = sqlite();
  const db = new Database(path, { readOnly: true, fileMustExist: true });
  let n = 0;
  try {
    db.exec('PRAGMA locking_mode=EXCLUSIVE'); // WAL without shared memory, as the writer did
    // The sample table has one row per sample (the gpu table one per GPU): the cheaper scan for the range.
    const range = db.get('SELECT MIN(id) AS lo, MAX(id) AS hi FROM sample WHERE t_ms >= ?', [sinceMs]);
    if (range === null || range.lo === null) return 0;
    for (let lo = Number(range.lo); lo <= Number(range.hi); lo += CHUNK_SAMPLES) {
      const rows = db.all(
        'SELECT sample_id, t_ms, gpu, uuid, lost, memory_total_bytes, memory_used_bytes, utilization_gpu_percent, utilization_memory_percent, power_watts, temperature_c, sm_clock_mhz FROM gpu WHERE sample_id >= ? AND sample_id < ? AND t_ms >= ? ORDER BY sample_id, gpu',
        [lo, lo + CHUNK_SAMPLES, sinceMs],
      );
      let last: HistorySample | null = null;
      let lastId: unknown = null;
      for (const r of rows) {
        if (last === null || r.sample_id !== lastId) {
          if (last !== null) onSample(last);
          last = { tMs: Number(r.t_ms), gpus: [] };
          lastId = r.sample_id;
          n++;
        }
        last.gpus.push(gpuOf(r));
      }
      if (last !== null) onSample(last);
      // Between chunks the server answers its requests (a day of history takes seconds to read).
      await new Promise((ok) => setImmediate(ok));
    }
    return n;
  } finally {
    db.close();
  }
}

/** The `.sqlite` files of a folder changed at or after `sinceMs`, oldest first. */
export function recordingsIn(dir: string, sinceMs: number): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith('.sqlite'))
    .map((f) => join(dir, f))
    .map((p) => ({ p, m: statSync(p).mtimeMs }))
    .filter((x) => x.m >= sinceMs)
    .sort((a, b) => a.m - b.m)
    .map((x) => x.p);
}
