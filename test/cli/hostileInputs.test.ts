/**
 * The hostile inputs of the reliability probe (issue 20 items 7 and 10), each run as its own process with its CPU
 * time and peak memory bounded (test/helpers/bounded.ts): one clear line, exit 2, never "internal error", a stack
 * trace, a hang or gigabytes. Figures before and after are in docs/telemetry.md and the closing note.
 */
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, truncateSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { constants, createGzip, gunzipSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBundle } from '../cliBundle.js';
import { runBounded } from '../helpers/bounded.js';
import { fixture } from '../telemetry/fixtures.js';

const tmp = mkdtempSync(join(tmpdir(), 'gpuwise-hostile-'));
const REPO = join(__dirname, '..', '..');
const GPT2_CONFIG = join(REPO, 'test', 'fixtures', 'planner', 'configs', 'gpt2');
let bundle = '';
beforeAll(async () => {
  bundle = await buildBundle('gpuwise-hostile-test');
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const file = (name: string, bytes: Uint8Array | string) => {
  const p = join(tmp, name);
  writeFileSync(p, bytes);
  return p;
};

/** Gzip of `head` followed by `zeros` zero bytes, streamed (the test never holds the inflated size). */
async function gzipBomb(name: string, head: Uint8Array, zeros: number): Promise<string> {
  const p = join(tmp, name);
  const fd = openSync(p, 'w');
  const gz = createGzip({ level: constants.Z_BEST_COMPRESSION });
  const done = new Promise<void>((resolve) => gz.on('end', resolve));
  gz.on('data', (c: Buffer) => writeSync(fd, c));
  gz.write(head);
  const mib = Buffer.alloc(1 << 20);
  for (let i = 0; i < zeros >> 20; i++) if (!gz.write(mib)) await new Promise((r) => gz.once('drain', r));
  gz.end();
  await done;
  closeSync(fd);
  return p;
}

/** One clear line naming the problem, exit 2, inside the bounds: `ms` of CPU time (load does not stretch it) and `mib`. */
async function expectRefused(args: string[], bounds: { ms: number; mib: number }, message: RegExp) {
  const r = await runBounded(bundle, args, { timeoutMs: bounds.ms * 3 });
  expect(r.timedOut, `${args.join(' ')} hung`).toBe(false);
  expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(2);
  expect(r.stderr.trim().split('\n')).toHaveLength(1);
  expect(r.stderr).toMatch(message);
  expect(r.stderr).not.toMatch(/internal error/);
  expect(r.cpuMs).not.toBeNull();
  expect(r.cpuMs as number).toBeLessThan(bounds.ms);
  expect(r.peakRssMiB).not.toBeNull();
  expect(r.peakRssMiB as number).toBeLessThan(bounds.mib);
}

describe('memory snapshots', () => {
  it('200 MB of pickle NONE opcodes (gzipped to ~200 KB): refused at the stack limit (before: 1.7-2.5 GB, V8 fatal error)', async () => {
    const p = join(tmp, 'none-flood.pickle.gz');
    const none = Buffer.alloc(200 << 20, 0x4e);
    writeFileSync(p, gzipSync(Buffer.concat([Buffer.from([0x80, 0x04]), none, Buffer.from('.')]), { level: 1 }));
    await expectRefused(['memory', p], { ms: 30_000, mib: 700 }, /more than \d+ values on the pickle stack/);
  }, 120_000);

  it('a 1 MB LONG4 integer: refused at once (before: 399 s)', async () => {
    const n = 1 << 20;
    const b = Buffer.alloc(2 + 5 + n + 1, 0x11);
    b.set([0x80, 0x04, 0x8b], 0);
    b.writeInt32LE(n, 3);
    b[b.length - 1] = 0x2e;
    await expectRefused(['memory', file('long4.pickle', b)], { ms: 10_000, mib: 200 }, /an integer of 1048576 bytes/);
  });

  it('a 261-byte pickle of shared tuples used as a dict key: bounded (before: 10 s, 2.1 GB)', async () => {
    // {t100: None} with t(i+1) = (t(i), t(i)): 2^100 leaves, all shared.
    const ops = [0x80, 0x04, 0x7d, 0x29];
    for (let i = 0; i < 100; i++) ops.push(0x32, 0x86);
    ops.push(0x4e, 0x73, 0x2e);
    await expectRefused(['memory', file('tuples.pickle', Buffer.from(ops))], { ms: 10_000, mib: 200 }, /not a memory snapshot/);
  });

  it('a gzip bomb (a pickle header and 1 GB of zeros in ~1 MB): refused at 100x its size (before: inflated up to 4 GB)', async () => {
    const p = await gzipBomb('bomb.pickle.gz', Buffer.from([0x80, 0x04]), 1 << 30);
    await expectRefused(['memory', p], { ms: 30_000, mib: 700 }, /decompresses to more than 256 MB/);
  }, 120_000);

  it('gzip that is not a pickle is refused after its first byte', async () => {
    const p = await gzipBomb('zeros.pickle.gz', Buffer.alloc(0), 1 << 30);
    await expectRefused(['memory', p], { ms: 10_000, mib: 200 }, /not a pickle inside/);
  }, 120_000);
});

describe('nvidia-smi files, model configs, run reports', () => {
  it('smi --from: a gzip bomb, a 600 MB CSV, /dev/zero and &#x110000; in XML (before: 4.25 GB, internal errors)', async () => {
    const bomb = await gzipBomb('smi.csv.gz', Buffer.from('index, name\n'), 1 << 30);
    await expectRefused(['smi', '--from', bomb], { ms: 20_000, mib: 300 }, /decompresses to more than 64 MB/);
    const big = file('big.csv', fixture('query-gpu.busy.csv'));
    truncateSync(big, 600e6);
    await expectRefused(['smi', '--from', big], { ms: 10_000, mib: 200 }, /is 572 MB, more than an nvidia-smi listing can be/);
    await expectRefused(['smi', '--from', '/dev/zero'], { ms: 10_000, mib: 300 }, /holds more than 64 MB/);
    const xml = fixture('nvidia-smi-q.idle.xml.gz').replace('<product_name>', '<product_name>&#x110000;');
    await expectRefused(['smi', '--from', file('bad.xml', xml)], { ms: 10_000, mib: 200 }, /invalid character reference &#x110000;/);
  }, 120_000);

  it('/dev/zero as --model, runs show and compare (before: 11-17 GB read)', async () => {
    await expectRefused(['plan', '--model', '/dev/zero'], { ms: 10_000, mib: 300 }, /holds more than 64 MB/);
    await expectRefused(['runs', 'show', '/dev/zero'], { ms: 10_000, mib: 300 }, /holds more than 64 MB/);
    await expectRefused(['compare', '/dev/zero', '/dev/zero'], { ms: 10_000, mib: 300 }, /holds more than 64 MB/);
  }, 60_000);

  it('plan --search --gpus 1e12 ends at once (before: hung)', async () => {
    await expectRefused(
      ['plan', '--model', GPT2_CONFIG, '--search', '--gpus', '1e12'],
      { ms: 10_000, mib: 200 },
      /more than the planner searches/,
    );
  });

  it('analyze --html into a directory: one line, exit 2', async () => {
    const dir = join(tmp, 'a-dir');
    mkdirSync(dir);
    await expectRefused(
      ['analyze', join(REPO, 'examples', 'traces', 'resnet_starved.trace.json.gz'), '--html', dir],
      { ms: 10_000, mib: 300 },
      /is a directory/,
    );
  });
});

describe('tune', () => {
  it('a trial that prints 300 MB at once is not held in memory (before: 710 MB)', async () => {
    const out = join(tmp, 'tune-burst');
    // The burst goes to stderr, where tune looks for out-of-memory messages while the trial runs.
    const script = 'head -c 300000000 /dev/zero | tr "\\0" x >&2; exit 1';
    const r = await runBounded(
      bundle,
      ['tune', '--out', out, '--param', 'b=1..2', '--max-trials', '1', '--', 'sh', '-c', script, 'sh', '{b}'],
      {
        timeoutMs: 120_000,
      },
    );
    expect(r.timedOut).toBe(false);
    expect(r.code).toBe(1);
    expect(r.peakRssMiB as number).toBeLessThan(250);
  }, 150_000);
});

describe('traces', () => {
  it('a 60 MB whitespace gap in a gzip trace is searched for a cut in linear time (before: 21 s with 3 threads)', async () => {
    const text = gunzipSync(readFileSync(join(REPO, 'examples', 'traces', 'gpt2_amp.trace.json.gz')));
    const at = text.indexOf('},{', text.length >> 1) + 2;
    const p = file('gap.trace.json.gz', gzipSync(Buffer.concat([text.subarray(0, at), Buffer.alloc(60 << 20, 0x20), text.subarray(at)])));
    for (const threads of ['1', '3']) {
      const r = await runBounded(bundle, ['analyze', p, '--json'], {
        timeoutMs: 60_000,
        env: { ...process.env, GPUWISE_THREADS: threads },
      });
      expect(r.code).toBe(0);
      expect(r.cpuMs as number).toBeLessThan(15_000); // CPU time of all its threads: the work, whatever the load
      expect(r.peakRssMiB as number).toBeLessThan(700);
    }
  }, 150_000);
});
