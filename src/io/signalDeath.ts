/**
 * gpuwise ends by the signal its command died of, as a transparent wrapper does (shell: koffi).
 *
 * A parent tells a death by signal N from an exit status 128+N (Python's subprocess says -N, Slurm and torchrun's
 * elastic agent report the signal), so doctor, once its report is out and everything is closed, dies the same way:
 * the signal's disposition back to its default (Node ignores SIGPIPE, V8 traps SIGSEGV and SIGBUS, Node handles SIGINT
 * and SIGTERM), the signal unblocked in this thread, core dumps off for gpuwise itself (RLIMIT_CORE 0 and not
 * dumpable, so that no core of Node's is written or handed to a crash reporter), then raise(). Where that cannot be
 * done (no koffi, not Linux) or the process survives it, the exit status 128+N set before stays.
 */
import { type Koffi, loadKoffi } from './koffiLoader.js';
import { SIGSET_BYTES } from './nativeSpawn.js';

const RLIMIT_CORE = 4;
const PR_SET_DUMPABLE = 4;
const SIG_UNBLOCK = 1;
/** struct rlimit: two 64-bit words. The sigset_t buffer is nativeSpawn.ts's SIGSET_BYTES. */
const RLIMIT_BYTES = 16;

// biome-ignore lint/suspicious/noExplicitAny: koffi functions are variadic by nature
type Fn = (...args: any[]) => any;

/** The signal asked for by `endBySignal`, acted on by `dieByAskedSignal` at the process's exit. */
let asked: number | null = null;

/** Asks that gpuwise end by signal `signo` once it exits (bin.ts acts on it; a command run in-process never dies). */
export function endBySignal(signo: number): void {
  asked = signo;
}

/** The signal `endBySignal` asked for, null when none. */
export function askedSignal(): number | null {
  return asked;
}

/** Dies by the signal asked for, if any; returns when none was asked or the process survived it. */
export function dieByAskedSignal(): void {
  if (asked === null) return;
  try {
    dieBy(loadKoffi(), asked);
  } catch {
    // no koffi or no glibc: the exit status 128+N stays
  }
}

function dieBy(koffi: Koffi, signo: number): void {
  if (process.platform !== 'linux') return;
  const lib = koffi.load('libc.so.6');
  const bind = (proto: string) => lib.func(proto) as Fn;
  const getrlimit = bind('int getrlimit(int resource, void *rlim)');
  const setrlimit = bind('int setrlimit(int resource, void *rlim)');
  const prctl = bind('int prctl(int option, ...)');
  const signal = bind('void *signal(int sig, void *handler)');
  const sigprocmask = bind('int sigprocmask(int how, void *set, void *old)');
  const raise = bind('int raise(int sig)');

  // No core of gpuwise's: the soft limit to 0 (the hard one kept), and not dumpable (a piped core_pattern ignores the limit).
  const rlim = Buffer.alloc(RLIMIT_BYTES);
  if (getrlimit(RLIMIT_CORE, rlim) === 0) {
    rlim.writeBigUInt64LE(0n, 0);
    setrlimit(RLIMIT_CORE, rlim);
  }
  prctl(PR_SET_DUMPABLE, 'unsigned long', 0);
  signal(signo, null); // SIG_DFL
  const set = Buffer.alloc(SIGSET_BYTES);
  set[(signo - 1) >> 3] = 1 << ((signo - 1) & 7);
  sigprocmask(SIG_UNBLOCK, set, null);
  raise(signo);
}
