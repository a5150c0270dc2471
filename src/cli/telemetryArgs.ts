/** Argument helpers shared by the telemetry commands (smi, monitor, select, record, exporter). */
import { UsageError } from './usage.js';

/** "100ms", "1s", "0.5s", "2m" or a bare number of seconds, in milliseconds. */
export function parseDurationMs(text: string, flag: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$/i.exec(text);
  if (!m) throw new UsageError(`${flag}: '${text}' is not a duration (try 100ms, 1s or 5m)`);
  const unit = (m[2] ?? 's').toLowerCase();
  return Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[unit as 'ms' | 's' | 'm' | 'h'];
}

export function parseIntervalMs(text: string | undefined, flag: string, fallbackMs: number, minMs: number, maxMs: number): number {
  if (text === undefined) return fallbackMs;
  const ms = parseDurationMs(text, flag);
  if (ms < minMs || ms > maxMs) throw new UsageError(`${flag}: ${text} is outside ${minMs} ms .. ${maxMs / 1000} s`);
  return ms;
}

/** Splits `gpuwise CMD [options] -- PROGRAM ARGS...` at the first `--`. */
export function splitCommand(argv: string[]): { own: string[]; command: string[] } {
  const i = argv.indexOf('--');
  return i < 0 ? { own: argv, command: [] } : { own: argv.slice(0, i), command: argv.slice(i + 1) };
}

export function parseCount(text: string | undefined, flag: string, fallback: number): number {
  if (text === undefined) return fallback;
  if (!/^\d+$/.test(text) || Number(text) < 1) throw new UsageError(`${flag}: '${text}' is not a positive whole number`);
  return Number(text);
}
