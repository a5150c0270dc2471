/**
 * Shell: reads a memory snapshot file (plain or gzip) and hands its bytes to
 * the pure pickle reader and snapshot model. Every failure becomes one
 * InputError line naming the file.
 */
import { readFile, stat } from 'node:fs/promises';
import { constants as bufferConstants } from 'node:buffer';
import { gunzipSync } from 'node:zlib';
import { PickleError, unpickle } from '../memory/pickle.js';
import { type Snapshot, SnapshotShapeError, toSnapshot } from '../memory/snapshot.js';
import { InputError } from './inputError.js';
import { describeFsError } from './readTrace.js';

export interface ReadSnapshotResult {
  snapshot: Snapshot;
  /** Bytes on disk and after decompression. */
  fileBytes: number;
  pickleBytes: number;
}

export async function readSnapshotFile(path: string): Promise<ReadSnapshotResult> {
  let fileBytes: number;
  try {
    const st = await stat(path);
    if (st.isDirectory()) throw new InputError(path, 'is a directory (expected a memory snapshot pickle)');
    fileBytes = st.size;
  } catch (e) {
    if (e instanceof InputError) throw e;
    throw new InputError(path, describeFsError(e));
  }
  if (fileBytes === 0) throw new InputError(path, 'is empty');
  let bytes: Uint8Array;
  try {
    bytes = await readFile(path);
  } catch (e) {
    throw new InputError(path, describeFsError(e));
  }
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) {
    try {
      // The output cap keeps a gzip bomb from taking all memory; Buffer cannot hold more anyway.
      bytes = gunzipSync(bytes, { maxOutputLength: bufferConstants.MAX_LENGTH });
    } catch (e) {
      const msg = (e as Error).message;
      if (/maxOutputLength|Cannot create a Buffer larger|ERR_BUFFER_TOO_LARGE/i.test(msg) || (e as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') {
        throw new InputError(path, 'decompresses to more than Node can hold in one buffer (decompress it first? snapshots this large are not supported yet)');
      }
      throw new InputError(path, `gzip stream is corrupt or truncated (${msg})`);
    }
  }
  return { snapshot: parseSnapshotBytes(path, bytes), fileBytes, pickleBytes: bytes.length };
}

/** Pure step with the shell's error wording: bytes of a pickle to a snapshot. */
export function parseSnapshotBytes(path: string, bytes: Uint8Array): Snapshot {
  let value: ReturnType<typeof unpickle>;
  try {
    value = unpickle(bytes);
  } catch (e) {
    if (e instanceof PickleError) throw new InputError(path, `not a readable memory snapshot: ${e.message} (at byte ${e.offset})`);
    if (e instanceof RangeError) throw new InputError(path, `not a readable memory snapshot: ${e.message}`);
    throw e;
  }
  try {
    return toSnapshot(value);
  } catch (e) {
    if (e instanceof SnapshotShapeError) throw new InputError(path, `not a memory snapshot: ${e.message}`);
    throw e;
  }
}
