/**
 * Starts a command in a new session and reads exactly how it ended (shell: processes, koffi).
 *
 * Why not Node's spawn: Node reports a child killed by a signal it has no name for (the real-time signals, e.g.
 * SIGRTMAX) as exit code 0 and no signal, so a script killed that way looked like a success. Here the child is started with
 * glibc's posix_spawn through koffi, so libuv never knows it (libuv's SIGCHLD handler waitpid()s only the pids of
 * its own process handles), and one blocking `waitid(P_PID, pid, WEXITED)` on libuv's thread pool (a koffi async
 * call) reaps it and reads the kernel's status: nothing else can reap it first, so there is no race.
 *
 * The child gets what Node's `spawn(cmd, args, { stdio, env, detached: true })` gives it (libuv 1.46, Linux):
 *  - a new session (setsid), so it leads its own process group: pgid = pid;
 *  - no blocked signal, and signals 1-31 at their default action (a real-time signal gpuwise's parent ignored stays
 *    ignored, as with libuv, which resets only 1-31);
 *  - stdin, stdout and stderr as asked, with close-on-exec cleared, /dev/null for an ignored stdin; no other fd (Node
 *    and libuv open theirs close-on-exec). gpuwise's own fds 0-2 are handed over as gpuwise received them: a status
 *    flag that changed since it started (io/stdioAtStart.ts) is put back, and an O_NONBLOCK its parent set is kept;
 *  - the command looked up as glibc's execvp does in the PATH of the environment given (not gpuwise's own), and a
 *    file without `#!` run by /bin/sh.
 *
 * Node's spawn is used instead (its known limits: a real-time signal's death reads as exit 0, and libuv's child clears
 * O_NONBLOCK on fds 0-2, on the descriptions gpuwise's parent gave) where this cannot run:
 * not Linux on x86_64 or arm64 (siginfo_t's layout is read by offset), no koffi, or no glibc (`libc.so.6`).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { constants as osConstants } from 'node:os';
import type { ChildExit } from '../run/exit.js';
import { type Koffi, loadKoffi } from './koffiLoader.js';
import { SETTABLE_FLAGS, stdioClosedAtStart, stdioFlagsAtStart } from './stdioAtStart.js';

/** stdin, stdout, stderr: inherited from gpuwise, or stdin from /dev/null (`ignore`) and these fds as 1 and 2. */
export type ChildStdio = 'inherit' | ['inherit' | 'ignore', number, number];

export interface StartedChild {
  pid: number;
  /** How the child ended: its exit status, or 128 + N and the signal's name for a death by signal N. Never rejects. */
  exited: Promise<ChildExit>;
  /** `native`: posix_spawn and waitid; `node`: Node's spawn (a real-time signal's death reads as exit 0). */
  how: 'native' | 'node';
}

/** The command could not be started; `code` is the errno's name (ENOENT, EACCES, ENOEXEC, ...), as Node's spawn says it. */
export class SpawnError extends Error {
  constructor(
    readonly code: string,
    file: string,
  ) {
    super(`spawn ${file} ${code}`);
    this.name = 'SpawnError';
  }
}

/**
 * Starts `cmd` (run unchanged; cmd[0] looked up in `env.PATH` unless it holds a slash) with exactly `env` as its
 * environment, in a new session. Rejects with SpawnError when it cannot be started (nothing is left running).
 * `native: false` forces Node's spawn (tests compare the two).
 */
export function startInNewSession(
  cmd: string[],
  env: NodeJS.ProcessEnv,
  stdio: ChildStdio,
  opts: { native?: boolean; stdioFlags?: readonly (number | null)[] } = {},
): Promise<StartedChild> {
  const libc = opts.native === false ? null : nativeLibc();
  if (libc === null) return startWithNode(cmd, env, stdio);
  try {
    return Promise.resolve(startNative(libc, cmd, env, stdio, opts.stdioFlags ?? stdioFlagsAtStart()));
  } catch (e) {
    return Promise.reject(e);
  }
}

/** Whether `startInNewSession` starts children natively here (the reason when not). */
export function nativeSpawnAvailable(): true | string {
  nativeLibc();
  return libcProblem ?? true;
}

// glibc's values on Linux (x86_64 and arm64 share them).
const POSIX_SPAWN_SETSIGDEF = 0x04;
const POSIX_SPAWN_SETSIGMASK = 0x08;
const POSIX_SPAWN_SETSID = 0x80;
const P_PID = 1;
const WEXITED = 4;
const WNOHANG = 1;
const CLD_EXITED = 1;
const CLD_KILLED = 2;
const CLD_DUMPED = 3;
const O_RDONLY = 0;
const F_GETFL = 3;
const F_SETFL = 4;
/** glibc's sizes are 336 (attributes), 80 (file actions) and 128 (sigset_t, siginfo_t) bytes: room to spare. */
const ATTR_BYTES = 1024;
const ACTIONS_BYTES = 512;
export const SIGSET_BYTES = 256;
const SIGINFO_BYTES = 128;

