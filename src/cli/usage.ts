import { parseArgs, type ParseArgsConfig } from 'node:util';

/** Wrong flags or arguments: reported as one line, exit 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** util.parseArgs with its errors turned into UsageError (one line, no stack). */
export function parseFlags<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (e) {
    throw new UsageError((e as Error).message.split('\n')[0] ?? 'bad arguments');
  }
}

/** Parses sizes such as `20GiB`, `512MB`, `1.5G` into bytes. */
export function parseBytes(text: string, flag: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B?|B)?\s*$/i.exec(text);
  if (!m) throw new UsageError(`${flag}: '${text}' is not a size (try 20GiB or 512MB)`);
  const unit = (m[2] ?? 'B').toUpperCase();
  const pow = { B: 0, K: 1, M: 2, G: 3, T: 4 }[unit[0] as 'B' | 'K' | 'M' | 'G' | 'T'];
  const base = unit.includes('I') || unit.length === 1 ? 1024 : 1000;
  return Math.round(Number(m[1]) * base ** pow);
}
