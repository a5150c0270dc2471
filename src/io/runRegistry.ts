/**
 * doctor's run registry (shell): `/tmp/gpuwise-UID/`, a folder only this user may write, holding one entry per running
 * doctor (`run-DOCTORPID.json`, run/attach.ts's RunEntry) and the marks probed processes leave: `torch-DOCTORPID-PID`
 * (the probe saw it import torch), `trained-DOCTORPID-PID` (it began to train; python/gpuwise/probe/config.py).
 * A Python process finds its run by walking its ancestors to doctor (python/gpuwise/boot/attach.py), so nothing of
 * doctor's needs to be in the command's environment. The path is fixed (not TMPDIR): the command may change its
 * environment, and both sides must find the same folder. Entries of doctors that are gone are swept when a new one is
 * written.
 */
import { closeSync, lstatSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, rmdirSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { type RunEntry, parentAndStart } from '../run/attach.js';
import { listOrEmpty } from './readLimited.js';

export const REGISTRY_ROOT = '/tmp';

/** The registry folder of user `uid`. */
export function registryDir(uid = process.getuid?.() ?? 0): string {
  return join(REGISTRY_ROOT, `gpuwise-${uid}`);
}

/** A process's start time in clock ticks, null when it is gone. */
export function startTicksOf(pid: number): number | null {
  try {
    return parentAndStart(readFileSync(`/proc/${pid}/stat`, 'latin1'))?.startTicks ?? null;
  } catch {
    return null;
  }
}

export interface RunRegistry {
  dir: string;
  /** Writes (or replaces) this doctor's entry; the command must be started after it. */
  register(entry: Omit<RunEntry, 'doctorPid' | 'doctorStartTicks' | 'schemaVersion'>): RunEntry;
  /** The pids whose probe saw them import torch in this doctor's run. */
  probedPids(): Set<number>;
  /** Removes this doctor's entry and marks (the folder too when nothing else is in it). */
  close(): void;
}

/** The registry, or why it cannot be used (then doctor falls back to the probe's environment variables). */
export function openRunRegistry(dir = registryDir()): RunRegistry | { problem: string } {
  const uid = process.getuid?.();
  if (process.platform !== 'linux' || uid === undefined) return { problem: 'not Linux' };
  const problem = ensurePrivateDir(dir, uid);
  if (problem !== null) return { problem };
  const me = process.pid;
  const myTicks = startTicksOf(me);
  if (myTicks === null) return { problem: '/proc/self/stat is unreadable' };
  const entryPath = join(dir, `run-${me}.json`);
  const markPrefix = `torch-${me}-`;
  return {
    dir,
    register(fields) {
      sweepStale(dir);
      const entry: RunEntry = { schemaVersion: 1, doctorPid: me, doctorStartTicks: myTicks, ...fields };
      try {
        writeEntry(dir, entryPath, entry);
      } catch (e) {
        // Another doctor removed the folder as it finished (it was empty then): make it again, once.
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT' || ensurePrivateDir(dir, uid) !== null) throw e;
        writeEntry(dir, entryPath, entry);
      }
      return entry;
    },
    probedPids() {
      const pids = new Set<number>();
      for (const name of listOrEmpty(dir)) if (name.startsWith(markPrefix)) pids.add(Number(name.slice(markPrefix.length)));
      return pids;
    },
    close() {
      removeRun(dir, me);
      try {
        rmdirSync(dir);
      } catch {
        // another doctor's entries are there, or it is gone already
      }
    },
  };
}

/** Written whole, then renamed: a process never reads half an entry (the temporary name matches no entry). */
function writeEntry(dir: string, entryPath: string, entry: RunEntry): void {
  const tmp = join(dir, `.run-${entry.doctorPid}.tmp`);
  const fd = openSync(tmp, 'w', 0o600);
  try {
    writeSync(fd, JSON.stringify(entry));
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, entryPath);
}

function ensurePrivateDir(dir: string, uid: number): string | null {
  try {
    mkdirSync(dir, { mode: 0o700 });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') return `${dir} cannot be created (${(e as NodeJS.ErrnoException).code})`;
  }
  try {
    const st = lstatSync(dir);
    if (!st.isDirectory()) return `${dir} is not a folder`;
    if (st.uid !== uid) return `${dir} belongs to another user`;
    if ((st.mode & 0o022) !== 0) return `${dir} is writable by others`;
  } catch (e) {
    return `${dir} cannot be read (${(e as NodeJS.ErrnoException).code})`;
  }
  return null;
}

function removeRun(dir: string, doctorPid: number): void {
  for (const name of listOrEmpty(dir))
    if (
      name === `run-${doctorPid}.json` ||
      name.startsWith(`torch-${doctorPid}-`) ||
      name.startsWith(`trained-${doctorPid}-`) ||
      name === `.run-${doctorPid}.tmp`
    )
      rmSync(join(dir, name), { force: true });
}

/** Entries of doctors that are gone (killed before they could clean up): their pid is free or taken by another process. */
function sweepStale(dir: string): void {
  for (const name of listOrEmpty(dir)) {
    const m = /^run-(\d+)\.json$/.exec(name);
    if (!m) continue;
    const pid = Number(m[1]);
    if (pid === process.pid) continue;
    let ticks: number | null = null;
    try {
      ticks = (JSON.parse(readFileSync(join(dir, name), 'utf8')) as RunEntry).doctorStartTicks;
    } catch {
      // unreadable: judged by its pid alone
    }
    const now = startTicksOf(pid);
    if (now === null || (ticks !== null && now !== ticks)) removeRun(dir, pid);
  }
}
