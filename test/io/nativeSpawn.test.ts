/**
 * io/nativeSpawn.ts on real processes: how a child ended (real-time signals included), its session, stdio, fds,
 * environment and PATH lookup, each set against Node's spawn (which the module replaces) where Node gets it right.
 */
import { chmodSync, closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { type Server, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startProbeRun } from '../../src/cli/probeRun.js';
import { InputError } from '../../src/io/inputError.js';
import { loadKoffi } from '../../src/io/koffiLoader.js';
import { type ChildStdio, SpawnError, nativeSpawnAvailable, startInNewSession, signalName } from '../../src/io/nativeSpawn.js';

const PY = '/usr/bin/python3';
const linux = process.platform === 'linux';
let tmp: string;

beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), 'gpuwise-spawn-'));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const cleanEnv = (extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv => ({ PATH: process.env.PATH, ...extra });

/** Runs cmd with its stdout and stderr in files; what it printed and how it ended. */
async function run(cmd: string[], opts: { env?: NodeJS.ProcessEnv; native?: boolean; stdin?: 'inherit' | 'ignore' } = {}) {
  const dir = mkdtempSync(join(tmp, 'run-'));
  const out = openSync(join(dir, 'out'), 'w');
  const err = openSync(join(dir, 'err'), 'w');
  let child: Awaited<ReturnType<typeof startInNewSession>>;
  try {
    const stdio: ChildStdio = [opts.stdin ?? 'ignore', out, err];
    child = await startInNewSession(cmd, opts.env ?? cleanEnv(), stdio, { native: opts.native });
  } finally {
    closeSync(out);
    closeSync(err);
  }
  const exit = await child.exited;
  return {
    pid: child.pid,
    how: child.how,
    exit,
    stdout: readFileSync(join(dir, 'out'), 'utf8'),
    stderr: readFileSync(join(dir, 'err'), 'utf8'),
  };
}

/** /proc's fdinfo of one of this process's fds ('' when it closed meanwhile). */
function fdinfo(fd: number): string {
  try {
    return readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8');
  } catch {
    return '';
  }
}

/** An fd's open flags as /proc shows them (O_CLOEXEC included). */
const fdFlags = (fd: number) => Number.parseInt(/^flags:\s+([0-7]+)$/m.exec(fdinfo(fd))?.[1] ?? '0', 8);

/** A Python one-liner that sends itself a signal with no handler: `expr` is evaluated with `signal` imported. */
const killSelf = (expr: string) => [PY, '-c', `import os, signal, time\nos.kill(os.getpid(), ${expr})\ntime.sleep(5)`];

describe.skipIf(!linux)('nativeSpawn: how the child ended', () => {
  it('starts natively here (Linux, koffi, glibc)', () => {
    expect(nativeSpawnAvailable()).toBe(true);
  });

  it('exit 0 and exit 3', async () => {
    const ok = await run([PY, '-c', 'print("hi")']);
    expect(ok.how).toBe('native');
    expect(ok.exit).toEqual({ code: 0, signal: null });
    expect(ok.stdout).toBe('hi\n');
    expect((await run([PY, '-c', 'import sys; sys.exit(3)'])).exit).toEqual({ code: 3, signal: null });
  });

  it('a death by SIGTERM: 143, SIGTERM, as Node reports it', async () => {
    const native = await run(killSelf('signal.SIGTERM'));
    expect(native.exit).toEqual({ code: 143, signal: 'SIGTERM' });
    // Every signal Node has a name for reads the same both ways (SIGKILL, SIGABRT, SIGSEGV, SIGUSR1, SIGSYS).
    for (const sig of ['SIGTERM', 'SIGKILL', 'SIGABRT', 'SIGSEGV', 'SIGUSR1', 'SIGSYS']) {
      const n = await run(killSelf(`signal.${sig}`));
      const node = await run(killSelf(`signal.${sig}`), { native: false });
      expect(node.how).toBe('node');
      expect(n.exit, sig).toEqual(node.exit);
    }
  });

  it('a death by a real-time signal: SIGRTMAX is 192, SIGRTMIN+2 is 164 (Node says exit 0 for both)', async () => {
    expect((await run(killSelf('signal.SIGRTMAX'))).exit).toEqual({ code: 192, signal: 'SIGRTMAX' });
    expect((await run(killSelf('signal.SIGRTMIN + 2'))).exit).toEqual({ code: 164, signal: 'SIGRTMIN+2' });
    expect((await run(killSelf('signal.SIGRTMIN'))).exit).toEqual({ code: 162, signal: 'SIGRTMIN' });
    // What the module replaces: Node's own spawn loses it.
    expect((await run(killSelf('signal.SIGRTMAX'), { native: false })).exit.code).toBe(0);
  });

  it('names signals as Node does, and real-time ones as Python does', () => {
    expect(signalName(15)).toBe('SIGTERM');
    expect(signalName(6)).toBe('SIGABRT');
    expect(signalName(29)).toBe('SIGIO');
    expect(signalName(34)).toBe('SIGRTMIN');
    expect(signalName(35)).toBe('SIGRTMIN+1');
    expect(signalName(63)).toBe('SIGRTMIN+29');
    expect(signalName(64)).toBe('SIGRTMAX');
  });
});

describe.skipIf(!linux)('nativeSpawn: what the child gets', () => {
  it('its own session and process group: getsid = getpgid = pid', async () => {
    const r = await run([PY, '-c', 'import os; print(os.getpid(), os.getsid(0), os.getpgid(0))']);
    expect(r.stdout.trim()).toBe(`${r.pid} ${r.pid} ${r.pid}`);
  });

  it('the fds given as its 1 and 2, /dev/null as an ignored stdin, the same fd twice', async () => {
    const r = await run([PY, '-c', 'import os, sys; print(os.readlink("/proc/self/fd/0")); print("to err", file=sys.stderr)']);
    expect(r.stdout).toBe('/dev/null\n');
    expect(r.stderr).toBe('to err\n');
    const path = join(tmp, 'both');
    const fd = openSync(path, 'w');
    const child = await startInNewSession(['sh', '-c', 'echo one; echo two >&2'], cleanEnv(), ['ignore', fd, fd]);
    closeSync(fd);
    expect(await child.exited).toEqual({ code: 0, signal: null });
    expect(readFileSync(path, 'utf8')).toBe('one\ntwo\n');
  });

  it("gpuwise's fds 0-2 reach it as gpuwise received them: a flag changed since the start put back, a parent's O_NONBLOCK kept", async () => {
    // fd 0 of this process replaced for the test by a pipe opened O_CLOEXEC | O_NONBLOCK, then put back.
    const koffi = loadKoffi();
    const lib = koffi.load('libc.so.6');
    const pipe2 = lib.func('int pipe2(_Out_ int *fds, int flags)');
    const dup = lib.func('int dup(int fd)');
    const dup3 = lib.func('int dup3(int fd, int newfd, int flags)');
    const close = lib.func('int close(int fd)');
    const fcntl = lib.func('int fcntl(int fd, int cmd, ...)');
    const F_SETFL = 4;
    const O_CLOEXEC = 0o2000000;
    const O_NONBLOCK = 0o4000;
    const saved = dup(0) as number;
    const fds = [0, 0];
    expect(pipe2(fds, O_CLOEXEC | O_NONBLOCK)).toBe(0);
    const show = [
      PY,
      '-c',
      'import os, fcntl\nprint(os.readlink("/proc/self/fd/0").split(":")[0], bool(fcntl.fcntl(0, fcntl.F_GETFL) & os.O_NONBLOCK))',
    ];
    const out = join(tmp, 'flags-out');
    const outFd = openSync(out, 'w');
    /** What the command sees of fd 0 (a non-blocking pipe now) when gpuwise's fd 0 had `flagsAtStart`; gpuwise's O_NONBLOCK after. */
    const run = async (flagsAtStart: number, native: boolean) => {
      expect(dup3(fds[0], 0, O_CLOEXEC)).toBe(0);
      expect(fcntl(0, F_SETFL, 'int', O_NONBLOCK)).toBe(0);
      expect(fdFlags(0) & (O_CLOEXEC | O_NONBLOCK)).toBe(O_CLOEXEC | O_NONBLOCK);
      const child = await startInNewSession(show, cleanEnv(), ['inherit', outFd, 2], { native, stdioFlags: [flagsAtStart, null, null] });
      expect(await child.exited).toEqual({ code: 0, signal: null });
      return fdFlags(0) & O_NONBLOCK;
    };
    try {
      const blocking = fdFlags(0) & ~(O_CLOEXEC | O_NONBLOCK);
      // Blocking when gpuwise started (something in gpuwise made it non-blocking since): blocking again, for good.
      expect(await run(blocking, true)).toBe(0);
      expect(await run(blocking, false)).toBe(0);
      // Non-blocking as gpuwise's parent gave it: the command gets it so, as without gpuwise (Node's spawn clears it).
      expect(await run(blocking | O_NONBLOCK, true)).toBe(O_NONBLOCK);
      expect(await run(blocking | O_NONBLOCK, false)).toBe(0);
      expect(readFileSync(out, 'utf8')).toBe('pipe False\npipe False\npipe True\npipe False\n');
    } finally {
      closeSync(outFd);
      dup3(saved, 0, 0);
      close(saved);
      close(fds[0]);
      close(fds[1]);
    }
  });

  it('no fd of gpuwise leaks into it (a listening socket, open files), as with Node', async () => {
    const server: Server = createServer();
    await new Promise<void>((ok) => server.listen(join(tmp, 'collector.sock'), ok));
    const held = openSync(join(tmp, 'held'), 'w');
    try {
      // Each fd the child has and what it is (the listing's own fd is closed by the time it is read).
      const list = [
        PY,
        '-c',
        'import os\nfor f in sorted(os.listdir("/proc/self/fd"), key=int):\n  try: print(f, os.readlink("/proc/self/fd/" + f))\n  except OSError: pass',
      ];
      const native = await run(list);
      const fds = native.stdout
        .trim()
        .split('\n')
        .map((l) => Number(l.split(' ')[0]));
      // What may reach it besides 0-2: fds this process got without close-on-exec from whatever started it (none of
      // its own: Node and libuv open every fd O_CLOEXEC).
      const inherited = readdirSync('/proc/self/fd')
        .map(Number)
        .filter((fd) => fd > 2 && fdinfo(fd) !== '' && (fdFlags(fd) & 0o2000000) === 0);
      expect(fds).toEqual([0, 1, 2, ...inherited]);
      expect(native.stdout).not.toContain('held');
      expect(native.stdout).not.toContain('socket:');
      const whatIs = (out: string) => out.replaceAll(/\/tmp\/\S+\/(out|err)$/gm, '$1');
      expect(whatIs(native.stdout)).toBe(whatIs((await run(list, { native: false })).stdout));
    } finally {
      closeSync(held);
      await new Promise<void>((ok) => server.close(() => ok()));
    }
  });

  it('no blocked signal, none of 1-31 ignored, as with Node', async () => {
    // The kernel's view of the exec'd process (Python changes SIGINT, SIGPIPE and SIGXFSZ at its start).
    const show = ['/usr/bin/grep', '^Sig\\(Blk\\|Ign\\)', '/proc/self/status'];
    const native = await run(show);
    const [blk, ign] = native.stdout.split('\n').map((l) => BigInt(`0x${l.split('\t')[1] ?? '0'}`));
    expect(blk).toBe(0n);
    // Signals 1-31 at their default; a real-time signal this process was handed ignored stays so, as libuv leaves it.
    expect((ign as bigint) & 0x7fffffffn).toBe(0n);
    expect(native.stdout).toBe((await run(show, { native: false })).stdout);
  });

  it('exactly the environment given, in order, undefined values left out', async () => {
    const env = { ZED: 'last-first', PATH: '/usr/bin:/bin', EMPTY: '', SPACES: 'a b  c', UNSET: undefined, 'A.B': 'dotted' };
    const r = await run(['/usr/bin/env', '-0'], { env });
    expect(r.stdout.split('\0').filter((l) => l !== '')).toEqual([
      'ZED=last-first',
      'PATH=/usr/bin:/bin',
      'EMPTY=',
      'SPACES=a b  c',
      'A.B=dotted',
    ]);
    expect(r.stdout).toBe((await run(['/usr/bin/env', '-0'], { env, native: false })).stdout);
  });

  it("looks the command up in the given environment's PATH, not gpuwise's", async () => {
    const mine = join(tmp, 'bin-mine');
    const theirs = join(tmp, 'bin-theirs');
    mkdirSync(mine);
    mkdirSync(theirs);
    writeFileSync(join(mine, 'gw-which'), '#!/bin/sh\necho mine\n', { mode: 0o755 });
    writeFileSync(join(theirs, 'gw-which'), '#!/bin/sh\necho theirs\n', { mode: 0o755 });
    const saved = process.env.PATH;
    process.env.PATH = `${mine}:${saved}`;
    try {
      for (const native of [true, false]) {
        expect((await run(['gw-which'], { env: { PATH: `${theirs}:/usr/bin:/bin` }, native })).stdout).toBe('theirs\n');
        await expect(run(['gw-which'], { env: { PATH: '/usr/bin:/bin' }, native })).rejects.toMatchObject({ code: 'ENOENT' });
      }
    } finally {
      process.env.PATH = saved;
    }
  });

  it('searches PATH as execvp does: a non-executable entry is passed over, no PATH means /bin:/usr/bin, no #! runs under sh', async () => {
    const a = join(tmp, 'path-a');
    const b = join(tmp, 'path-b');
    mkdirSync(a);
    mkdirSync(b);
    writeFileSync(join(a, 'gw-two'), '#!/bin/sh\necho a\n', { mode: 0o644 });
    writeFileSync(join(b, 'gw-two'), '#!/bin/sh\necho b\n', { mode: 0o755 });
    writeFileSync(join(b, 'gw-plain'), 'echo "plain $0 $1"\n', { mode: 0o755 });
    for (const native of [true, false]) {
      const env = { PATH: `${a}:${b}` };
      expect((await run(['gw-two'], { env, native })).stdout).toBe('b\n');
      expect((await run(['gw-plain', 'x'], { env, native })).stdout).toBe(`plain ${b}/gw-plain x\n`);
      expect((await run(['ls', '/dev/null'], { env: {}, native })).stdout).toBe('/dev/null\n');
      await expect(run(['gw-two'], { env: { PATH: a }, native })).rejects.toMatchObject({ code: 'EACCES' });
    }
  });

  it('a missing command is ENOENT and a non-executable one EACCES, by path or by name', async () => {
    const file = join(tmp, 'not-exec');
    writeFileSync(file, '#!/bin/sh\n');
    chmodSync(file, 0o644);
    await expect(run(['gpuwise-no-such-command'])).rejects.toBeInstanceOf(SpawnError);
    await expect(run(['gpuwise-no-such-command'])).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(run([join(tmp, 'nothing-here')])).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(run([file])).rejects.toMatchObject({ code: 'EACCES' });
    await expect(run(['not-exec'], { env: { PATH: tmp } })).rejects.toMatchObject({ code: 'EACCES' });
  });
});

describe.skipIf(!linux)('probeRun on the native spawn', () => {
  const probeRun = async (cmd: string[]) => {
    const runDir = mkdtempSync(join(tmp, 'probe-'));
    const out = { stdoutPath: join(runDir, 'cmd.stdout'), stderrPath: join(runDir, 'cmd.stderr') };
    const started = await startProbeRun({ cmd, runDir, sampleGpus: false, output: out });
    const done = await started.done;
    return { pid: started.pid, ...done };
  };

  it('reports exit 0, 3, SIGTERM and SIGRTMAX as the shell sees them', async () => {
    expect((await probeRun(['sh', '-c', 'exit 0'])).exit).toEqual({ code: 0, signal: null });
    expect((await probeRun(['sh', '-c', 'exit 3'])).exit).toEqual({ code: 3, signal: null });
    expect((await probeRun(['sh', '-c', 'kill -TERM $$; sleep 5'])).exit).toEqual({ code: 143, signal: 'SIGTERM' });
    expect((await probeRun(['sh', '-c', 'kill -RTMAX $$; sleep 5'])).exit).toEqual({ code: 192, signal: 'SIGRTMAX' });
  });

  it('a command that cannot start: InputError, command not found or permission denied', async () => {
    const file = join(tmp, 'not-exec-2');
    writeFileSync(file, '#!/bin/sh\n', { mode: 0o644 });
    await expect(probeRun(['gpuwise-no-such-command'])).rejects.toThrow(new InputError('gpuwise-no-such-command', 'command not found'));
    await expect(probeRun([file])).rejects.toThrow(new InputError(file, 'permission denied (not executable)'));
    await expect(probeRun([file])).rejects.toBeInstanceOf(InputError);
  });
});
