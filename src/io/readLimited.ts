/**
 * Reading a user-named file with a limit proportional to what the reader needs (shell). A file's size is checked
 * before anything is read, and a file without one (/dev/zero, a FIFO, /proc) is read only up to the limit: a
 * wrong argument costs at most `maxBytes`, never all memory. Gzip is inflated with a bound too.
 */
import { closeSync, fstatSync, openSync, readdirSync, readSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { InputError } from './inputError.js';
import { MiB } from '../util/units.js';


function mib(n: number): string {
  return n >= MiB ? `${Math.round(n / MiB)} MB` : `${Math.round(n / 1024)} KB`;
}

function fsProblem(e: unknown): string {
  const code = (e as NodeJS.ErrnoException).code;
  return code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a directory' : code ? `cannot read (${code})` : (e as Error).message;
}

/**
 * The whole file, refused with one InputError when it holds more than `maxBytes` (`what` says what was expected:
 * "an nvidia-smi listing").
 */
export function readFileLimited(path: string, maxBytes: number, what: string): Buffer {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (e) {
    throw new InputError(path, fsProblem(e));
  }
  try {
    const st = fstatSync(fd);
    if (st.isDirectory()) throw new InputError(path, 'is a directory');
    if (st.isFile() && st.size > maxBytes)
      throw new InputError(path, `is ${mib(st.size)}, more than ${what} can be (at most ${mib(maxBytes)})`);
    const parts: Buffer[] = [];
    let total = 0;
    const chunk = Buffer.allocUnsafe(Math.min(maxBytes + 1, MiB));
    for (;;) {
      const n = readSync(fd, chunk, 0, Math.min(chunk.length, maxBytes + 1 - total), null);
      if (n <= 0) break;
      parts.push(Buffer.from(chunk.subarray(0, n)));
      total += n;
      if (total > maxBytes) throw new InputError(path, `holds more than ${mib(maxBytes)}, more than ${what} can be`);
    }
    return Buffer.concat(parts, total);
  } catch (e) {
    if (e instanceof InputError) throw e;
    throw new InputError(path, fsProblem(e));
  } finally {
    closeSync(fd);
  }
}

export function isGzip(bytes: Uint8Array): boolean {
  return bytes[0] === 0x1f && bytes[1] === 0x8b;
}

/**
 * Inflates gzip bytes to at most `maxBytes`; one InputError when they are damaged or inflate to more. The output is
 * one buffer of the size the gzip trailer announces (when within the bound), not chunks joined at the end, which
 * briefly needs twice the size; a wrong announcement only costs the chunked path.
 */
export function gunzipLimited(path: string, gz: Uint8Array, maxBytes: number, what: string): Buffer {
  const announced = gz.length >= 18 ? new DataView(gz.buffer, gz.byteOffset, gz.byteLength).getUint32(gz.length - 4, true) : 0;
  // (A truncated file has no trailer: an announcement past the bound is not trusted either way.)
  const chunkSize = announced > 0 && announced <= maxBytes ? announced + 1 : 1 << 20;
  try {
    return gunzipSync(gz, { maxOutputLength: maxBytes, chunkSize });
  } catch (e) {
    const err = e as NodeJS.ErrnoException;
    if (err.code === 'ERR_BUFFER_TOO_LARGE' || /maxOutputLength|larger than/i.test(err.message))
      throw new InputError(path, `decompresses to more than ${mib(maxBytes)}, more than ${what} can be`);
    throw new InputError(path, `gzip stream is corrupt or truncated (${err.message})`);
  }
}

/** The first bytes gzip data inflates to (at most `n`), without inflating the rest; null when they cannot be read. */
export function gunzipHead(gz: Uint8Array, n: number): Buffer | null {
  try {
    // A 1 KB prefix of the stream, flushed as far as it goes: enough for the first bytes of any real file, and at
    // most about 1 MB of output however it was compressed (a null when the gzip header alone is longer).
    return gunzipSync(gz.subarray(0, Math.min(gz.length, 1024)), { finishFlush: 2 /* Z_SYNC_FLUSH */ }).subarray(0, n);
  } catch {
    return null;
  }
}

/** The first line of a file, from its first `maxBytes` bytes (a script's `#!` line); null when it cannot be read. */
export function firstLineOf(path: string, maxBytes = 256): string | null {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const buf = Buffer.alloc(maxBytes);
    const n = readSync(fd, buf, 0, buf.length, 0);
    return buf.subarray(0, n).toString('utf8').split('\n')[0] ?? '';
  } catch {
    return null;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** A folder's entries; none when it cannot be read (missing, not a folder, not ours). */
export function listOrEmpty(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
