/**
 * How long doctor's feed of a `gpuwise serve` may hold doctor (src/serve/runFeed.ts), on a fake clock: a server that
 * never answers costs a run at most LATE_START_MS at its end when it never answered the start, and FINISH_MS in all.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { writeDiscovery } from '../../src/serve/discovery.js';
import { FINISH_MS, LATE_START_MS, REQUEST_MS, startRunFeed } from '../../src/serve/runFeed.js';
import { scratch } from './helpers.js';

afterEach(() => {
  vi.useRealTimers();
});

/** A store with one live server (this process's pid) and a feed whose requests go to `post`. */
function feedWith(post: (path: string) => Promise<unknown>) {
  const store = join(scratch('runfeed'), 'store');
  writeDiscovery(store, { url: 'http://127.0.0.1:9/', token: 't'.repeat(24), pid: process.pid, startedAtMs: 1 });
  const said: string[] = [];
  const paths: string[] = [];
  const feed = startRunFeed(store, { command: ['python', 'train.py'], runDir: '/tmp/run', startedAtMs: 0, pid: 1 }, (l) => said.push(l), () => (path) => {
    paths.push(path);
    return post(path);
  });
  if (feed === null) throw new Error('no feed');
  return { feed, said, paths };
}

/** Advances the fake clock until `p` settles; the time it took. */
async function settleTime(p: Promise<void>): Promise<number> {
  let done = false;
  void p.then(() => (done = true));
  let ms = 0;
  while (!done && ms < 60_000) {
    await vi.advanceTimersByTimeAsync(10);
    ms += 10;
  }
  return ms;
}

describe("doctor's feed of a gpuwise serve", () => {
  it('a server that never answers the start holds the end LATE_START_MS, not its request timeout, and is given up with one note', async () => {
    vi.useFakeTimers();
    const { feed, said } = feedWith(() => new Promise(() => undefined));
    const ms = await settleTime(feed.finish(0, null, 'run-1'));
    expect(ms).toBeGreaterThanOrEqual(LATE_START_MS);
    expect(ms).toBeLessThan(REQUEST_MS);
    expect(said).toHaveLength(1);
    expect(said[0]).toMatch(/does not follow this run \(no answer to the start of the run\); the run goes on/);
  });

  it('a server that answered the start and then never answers holds the end FINISH_MS at most', async () => {
    vi.useFakeTimers();
    const { feed, paths } = feedWith((path) => (path.startsWith('api/runs/live/start') ? Promise.resolve({ id: 'live-1' }) : new Promise(() => undefined)));
    await vi.advanceTimersByTimeAsync(1);
    feed.push({ v: 3, type: 'end', pid: 1, rank: null, t: 0, reason: 'exit', steps: 1, exception: null });
    const ms = await settleTime(feed.finish(0, null, 'run-1'));
    expect(ms).toBeGreaterThanOrEqual(FINISH_MS - 10);
    expect(ms).toBeLessThanOrEqual(FINISH_MS + 10);
    expect(paths.some((p) => p.startsWith('api/runs/live/records'))).toBe(true);
  });
});
