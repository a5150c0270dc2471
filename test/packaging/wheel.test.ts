/**
 * One version number (package.json's) for the npm package, the Python package and the wheel, and the wheel writer
 * (scripts/wheel/pack.py) checked on a small staged package (the wheel's version is package.json's: build.mjs passes it): what pip reads from it (METADATA, WHEEL, entry points),
 * RECORD's hashes against the files, executable bits. The full wheel is built and installed as a user would by
 * `npm run wheel` and scripts/checkInstalled.mjs (CI).
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { PYTHON, REPO } from '../doctor/helpers.js';

const tmp = mkdtempSync(join(tmpdir(), 'gpuwise-wheel-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));
const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')) as { version: string; description: string };

describe('one version number', () => {
  it("python/gpuwise/__init__.py's __version__ is package.json's", () => {
    const init = readFileSync(join(REPO, 'python', 'gpuwise', '__init__.py'), 'utf8');
    expect(init.match(/^__version__ = "([^"]+)"$/m)?.[1]).toBe(pkg.version);
  });
});

/** Reads a wheel back with Python's zipfile: every entry's bytes (latin1), mode bits, and RECORD's lines. */
function readWheel(path: string): { files: Record<string, { text: string; mode: number; sha256: string; size: number }> } {
  const py = [
    'import base64, hashlib, json, sys, zipfile',
    'z = zipfile.ZipFile(sys.argv[1])',
    'out = {}',
    'for i in z.infolist():',
    '    data = z.read(i)',
    '    h = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()',
    '    out[i.filename] = {"text": data.decode("latin1"), "mode": (i.external_attr >> 16) & 0o777, "sha256": h, "size": len(data)}',
    'print(json.dumps({"files": out}))',
  ].join('\n');
  const r = spawnSync(PYTHON, ['-c', py, path], { encoding: 'utf8' });
  expect(r.stderr).toBe('');
  return JSON.parse(r.stdout);
}

describe('scripts/wheel/pack.py', () => {
  it('writes a wheel pip can install: metadata, entry point, RECORD hashes, executable bits', () => {
    const stage = join(tmp, 'stage');
    mkdirSync(join(stage, 'gpuwise', '_cli'), { recursive: true });
    mkdirSync(join(stage, 'gpuwise', '__pycache__'), { recursive: true });
    writeFileSync(join(stage, 'gpuwise', '__init__.py'), '__version__ = "9.9.9"\n');
    writeFileSync(join(stage, 'gpuwise', '__pycache__', 'x.pyc'), 'bytecode');
    writeFileSync(join(stage, 'gpuwise', '_cli', 'gpuwise'), '#!/bin/sh\necho hi\n');
    chmodSync(join(stage, 'gpuwise', '_cli', 'gpuwise'), 0o755);
    const r = spawnSync(
      PYTHON,
      [
        join(REPO, 'scripts', 'wheel', 'pack.py'),
        stage,
        join(tmp, 'out'),
        '--name',
        'gpuwise',
        '--version',
        '9.9.9',
        '--tag',
        'py3-none-manylinux_2_28_x86_64',
        '--summary',
        pkg.description,
        '--entry',
        'gpuwise=gpuwise._command:main',
      ],
      { encoding: 'utf8' },
    );
    expect(r.stderr).toBe('');
    const path = r.stdout.trim();
    expect(path).toBe(join(tmp, 'out', 'gpuwise-9.9.9-py3-none-manylinux_2_28_x86_64.whl'));
    const { files } = readWheel(path);
    const info = 'gpuwise-9.9.9.dist-info';
    expect(Object.keys(files).sort()).toEqual(
      ['gpuwise/__init__.py', 'gpuwise/_cli/gpuwise', ...['METADATA', 'WHEEL', 'entry_points.txt', 'RECORD'].map((f) => `${info}/${f}`)].sort(),
    );
    expect(files[`${info}/METADATA`]?.text).toContain('Name: gpuwise\nVersion: 9.9.9\n');
    expect(files[`${info}/WHEEL`]?.text).toContain('Root-Is-Purelib: false\nTag: py3-none-manylinux_2_28_x86_64\n');
    expect(files[`${info}/entry_points.txt`]?.text).toBe('[console_scripts]\ngpuwise = gpuwise._command:main\n');
    expect(files['gpuwise/_cli/gpuwise']?.mode).toBe(0o755);
    expect(files['gpuwise/__init__.py']?.mode).toBe(0o644);
    // RECORD: every other file with its sha256 and size, itself without.
    const record = (files[`${info}/RECORD`]?.text ?? '').trim().split('\n');
    expect(record).toHaveLength(Object.keys(files).length);
    for (const line of record) {
      const [name, hash, size] = line.split(',');
      if (name === `${info}/RECORD`) {
        expect([hash, size]).toEqual(['', '']);
        continue;
      }
      const f = files[name as string];
      expect(hash).toBe(`sha256=${f?.sha256}`);
      expect(Number(size)).toBe(f?.size);
    }
  });
});

describe('the console entry point (python/gpuwise/_command.py)', () => {
  it('without the standalone CLI beside it (a source checkout): one line, exit 2', () => {
    const r = spawnSync(PYTHON, ['-c', 'import sys; from gpuwise._command import main; sys.exit(main())', 'doctor'], {
      env: { ...process.env, PYTHONPATH: join(REPO, 'python'), PYTHONDONTWRITEBYTECODE: '1' },
      encoding: 'utf8',
    });
    expect(r.status).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain('has no standalone CLI');
  });
});