// biome-ignore lint/suspicious/noExplicitAny: koffi functions are variadic by nature
type Fn = (...args: any[]) => number;
type AsyncFn = Fn & { async: (...args: unknown[]) => void };

interface Libc {
  koffi: Koffi;
  errnoNames: Map<number, string>;
  posix_spawn: Fn;
  attrInit: Fn;
  attrDestroy: Fn;
  attrSetFlags: Fn;
  attrSetSigMask: Fn;
  attrSetSigDefault: Fn;
  actionsInit: Fn;
  actionsDestroy: Fn;
  actionsAddDup2: Fn;
  actionsAddOpen: Fn;
  actionsAddClose: Fn;
  fcntl: Fn;
  waitid: AsyncFn;
  sigrtmin: number;
  sigrtmax: number;
}

let libc: Libc | null | undefined;
let libcProblem: string | null = null;

function nativeLibc(): Libc | null {
  if (libc !== undefined) return libc;
  libc = null;
  if (process.platform !== 'linux' || (process.arch !== 'x64' && process.arch !== 'arm64')) {
    libcProblem = `not Linux on x86_64 or arm64 (${process.platform}/${process.arch})`;
    return null;
  }
  try {
    const koffi = loadKoffi();
    const lib = koffi.load('libc.so.6');
    const bind = (proto: string) => lib.func(proto) as Fn;
    const errnoNames = new Map<number, string>();
    for (const [name, n] of Object.entries(koffi.os.errno as Record<string, number>)) if (!errnoNames.has(n)) errnoNames.set(n, name);
    libc = {
      koffi,
      errnoNames,
      posix_spawn: bind(
        'int posix_spawn(_Out_ int *pid, const char *path, void *actions, void *attr, const char **argv, const char **envp)',
      ),
      attrInit: bind('int posix_spawnattr_init(void *attr)'),
      attrDestroy: bind('int posix_spawnattr_destroy(void *attr)'),
      attrSetFlags: bind('int posix_spawnattr_setflags(void *attr, short flags)'),
      attrSetSigMask: bind('int posix_spawnattr_setsigmask(void *attr, void *set)'),
      attrSetSigDefault: bind('int posix_spawnattr_setsigdefault(void *attr, void *set)'),
      actionsInit: bind('int posix_spawn_file_actions_init(void *actions)'),
      actionsDestroy: bind('int posix_spawn_file_actions_destroy(void *actions)'),
      actionsAddDup2: bind('int posix_spawn_file_actions_adddup2(void *actions, int fd, int newfd)'),
      actionsAddOpen: bind('int posix_spawn_file_actions_addopen(void *actions, int fd, const char *path, int oflag, uint32_t mode)'),
      actionsAddClose: bind('int posix_spawn_file_actions_addclose(void *actions, int fd)'),
      fcntl: bind('int fcntl(int fd, int cmd, ...)'),
      waitid: bind('int waitid(int idtype, uint32_t id, void *info, int options)') as AsyncFn,
      // glibc keeps two real-time signals for itself: SIGRTMIN is 34, not the kernel's 32.
      sigrtmin: bind('int __libc_current_sigrtmin()')(),
      sigrtmax: bind('int __libc_current_sigrtmax()')(),
    };
  } catch (e) {
    libcProblem = (e as Error).message.split('\n')[0] ?? String(e);
    libc = null;
  }
  return libc;
}

/** Node's spawn, as startChild used it before: the fallback, and the reference the tests compare with. */
function startWithNode(cmd: string[], env: NodeJS.ProcessEnv, stdio: ChildStdio): Promise<StartedChild> {
  return new Promise((ok, fail) => {
    const child: ChildProcess = spawn(cmd[0] as string, cmd.slice(1), { stdio, env, detached: true });
    const exited = new Promise<ChildExit>((done) => {
      child.once('exit', (code, signal) => {
        const signo = signal ? (osConstants.signals[signal] ?? 0) : 0;
        done({ code: code ?? 128 + signo, signal });
      });
    });
    child.once('spawn', () => ok({ pid: child.pid as number, exited, how: 'node' }));
    child.once('error', (e: NodeJS.ErrnoException) => fail(new SpawnError(e.code ?? 'EUNKNOWN', cmd[0] as string)));
  });
}

