/**
 * What runs the probe's background work (python/gpuwise/probe/ticker.py), run for real: the POSIX timer runs it when
 * due and when woken, leaves no thread Python knows between runs (faulthandler's dump and sys._current_frames() list
 * the main thread only), and runs nothing after `stop()`; the resident-thread fallback does the same work and is the
 * one thread more that faulthandler lists.
 */
import { describe, expect, it } from 'vitest';
import { PROBE_ROOT, PYTHON, pyEnv, runProcess } from './helpers.js';

const SCRIPT = (native: boolean) =>
  [
    'import faulthandler, sys, tempfile, time',
    `sys.path.insert(0, ${JSON.stringify(PROBE_ROOT)})`,
    'from gpuwise.probe import ticker',
    'runs, slow = [], []',
    'def run():',
    '    runs.append(time.perf_counter())',
    '    return 30.0 if slow else 0.05',
    `t = ticker.make_ticker(run, native=${native ? 'True' : 'False'})`,
    't.start(0.05)',
    'dumps = []',
    'until = time.perf_counter() + 0.6',
    'while time.perf_counter() < until:',
    '    time.sleep(0.001)', // a loop that waits (a GPU's, a loader's): the timer's thread gets the GIL at once
    '    with tempfile.TemporaryFile("w+") as f:',
    '        faulthandler.dump_traceback(file=f, all_threads=True)',
    '        f.seek(0)',
    '        dumps.append(sum(1 for l in f if l.startswith(("Thread 0x", "Current thread 0x"))))',
    'n = len(runs)',
    // Woken: the next period is made 30 s long first (a run after `slow` arms it), so a run that follows wake() within
    // the 5 s waited is the wake's, however loaded the machine.
    'slow.append(1)',
    'until = time.perf_counter() + 5',
    'while len(runs) == n and time.perf_counter() < until:',
    '    time.sleep(0.005)',
    'armed = len(runs)',
    'woken = time.perf_counter()',
    't.wake()',
    'while len(runs) == armed and time.perf_counter() < woken + 5:',
    '    time.sleep(0.005)',
    'print("kind", type(t).__name__)',
    'print("runs", n)',
    'print("woken before its period", any(r >= woken for r in runs))',
    'print("dumps listing one thread %.2f" % (dumps.count(1) / len(dumps)))',
    't.stop()',
    'stopped = len(runs)',
    'time.sleep(0.2)',
    'print("runs after stop", len(runs) - stopped)',
  ].join('\n');

async function ticks(native: boolean): Promise<Record<string, string>> {
  const r = await runProcess(PYTHON, ['-c', SCRIPT(native)], pyEnv({}));
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  return Object.fromEntries(r.stdout.trim().split('\n').map((l) => [l.slice(0, l.lastIndexOf(' ')).replace(/ \[.*$/, ''), l]));
}

describe('the background work without a resident thread (ticker.py)', () => {
  it('runs from a timer when due and when woken, with no thread of its own in a dump between runs, and not after stop()', async () => {
    const out = Object.values(await ticks(true)).join('\n');
    expect(out).toContain('kind TimerTicker');
    const runs = Number(/runs (\d+)/.exec(out)?.[1]);
    expect(runs).toBeGreaterThanOrEqual(4); // every 50 ms over 0.6 s, a loaded machine delaying some
    expect(out).toContain('woken before its period True');
    // A dump lists the run's thread only during a run (microseconds here, a few hundred dumps)
    expect(Number(/one thread ([\d.]+)/.exec(out)?.[1])).toBeGreaterThanOrEqual(0.98);
    expect(out).toContain('runs after stop 0');
  });

  it('stops from inside its own run (the probe switching itself off there) without waiting on itself', async () => {
    const script = [
      'import sys, time',
      `sys.path.insert(0, ${JSON.stringify(PROBE_ROOT)})`,
      'from gpuwise.probe import ticker',
      'runs, took = [], []',
      'def run():',
      '    runs.append(1)',
      '    t0 = time.perf_counter()',
      '    t.stop()',
      '    took.append(time.perf_counter() - t0)',
      '    return 0.01',
      't = ticker.make_ticker(run)',
      't.start(0.01)',
      'until = time.perf_counter() + 5',
      'while not took and time.perf_counter() < until:',
      '    time.sleep(0.005)',
      'time.sleep(0.05)',
      // Waiting on itself would take the stop's whole wait (STOP_WAIT_S, 0.2 s), or never end; three quarters of it
      // leave a loaded machine room to delay a call that returns at once.
      `print(type(t).__name__, len(runs), "fast" if took and took[0] < ticker.STOP_WAIT_S * 0.75 else took)`,
    ].join('\n');
    const r = await runProcess(PYTHON, ['-c', script], pyEnv({}));
    expect(r.stderr).toBe('');
    expect(r.stdout.trim()).toBe('TimerTicker 1 fast');
  });

  it('falls back to one resident thread, which a dump lists', async () => {
    const out = Object.values(await ticks(false)).join('\n');
    expect(out).toContain('kind ThreadTicker');
    expect(Number(/runs (\d+)/.exec(out)?.[1])).toBeGreaterThanOrEqual(4);
    expect(out).toContain('woken before its period True');
    expect(out).toContain('dumps listing one thread 0.00');
    expect(out).toContain('runs after stop 0');
  });
});
