/**
 * `gpuwise tune` end to end on CPU (Debian's torch): the CLI bundled once and run as its own process, trials of
 * examples/doctor/tune_toy.py, which raises PyTorch's out-of-memory error above a batch size. CPU runs report no GPU
 * memory, so the search here is the bounded bisection; the memory-model search is tested in search.test.ts.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBundle } from '../cliBundle.js';
import type { TuneReport } from '../../src/tune/report.js';
import { PYTHON, REPO, SKIP_PYTHON, pyEnv, runProcess } from '../doctor/helpers.js';

const tmp = mkdtempSync(join(tmpdir(), 'gpuwise-tune-'));
const bundle = join(REPO, 'node_modules', '.cache', 'gpuwise-tune-test', 'gpuwise.mjs');
const TOY = join(REPO, 'examples', 'doctor', 'tune_toy.py');
let n = 0;
const outDir = () => join(tmp, `run${n++}`);

beforeAll(async () => {
  await buildBundle('gpuwise-tune-test');
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const tune = (args: string[], onStart?: Parameters<typeof runProcess>[3]) =>
  runProcess(process.execPath, [bundle, 'tune', ...args], pyEnv({}), onStart);
const reportOf = (dir: string) => JSON.parse(readFileSync(join(dir, 'tune.json'), 'utf8')) as TuneReport;

describe('gpuwise tune: usage', () => {
  it('bad or missing --param, no placeholder, no command: one line, exit 2, nothing written', async () => {
    const cases: [string[], RegExp][] = [
      [['--', 'python', 'train.py'], /missing --param/],
      [['--param', 'batch_size=64', '--', 'x', '{batch_size}'], /not NAME=LO\.\.HI/],
      [['--param', 'batch_size=9..3', '--', 'x', '{batch_size}'], /1 <= LO <= HI/],
      [['--param', 'batch_size=1..8', '--', 'python', 'train.py', '--bs', '{bs}'], /no \{batch_size\} placeholder/],
      [['--param', 'batch_size=1..8'], /missing the command/],
      [['--param', 'batch_size=1..8', '--margin', '150%', '--', 'x', '{batch_size}'], /--margin/],
      [['--param', 'bs=10..12', '--multiple-of', '8', '--', 'x', '{bs}'], /no multiple in 10\.\.12/],
    ];
    for (const [args, re] of cases) {
      const out = outDir();
      const r = await tune(['--out', out, ...args]);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr).toMatch(re);
      expect(existsSync(out)).toBe(false);
    }
  });

  it('a command that does not exist: exit 2, no run directory left', async () => {
    const out = outDir();
    const r = await tune(['--out', out, '--param', 'b=1..4', '--', 'no-such-command-gpuwise', '{b}']);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe('gpuwise tune: no-such-command-gpuwise: command not found\n');
    expect(existsSync(out)).toBe(false);
  });

  it('never writes into a non-empty --out', async () => {
    const out = outDir();
    mkdirSync(out);
    writeFileSync(join(out, 'keep.txt'), 'mine');
    const r = await tune(['--out', out, '--param', 'b=1..4', '--', 'echo', '{b}']);
    expect(r.code).toBe(2);
    expect(readdirSync(out)).toEqual(['keep.txt']);
  });
});

describe.skipIf(SKIP_PYTHON)('gpuwise tune on a CPU script that runs out of memory above batch 40', () => {
  it('substitutes the value, detects out of memory, bisects without memory figures, writes tune.json', async () => {
    const out = outDir();
    const html = join(tmp, 'tune-toy.html');
    const r = await tune([
      '--out',
      out,
      '--html',
      html,
      '--param',
      'batch_size=1..64',
      '--steps',
      '3',
      '--max-trials',
      '5',
      '--',
      PYTHON,
      TOY,
      '--batch-size={batch_size}',
      '--fits',
      '40',
    ]);
    expect(r.code).toBe(0);
    const rep = reportOf(out);
    expect(rep).toMatchObject({ schemaVersion: 1, command: 'tune', memoryFigures: false, searchTrials: 5 });
    // Log-scale bisection between what fits and hi: 1, 8, 22, 37 fit; 49 does not.
    expect(rep.trials.map((t) => [t.value, t.outcome])).toEqual([
      [1, 'ok'],
      [8, 'ok'],
      [22, 'ok'],
      [37, 'ok'],
      [49, 'oom'],
    ]);
    // No memory figures on CPU: no margin recommended from figures the trials do not have (issue 47 item 5).
    expect(rep.result).toMatchObject({ largestOk: 37, smallestOom: 49, verified: 'oom', recommended: null });
    // Each trial ran the substituted command for --steps steps, its output kept in its own run directory.
    const t2 = rep.trials[1];
    expect(t2?.command.slice(-3)).toEqual(['--batch-size=8', '--fits', '40']);
    expect(t2?.steps).toBe(3);
    expect(readFileSync(join(t2?.runDir ?? '', 'stdout.log'), 'utf8')).toContain('tune_toy: rank 0 batch 8');
    expect(rep.trials[4]?.detail).toBe('out of memory on rank 0 in step 1');
    expect(rep.trials.every((t) => t.outcome !== 'ok' || (t.samplesPerS ?? 0) > 0)).toBe(true);
    // A process that ended leaves no step counter behind (issue 47 item 7: a stray beacon-PID in every trial's directory).
    expect(rep.trials.flatMap((t) => readdirSync(t.runDir ?? '').filter((f) => f.startsWith('beacon-')))).toEqual([]);
    expect(r.stdout).toContain('Largest that fits: batch_size=37 (verified; 49 ran out of memory)');
    expect(r.stdout).toContain('Recommended: no margin: the trials measured no memory figures to apply 10% to');
    expect(r.stdout).toContain('$ /usr/bin/python3');
    expect(rep.notes.join(' ')).toContain('no GPU memory figures');
    // --html: the page in serve's design (src/serve/pages/tune.ts), uPlot inline; on CPU no memory chart, the
    // throughput of the four trials that ran drawn.
    const page = readFileSync(html, 'utf8');
    expect(page).toContain('<nav><b>gpuwise</b><span>tune</span></nav>');
    expect(page).toContain('window.gw = ');
    expect(page).not.toContain('id="chart-tune-memory"');
    expect(page).toContain('id="chart-tune-throughput"');
    const trials = page.slice(page.indexOf('<table id="trials">'));
    expect(trials.slice(0, trials.indexOf('</table>')).match(/<tr><td class="num">\d+<\/td>/g)).toHaveLength(rep.trials.length);
  });

  it('--json: the report on stdout (progress on stderr); an OOM seen only on stderr counts too', async () => {
    const out = outDir();
    // No torch import in the command: the probe is silent, the error text alone tells.
    const script = 'if [ "$1" -gt 5 ]; then echo "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB" >&2; exit 1; fi; echo ran';
    const r = await tune(['--out', out, '--json', '--param', 'b=2..8', '--max-trials', '3', '--', 'sh', '-c', script, 'sh', '{b}']);
    expect(r.code).toBe(0);
    const rep = JSON.parse(r.stdout) as TuneReport;
    expect(rep).toEqual(reportOf(out));
    expect(rep.trials.map((t) => [t.value, t.outcome])).toEqual([
      [2, 'ok'],
      [4, 'ok'],
      [6, 'oom'],
    ]);
    expect(r.stderr).toContain('trial 3: b=6');
  });

  it('--curve adds throughput points below the largest value that fits; --timeout ends a trial that hangs', async () => {
    const out = outDir();
    const script = 'if [ "$1" -gt 5 ]; then echo "CUDA out of memory" >&2; exit 1; fi';
    const r = await tune(['--out', out, '--param', 'b=2..8', '--max-trials', '3', '--curve', '2', '--', 'sh', '-c', script, 'sh', '{b}']);
    expect(r.code).toBe(0);
    const rep = reportOf(out);
    expect(rep.trials.map((t) => [t.value, t.outcome, t.kind])).toEqual([
      [2, 'ok', 'search'],
      [4, 'ok', 'search'],
      [6, 'oom', 'search'],
      [3, 'ok', 'curve'],
    ]);
    expect(rep.searchTrials).toBe(3);

    // A trial that would run 10 minutes ends at its timeout: were it waited for, this test would pass its own timeout.
    const out2 = outDir();
    const r2 = await tune(['--out', out2, '--param', 'b=2..8', '--timeout', '1', '--', 'sh', '-c', 'sleep 600', 'sh', '{b}']);
    expect(r2.code).toBe(1);
    expect(reportOf(out2).trials.map((t) => t.outcome)).toEqual(['timeout']);
  });

  it('nothing fits: exit 1 and says so', async () => {
    const out = outDir();
    const r = await tune(['--out', out, '--param', 'batch_size=50..64', '--steps', '2', '--', PYTHON, TOY, '--batch-size', '{batch_size}']);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('No value fits: even batch_size=50 runs out of memory');
    expect(reportOf(out).trials).toHaveLength(1);
  });

  it('a crash that is not out of memory stops the search, shows its stderr, exit 1', async () => {
    const out = outDir();
    const r = await tune(['--out', out, '--param', 'batch_size=4..64', '--', PYTHON, TOY, '--batch-size', '{batch_size}', '--crash']);
    expect(r.code).toBe(1);
    const rep = reportOf(out);
    expect(rep.trials).toHaveLength(1);
    expect(rep.trials[0]).toMatchObject({ outcome: 'failed' });
    expect(rep.trials[0]?.detail).toContain('RuntimeError: tune_toy: a bug that has nothing to do with memory');
    expect(r.stdout).toContain('| RuntimeError: tune_toy: a bug that has nothing to do with memory');
    expect(rep.stopReason).toContain('failed, not for lack of memory');
  });

  it('two ranks: one runs out of memory while the other would hang; the whole trial is ended at once', async () => {
    const out = outDir();
    // Rank 0 takes 2 minutes per step, as a rank waiting for the failed one in a collective would hang: were the
    // trial waited for, this test would pass its own timeout, and rank 0's log would say it was done.
    const rank = (i: number) =>
      `RANK=${i} LOCAL_RANK=${i} WORLD_SIZE=2 ${PYTHON} ${TOY} --oom-rank 1 --other-rank-sleep-ms 120000 --batch-size $1 --fits 16`;
    const script = `${rank(0)} & ${rank(1)} & wait`;
    const r = await tune(['--out', out, '--param', 'b=32..64', '--', 'sh', '-c', script, 'sh', '{b}']);
    expect(r.code).toBe(1);
    const rep = reportOf(out);
    expect(rep.trials.map((t) => [t.value, t.outcome, t.detail])).toEqual([[32, 'oom', 'out of memory on rank 1 in step 1']]);
    expect(readFileSync(join(rep.trials[0]?.runDir ?? '', 'stdout.log'), 'utf8')).not.toContain('done after');
  });

  it('Ctrl-C: the running trial gets it, the search stops, the partial result is printed, exit 130', async () => {
    const out = outDir();
    let sent = false;
    const r = await tune(
      [
        '--out',
        out,
        '--param',
        'batch_size=1..64',
        '--steps',
        '100000',
        '--',
        PYTHON,
        TOY,
        '--batch-size',
        '{batch_size}',
        '--step-sleep-ms',
        '20',
      ],
      (pid) => {
        const poll = setInterval(() => {
          const log = join(out, 'trial-1-batch_size-1', 'probe.jsonl');
          if (!sent && existsSync(log) && readFileSync(log, 'utf8').includes('"step":3,')) {
            sent = true;
            clearInterval(poll);
            process.kill(pid, 'SIGINT');
          }
        }, 50);
      },
    );
    expect(sent).toBe(true);
    expect(r.code).toBe(130);
    const rep = reportOf(out);
    expect(rep.trials.map((t) => t.outcome)).toEqual(['interrupted']);
    expect(rep.stopReason).toBe('interrupted');
    expect(r.stdout).toContain('stopped: interrupted');
  });
});
