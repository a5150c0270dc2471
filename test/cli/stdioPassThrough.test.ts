/**
 * doctor hands its stdin, stdout and stderr to the command exactly as it received them, and never changes a flag of
 * the open file descriptions it shares with it (issue 43 item 1): before, Node's stream for a piped stdout put the
 * description in O_NONBLOCK mode under the command, which then lost output to a slow reader, raised BlockingIOError
 * at a big print() or saw a `cat` child fail with EAGAIN. The bundled CLI as a user runs it, with Debian's CPU
 * Python; each run is compared with the same command run plainly.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildBundle } from '../cliBundle.js';
import { PYTHON, REPO, SKIP_PYTHON, pyEnv } from '../doctor/helpers.js';

const FIXTURES = join(REPO, 'test', 'fixtures', 'stdio');
const BIG = join(FIXTURES, 'big_output.py');
const tmp = mkdtempSync(join(tmpdir(), 'gpuwise-stdio-'));
let bundle = '';
let n = 0;
const fresh = (name: string) => join(tmp, `${name}-${n++}`);
// GPUWISE_PROBE_DIR: this checkout's probe (node_modules may be a link to another checkout's, where the bundle lives).
const env = () => pyEnv({ GPUWISE_STORE: join(tmp, 'store'), GPUWISE_PROBE_DIR: join(REPO, 'python') });

beforeAll(async () => {
  bundle = await buildBundle('gpuwise-stdio-test');
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** `gpuwise doctor [flags] -- cmd` as argv, its run directory fresh. */
const doctor = (cmd: string[], flags: string[] = []) => [process.execPath, bundle, 'doctor', '--no-serve', ...flags, '--out', fresh('run'), '--', ...cmd];

/**
 * Runs `cmd` with its stdout (or, `stream: 2`, its stderr) piped into a slow reader, through `tee` when asked; the
 * other stream goes to a file. What the reader got, what tee wrote, the other stream, and the exit status the shell saw.
 */
function slowlyRead(cmd: string[], opts: { stream?: 1 | 2; tee?: boolean } = {}) {
  const [got, teed, other, status] = [fresh('got'), fresh('teed'), fresh('other'), fresh('status')];
  const redirect = opts.stream === 2 ? '2>&1 >"$OTHER"' : '2>"$OTHER"';
  const script = `{ "$@" ${redirect}; echo $? >"$STATUS"; } | ${opts.tee ? 'tee "$TEED" |' : ''} "$PY" "$READER" "$GOT"`;
  const r = spawnSync('sh', ['-c', script, 'sh', ...cmd], {
    env: { ...env(), OTHER: other, STATUS: status, TEED: teed, GOT: got, PY: PYTHON, READER: join(FIXTURES, 'slow_reader.py') },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  expect(r.status).toBe(0);
  return {
    got: readFileSync(got),
    teed: opts.tee ? readFileSync(teed) : null,
    other: readFileSync(other, 'utf8'),
    status: Number(readFileSync(status, 'utf8')),
  };
}

/** The flags of fds 0-2 that `fd_flags.py` saw, run with fds 0-2 of `kind` (stdio_as.py), plainly or under doctor. */
function flagsSeen(kind: string, underDoctor: string[] | null): string {
  const report = fresh('flags');
  // Through `sh -c exec`: the same fds, and doctor does not check that Python for torch afterwards (seconds a run).
  const script = ['sh', '-c', 'exec "$0" "$@"', PYTHON, join(FIXTURES, 'fd_flags.py'), report];
  const cmd = underDoctor ? doctor(script, underDoctor) : script;
  const r = spawnSync(PYTHON, [join(FIXTURES, 'stdio_as.py'), kind, '--', ...cmd], { env: env(), encoding: 'utf8' });
  expect(r.status, r.stderr).toBe(0);
  return readFileSync(report, 'utf8').trim();
}

describe.skipIf(SKIP_PYTHON)('doctor passes stdio through as received', () => {
  it('a slow reader on the stdout pipe gets every byte of 4 MB of print()s and a cat child, with the exit status of the plain run', () => {
    const plain = slowlyRead([PYTHON, BIG]);
    expect(plain.status).toBe(0);
    expect(plain.got.length).toBeGreaterThan(4_000_000);
    const under = slowlyRead(doctor([PYTHON, BIG]));
    expect(under.other).not.toMatch(/BlockingIOError|Resource temporarily unavailable|Traceback/);
    expect(under.status).toBe(plain.status);
    // The command's bytes, then doctor's report.
    expect(under.got.subarray(0, plain.got.length).equals(plain.got)).toBe(true);
    expect(under.got.subarray(plain.got.length).toString()).toMatch(/^\ngpuwise doctor: /);
  });

  it('through tee: the log file and the slow reader behind it both get every byte', () => {
    const plain = slowlyRead([PYTHON, BIG], { tee: true });
    const under = slowlyRead(doctor([PYTHON, BIG]), { tee: true });
    expect(under.other).not.toMatch(/BlockingIOError|Resource temporarily unavailable|Traceback/);
    expect(under.status).toBe(plain.status);
    expect(under.teed?.equals(under.got)).toBe(true);
    expect(under.got.subarray(0, plain.got.length).equals(plain.got)).toBe(true);
  });

  it("the command sees fds 0-2 with the flags of the plain run: pipes (blocking, or non-blocking as a parent gave them), files (stderr O_APPEND), /dev/null", () => {
    for (const kind of ['pipe', 'nonblocking-pipe', 'file', 'devnull']) {
      const plain = flagsSeen(kind, null);
      expect(`${kind} ${flagsSeen(kind, [])}`).toBe(`${kind} ${plain}`);
    }
  });

  it('--json: the command writes to the stderr pipe as to its own, every byte reaches a slow reader, and stdout holds the report alone', () => {
    const plain = slowlyRead([PYTHON, BIG]);
    const under = slowlyRead(doctor([PYTHON, BIG], ['--json']), { stream: 2 });
    expect(under.status).toBe(plain.status);
    // Under --json the command's stdout goes to doctor's stderr: there its bytes arrive whole, then doctor's lines.
    expect(under.got.subarray(0, plain.got.length).equals(plain.got)).toBe(true);
    expect(under.got.subarray(plain.got.length).toString()).toMatch(/^gpuwise doctor: /);
    expect(JSON.parse(under.other).run.exitCode).toBe(0);
    // Both of the command's fds 1 and 2 are doctor's stderr as received: the flags plain fd 2 has.
    for (const kind of ['pipe', 'nonblocking-pipe', 'file']) {
      const [in0, , err2] = flagsSeen(kind, null).split(' ');
      const fd2 = err2?.split(':')[1];
      expect(`${kind} ${flagsSeen(kind, ['--json'])}`).toBe(`${kind} ${in0} 1:${fd2} 2:${fd2}`);
    }
  });
});
