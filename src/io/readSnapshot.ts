/**
 * Shell: reads a memory snapshot file (plain or gzip) and hands its bytes to
 * the pure pickle reader and snapshot model. Every failure becomes one
 * InputError line naming the file.
 */
import { readFileSync, statSync } from 'node:fs';
import { constants as bufferConstants } from 'node:buffer';
import { gunzipSync } from 'node:zlib';
import { PickleError, type PickleValue, unpickle } from '../memory/pickle.js';
import { type Snapshot, SnapshotShapeError, toSnapshot } from '../memory/snapshot.js';
import { collectGarbage } from './collectGarbage.js';
import { InputError } from './inputError.js';
import { describeFsError } from './readTrace.js';

export interface ReadSnapshotResult {
  snapshot: Snapshot;
  /** Bytes on disk and after decompression. */
  fileBytes: number;
  pickleBytes: number;
}

/**
 * Reads and parses synchronously on purpose: an async function keeps awaited values
 * alive in its frame, which held the whole file in memory until the model was built.
 */
export async function readSnapshotFile(path: string): Promise<ReadSnapshotResult> {
  return readSnapshotFileSync(path);
}

export function readSnapshotFileSync(path: string): ReadSnapshotResult {
  let fileBytes: number;
  try {
    const st = statSync(path);
    if (st.isDirectory()) throw new InputError(path, 'is a directory (expected a memory snapshot pickle)');
    fileBytes = st.size;
  } catch (e) {
    if (e instanceof InputError) throw e;
    throw new InputError(path, describeFsError(e));
  }
  if (fileBytes === 0) throw new InputError(path, 'is empty');
  let bytes: Uint8Array;
  try {
    bytes = readFileSync(path);
  } catch (e) {
    throw new InputError(path, describeFsError(e));
  }
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) {
    try {
      bytes = gunzipWhole(bytes);
    } catch (e) {
      const msg = (e as Error).message;
      if (/maxOutputLength|Cannot create a Buffer larger|ERR_BUFFER_TOO_LARGE/i.test(msg) || (e as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE') {
        throw new InputError(path, 'decompresses to more than Node can hold in one buffer (decompress it first? snapshots this large are not supported yet)');
      }
      throw new InputError(path, `gzip stream is corrupt or truncated (${msg})`);
    }
  }
  const pickleBytes = bytes.length;
  const large = pickleBytes >= LARGE_BYTES;
  const value = unpickleOrExplain(path, bytes);
  // The file's bytes are as large as the snapshot: let them go before the model is built,
  // and the raw pickle graph once it is (see collectGarbage.ts for why collecting is forced).
  bytes = new Uint8Array(0);
  if (large) collectGarbage();
  const snapshot = snapshotOrExplain(path, value);
  if (large) collectGarbage();
  return { snapshot, fileBytes, pickleBytes };
}

/**
 * Decompresses into one buffer of the size the gzip trailer announces, so the
 * output is not assembled from chunks (which briefly needs twice its size).
 * The announced size is only a hint, bounded by deflate's maximum ratio
 * (1032:1); a wrong one just falls back to chunks. The output cap keeps a gzip
 * bomb from taking all memory; a Buffer cannot hold more anyway.
 */
function gunzipWhole(gz: Uint8Array): Uint8Array {
  const announced = gz.length >= 18 ? new DataView(gz.buffer, gz.byteOffset, gz.byteLength).getUint32(gz.length - 4, true) : 0;
  const bound = Math.min(gz.length * 1032, bufferConstants.MAX_LENGTH - 1);
  const chunkSize = Math.max(64 * 1024, Math.min(announced + 1, bound));
  return gunzipSync(gz, { chunkSize, maxOutputLength: bufferConstants.MAX_LENGTH });
}

/** Above this, the two forced collections (tens of ms each) pay for themselves in peak memory. */
const LARGE_BYTES = 32 << 20;

function unpickleOrExplain(path: string, bytes: Uint8Array): PickleValue {
  try {
    return unpickle(bytes);
  } catch (e) {
    if (e instanceof PickleError) throw new InputError(path, `not a readable memory snapshot: ${e.message} (at byte ${e.offset})`);
    if (e instanceof RangeError) throw new InputError(path, `not a readable memory snapshot: ${e.message}`);
    throw e;
  }
}

function snapshotOrExplain(path: string, value: PickleValue): Snapshot {
  try {
    return toSnapshot(value);
  } catch (e) {
    if (e instanceof SnapshotShapeError) throw new InputError(path, `not a memory snapshot: ${e.message}`);
    throw e;
  }
}
