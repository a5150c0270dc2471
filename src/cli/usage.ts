/**
 * Flag parsing for every command (shell): util.parseArgs with one-line errors (UsageError, exit 2), did-you-mean for
 * an unknown flag, `--no-color` added to every command, and the sizes and values flags take.
 */
import { existsSync } from 'node:fs';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { closeMatches } from '../util/closeMatches.js';
import { COLOR_OPTIONS } from './color.js';

/** Wrong flags or arguments: reported as one line, exit 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/**
 * util.parseArgs with its errors turned into one line each (UsageError, no stack): an unknown flag names the
 * closest known ones, a flag without its value says so. Every command also takes `--no-color` (color.ts).
 */
export function parseFlags<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> & { values: { 'no-color'?: boolean } } {
  const options = { ...COLOR_OPTIONS, ...config.options };
  const withColor = { ...config, options, ...(config.args ? { args: joinNegativeValues(config.args, options) } : {}) };
  try {
    return parseArgs(withColor) as ReturnType<typeof parseArgs<T>> & { values: { 'no-color'?: boolean } };
  } catch (e) {
    throw new UsageError(describeFlagError(e as Error & { code?: string }, withColor));
  }
}

/**
 * `--batch -4` as `--batch=-4`: util.parseArgs refuses a value that starts with '-' ("argument is ambiguous"), so a
 * negative number never reached the flag's own check, whose line says what is wrong with it.
 */
function joinNegativeValues(args: readonly string[], options: NonNullable<ParseArgsConfig['options']>): string[] {
  // The flag as written -> its long form (a short flag takes no '=value').
  const takesValue = new Map<string, string>(
    Object.entries(options).flatMap(([name, o]) =>
      o.type === 'string' ? [[`--${name}`, `--${name}`] as const, ...(o.short ? [[`-${o.short}`, `--${name}`] as const] : [])] : [],
    ),
  );
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (a === '--') return [...out, ...args.slice(i)];
    const next = args[i + 1];
    const long = takesValue.get(a);
    if (long !== undefined && next !== undefined && /^-\d/.test(next)) {
      out.push(`${long}=${next}`);
      i++;
    } else out.push(a);
  }
  return out;
}

function describeFlagError(e: Error & { code?: string }, config: ParseArgsConfig): string {
  const first = e.message.split('\n')[0] ?? 'bad arguments';
  const options = config.options ?? {};
  const known = Object.entries(options).flatMap(([name, o]) => [`--${name}`, ...(o.short ? [`-${o.short}`] : [])]);
  const unknown = /^Unknown option '([^']+)'/.exec(first);
  if (unknown) {
    const flag = unknown[1]!;
    const [name, value] = flag.split('=', 2);
    const near = closeMatches(name!, known.filter((k) => k.startsWith('--')));
    const hint = near.length ? `: did you mean ${near.join(', ')}?` : '';
    return `unknown option '${flag}'${hint} (see --help${value !== undefined ? '' : '; an argument starting with - goes after --'})`;
  }
  const missing = /^Option '(-\w, )?(--[\w-]+)[^']*' argument missing/.exec(first);
  if (missing) return `${missing[2]} needs a value (see --help)`;
  const unexpected = /^Unexpected argument '([^']+)'/.exec(first);
  if (unexpected) return `unexpected argument '${unexpected[1]}': this command takes no positional arguments (see --help)`;
  const noValue = /^Option '(--[\w-]+)' does not take an argument/.exec(first);
  if (noValue) return `${noValue[1]} takes no value (see --help)`;
  return first;
}

/**
 * Parses sizes such as `20GiB`, `512MB`, `1.5G`, `100B` into bytes. A bare number is in GiB: GPU memory is talked
 * about in GB, and `--gpu-memory 40` meaning 40 bytes helped nobody.
 */
export function parseBytes(text: string, flag: string): number {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B?|B)?\s*$/i.exec(text);
  if (!m) throw new UsageError(`${flag}: '${text}' is not a size (try 40, meaning GiB, or 20GiB, 512MB)`);
  const unit = (m[2] ?? 'GiB').toUpperCase();
  const pow = { B: 0, K: 1, M: 2, G: 3, T: 4 }[unit[0] as 'B' | 'K' | 'M' | 'G' | 'T'];
  const base = unit.includes('I') || unit.length === 1 ? 1024 : 1000;
  return Math.round(Number(m[1]) * base ** pow);
}

/**
 * `--html` given before the input without its FILE took the input as the page to write (`gpuwise analyze --html
 * trace.json.gz`, no trace left): the one line that shows the order, or null when that is not what happened.
 */
export function htmlTookInput(command: string, html: string | undefined, positionals: readonly string[], input: string): UsageError | null {
  if (html === undefined || positionals.length > 0 || /\.html?$/i.test(html) || !existsSync(html)) return null;
  return new UsageError(`--html takes the page to write first: gpuwise ${command} --html report.html ${html} (here it took the ${input} ${html} as the page)`);
}
