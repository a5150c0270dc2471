/**
 * `--param NAME=LO..HI` (shell helpers shared by `gpuwise tune` and `tune --plan --param`): the flag's parsing, the
 * command with `{NAME}` replaced, and a command as a shell line.
 */
import { UsageError } from './usage.js';

/** `NAME=LO..HI` with 1 <= LO <= HI. */
export function parseParam(text: string | undefined): { name: string; lo: number; hi: number } {
  if (text === undefined) throw new UsageError('missing --param NAME=LO..HI (e.g. --param batch_size=8..512)');
  const m = /^([A-Za-z_][A-Za-z0-9_.-]*)=(\d+)\.\.(\d+)$/.exec(text.trim());
  if (!m) throw new UsageError(`--param: '${text}' is not NAME=LO..HI with integers (e.g. batch_size=8..512)`);
  const [lo, hi] = [Number(m[2]), Number(m[3])];
  if (lo < 1 || hi < lo) throw new UsageError(`--param: need 1 <= LO <= HI, got ${lo}..${hi}`);
  return { name: m[1] as string, lo, hi };
}

/** Replaces every `{name}` in the arguments. */
export function substitute(cmd: string[], name: string, value: number): string[] {
  const token = `{${name}}`;
  return cmd.map((a) => a.split(token).join(String(value)));
}

/** A command as one shell line, each argument quoted where the shell would read it otherwise. */
export function shellQuote(args: string[]): string {
  return args.map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' ');
}
