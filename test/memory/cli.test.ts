import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { main } from '../../src/cli/main.js';
import { fixtureBytes, fixturePath } from './helpers.js';

let out = '';
let err = '';
beforeEach(() => {
  out = '';
  err = '';
  vi.spyOn(process.stdout, 'write').mockImplementation((s) => {
    out += String(s);
    return true;
  });
  vi.spyOn(process.stderr, 'write').mockImplementation((s) => {
    err += String(s);
    return true;
  });
});
afterEach(() => vi.restoreAllMocks());

const tmp = mkdtempSync(join(tmpdir(), 'gpuwise-memory-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
function tmpFile(name: string, data: Uint8Array | string): string {
  const p = join(tmp, name);
  writeFileSync(p, data);
  return p;
}

describe('gpuwise memory', () => {
  it('--json has the documented totals and oom keys', async () => {
    expect(await main(['memory', '--json', fixturePath('memory_snapshot.pickle.gz')])).toBe(0);
    const r = JSON.parse(out);
    expect(r.schemaVersion).toBe(1);
    for (const k of ['peakAllocatedBytes', 'peakReservedBytes', 'finalAllocatedBytes', 'finalReservedBytes']) expect(typeof r.totals[k]).toBe('number');
    expect(r.oom).toBeNull();
  });

  it('--json on an OOM snapshot carries the request, the allocator state, free bytes and the live set', async () => {
    expect(await main(['memory', '--json', '--batch', '64', fixturePath('oom_activations.pickle.gz')])).toBe(0);
    const o = JSON.parse(out).oom;
    for (const k of ['requestedBytes', 'allocatedBytes', 'reservedBytes', 'deviceFreeBytes']) expect(typeof o[k]).toBe('number');
    expect(o.live.byCategory[0].category).toBe('activations');
  });

  it('terminal and Markdown reports name the peak and the findings', async () => {
    expect(await main(['memory', fixturePath('oom_fragmentation.pickle.gz')])).toBe(0);
    expect(out).toMatch(/OUT OF MEMORY/);
    expect(out).toMatch(/expandable_segments:True/);
    out = '';
    expect(await main(['memory', '--md', fixturePath('oom_fragmentation.pickle.gz')])).toBe(0);
    expect(out).toMatch(/^## gpuwise memory/);
    expect(out).toMatch(/\| Category \| Bytes \| Share \| Allocations \|/);
  });

  it('--fail-on sets exit 1 only when a finding reaches the level', async () => {
    expect(await main(['memory', '--fail-on', 'high', fixturePath('oom_fragmentation.pickle.gz')])).toBe(1);
    expect(await main(['memory', '--fail-on', 'high', fixturePath('train_p4.pickle')])).toBe(0);
  });

  it('--html writes one offline page, replaces its own earlier page and never another file', async () => {
    const page = join(tmp, 'report.html');
    expect(await main(['memory', '--html', page, fixturePath('oom_activations.pickle.gz')])).toBe(0);
    const html = readFileSync(page, 'utf8');
    // The Reports snapshot page standalone (test/serve/reportPages.test.ts checks its content): uPlot inline.
    expect(html).toContain('id="chart-memory"');
    expect(html).toMatch(/Out of memory/);
    expect(html).not.toMatch(/(src|href)=["']?https?:/);
    expect(html).not.toMatch(/<script[^>]* src=|<link rel="stylesheet"/);
    expect(await main(['memory', '--html', page, fixturePath('train_p4.pickle')])).toBe(0);
    expect(readFileSync(page, 'utf8')).not.toBe(html);
    const notes = join(tmp, 'notes.html');
    writeFileSync(notes, 'my notes');
    expect(await main(['memory', '--html', notes, fixturePath('train_p4.pickle')])).toBe(2);
    expect(err).toMatch(/exists and is not a gpuwise report: refusing to overwrite it/);
    expect(readFileSync(notes, 'utf8')).toBe('my notes');
  });

  it('diff prints growth by source line', async () => {
    expect(await main(['memory', 'diff', fixturePath('leak_step2.pickle'), fixturePath('leak_step6.pickle')])).toBe(0);
    expect(out).toMatch(/train\.py:40/);
    out = '';
    expect(await main(['memory', 'diff', '--json', fixturePath('leak_step2.pickle'), fixturePath('leak_step6.pickle')])).toBe(0);
    expect(JSON.parse(out).schemaVersion).toBe(1);
  });

  it('findings first, in the severity style of every report (issue 16)', async () => {
    expect(await main(['memory', fixturePath('leak_step6.pickle')])).toBe(0);
    expect(out.indexOf('Findings (1, most severe first)')).toBeLessThan(out.indexOf('Totals'));
    expect(out).toMatch(/^ 1\. MEDIUM 160 MiB made during earlier steps .* \[kept-across-steps\]$/m);
    expect(out).toMatch(/^ {4}fix: /m);
    out = '';
    expect(await main(['memory', '--md', fixturePath('leak_step6.pickle')])).toBe(0);
    expect(out.indexOf('🟠 MEDIUM: 160 MiB')).toBeLessThan(out.indexOf('| | Peak | End |'));
  });

  it('diff --html FILE writes an offline page of what grew (issue 16)', async () => {
    const page = join(tmp, 'diff.html');
    expect(await main(['memory', 'diff', '--html', page, fixturePath('leak_step2.pickle'), fixturePath('leak_step6.pickle')])).toBe(0);
    const html = readFileSync(page, 'utf8');
    expect(html).toMatch(/^<!doctype html>/);
    expect(html).toMatch(/<code>[^<]*train\.py:40/);
    expect(html).not.toMatch(/<script|(src|href)="https?:/);
    const foreign = tmpFile('notes.html', 'mine');
    expect(await main(['memory', 'diff', '--html', foreign, fixturePath('leak_step2.pickle'), fixturePath('leak_step6.pickle')])).toBe(2);
    expect(readFileSync(foreign, 'utf8')).toBe('mine');
  });
});

describe('bad input: one line, exit 2, nothing run', () => {
  const real = fixtureBytes('train_p4.pickle');
  const random = Uint8Array.from({ length: 4096 }, (_, i) => (i * 2654435761) >>> 24);
  const cases: [string, () => string, RegExp][] = [
    ['random bytes', () => tmpFile('random.bin', random), /not a readable memory snapshot/],
    ['a truncated pickle', () => tmpFile('trunc.pickle', real.subarray(0, real.length >> 1)), /truncated|claims/],
    ['a truncated gzip', () => tmpFile('trunc.pickle.gz', gzipSync(real).subarray(0, 200)), /gzip stream is corrupt or truncated/],
    ['an unsupported protocol', () => tmpFile('p6.pickle', Uint8Array.from([0x80, 6, 0x4e, 0x2e])), /unsupported pickle protocol 6/],
    ['a pickle that calls os.system', () => fixturePath('evil_os_system.pickle'), /not a memory snapshot/],
    ['a 2^60 length field', () => tmpFile('huge.pickle', Uint8Array.from([0x80, 4, 0x8d, 0, 0, 0, 0, 0, 0, 0, 0x10, 0x2e])), /claims 1152921504606846976 bytes/],
    ['a pickle that is not a snapshot', () => fixturePath('not_snapshot.pickle'), /not a memory snapshot/],
    ['an empty file', () => tmpFile('empty.pickle', ''), /is empty/],
    ['a missing file', () => join(tmp, 'nope.pickle'), /no such file/],
    ['a directory', () => tmp, /is a directory/],
  ];
  for (const [what, path, msg] of cases) {
    it(what, async () => {
      const p = path();
      expect(await main(['memory', p])).toBe(2);
      expect(out).toBe('');
      const lines = err.trimEnd().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(p);
      expect(lines[0]).toMatch(msg);
    });
  }

  it('usage errors', async () => {
    expect(await main(['memory'])).toBe(2);
    expect(await main(['memory', '--batch', 'zero', fixturePath('train_p4.pickle')])).toBe(2);
    expect(await main(['memory', '--fail-on', 'severe', fixturePath('train_p4.pickle')])).toBe(2);
    expect(await main(['memory', 'diff', fixturePath('train_p4.pickle')])).toBe(2);
    expect(err.trimEnd().split('\n')).toHaveLength(4);
  });

  it('a device without memory', async () => {
    const p = join(tmp, 'copy.pickle');
    copyFileSync(fixturePath('train_p4.pickle'), p);
    expect(await main(['memory', '--device', '3', p])).toBe(2);
    expect(err).toMatch(/no memory for device 3/);
  });
});
