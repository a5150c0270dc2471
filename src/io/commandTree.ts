/**
 * The command's processes as /proc shows them while it runs (shell): every descendant of the process doctor started,
 * with its command line, program, PYTHONPATH at start, whether it mapped PyTorch's library (it imported torch) and
 * whether it marked itself probed (io/runRegistry.ts). doctor names a process that used torch without the probe, and
 * why (run/attach.ts), instead of reporting that nothing trained. Sampled every few seconds: a short-lived process
 * may be missed, a training process is not.
 */
import { readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { lookUp } from './siteHook.js';
import { type CommandProcess, PYTHON_NAME, parentAndStart } from '../run/attach.js';
import { listOrEmpty } from './readLimited.js';

/** PyTorch's shared libraries: libtorch_cpu.so, libtorch_python.so, libtorch_cuda.so ... */
const TORCH_LIBRARY = /\/libtorch[_a-z]*\.so/;

interface Seen extends CommandProcess {
  startTicks: number;
  python: boolean;
}

export class CommandTree {
  private readonly seen = new Map<number, Seen>();

  constructor(
    private readonly rootPid: number,
    private readonly siteHookOf: (python: string) => boolean,
    private readonly procRoot = '/proc',
  ) {}

  /** One look at /proc: new descendants recorded, and the Python ones not yet known to use torch looked at again. */
  scan(): void {
    const parents = new Map<number, number>();
    const starts = new Map<number, number>();
    for (const name of listOrEmpty(this.procRoot)) {
      const pid = Number(name);
      if (!Number.isInteger(pid)) continue;
      const ps = parentAndStart(readOrNull(`${this.procRoot}/${pid}/stat`, 'latin1') ?? '');
      if (ps === null) continue;
      parents.set(pid, ps.ppid);
      starts.set(pid, ps.startTicks);
    }
    for (const pid of descendants(this.rootPid, parents)) {
      let p = this.seen.get(pid);
      if (p === undefined || p.startTicks !== starts.get(pid)) {
        p = this.firstLook(pid, parents.get(pid) as number, starts.get(pid) as number);
        this.seen.set(pid, p);
      }
      if (p.python && !p.torch) p.torch = TORCH_LIBRARY.test(readOrNull(`${this.procRoot}/${pid}/maps`, 'latin1') ?? '');
    }
  }

  /** Every process seen, with `probed` from the pids that marked themselves. */
  processes(probed: ReadonlySet<number>): CommandProcess[] {
    return [...this.seen.values()].map(({ startTicks: _s, python: _p, ...rest }) => ({ ...rest, probed: probed.has(rest.pid) }));
  }

  private firstLook(pid: number, ppid: number, startTicks: number): Seen {
    const dir = `${this.procRoot}/${pid}`;
    const argv = (readOrNull(`${dir}/cmdline`, 'utf8') ?? '').split('\0').filter((a, i, all) => a !== '' || i < all.length - 1);
    let exe: string | null = null;
    try {
      exe = readlinkSync(`${dir}/exe`);
    } catch {
      // another user's, or gone
    }
    const python = [exe, argv[0]].some((p) => p && PYTHON_NAME.test(p.slice(p.lastIndexOf('/') + 1)));
    const environ = readOrNull(`${dir}/environ`, 'utf8');
    const variable = (name: string) => (environ === null ? null : environ.split('\0').find((kv) => kv.startsWith(`${name}=`))?.slice(name.length + 1));
    const pythonpath = variable('PYTHONPATH');
    return {
      pid,
      ppid,
      argv,
      exe,
      torch: false,
      probed: false,
      pythonpath,
      siteHook: python ? this.siteHookOf(interpreterPath(dir, argv[0], variable('PATH') ?? undefined, exe)) : null,
      startTicks,
      python,
    };
  }
}

/**
 * The interpreter as the process named it: a venv's bin/python is a link to the base Python, and the venv (its
 * site-packages) is found from the name, not from /proc/PID/exe.
 */
function interpreterPath(dir: string, argv0: string | undefined, path: string | undefined, exe: string | null): string {
  if (argv0 === undefined || argv0 === '') return exe ?? '';
  if (argv0.startsWith('/')) return argv0;
  if (argv0.includes('/')) {
    try {
      return join(readlinkSync(`${dir}/cwd`), argv0);
    } catch {
      return exe ?? argv0;
    }
  }
  return lookUp(argv0, path) ?? exe ?? argv0;
}

/** `root` and the pids below it in the parent map ( a cycle cannot happen in /proc but is bounded anyway). */
function descendants(root: number, parents: ReadonlyMap<number, number>): number[] {
  const children = new Map<number, number[]>();
  for (const [pid, ppid] of parents) {
    const list = children.get(ppid);
    if (list) list.push(pid);
    else children.set(ppid, [pid]);
  }
  const out: number[] = parents.has(root) ? [root] : [];
  const queue = [root];
  while (queue.length > 0 && out.length < 100_000) {
    for (const c of children.get(queue.shift() as number) ?? []) {
      out.push(c);
      queue.push(c);
    }
  }
  return out;
}

function readOrNull(path: string, encoding: 'latin1' | 'utf8'): string | null {
  try {
    return readFileSync(path, encoding);
  } catch {
    return null;
  }
}
