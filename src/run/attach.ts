/**
 * How doctor's probe reaches the command's Python processes, and why one was not reached (pure).
 *
 * doctor writes the run's entry into its registry (`/tmp/gpuwise-UID/run-DOCTORPID.json`, io/runRegistry.ts) before it
 * starts the command; a Python process belongs to the run when doctor is one of its ancestors (python/gpuwise/boot/
 * attach.py). Two routes load the code that looks: the site hook (`gpuwise-probe.pth`, installed with the wheel),
 * which needs nothing in the environment, and, for a Python without it, the boot folder on PYTHONPATH, written as one
 * of three texts that come off again exactly (`withBootEntry`; the probe's `without_boot_entry` is its inverse).
 */

export const REGISTRY_SCHEMA = 1;

/** `site`: the command's Python has gpuwise's site hook, the environment is left alone; `path`: the boot folder goes on PYTHONPATH. */
export type AttachRoute = 'site' | 'path';

/** The three texts the boot folder is written as: before the user's PYTHONPATH, in place of none, in place of an empty one. */
export interface PythonpathTokens {
  set: string;
  unset: string;
  empty: string;
}

/** The registry entry of a run (python/gpuwise/boot/attach.py reads it; its schema is that file's REGISTRY_SCHEMA). */
export interface RunEntry {
  schemaVersion: typeof REGISTRY_SCHEMA;
  doctorPid: number;
  /** doctor's start time in clock ticks since boot (/proc/PID/stat field 22): a stale entry never matches a reused pid. */
  doctorStartTicks: number;
  /** The folder holding the probe package `gpuwise/` that the process loads. */
  probeRoot: string;
  /** The probe's settings, under the names of its direct interface (GPUWISE_SOCKET, GPUWISE_RUN_DIR, GPUWISE_MAX_STEPS, ...). */
  settings: Record<string, string>;
  /** The boot folder's texts when doctor put it on PYTHONPATH (route `path`); null when it did not. */
  pythonpathTokens: PythonpathTokens | null;
}

/** The boot folder's three texts: each normalises to the folder (Python's site makes sys.path entries absolute). */
export function bootTokens(bootDir: string): PythonpathTokens {
  return { set: bootDir, unset: `${bootDir}/.`, empty: `${bootDir}/./` };
}

/** PYTHONPATH with the boot folder in front of the user's (`user` undefined: unset). */
export function withBootEntry(user: string | undefined, tokens: PythonpathTokens, delimiter = ':'): string {
  if (user === undefined) return tokens.unset;
  if (user === '') return tokens.empty;
  return `${tokens.set}${delimiter}${user}`;
}

/** Whether a PYTHONPATH value still holds the boot folder doctor wrote. */
export function hasBootEntry(value: string, tokens: PythonpathTokens, delimiter = ':'): boolean {
  return value.split(delimiter).some((part) => part === tokens.set || part === tokens.unset || part === tokens.empty);
}

/** Parent pid and start time (clock ticks) from /proc/PID/stat; the command name may hold spaces and parentheses. */
export function parentAndStart(statText: string): { ppid: number; startTicks: number } | null {
  const close = statText.lastIndexOf(')');
  if (close < 0) return null;
  const fields = statText.slice(close + 2).trim().split(/\s+/);
  const ppid = Number(fields[1]);
  const startTicks = Number(fields[19]);
  return Number.isInteger(ppid) && Number.isInteger(startTicks) ? { ppid, startTicks } : null;
}

/** A process of the command as /proc showed it while the command ran (live/commandTree.ts). */
export interface CommandProcess {
  pid: number;
  ppid: number;
  /** Its command line (arguments as given). */
  argv: string[];
  /** The program it runs (/proc/PID/exe); null when unreadable. */
  exe: string | null;
  /** PyTorch's library was mapped into it (it imported torch). */
  torch: boolean;
  /** It ran the probe, which saw it import torch (its mark in the registry). */
  probed: boolean;
  /** Its PYTHONPATH when it started; undefined: unset; null: its environment could not be read. */
  pythonpath: string | undefined | null;
  /** Whether its Python has gpuwise's site hook; null when unknown (not a Python, or its prefix unreadable). */
  siteHook: boolean | null;
}

