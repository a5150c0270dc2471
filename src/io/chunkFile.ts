/**
 * Shell: a ChunkStore in a temporary file, so that the op logs of a trace of
 * any size keep a fixed amount of memory (see trace/opLog.ts). The file is
 * created only once the memory budget is spent (small traces never touch the
 * disk) and unlinked as soon as it is open, so it goes with the process
 * whatever happens. When the file cannot be written (no temporary directory,
 * a full disk), chunks simply stay in memory.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, openSync, readSync, unlinkSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHUNK_BYTES, type ChunkStore } from '../trace/opLog.js';

/** Closes a store's file once nothing refers to any log that reads it. */
const closer = new FinalizationRegistry<TempFileChunkStore>((store) => store.release());

export class TempFileChunkStore implements ChunkStore {
  private fd = -1;
  private failed = false;
  private fileBytes = 0;
  private keptBytes = 0;
  private readonly offsets: number[] = [];
  private owners = 0;

  constructor(
    private readonly memoryBudgetBytes: number,
    private readonly dir = tmpdir(),
    readonly chunkBytes = CHUNK_BYTES,
  ) {}

  /** Bytes written to the file (for tests and the benchmark). */
  get storedBytes(): number {
    return this.fileBytes;
  }

  offer(bytes: Uint8Array, length: number): number {
    if (this.keptBytes + length <= this.memoryBudgetBytes || !this.open()) {
      this.keptBytes += length;
      return -1;
    }
    try {
      for (let done = 0; done < length; ) done += writeSync(this.fd, bytes, done, length - done, this.fileBytes + done);
    } catch {
      this.failed = true; // e.g. a full disk: keep this chunk and the rest in memory
      this.keptBytes += length;
      return -1;
    }
    this.offsets.push(this.fileBytes);
    this.fileBytes += length;
    return this.offsets.length - 1;
  }

  read(handle: number, length: number, into: Uint8Array): void {
    const at = this.offsets[handle]!;
    for (let done = 0; done < length; ) {
      const n = readSync(this.fd, into, done, length - done, at + done);
      if (n === 0) throw new Error(`op log temporary file: chunk ${handle} is cut short`);
      done += n;
    }
  }

  close(): void {
    if (this.fd >= 0) closeSync(this.fd);
    this.fd = -1;
  }

  /** Closes the file once every `owner` (the op logs with chunks here) is collected. */
  closeWith(owner: object): void {
    this.owners++;
    closer.register(owner, this);
  }

  /** An owner was collected. */
  release(): void {
    if (--this.owners === 0) this.close();
  }

  private open(): boolean {
    if (this.fd >= 0) return true;
    if (this.failed) return false;
    const path = join(this.dir, `gpuwise-ops-${process.pid}-${randomBytes(6).toString('hex')}`);
    try {
      this.fd = openSync(path, 'wx+', 0o600);
    } catch {
      this.failed = true;
      return false;
    }
    try {
      unlinkSync(path);
    } catch {
      // Where an open file cannot be unlinked, it is left for the system's temporary-file cleaning.
    }
    return true;
  }
}
