/**
 * Shell: streams a trace file (plain or gzip) through the pure parser.
 * Memory stays bounded by the chunk size plus what the sink keeps.
 */
import { isAscii } from 'node:buffer';
import { createReadStream } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { StringDecoder } from 'node:string_decoder';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createGunzip } from 'node:zlib';
import type { TraceSink } from '../trace/event.js';
import { type ParseSummary, TraceFormatError, TraceJsonParser } from '../trace/parser.js';
import { InputError } from './inputError.js';

export type ReadProgress = (bytesRead: number, totalBytes: number) => void;

// Small chunks keep every decoded string in V8's young generation, where it dies cheaply:
// 1 MB chunks became malloc-backed external strings and 512 KB ones large-object-space
// strings that only a full GC frees; either tripled peak RSS in our measurements.
const CHUNK_BYTES = 64 * 1024;

/** Reads `path` into `sink`. Throws InputError (one clear line) for unreadable or non-trace input. */
/**
 * Parsing allocates ~5 short-lived strings per event; the few that are live at a
 * scavenge get promoted, and V8 lets that garbage grow old space by 100+ MB before
 * it collects on its own. A full collection every 128 MB of input (a few ms each,
 * the live heap being small) holds peak RSS flat however large the trace.
 */
const COLLECT_EVERY_BYTES = 128 * 1024 * 1024;
const fullGc: (() => void) | undefined = (() => {
  try {
    setFlagsFromString('--expose-gc');
    return runInNewContext('gc') as () => void;
  } catch {
    return undefined;
  }
})();

export async function readTraceFile(path: string, sink: TraceSink, onProgress?: ReadProgress): Promise<ParseSummary> {
  let size: number;
  try {
    const st = await stat(path);
    if (st.isDirectory()) throw new InputError(path, 'is a directory (expected a trace file)');
    size = st.size;
  } catch (e) {
    if (e instanceof InputError) throw e;
    throw new InputError(path, describeFsError(e));
  }
  if (size === 0) throw new InputError(path, 'is empty');

  const gz = await hasGzipMagic(path);
  const parser = new TraceJsonParser(sink);
  const decoder = new StringDecoder('utf8');
  const progress = { bytesRead: 0 };
  const source = gz ? gunzipChunks(path, progress) : plainChunks(path, progress);
  let streamError: string | null = null;
  let replaced = false;
  try {
    // Traces are almost always ASCII: decode those chunks as latin1 (a plain copy), and route
    // everything else, plus the chunk after a non-ASCII one (a split UTF-8 sequence), through the decoder.
    let decoderMayHoldBytes = false;
    let nextCollectAt = COLLECT_EVERY_BYTES;
    for await (const chunk of source) {
      let text: string;
      if (!decoderMayHoldBytes && isAscii(chunk)) text = chunk.toString('latin1');
      else {
        text = decoder.write(chunk);
        decoderMayHoldBytes = !isAscii(chunk);
        if (!replaced && text.includes('\uFFFD')) replaced = true;
      }
      parser.push(text);
      onProgress?.(progress.bytesRead, size);
      if (progress.bytesRead >= nextCollectAt) {
        nextCollectAt = progress.bytesRead + COLLECT_EVERY_BYTES;
        fullGc?.();
      }
    }
    parser.push(decoder.end());
  } catch (e) {
    if (e instanceof TraceFormatError) throw new InputError(path, `${e.message} (at character ${e.offset})`);
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'Z_BUF_ERROR' || code === 'Z_DATA_ERROR' || code === 'ERR_ZLIB' || /unexpected end|incorrect header|invalid/i.test(String((e as Error).message))) {
      streamError = `gzip stream is corrupt or truncated (${(e as Error).message})`;
    } else {
      throw new InputError(path, describeFsError(e));
    }
  } finally {
    await source.return(undefined);
  }
  let summary: ParseSummary;
  try {
    if (replaced) parser.note('invalid UTF-8 bytes were replaced with U+FFFD');
    if (streamError) parser.note(streamError);
    summary = parser.end();
  } catch (e) {
    if (e instanceof TraceFormatError) {
      throw new InputError(path, streamError ?? (e.message === 'not JSON' || e.message.startsWith('not JSON') ? `${e.message}: not a torch.profiler trace` : e.message));
    }
    throw e;
  }
  onProgress?.(size, size);
  return summary;
}

/** Plain files: one reused buffer, so reading allocates nothing per chunk. */
async function* plainChunks(path: string, progress: { bytesRead: number }): AsyncGenerator<Buffer, void, undefined> {
  const fh = await open(path, 'r');
  try {
    const buf = Buffer.allocUnsafe(CHUNK_BYTES);
    for (;;) {
      const { bytesRead } = await fh.read(buf, 0, CHUNK_BYTES, null);
      if (bytesRead === 0) return;
      progress.bytesRead += bytesRead;
      yield buf.subarray(0, bytesRead);
    }
  } finally {
    await fh.close();
  }
}

async function* gunzipChunks(path: string, progress: { bytesRead: number }): AsyncGenerator<Buffer, void, undefined> {
  const file = createReadStream(path, { highWaterMark: CHUNK_BYTES });
  file.on('data', (b) => {
    progress.bytesRead += b.length;
  });
  try {
    yield* file.pipe(createGunzip({ chunkSize: CHUNK_BYTES }));
  } finally {
    file.destroy();
  }
}

async function hasGzipMagic(path: string): Promise<boolean> {
  const fh = await open(path, 'r');
  try {
    const buf = Buffer.alloc(2);
    const { bytesRead } = await fh.read(buf, 0, 2, 0);
    return bytesRead === 2 && buf[0] === 0x1f && buf[1] === 0x8b;
  } finally {
    await fh.close();
  }
}

export function describeFsError(e: unknown): string {
  const err = e as NodeJS.ErrnoException;
  switch (err?.code) {
    case 'ENOENT':
      return 'no such file or directory';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'EISDIR':
      return 'is a directory';
    default:
      return err?.message ?? String(e);
  }
}