/** A process of the command that used PyTorch without the probe, and why, in words for the report. */
export interface UnprobedProcess {
  pid: number;
  command: string;
  reason: string;
}

/** A Python interpreter's file name (`python`, `python3`, `python3.12`): the one test, for doctor's command and the process tree. */
export const PYTHON_NAME = /^python[0-9.]*$/;
const baseName = (p: string) => p.slice(p.lastIndexOf('/') + 1);

/** The interpreter's own options before the script or `-m`/`-c` (`-I`, `-E`, `-S`, also combined as `-IS`). */
export function interpreterFlags(argv: readonly string[]): Set<string> {
  const flags = new Set<string>();
  for (let i = 1; i < argv.length; i++) {
    const a = argv[i] as string;
    if (!a.startsWith('-') || a === '-' || a.startsWith('--') || a.startsWith('-m') || a.startsWith('-c')) break;
    if (a.startsWith('-X') || a.startsWith('-W')) {
      if (a.length === 2) i++; // its value follows
      continue;
    }
    for (const c of a.slice(1)) flags.add(c);
  }
  return flags;
}

/**
 * The processes that imported torch but ran no probe, each with the reason: a process whose ancestor ran the probe is
 * left out (a DataLoader worker, a compile worker: the probe covers its parent's training), and so is a launcher.
 */
export function unprobedProcesses(processes: readonly CommandProcess[], route: AttachRoute, tokens: PythonpathTokens | null): UnprobedProcess[] {
  const byPid = new Map(processes.map((p) => [p.pid, p]));
  const probedAbove = (p: CommandProcess) => {
    for (let q = byPid.get(p.ppid), n = 0; q !== undefined && n < 64; q = byPid.get(q.ppid), n++) if (q.probed) return true;
    return false;
  };
  return processes
    .filter((p) => p.torch && !p.probed && !probedAbove(p) && !isLauncher(p.argv))
    .map((p) => ({ pid: p.pid, command: p.argv.join(' '), reason: unprobedReason(p, route, tokens) }));
}

const LAUNCHER_MODULES = new Set(['torch.distributed.run', 'torch.distributed.launch', 'accelerate.commands.launch', 'deepspeed.launcher.runner']);

function isLauncher(argv: readonly string[]): boolean {
  const m = argv.indexOf('-m');
  if (m >= 0 && LAUNCHER_MODULES.has(argv[m + 1] ?? '')) return true;
  return argv.slice(0, 2).some((a) => ['torchrun', 'deepspeed', 'accelerate'].includes(baseName(a)));
}

const INSTALL_HOOK =
  "install gpuwise's wheel into that Python (pip install gpuwise-*.whl): its site hook attaches the probe whatever the command does to the environment";

/** Why `p` ran no probe, from its command line, its environment and the route doctor took. */
export function unprobedReason(p: CommandProcess, route: AttachRoute, tokens: PythonpathTokens | null): string {
  const flags = PYTHON_NAME.test(baseName(p.argv[0] ?? '')) || (p.exe !== null && PYTHON_NAME.test(baseName(p.exe))) ? interpreterFlags(p.argv) : new Set<string>();
  if (flags.has('S')) return 'python -S skips the site module, where every way to attach the probe starts';
  if (route === 'path' || p.siteHook === false) {
    if (flags.has('I') || flags.has('E'))
      return `python -${flags.has('I') ? 'I' : 'E'} ignores PYTHONPATH, where doctor put the probe's boot (this Python has no gpuwise site hook); ${INSTALL_HOOK}`;
    if (p.pythonpath === null) return `its environment could not be read (another user?); ${INSTALL_HOOK}`;
    if (tokens !== null && (p.pythonpath === undefined || !hasBootEntry(p.pythonpath, tokens)))
      return `${p.pythonpath === undefined ? 'its PYTHONPATH was removed' : `its PYTHONPATH was replaced (PYTHONPATH=${p.pythonpath})`} by the command, and it held the probe's boot (this Python has no gpuwise site hook); ${INSTALL_HOOK}, or extend PYTHONPATH rather than replace it`;
    if (p.siteHook === false && p.exe !== null) return `its Python (${p.exe}) has no gpuwise site hook; ${INSTALL_HOOK}`;
  }
  return 'it did not find doctor among its ancestors (started outside the command, or detached from it)';
}
