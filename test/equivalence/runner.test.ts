/**
 * The equivalence runner's own pieces (scripts/equivalence.mjs, scripts/equivalenceGen.mjs), without PyTorch: the
 * declarations a case makes, the stdio arrangements the two runs get (a real `sh` pipeline with slow, tee'd and
 * closing readers), how doctor's report is cut out of a stream it shares with the script, and the program generator
 * (deterministic, valid Python, known differences left out).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { StdioKind } from '../../scripts/equivalence.mjs';
import { declarationsOf, listCases, resolvePython, splitDoctorOutput, splitWords, stdioScript } from '../../scripts/equivalence.mjs';
import { blockerCases, generate, knownCases, parseSeeds, writePrograms } from '../../scripts/equivalenceGen.mjs';
import { PYTHON, REPO } from '../doctor/helpers.js';

const CASES = join(REPO, 'test', 'equivalence', 'cases');
const KNOWN = join(REPO, 'test', 'equivalence', 'known-differences.json');
// A real interpreter (a pyenv shim is a bash script, which opens descriptors of its own before Python starts).
const PY = existsSync(PYTHON) ? PYTHON : (resolvePython('python3') ?? 'python3');
const tmp = mkdtempSync(join(tmpdir(), 'gpuwise-equivalence-runner-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('declarations', () => {
  it('splits a command into shell-like words, quotes kept together, nothing expanded', () => {
    expect(splitWords(' env PYTHONPATH=pkg {python}  train.py ')).toEqual(['env', 'PYTHONPATH=pkg', '{python}', 'train.py']);
    expect(splitWords(`bash -c "cd sub && PYTHONPATH=. {python} train.py"`)).toEqual([
      'bash',
      '-c',
      'cd sub && PYTHONPATH=. {python} train.py',
    ]);
    expect(splitWords(`a 'b "c" $HOME' "d \\"e\\" \\\\"`)).toEqual(['a', 'b "c" $HOME', 'd "e" \\']);
    expect(() => splitWords('a "b')).toThrow(/unterminated/);
  });

  it('reads every kind of declaration, with defaults', () => {
    const d = declarationsOf(
      [
        '"""doc',
        '# equivalence: allow stdout-line ^x -- why',
        '# equivalence: command {python} -I {script}',
        '# equivalence: stdio stdout=slow stderr=closed',
        '# equivalence: env PYTHONPATH=src',
        '# equivalence: probed 2',
        '"""',
      ].join('\n'),
      'c',
    );
    expect(d.allow.map((a) => a.source)).toEqual(['^x']);
    expect(d.command).toEqual(['{python}', '-I', '{script}']);
    expect(d.stdio).toEqual({ stdout: 'slow', stderr: 'closed' });
    expect(d.env).toEqual({ PYTHONPATH: 'src' });
    expect(d.probed).toBe(2);
    expect(declarationsOf('"""nothing"""', 'c')).toMatchObject({
      command: null,
      stdio: { stdout: 'own', stderr: 'own' },
      env: {},
      probed: 1,
    });
  });

  it('refuses a malformed declaration rather than ignore it', () => {
    for (const bad of ['stdio stdout=fast', 'stdio', 'probed two', 'command', 'env GPUWISE_X=1', 'allow stdout-line x', 'frobnicate'])
      expect(() => declarationsOf(`# equivalence: ${bad}`, 'c'), bad).toThrow(/malformed/);
  });

  it("every case of the suite declares well (a folder's main.py or case.txt)", () => {
    for (const c of listCases(CASES)) {
      const file =
        c.folder && !existsSync(join(c.path, 'main.py')) ? join(c.path, 'case.txt') : c.folder ? join(c.path, 'main.py') : c.path;
      expect(() => declarationsOf(readFileSync(file, 'utf8'), c.name), c.name).not.toThrow();
    }
  });
});

describe("doctor's output cut out of a shared stream", () => {
  const cmd = ['/usr/bin/python3', 'train.py'];
  it('stdout: the report after its header is doctor’s, even after a line without its newline', () => {
    const report = '\ngpuwise doctor: /usr/bin/python3 train.py\nOutcome: completed (exit code 0)\n...\n';
    expect(splitDoctorOutput('stdout', `a\nb${report}`, cmd)).toEqual({ script: 'a\nb', own: report });
    expect(splitDoctorOutput('stdout', 'gpuwise doctor: x\nOutcome: y', cmd).own).toBe('');
  });
  it("stderr: doctor's trailing closing lines only", () => {
    const closing = 'gpuwise doctor: saved as run x in y (gpuwise runs; ...)\n';
    expect(splitDoctorOutput('stderr', `warn\npartial${closing}`, cmd)).toEqual({ script: 'warn\npartial', own: closing });
    expect(splitDoctorOutput('stderr', 'gpuwise doctor: mid-run\nscript line\n', cmd).own).toBe('');
  });
});

describe('stdio arrangements (the sh pipeline both runs get)', () => {
  // A stand-in for the side's parent and its command: writes 300 KB to stdout and 100 KB to stderr, and reports
  // what it saw of its descriptors 1 and 2 into a file of its own.
  const PROGRAM = `
import errno, fcntl, os, sys
seen = []
for fd in (1, 2):
    try:
        seen.append("%d nonblock=%s" % (fd, bool(fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_NONBLOCK)))
    except OSError as e:
        seen.append("%d %s" % (fd, errno.errorcode[e.errno]))
open(sys.argv[1], "w").write(" ".join(seen))
for fd, n in ((1, 300000), (2, 100000)):
    data = bytes(i % 251 for i in range(n))
    try:
        while data:
            data = data[os.write(fd, data):]
    except OSError as e:
        open(sys.argv[1], "a").write(" write%d %s" % (fd, errno.errorcode[e.errno]))
`;
  const bytesOf = (n: number) => Buffer.from(Array.from({ length: n }, (_, i) => i % 251));
  const run = (stdout: StdioKind, stderr: StdioKind) => {
    const dir = mkdtempSync(join(tmp, `${stdout}-${stderr}-`));
    const files = { stdout: join(dir, 'out'), stderr: join(dir, 'err'), ownStdout: join(dir, 'own-out'), ownStderr: join(dir, 'own-err') };
    const r = spawnSync('sh', ['-c', stdioScript({ stdout, stderr }, files, PY), 'sh', PY, '-c', PROGRAM, join(dir, 'seen')], {
      timeout: 30_000,
    });
    expect(r.status, r.stderr.toString()).toBe(0);
    const read = (p: string) => (existsSync(p) ? readFileSync(p) : Buffer.alloc(0));
    return {
      out: read(files.stdout),
      err: read(files.stderr),
      ownOut: read(files.ownStdout),
      seen: readFileSync(join(dir, 'seen'), 'utf8'),
    };
  };

  it.each([
    ['slow', 'pipe'],
    ['tee', 'slow'],
    ['pipe', 'file'],
    ['file', 'tee'],
  ] as [StdioKind, StdioKind][])('stdout %s, stderr %s: every byte reaches the reader, through blocking descriptors', (o, e) => {
    const r = run(o, e);
    expect(r.out.equals(bytesOf(300000))).toBe(true);
    expect(r.err.equals(bytesOf(100000))).toBe(true);
    expect(r.seen).toBe('1 nonblock=False 2 nonblock=False');
  });

  it('closing: the reader keeps 4096 bytes and the writer meets EPIPE; closed: EBADF; own: the parent’s own file', () => {
    const a = run('closing', 'closed');
    expect(a.out.equals(bytesOf(4096))).toBe(true);
    expect(a.seen).toBe('1 nonblock=False 2 EBADF write1 EPIPE write2 EBADF');
    const b = run('own', 'pipe');
    expect(b.ownOut.equals(bytesOf(300000))).toBe(true);
    expect(b.out.length).toBe(0);
  });
});

describe('the program generator', () => {
  const known = knownCases(KNOWN);

  it('gives the same program for the same seed, and different ones across seeds', () => {
    expect(generate(3, known).text).toBe(generate(3, known).text);
    const texts = new Set(parseSeeds('0-15').map((s) => generate(s, null).text));
    expect(texts.size).toBe(16);
    expect(parseSeeds('0-2,7')).toEqual([0, 1, 2, 7]);
  });

  it('writes valid Python whose declarations the runner reads', () => {
    const dir = join(tmp, 'generated');
    const paths = writePrograms(dir, parseSeeds('0-39'), null);
    const r = spawnSync(PY, ['-m', 'py_compile', ...Object.values(paths)], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    for (const [name, p] of Object.entries(paths)) expect(() => declarationsOf(readFileSync(p, 'utf8'), name)).not.toThrow();
  });

  it('leaves out a behaviour while the case showing its known difference is listed, and only then', () => {
    const blockers = blockerCases();
    const names = new Set(listCases(CASES).map((c) => c.name));
    for (const c of blockers) expect(names, c).toContain(c);
    for (let seed = 0; seed < 60; seed++) {
      const g = generate(seed, known);
      for (const [behaviour, c] of Object.entries(g.left)) {
        expect(known?.has(c), `${behaviour}: ${c}`).toBe(true);
        expect(g.behaviours).not.toContain(behaviour);
      }
      expect(generate(seed, new Set()).left).toEqual({});
    }
  });

  it('the CI seeds combine behaviours of several families', () => {
    const families = new Set(parseSeeds('0-3').flatMap((s) => generate(s, known).behaviours.map((b) => b.split('.')[0])));
    for (const f of ['data', 'model', 'opt', 'out', 'env', 'child', 'eval', 'end']) expect(families, f).toContain(f);
  });
});

// A runner argument check that needs no torch: a bad --generate is refused as usage.
it('the runner refuses malformed seeds', () => {
  const file = join(tmp, 'x.json');
  writeFileSync(file, '{}');
  const r = spawnSync(process.execPath, [join(REPO, 'scripts', 'equivalence.mjs'), '--python', PY, '--self-check', '--generate', 'a-b'], {
    encoding: 'utf8',
  });
  expect(r.status).toBe(2);
  expect(r.stderr).toMatch(/--generate: bad seeds/);
});
