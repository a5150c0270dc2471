/**
 * The one overwrite rule for reports (src/io/reportTarget.ts, issue 20 item 2): a file that is not provably a
 * gpuwise report is never replaced, whatever its size or readability; links, FIFOs and devices are handled
 * without following a dangling link or waiting on a FIFO.
 */
import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  closeSync,
  openSync,
  readSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
  existsSync,
  readFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { InputError } from '../../src/io/inputError.js';
import { checkHtmlTarget, writeReportFile } from '../../src/io/reportTarget.js';
import { buildBundle } from '../cliBundle.js';
import { runBounded } from '../helpers/bounded.js';
import { runCli } from '../helpers/cli.js';

const tmp = mkdtempSync(join(tmpdir(), 'gpuwise-target-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const TRACE = join(__dirname, '..', '..', 'examples', 'traces', 'resnet_starved.trace.json.gz');
const REPORT = '<!doctype html>\n<html><head><title>gpuwise report</title></head></html>\n';

const refusal = (f: () => unknown): string => {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(InputError);
    return (e as Error).message;
  }
  throw new Error('not refused');
};

describe('checkHtmlTarget', () => {
  it('a 2.2 GB file that is not a report is refused after reading 4 KB, and left as it was', async () => {
    const big = join(tmp, 'big.bin');
    writeFileSync(big, 'precious data, not a report\n');
    truncateSync(big, 2.2e9); // sparse: no disk used
    expect(refusal(() => checkHtmlTarget(big, []))).toMatch(/is not a gpuwise report: refusing to overwrite it/);
    const r = await runCli(['analyze', TRACE, '--html', big]);
    expect(r.code).toBe(2);
    expect(statSync(big).size).toBe(2.2e9);
    const fd = openSync(big, 'r');
    const head = Buffer.alloc(13);
    readSync(fd, head, 0, 13, 0);
    closeSync(fd);
    expect(head.toString()).toBe('precious data');
    rmSync(big);
  });

  it.skipIf(process.getuid?.() === 0)('a file it cannot read (write-only) is refused: a read error is not "no such file"', () => {
    const wo = join(tmp, 'write-only.html');
    writeFileSync(wo, 'mine');
    chmodSync(wo, 0o200);
    expect(refusal(() => checkHtmlTarget(wo, []))).toMatch(/cannot be read \(EACCES\)/);
  });

  it('a path that cannot be checked (through a file) is refused, not taken for a new file', () => {
    const f = join(tmp, 'plain.txt');
    writeFileSync(f, 'x');
    expect(refusal(() => checkHtmlTarget(join(f, 'r.html'), []))).toMatch(/ENOTDIR|not a directory/);
    expect(refusal(() => checkHtmlTarget(join(tmp, 'no-such-dir', 'r.html'), []))).toMatch(/is not a directory/);
  });

  it('a dangling symbolic link is refused and not followed', () => {
    const link = join(tmp, 'dangling.html');
    const dest = join(tmp, 'created-through-link.html');
    symlinkSync(dest, link);
    expect(refusal(() => checkHtmlTarget(link, []))).toMatch(/symbolic link to nothing: refusing to follow it/);
    expect(refusal(() => writeReportFile(link, REPORT, [], '--html'))).toMatch(/refusing/);
    expect(existsSync(dest)).toBe(false);
  });

  it('a link to an earlier report, an earlier report and an empty file may be replaced; a directory may not', () => {
    const rep = join(tmp, 'old-report.html');
    writeFileSync(rep, REPORT);
    const link = join(tmp, 'link-to-report.html');
    symlinkSync(rep, link);
    expect(checkHtmlTarget(rep, [])).toBe('report');
    expect(checkHtmlTarget(link, [])).toBe('report');
    const empty = join(tmp, 'empty.html');
    writeFileSync(empty, '');
    expect(checkHtmlTarget(empty, [])).toBe('report');
    expect(checkHtmlTarget(join(tmp, 'fresh.html'), [])).toBe('new');
    const dir = join(tmp, 'adir');
    mkdirSync(dir);
    expect(refusal(() => checkHtmlTarget(dir, []))).toMatch(/is a directory/);
  });

  it('an input is refused by path and by identity (a hard link to it)', () => {
    const input = join(tmp, 'input.html');
    writeFileSync(input, REPORT);
    const hard = join(tmp, 'hard.html');
    linkSync(input, hard);
    expect(refusal(() => checkHtmlTarget(input, [input]))).toMatch(/is one of the inputs/);
    expect(refusal(() => checkHtmlTarget(hard, [input]))).toMatch(/is one of the inputs/);
  });

  it('a FIFO that nothing reads is refused at once (no hang); /dev/null is a stream', () => {
    const fifo = join(tmp, 'fifo');
    if (spawnSync('mkfifo', [fifo]).status === 0) {
      // A hang would block here (a synchronous open): the test's own timeout is the guard, no clock.
      expect(refusal(() => checkHtmlTarget(fifo, []))).toMatch(/FIFO that nothing reads/);
    }
    expect(checkHtmlTarget('/dev/null', [])).toBe('stream');
  });

  it('memory --html replaces its own earlier page like the other commands, and still refuses a file that is not a report (issue 47 item 7)', async () => {
    const snap = join(__dirname, '..', 'fixtures', 'memory', 'train_p2.pickle');
    const page = join(tmp, 'memory.html');
    for (let i = 0; i < 2; i++) {
      const r = await runCli(['memory', snap, '--html', page]);
      expect(r.stderr).toBe(`gpuwise memory: wrote ${page}\n`);
      expect(r.code).toBe(0);
    }
    expect(readFileSync(page, 'utf8')).toMatch(/^<!doctype html>[\s\S]*gpuwise/);
    const other = join(tmp, 'notes.html');
    writeFileSync(other, 'my notes');
    const refused = await runCli(['memory', snap, '--html', other]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/exists and is not a gpuwise report: refusing to overwrite it/);
    expect(readFileSync(other, 'utf8')).toBe('my notes');
    for (let i = 0; i < 2; i++) expect((await runCli(['memory', 'diff', snap, snap, '--html', page])).code).toBe(0);
  });
  it('analyze --html /dev/stdout writes the page into a pipe and ends', async () => {
    const bundle = await buildBundle('gpuwise-target-test');
    const r = await runBounded(bundle, ['analyze', TRACE, '--html', '/dev/stdout'], { timeoutMs: 60_000 });
    expect(r.timedOut).toBe(false);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('<!doctype html>');
  });
});
