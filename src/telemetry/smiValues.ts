/**
 * Reading single values as nvidia-smi prints them ("6726 MiB", "100 %", "690.52 W", "[N/A]",
 * "16x", "7738 KB/s") and NVML's clock-event bitmask. Shared by the XML, CSV and NVML paths.
 */
import { MIB } from './sample.js';

/** Texts nvidia-smi prints for "no value". */
const NOT_AVAILABLE =
  /^\[?(n\/a|not supported|unknown error|insufficient permissions|requested functionality has been deprecated|gpu is lost|not available|none)\]?$/i;

export function isNotAvailable(text: string | undefined): boolean {
  if (text === undefined) return true;
  const t = text.trim();
  // nvidia-smi brackets every "no value" text in CSV ([N/A], [Not Supported], [GPU requires reset], ...).
  return t === '' || NOT_AVAILABLE.test(t) || /^\[[^\]]*\]$/.test(t);
}

const BYTE_UNITS: Record<string, number> = { B: 1, KIB: 1024, MIB: MIB, GIB: 1024 * MIB, TIB: 1024 * 1024 * MIB };

/**
 * A number with an optional unit. `defaultUnit` is what the value means without one (nvidia-smi's
 * `nounits` output). Byte units convert to bytes; KB/s converts to bytes/s (NVML's KB is 1024 bytes);
 * every other unit (%, W, C, MHz, x, us) is returned as the number.
 * Returns null for N/A-like text; undefined for text that is not a number at all.
 */
export function parseQuantity(text: string | undefined, defaultUnit = ''): number | null | undefined {
  if (isNotAvailable(text)) return null;
  const m = /^\s*(-?\d+(?:\.\d+)?)\s*([A-Za-z%/]*)\s*$/.exec(text!);
  if (!m) return undefined;
  const value = Number(m[1]);
  const unit = (m[2] || defaultUnit).toUpperCase();
  if (unit in BYTE_UNITS) return Math.round(value * BYTE_UNITS[unit]!);
  if (unit === 'KB/S') return Math.round(value * 1024);
  if (unit === 'MB/S') return Math.round(value * MIB);
  return value;
}

/** NVML nvmlClocksEventReason* bits (nvml.h), named as nvidia-smi names them. */
export const CLOCK_EVENT_BITS: ReadonlyArray<[bigint, string]> = [
  [0x1n, 'gpu_idle'],
  [0x2n, 'applications_clocks_setting'],
  [0x4n, 'sw_power_cap'],
  [0x8n, 'hw_slowdown'],
  [0x10n, 'sync_boost'],
  [0x20n, 'sw_thermal_slowdown'],
  [0x40n, 'hw_thermal_slowdown'],
  [0x80n, 'hw_power_brake_slowdown'],
  [0x100n, 'display_clocks_setting'],
];

/** Names of the set bits of a clock-event bitmask (unknown bits are reported as `0x...`). */
export function decodeClockEventReasons(mask: bigint): string[] {
  const names: string[] = [];
  let rest = mask;
  for (const [bit, name] of CLOCK_EVENT_BITS) {
    if ((mask & bit) !== 0n) names.push(name);
    rest &= ~bit;
  }
  if (rest !== 0n) names.push(`0x${rest.toString(16)}`);
  return names;
}

/** "Enabled"/"Disabled" as nvidia-smi prints MIG mode. */
export function parseMigMode(text: string | undefined): 'enabled' | 'disabled' | null {
  if (isNotAvailable(text)) return null;
  const t = text!.trim().toLowerCase();
  return t === 'enabled' ? 'enabled' : t === 'disabled' ? 'disabled' : null;
}

/** Plain text or null when N/A. */
export function textOrNull(text: string | undefined): string | null {
  return isNotAvailable(text) ? null : text!.trim();
}
