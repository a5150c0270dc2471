/**
 * Shell: reads a memory snapshot file (plain or gzip) and hands its bytes to
 * the pure pickle reader and snapshot model. Every failure becomes one
 * InputError line naming the file.
 */
import { readFileSync, statSync } from 'node:fs';
import { constants as bufferConstants } from 'node:buffer';
import { PickleError, type PickleValue, unpickle } from '../memory/pickle.js';
import { type Snapshot, SnapshotShapeError, toSnapshot } from '../memory/snapshot.js';
import { collectGarbage } from './collectGarbage.js';
import { InputError } from './inputError.js';
import { gunzipHead, gunzipLimited, isGzip } from './readLimited.js';
import { describeFsError } from './readTrace.js';
import { asOtherInput } from './otherInput.js';

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
  try {
    return readSnapshot(path);
  } catch (e) {
    throw asOtherInput(e, path, 'snapshot'); // a trace, a report...: said as what it is
  }
}

function readSnapshot(path: string): ReadSnapshotResult {
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
  if (isGzip(bytes)) {
    // The first inflated byte must open a pickle before anything more is inflated.
    const head = gunzipHead(bytes, 2);
    if (head !== null && head.length > 0 && head[0] !== 0x80)
      throw new InputError(path, 'is gzip data but not a pickle inside (expected a memory snapshot from torch.cuda.memory._dump_snapshot)');
    bytes = gunzipLimited(path, bytes, gunzipBound(bytes.length), 'a memory snapshot of this compressed size');
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
 * At most this much pickle per compressed byte: real snapshots compress about 20:1 (the shipped ones: 14-19); a
 * file claiming far more is a gzip bomb, stopped at this bound instead of Node's 4 GB buffer limit.
 */
const MAX_INFLATE_RATIO = 100;
const MIN_INFLATE_BOUND = 256 << 20;

function gunzipBound(compressedBytes: number): number {
  return Math.min(bufferConstants.MAX_LENGTH, Math.max(MIN_INFLATE_BOUND, compressedBytes * MAX_INFLATE_RATIO));
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
