/**
 * GPUWISE_THREADS >= 3 hung (issue 20 item 6): under CPU contention a parse worker that finished could wait forever
 * for a background optimising job of its own isolate, which waited for that worker's thread to collect garbage;
 * `terminate()` hung too. Worker isolates now compile synchronously (src/io/segmentedLoad.ts). Several loads at
 * once on the shipped trace (the contention that made about one run in four hang), and damaged gzip copies, must
 * all end (the timeout is a hang guard, not a speed target) with the report of one thread.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBundle } from '../cliBundle.js';
import { runBounded } from '../helpers/bounded.js';

const TRACE = join(__dirname, '..', '..', 'examples', 'traces', 'gpt2_amp.trace.json.gz');
const tmp = mkdtempSync(join(tmpdir(), 'gpuwise-threads-'));
let bundle = '';
beforeAll(async () => {
  bundle = await buildBundle('gpuwise-threads-test');
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const analyze = (file: string, threads: number) =>
  runBounded(bundle, ['analyze', file, '--json'], { timeoutMs: 90_000, env: { ...process.env, GPUWISE_THREADS: String(threads) } });

describe('parse workers never hang', () => {
  it('8 loads at once with 3 to 5 threads all end with the one-thread report', async () => {
    const one = await analyze(TRACE, 1);
    expect(one.code).toBe(0);
    const runs = await Promise.all(Array.from({ length: 8 }, (_, i) => analyze(TRACE, 3 + (i % 3))));
    for (const r of runs) {
      expect(r.timedOut).toBe(false);
      expect(r.code).toBe(0);
      expect(r.stdout).toBe(one.stdout);
    }
  }, 200_000);

  it('damaged gzip copies with 4 threads end (a report or one clear line), never hang', async () => {
    const gz = readFileSync(TRACE);
    const files: string[] = [];
    for (let i = 0; i < 6; i++) {
      const c = Buffer.from(gz);
      const at = Math.floor(gz.length * (0.1 + 0.15 * i));
      for (let k = 0; k < 16; k++) c[at + k] = (c[at + k] as number) ^ 0x5a;
      files.push(join(tmp, `flip${i}.json.gz`));
      writeFileSync(files[files.length - 1] as string, c);
    }
    files.push(join(tmp, 'cut.json.gz'));
    writeFileSync(files[files.length - 1] as string, gz.subarray(0, gz.length >> 1));
    const runs = await Promise.all(files.map((f) => analyze(f, 4)));
    for (const r of runs) {
      expect(r.timedOut).toBe(false);
      expect([0, 2]).toContain(r.code);
      expect(r.stderr).not.toMatch(/internal error|\n\s+at /);
    }
  }, 200_000);
});