/** A signal's name: Node's where it has one (the names its 'exit' event gives), else Python's (SIGRTMIN, SIGRTMAX) or SIGRTMIN+k. */
export function signalName(signo: number, rt: { min: number; max: number } = sigrtRange()): string {
  for (const [name, n] of Object.entries(osConstants.signals)) if (n === signo) return name;
  if (signo === rt.min) return 'SIGRTMIN';
  if (signo === rt.max) return 'SIGRTMAX';
  if (signo > rt.min && signo < rt.max) return `SIGRTMIN+${signo - rt.min}`;
  return `SIG${signo}`;
}

function sigrtRange(): { min: number; max: number } {
  const l = nativeLibc();
  return l ? { min: l.sigrtmin, max: l.sigrtmax } : { min: 34, max: 64 };
}

/** The candidates glibc's execvp tries, in order: the file itself when it holds a slash, else each PATH entry's (an empty entry is the working directory). */
function candidates(file: string, env: NodeJS.ProcessEnv): string[] {
  if (file.includes('/')) return [file];
  // glibc's default when the environment has no PATH (confstr _CS_PATH).
  const path = env.PATH ?? '/bin:/usr/bin';
  return path.split(':').map((dir) => (dir === '' ? file : `${dir}/${file}`));
}

function startNative(l: Libc, cmd: string[], env: NodeJS.ProcessEnv, stdio: ChildStdio, flagsAtStart: readonly (number | null)[]): StartedChild {
  const file = cmd[0] ?? '';
  if (file === '') throw new SpawnError('ENOENT', file);
  // The environment as Node builds it: every enumerable key with a defined value, in order.
  const envp: (string | null)[] = [];
  for (const key in env) {
    const value = env[key];
    if (value !== undefined) envp.push(`${key}=${value}`);
  }
  envp.push(null);

  const attr = Buffer.alloc(ATTR_BYTES);
  const actions = Buffer.alloc(ACTIONS_BYTES);
  const sigmask = Buffer.alloc(SIGSET_BYTES);
  const sigdef = Buffer.alloc(SIGSET_BYTES);
  check(l, l.attrInit(attr), 'posix_spawnattr_init', file);
  try {
    check(l, l.actionsInit(actions), 'posix_spawn_file_actions_init', file);
    try {
      // sigset_t is a little-endian bit array here (bit N-1 for signal N); `sigmask` stays empty. Signals 1-31 to
      // their default as libuv does, and glibc's own two below SIGRTMIN as well: sigaddset refuses them, and glibc's
      // posix_spawn would leave them ignored in the child where Node's child has them at their default.
      for (let s = 1; s < l.sigrtmin; s++) sigdef[(s - 1) >> 3] = (sigdef[(s - 1) >> 3] as number) | (1 << ((s - 1) & 7));
      check(l, l.attrSetSigMask(attr, sigmask), 'posix_spawnattr_setsigmask', file);
      check(l, l.attrSetSigDefault(attr, sigdef), 'posix_spawnattr_setsigdefault', file);
      check(l, l.attrSetFlags(attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF), 'posix_spawnattr_setflags', file);
      addStdio(l, actions, stdio, file, flagsAtStart);
      const pid = spawnFirst(l, file, cmd, envp, actions, attr, env);
      return { pid, exited: waitFor(l, pid), how: 'native' };
    } finally {
      l.actionsDestroy(actions);
    }
  } finally {
    l.attrDestroy(attr);
  }
}

function check(l: Libc, rc: number, what: string, file: string): void {
  if (rc !== 0) throw new SpawnError(l.errnoNames.get(rc) ?? `errno ${rc}`, `${file} (${what})`);
}

/**
 * What the child's fds 0-2 are. An fd passed as itself (`inherit`) is dup2'd onto itself, which makes glibc clear its
 * close-on-exec flag. gpuwise's fds 0-2 go as received (`asReceived`); an fd gpuwise opened for the child is its alone.
 */
function addStdio(l: Libc, actions: Buffer, stdio: ChildStdio, file: string, flagsAtStart: readonly (number | null)[]): void {
  const sources = stdio === 'inherit' ? [0, 1, 2] : [stdio[0] === 'inherit' ? 0 : -1, stdio[1], stdio[2]];
  for (let target = 0; target < 3; target++) {
    const src = sources[target] as number;
    if (src < 0) {
      check(l, l.actionsAddOpen(actions, target, '/dev/null', O_RDONLY, 0), 'posix_spawn_file_actions_addopen', file);
      continue;
    }
    // An earlier target overwrote this source in the child (stdout and stderr swapped): not a case gpuwise has.
    if (src < target && sources[src] !== src) throw new SpawnError('EINVAL', `${file} (fd ${src} is replaced before it is duplicated)`);
    // Closed when gpuwise started (Node put /dev/null there): closed in the command too, as without gpuwise.
    if (src <= 2 && stdioClosedAtStart()[src]) {
      check(l, l.actionsAddClose(actions, target), 'posix_spawn_file_actions_addclose', file);
      continue;
    }
    check(l, l.actionsAddDup2(actions, src, target), 'posix_spawn_file_actions_adddup2', file);
    if (src <= 2) asReceived(l, src, flagsAtStart[src] ?? null);
  }
}

