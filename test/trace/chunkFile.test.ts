import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { TempFileChunkStore } from '../../src/io/chunkFile.js';
import { loadTrace } from '../../src/io/loadTrace.js';
import { TraceModelBuilder } from '../../src/trace/builder.js';
import { analyzeTrace } from '../../src/trace/metrics/index.js';
import type { TraceModel } from '../../src/trace/model.js';
import { TraceJsonParser } from '../../src/trace/parser.js';
import { tracePath } from '../helpers/fixtures.js';
import { spawnAsync } from '../helpers/spawnAsync.js';

const dir = mkdtempSync(join(tmpdir(), 'gpuwise-chunkfile-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('op log chunks in a temporary file (bounded memory on large traces)', () => {
  it('gives the same metrics with the op logs in the file as with all in memory', async () => {
    const text = gunzipSync(readFileSync(tracePath('ddp_gpt2.rank0'))).toString('utf8');
    // Small chunks, so that this trace's logs fill many.
    const store = new TempFileChunkStore(0, dir, 4096);
    const inFile = modelOf(text, store);
    const stored = inFile.gpu.logs.flatMap((l) => l.chunks.filter((c) => c === null));
    expect(stored.length).toBeGreaterThan(20);
    expect(store.storedBytes).toBeGreaterThan(20 * 4000);
    expect(analyzeTrace(inFile)).toEqual(analyzeTrace(modelOf(text, null)));
    store.close();
  });

  it('loads a trace with its op-log budget set to nothing: full chunks in the file, the same metrics', async () => {
    // The shipped GPT-2 steps repeated to 70 MB: an op log of more than one 256 KB chunk.
    const big = join(mkdtempSync(join(tmpdir(), 'gpuwise-bigtrace-')), 'big.json');
    const made = await spawnAsync('node', ['bench/trace/makeBigTrace.mjs', tracePath('gpt2_amp'), big, '70'], { stdio: 'ignore' });
    expect(made.status).toBe(0);
    const inFile = await loadTrace(big, undefined, { threads: 1, opLogMemoryBytes: 0 });
    const inMemory = await loadTrace(big, undefined, { threads: 1, opLogMemoryBytes: 1 << 30 });
    expect(inFile.gpu.logs.some((l) => l.chunks.includes(null))).toBe(true);
    expect(inMemory.gpu.logs.every((l) => !l.chunks.includes(null))).toBe(true);
    expect(analyzeTrace(inFile)).toEqual(analyzeTrace(inMemory));
    rmSync(dirname(big), { recursive: true, force: true });
  });

  it('keeps chunks in memory within its budget, then writes them to an unlinked file', () => {
    const store = new TempFileChunkStore(1500, dir);
    const chunk = new Uint8Array(store.chunkBytes).map((_, i) => i % 251);
    expect(store.offer(chunk, 1000)).toBe(-1);
    const handles = [store.offer(chunk, store.chunkBytes), store.offer(chunk.reverse(), 777)];
    expect(handles).toEqual([0, 1]);
    expect(store.storedBytes).toBe(store.chunkBytes + 777);
    // Nothing is left in the directory: the file went as soon as it was open.
    expect(readdirSync(dir)).toEqual([]);
    const back = new Uint8Array(store.chunkBytes);
    store.read(1, 777, back);
    expect(back.subarray(0, 777)).toEqual(chunk.subarray(0, 777));
    store.close();
  });

  it('closes its file when the last op log that reads it is released', () => {
    const store = new TempFileChunkStore(0, dir, 4096);
    expect(store.offer(new Uint8Array(4096).fill(7), 4096)).toBe(0);
    store.closeWith({});
    store.closeWith({});
    const into = new Uint8Array(4096);
    store.release();
    store.read(0, 4096, into);
    expect(into[4095]).toBe(7);
    store.release();
    expect(() => store.read(0, 4096, into)).toThrow();
  });

  it('keeps chunks in memory when no file can be made', () => {
    const store = new TempFileChunkStore(0, join(dir, 'no', 'such', 'dir'));
    expect(store.offer(new Uint8Array(store.chunkBytes), 100)).toBe(-1);
    expect(store.storedBytes).toBe(0);
  });
});

function modelOf(text: string, store: TempFileChunkStore | null): TraceModel {
  const b = new TraceModelBuilder('test', store);
  const p = new TraceJsonParser(b);
  p.push(text);
  const s = p.end();
  return b.finish(s.originUs, s.warnings);
}
