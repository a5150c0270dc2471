/**
 * Shell: streams a trace file (plain or gzip) through the pure parser.
 * Memory stays bounded by the chunk size plus what the sink keeps.
 */
import { isAscii } from 'node:buffer';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { StringDecoder } from 'node:string_decoder';
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
  const file = createReadStream(path, { highWaterMark: CHUNK_BYTES });
  let bytesRead = 0;
  file.on('data', (b) => {
    bytesRead += b.length;
  });
  const source: AsyncIterable<Buffer> = gz ? file.pipe(createGunzip({ chunkSize: CHUNK_BYTES })) : file;
  let streamError: string | null = null;
  let replaced = false;
  try {
    // Traces are almost always ASCII: decode those chunks as latin1 (a plain copy), and route
    // everything else, plus the chunk after a non-ASCII one (a split UTF-8 sequence), through the decoder.
    let decoderMayHoldBytes = false;
    for await (const chunk of source) {
      let text: string;
      if (!decoderMayHoldBytes && isAscii(chunk)) text = chunk.toString('latin1');
      else {
        text = decoder.write(chunk);
        decoderMayHoldBytes = !isAscii(chunk);
        if (!replaced && text.includes('\uFFFD')) replaced = true;
      }
      parser.push(text);
      onProgress?.(bytesRead, size);
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
    file.destroy();
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

async function hasGzipMagic(path: string): Promise<boolean> {
  const { open } = await import('node:fs/promises');
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