/**
 * Puts back O_NONBLOCK and O_APPEND of gpuwise's fd 0, 1 or 2 where they changed since gpuwise started (the open file
 * description is the command's too): nothing of gpuwise's should have changed them (io/ownStdio.ts), this makes sure.
 */
function asReceived(l: Libc, fd: number, atStart: number | null): void {
  if (atStart === null) return;
  const now = l.fcntl(fd, F_GETFL);
  if (now < 0) return;
  const wanted = (now & ~SETTABLE_FLAGS) | (atStart & SETTABLE_FLAGS);
  if (wanted !== now) l.fcntl(fd, F_SETFL, 'int', wanted);
}

/**
 * posix_spawn on each candidate in turn, as glibc's execvp goes through PATH: a missing file or folder goes on to
 * the next, EACCES is kept (reported when nothing started), any other error stops; a file the kernel cannot execute
 * (ENOEXEC: no `#!`) runs under /bin/sh. posix_spawn returns the exec's errno (glibc reaps the failed child).
 */
function spawnFirst(
  l: Libc,
  file: string,
  cmd: string[],
  envp: (string | null)[],
  actions: Buffer,
  attr: Buffer,
  env: NodeJS.ProcessEnv,
): number {
  const name = (n: number) => l.errnoNames.get(n) ?? `errno ${n}`;
  const E = l.koffi.os.errno as Record<string, number>;
  const goOn = new Set([E.ENOENT, E.ESTALE, E.ENOTDIR, E.ENODEV, E.ETIMEDOUT]);
  const pidOut = [0];
  let sawEacces = false;
  let last = E.ENOENT as number;
  const tryOne = (path: string, argv: (string | null)[]): number => {
    let rc: number;
    do rc = l.posix_spawn(pidOut, path, actions, attr, argv, envp);
    while (rc === E.EINTR);
    return rc;
  };
  for (const path of candidates(file, env)) {
    let rc = tryOne(path, [...cmd, null]);
    if (rc === E.ENOEXEC) rc = tryOne('/bin/sh', ['/bin/sh', path, ...cmd.slice(1), null]);
    if (rc === 0) return pidOut[0] as number;
    last = rc;
    if (rc === E.EACCES) sawEacces = true;
    else if (!goOn.has(rc)) break;
  }
  throw new SpawnError(name(sawEacces ? (E.EACCES as number) : last), file);
}

/**
 * Waits for the child on libuv's thread pool and reaps it. SIGCHLD is never ignored in Node (it resets signals 1-31
 * at its start, whatever its parent left), so the kernel never reaps the child on its own.
 * The wait holds one of the pool's 4 threads while the command runs: what gpuwise does meanwhile is synchronous (NVML
 * through koffi, the collector's writes, /proc) or sockets, and the rest (the live page's file reads, a trace read
 * after a window) has the other 3. Node's exit waits for the pool, so a gpuwise that exits before the child must end
 * it first (probeRun's 'exit' handler kills its process group).
 */
function waitFor(l: Libc, pid: number): Promise<ChildExit> {
  const E = l.koffi.os.errno as Record<string, number>;
  const info = Buffer.alloc(SIGINFO_BYTES);
  return new Promise<ChildExit>((ok) => {
    const decode = (): ChildExit => {
      const code = info.readInt32LE(8);
      const status = info.readInt32LE(24);
      if (code === CLD_KILLED || code === CLD_DUMPED) return { code: 128 + status, signal: signalName(status) };
      if (code === CLD_EXITED) return { code: status & 0xff, signal: null };
      return { code: 255, signal: null }; // WEXITED reports only these three
    };
    const wait = () => {
      info.fill(0);
      l.waitid.async(P_PID, pid, info, WEXITED, (err: unknown, rc: number) => {
        if (!err && rc === 0) return ok(decode());
        const errno = err ? 0 : l.koffi.errno();
        if (errno === E.EINTR) return wait();
        // Not expected (the child is ours alone): whether it ended meanwhile, without blocking; gone, its status is lost.
        info.fill(0);
        if (l.waitid(P_PID, pid, info, WEXITED | WNOHANG) === 0) {
          if (info.readInt32LE(16) === pid) return ok(decode());
          return wait();
        }
        ok({ code: 255, signal: null });
      });
    };
    wait();
  });
}
