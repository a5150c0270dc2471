/**
 * The step counters the probe keeps in the run directory (`beacon-PID`, 8 bytes: the last step the process ended, an
 * unsigned integer in the machine's order; python/gpuwise/probe/beacon.py): how far a process got when it was killed
 * with its last records still queued. A file that is not 8 bytes, or that cannot be read, is left out.
 */
import { readdirSync, readFileSync } from 'node:fs';
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
