/**
 * The status flags of fds 0-2 as gpuwise received them (shell: /proc).
 *
 * Flags such as O_NONBLOCK and O_APPEND belong to the open file description, which gpuwise shares with the command
 * doctor runs: whatever changes them in gpuwise changes them for the command. They are read once, when this module is
 * first evaluated (the bundle's first module: cli/stdioFirst.ts), so that io/nativeSpawn.ts can hand the three fds over
 * exactly as they came. Read from /proc/self/fdinfo (no native call at start-up); null where unknown (a closed fd, no
 * /proc).
 */
import { readFileSync, readlinkSync } from 'node:fs';

/** The flags F_SETFL can change that Node or libuv may touch (Linux values, x86_64 and arm64 alike). */
export const O_APPEND = 0o2000;
export const O_NONBLOCK = 0o4000;
export const SETTABLE_FLAGS = O_APPEND | O_NONBLOCK;
/** fdinfo's flags hold the fd's close-on-exec bit too; F_GETFL's do not. */
const O_CLOEXEC = 0o2000000;

/** What F_GETFL gives for `fd` now, from /proc; null when the fd is closed or /proc cannot tell. */
export function fdStatusFlags(fd: number): number | null {
  let info: string;
  try {
    info = readFileSync(`/proc/self/fdinfo/${fd}`, 'latin1');
  } catch {
    return null;
  }
  const octal = /^flags:\s+([0-7]+)$/m.exec(info)?.[1];
  return octal === undefined ? null : Number.parseInt(octal, 8) & ~O_CLOEXEC;
}

const AT_START: readonly (number | null)[] = [0, 1, 2].map(fdStatusFlags);

const O_ACCMODE = 3;
const O_RDWR = 2;

/**
 * Whether fd 0, 1 or 2 was closed when gpuwise was started: Node opens /dev/null read-write in its place before any
 * JavaScript runs (its start-up makes sure the three exist), and a shell's `</dev/null`, `>/dev/null` or `2>/dev/null`
 * opens it read-only or write-only. Only `1<>/dev/null` would read as closed.
 */
function closedBeforeNode(fd: number, flags: number | null): boolean {
  if (flags === null || (flags & O_ACCMODE) !== O_RDWR) return false;
  try {
    return readlinkSync(`/proc/self/fd/${fd}`) === '/dev/null';
  } catch {
    return false;
  }
}

const CLOSED_AT_START: readonly boolean[] = [0, 1, 2].map((fd) => closedBeforeNode(fd, AT_START[fd] ?? null));

/** fds 0-2 that were closed when gpuwise started (Node's /dev/null stands in for them): the command gets them closed. */
export function stdioClosedAtStart(): readonly boolean[] {
  return CLOSED_AT_START;
}

/** The status flags of fds 0, 1 and 2 when gpuwise started (null: unknown). */
export function stdioFlagsAtStart(): readonly (number | null)[] {
  return AT_START;
}
