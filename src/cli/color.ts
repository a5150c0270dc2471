/**
 * One colour rule for every command: colour only on a terminal, never with `--no-color`, with NO_COLOR set to
 * anything non-empty (no-color.org), or on TERM=dumb. `--no-color` is one flag of every command (parseFlags adds
 * it), whether it prints colour or not, so that it can be set once for all of them (an alias, a CI script).
 */
export const COLOR_OPTIONS = { 'no-color': { type: 'boolean' } } as const;

export function useColor(noColorFlag: boolean | undefined, stream: { isTTY?: boolean } = process.stdout, env: NodeJS.ProcessEnv = process.env): boolean {
  if (noColorFlag) return false;
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  if (env.TERM === 'dumb') return false;
  return stream.isTTY === true;
}

/** The terminal's columns to wrap prose to; 0 (no wrapping) when the output is piped. */
export function terminalWidth(stream: { isTTY?: boolean; columns?: number } = process.stdout): number {
  return stream.isTTY ? (stream.columns ?? 0) : 0;
}
