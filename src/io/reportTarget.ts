/**
 * The one overwrite rule for every report a command writes to a user-named file (shell): a report goes
 * where nothing is, over an earlier gpuwise report of the same kind, over an empty file, or into a stream
 * (a terminal, /dev/stdout, /dev/null, a pipe with a reader). Anything else is refused before any work:
 * an input, a directory, a file that is not provably a gpuwise report (including one that cannot be read,
 * whatever the reason: a read error is never taken for "no such file"), a dangling symbolic link (never
 * followed), a FIFO nobody reads (it would hang), a socket or a block device.
 */
import { closeSync, constants, lstatSync, openSync, readSync, type Stats, statSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { InputError } from './inputError.js';
import { HEAD_BYTES } from './otherInput.js';

/**
 * What a checked target is: `new` (nothing there), `report` (an earlier report, or empty), `stream` (a terminal,
 * pipe, /dev/null), `stdout` (/dev/stdout and its aliases: written through the process's own stdout, which may be
 * a socket that cannot be opened by name).
 */
export type ReportTargetKind = 'new' | 'report' | 'stream' | 'stdout';

const STDOUT_NAMES = new Set(['/dev/stdout', '/dev/fd/1', '/proc/self/fd/1']);

/** How a report of one kind is recognised from its first 4 KB. */
export interface ReportSignature {
  /** In words, for the refusal: "an HTML page gpuwise wrote". */
  what: string;
  test(head: string): boolean;
}

export const HTML_REPORT: ReportSignature = {
  what: 'a gpuwise report',
  test: (head) => head.startsWith('<!doctype html>') && head.includes('gpuwise'),
};


function code(e: unknown): string {
  return (e as NodeJS.ErrnoException).code ?? (e as Error).message;
}

function sameFile(a: Stats, b: Stats): boolean {
  return a.dev === b.dev && a.ino === b.ino;
}

/** The first bytes of a regular file, without reading the rest (a 2 GB file costs 4 KB). */
function readHead(path: string): string {
  const fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const buf = Buffer.alloc(HEAD_BYTES);
    const n = readSync(fd, buf, 0, HEAD_BYTES, 0);
    return buf.toString('utf8', 0, n);
  } finally {
    closeSync(fd);
  }
}

/**
 * Checks that a report may be written to `path` (see the module comment); throws one InputError naming the
 * file and the reason. `inputs` are the command's input files (never overwritten, by path or by identity).
 */
export function checkReportTarget(path: string, inputs: string[], flag: string, signature: ReportSignature): ReportTargetKind {
  const target = resolve(path);
  if (inputs.some((i) => resolve(i) === target)) throw new InputError(path, `is one of the inputs: choose another ${flag} file`);
  if (STDOUT_NAMES.has(target)) return 'stdout';
  let st: Stats;
  try {
    st = lstatSync(path);
  } catch (e) {
    if (code(e) !== 'ENOENT') throw new InputError(path, `cannot be checked (${code(e)}): refusing to write ${flag} there`);
    let dir: Stats | null = null;
    try {
      dir = statSync(dirname(target));
    } catch {
      dir = null;
    }
    if (!dir?.isDirectory()) throw new InputError(path, `cannot be created: ${dirname(target)} is not a directory`);
    return 'new';
  }
  if (st.isSymbolicLink()) {
    try {
      st = statSync(path);
    } catch (e) {
      throw new InputError(
        path,
        `is a symbolic link to ${code(e) === 'ENOENT' ? 'nothing' : `a path that cannot be checked (${code(e)})`}: refusing to follow it`,
      );
    }
  }
  for (const i of inputs) {
    try {
      if (sameFile(statSync(i), st)) throw new InputError(path, `is one of the inputs (${i}): choose another ${flag} file`);
    } catch (e) {
      if (e instanceof InputError) throw e;
    }
  }
  if (st.isDirectory()) throw new InputError(path, `is a directory: ${flag} takes a file name`);
  if (st.isCharacterDevice()) return 'stream';
  if (st.isFIFO()) {
    // Opening a FIFO for writing waits for a reader: ask without waiting.
    try {
      closeSync(openSync(path, constants.O_WRONLY | constants.O_NONBLOCK));
    } catch (e) {
      throw new InputError(
        path,
        code(e) === 'ENXIO' ? 'is a FIFO that nothing reads: refusing to wait on it' : `is a FIFO that cannot be opened (${code(e)})`,
      );
    }
    return 'stream';
  }
  if (!st.isFile()) throw new InputError(path, `is not a regular file: refusing to write ${flag} there`);
  if (st.size === 0) return 'report';
  let head: string;
  try {
    head = readHead(path);
  } catch (e) {
    throw new InputError(path, `exists and cannot be read (${code(e)}): refusing to overwrite it`);
  }
  if (!signature.test(head)) throw new InputError(path, `exists and is not ${signature.what}: refusing to overwrite it`);
  return 'report';
}

/** `checkReportTarget` for an HTML report (analyze, doctor, runs show, ...). */
export function checkHtmlTarget(path: string, inputs: string[], flag = '--html'): ReportTargetKind {
  return checkReportTarget(path, inputs, flag, HTML_REPORT);
}

/**
 * Writes a report to a target `checkReportTarget` accepted: a `new` target is created exclusively (a file that
 * appeared since the check is not overwritten); others are checked again first. Throws InputError.
 */
export function writeReportFile(
  path: string,
  text: string,
  inputs: string[],
  flag: string,
  signature: ReportSignature = HTML_REPORT,
): void {
  const kind = checkReportTarget(path, inputs, flag, signature);
  if (kind === 'stdout') {
    process.stdout.write(text);
    return;
  }
  try {
    writeFileSync(path, text, { flag: kind === 'new' ? 'wx' : 'w' });
  } catch (e) {
    throw new InputError(
      path,
      code(e) === 'EEXIST' ? 'appeared while the report was made: refusing to overwrite it' : `cannot be written (${code(e)})`,
    );
  }
}
