/**
 * process.stdout and process.stderr that never change the open file descriptions gpuwise shares with its command
 * (shell: fs, tty, stream).
 *
 * Node's own stream for a pipe or socket is a libuv handle, which puts the description in O_NONBLOCK mode (its writes
 * are asynchronous). The description is the command's as well (`doctor -- python train.py | tee log`): the command
 * then wrote to a non-blocking stdout, lost output to a slow reader, raised BlockingIOError or saw a `cat` child fail
 * with EAGAIN (issue 43). So, first thing in the process (cli/stdioFirst.ts), the two getters are replaced:
 *  - a pipe, FIFO or socket: a synchronous writer on the fd (`FdWriter`), as Node's stream for a file is; a
 *    description its parent gave non-blocking stays so, and EAGAIN waits and retries;
 *  - a terminal: Node's tty stream on a description of gpuwise's own, the terminal's device opened again (libuv's
 *    uv_tty_init reopens it too, but dup2()s that onto the fd, so a command started afterwards would get the new
 *    description), else a synchronous writer on the fd;
 *  - a file or /dev/null: Node's own stream, which writes synchronously and changes no flag.
 * process.stdin is left alone (created only by a command that reads it). Nothing here runs in a worker thread.
 */
import { closeSync, fstatSync, openSync, readlinkSync, writeSync, constants as fsConstants } from 'node:fs';
import { isatty, WriteStream } from 'node:tty';
import { Writable } from 'node:stream';

/** The longest pause between two tries of a write that found the pipe full (EAGAIN). */
const MAX_RETRY_WAIT_MS = 20;
const sleeper = new Int32Array(new SharedArrayBuffer(4));

/** Blocks this thread for `ms` (a write to a full non-blocking pipe has nothing else to do). */
function sleepMs(ms: number): void {
  Atomics.wait(sleeper, 0, 0, ms);
}

/** Writes all of `buf` to `fd`, waiting while a non-blocking description is full. Throws the write's other errors. */
function writeAll(fd: number, buf: Uint8Array): void {
  let off = 0;
  let waitMs = 1;
  while (off < buf.length) {
    try {
      off += writeSync(fd, buf, off, buf.length - off);
      waitMs = 1;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EAGAIN') throw e;
      sleepMs(waitMs);
      waitMs = Math.min(2 * waitMs, MAX_RETRY_WAIT_MS);
    }
  }
}

/**
 * A stream that writes each chunk at once with write(2) on the fd, never through a libuv handle. A failed write
 * (EPIPE: the reader went away; EIO: the terminal closed) reaches 'error' asynchronously, as a socket's does.
 */
export class FdWriter extends Writable {
  constructor(
    readonly fd: number,
    readonly isTTY?: true,
  ) {
    super({ decodeStrings: true });
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    try {
      writeAll(this.fd, chunk);
    } catch (e) {
      done(e as Error);
      return;
    }
    done();
  }

  /** The fd is the process's: never closed, as Node's stdio streams never close theirs. */
  override _destroy(error: Error | null, done: (error: Error | null) => void): void {
    done(error);
  }
}

/** Node's tty stream on a new description of the terminal behind `fd`; null when it cannot be opened. */
function ownTerminalStream(fd: number): WriteStream | null {
  let device: string;
  try {
    device = readlinkSync(`/proc/self/fd/${fd}`);
  } catch {
    return null;
  }
  // A pseudo-terminal's slave or a console: opening a pty's master (/dev/ptmx) would make a new terminal instead.
  if (!/^\/dev\/(pts\/\d+|tty\d+)$/.test(device)) return null;
  let own: number;
  try {
    own = openSync(device, fsConstants.O_WRONLY | fsConstants.O_NOCTTY);
  } catch {
    return null;
  }
  try {
    if (fstatSync(own).rdev !== fstatSync(fd).rdev) throw new Error('another device');
    const stream = new WriteStream(own);
    // As Node does for its own: the size follows the terminal's.
    process.on('SIGWINCH', () => (stream as WriteStream & { _refreshSize?: () => void })._refreshSize?.());
    return stream;
  } catch {
    closeSync(own);
    return null;
  }
}

/** The stream to use for fd 1 or 2; null to keep Node's (a file, /dev/null, a closed fd). */
function streamFor(fd: number): Writable | null {
  if (isatty(fd)) return ownTerminalStream(fd) ?? new FdWriter(fd, true);
  try {
    const st = fstatSync(fd);
    return st.isFIFO() || st.isSocket() ? new FdWriter(fd) : null;
  } catch {
    return null;
  }
}

/** Replaces process.stdout and process.stderr (configurable getters) with lazily made streams of `streamFor`. */
export function useOwnStdio(): void {
  for (const [name, fd] of [
    ['stdout', 1],
    ['stderr', 2],
  ] as const) {
    const node = Object.getOwnPropertyDescriptor(process, name);
    if (!node?.configurable || !node.get) continue;
    const nodeGetter = node.get;
    let stream: unknown;
    Object.defineProperty(process, name, {
      configurable: true,
      enumerable: node.enumerable,
      get: () => {
        stream ??= streamFor(fd) ?? nodeGetter.call(process);
        return stream;
      },
    });
  }
}
