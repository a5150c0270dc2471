/**
 * The step counters the probe keeps in the run directory (`beacon-PID`, 8 bytes: the last step the process ended, an
 * unsigned integer in the machine's order; python/gpuwise/probe/beacon.py): how far a process got when it was killed
 * with its last records still queued. A file that is not 8 bytes, or that cannot be read, is left out. A live doctor
 * removes the counter of each process whose end record arrived once it has read them (removeSpentBeacons): the end
 * record holds its step count, so the file says nothing more; a killed process's counter stays as the evidence.
 */
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import type { ProbeRecord } from '../run/records.js';
import { join } from 'node:path';
import { endianness } from 'node:os';

const BEACON = /^beacon-(\d+)$/;

/** The last step of each process (by pid) whose counter the run directory holds; empty when there is none. */
export function readStepBeacons(dir: string): Record<number, number> {
  const out: Record<number, number> = {};
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return out;
  }
  for (const name of entries) {
    const m = BEACON.exec(name);
    if (!m) continue;
    try {
      const bytes = readFileSync(join(dir, name));
      if (bytes.length !== 8) continue;
      const step = endianness() === 'LE' ? bytes.readBigUInt64LE(0) : bytes.readBigUInt64BE(0);
      if (step <= BigInt(Number.MAX_SAFE_INTEGER)) out[Number(m[1])] = Number(step);
    } catch {
      // unreadable: no counter for that process
    }
  }
  return out;
}

/**
 * Removes the counters (`beacon-PID`) of the processes whose end record is among `records`: they ended normally and
 * their records arrived, so the counter is spent (issue 47 item 7: every run directory kept a stray file). The
 * counter of a process without an end record (killed before its records arrived) is kept: it is the evidence of how
 * far that process got, read again by `doctor --from`. Returns the pids whose counter was removed; a file that cannot
 * be removed is left.
 */
export function removeSpentBeacons(dir: string, records: readonly ProbeRecord[]): number[] {
  const ended = new Set(records.filter((r) => r.type === 'end').map((r) => r.pid));
  let entries: string[];
  try {
    entries = readdirSync(dir);
  } catch {
    return [];
  }
  const removed: number[] = [];
  for (const name of entries) {
    const m = BEACON.exec(name);
    if (!m || !ended.has(Number(m[1]))) continue;
    try {
      rmSync(join(dir, name));
      removed.push(Number(m[1]));
    } catch {
      // left in place: it is read as before
    }
  }
  return removed.sort((a, b) => a - b);
}
