/**
 * A file given to the wrong command (shell): when a reader refuses a file, its first bytes say whether it is another
 * gpuwise input, and the one error line then says what it is and which command reads it (util/inputKind.ts).
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { dirname } from 'node:path';
import { type InputKind, inputKindOf, otherKindProblem } from '../util/inputKind.js';
import { InputError } from './inputError.js';
import { gunzipHead, isGzip } from './readLimited.js';

/** How much of a file's head tells what it is (here) or whether it is a gpuwise report (reportTarget.ts). */
export const HEAD_BYTES = 4096;

/** The first bytes of `path` (inflated when gzip); null when it cannot be read (missing, a directory, no access). */
export function fileHead(path: string): Uint8Array | null {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const buf = Buffer.alloc(HEAD_BYTES);
    const head = buf.subarray(0, readSync(fd, buf, 0, HEAD_BYTES, 0));
    return isGzip(head) ? gunzipHead(head, HEAD_BYTES) : head;
  } catch {
    return null;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/**
 * The error to report for `e`, raised while reading `path` as `expected`: an InputError naming what the file is
 * instead, when its first bytes show another gpuwise input, else `e` itself. Meant for a reader's catch block
 * (`throw asOtherInput(e, path, 'trace')`), so a valid file costs nothing.
 */
export function asOtherInput(e: unknown, path: string, expected: InputKind): unknown {
  if (!(e instanceof InputError)) return e;
  const head = fileHead(path);
  const kind = head === null ? null : inputKindOf(head);
  const problem = kind === null ? null : otherKindProblem(kind, expected, path, dirname(path));
  return problem === null ? e : new InputError(path, problem);
}
