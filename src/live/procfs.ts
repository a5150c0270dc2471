/**
 * Host-side process details from /proc (shell): user, command line, CPU percent, RSS and the
 * torchrun/Slurm environment. Static details (user, command, environment, and the page size from
 * comparing VmRSS with stat's rss) are read once per pid; afterwards one read of /proc/PID/stat per
 * sample gives CPU and RSS: a positioned read on a descriptor kept open, into a reused buffer, which
 * costs one system call where readFileSync costs four (open, fstat, read, close) and a new buffer. A pid found missing is remembered while NVML keeps listing it, so hidden
 * processes cost nothing per sample. A GPU process with no /proc entry lives in another pid namespace
 * (gpuwise runs in a container without --pid=host): it keeps its GPU figures and a note says why
 * host details are missing.
 */
import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import { cpuPercent, type ProcStat, parseCmdline, parseJobEnv, parsePasswd, parseProcStat, parseProcStatus } from '../telemetry/procParse.js';
import type { Snapshot } from '../telemetry/sample.js';

interface PidCache {
  user: string | null;
  command: string | null;
  comm: string | null;
  env: ReturnType<typeof parseJobEnv> | null;
  lastTicks: number | null;
  lastMs: number;
  /** CPU percent read at lastMs: a second row of the pid in the same sample (another GPU) shows it too. */
  percent: number | null;
  hidden: boolean;
  /** /proc/PID/stat kept open (null once the process is gone). */
  statFd: number | null;
  /** The last enrich pass that saw this pid. */
  pass: number;
}

/** UTF-8, as the process wrote its arguments and environment (latin1 turned `café` into `cafÃ©`). */
function readOrNull(path: string): string | null {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return null;
  }
}

function openOrNull(path: string): number | null {
  try {
    return openSync(path, 'r');
  } catch {
    return null;
  }
}

export class ProcReader {
  private readonly cache = new Map<number, PidCache>();
  // /proc/PID/stat is one line of at most a few hundred bytes (comm is capped at 16 characters).
  private readonly statBuf = Buffer.alloc(4096);
  private users: Map<number, string> | null = null;
  private pageBytes = 4096;
  private pass = 0;

  constructor(private readonly procRoot = '/proc') {}

  private userName(uid: number | null): string | null {
    if (uid === null) return null;
    if (this.users === null) this.users = parsePasswd(readOrNull('/etc/passwd') ?? '');
    return this.users.get(uid) ?? String(uid);
  }

  /** The stat line through an open descriptor (read from offset 0: the kernel regenerates it); null when the process is gone. */
  private readStat(fd: number | null): string | null {
    if (fd === null) return null;
    try {
      const n = readSync(fd, this.statBuf, 0, this.statBuf.length, 0);
      return this.statBuf.toString('latin1', 0, n);
    } catch {
      return null;
    }
  }

  /** What does not change for a pid: user, command line, comm, job environment (and the page size, once). */
  private firstLook(pid: number, stat: ProcStat | null, statFd: number | null, nowMs: number): PidCache {
    const dir = `${this.procRoot}/${pid}`;
    const status = parseProcStatus(readOrNull(`${dir}/status`) ?? '');
    if (status.rssBytes !== null && stat !== null && stat.rssPages > 0)
      this.pageBytes = Math.round(status.rssBytes / stat.rssPages / 1024) * 1024 || 4096;
    const environ = readOrNull(`${dir}/environ`); // only the owner (or root) may read it
    const c: PidCache = {
      user: this.userName(status.uid),
      command: parseCmdline(readOrNull(`${dir}/cmdline`) ?? ''),
      comm: stat?.comm ?? null,
      env: environ === null ? null : parseJobEnv(environ),
      lastTicks: null,
      lastMs: nowMs,
      percent: null,
      hidden: false,
      statFd,
      pass: 0,
    };
    this.cache.set(pid, c);
    return c;
  }

  /** Closes the descriptors kept open. */
  close(): void {
    for (const c of this.cache.values()) if (c.statFd !== null) closeSync(c.statFd);
    this.cache.clear();
  }

  /** Fills the host-side fields of every process in the snapshot (in place) and adds a note for hidden ones. */
  enrich(snapshot: Snapshot): Snapshot {
    const nowMs = Date.now();
    // Entries not stamped with this pass's number are dropped at the end (their processes left the GPUs).
    const pass = ++this.pass;
    let hidden = 0;
    for (const g of snapshot.gpus)
      for (const p of g.processes) {
        let c = this.cache.get(p.pid);
        if (c?.hidden) {
          c.pass = pass;
          hidden++;
          continue;
        }
        let statFd = c === undefined ? openOrNull(`${this.procRoot}/${p.pid}/stat`) : c.statFd;
        let statText = this.readStat(statFd);
        if (statText === null && c !== undefined) {
          // The process we knew ended; NVML lists the pid again: a new process may have taken it.
          if (statFd !== null) closeSync(statFd);
          this.cache.delete(p.pid);
          c = undefined;
          statFd = openOrNull(`${this.procRoot}/${p.pid}/stat`);
          statText = this.readStat(statFd);
        }
        if (statText === null) {
          // Not in our pid namespace, or gone while NVML still lists it.
          hidden++;
          if (statFd !== null) closeSync(statFd);
          this.cache.set(p.pid, {
            user: null,
            command: null,
            comm: null,
            env: null,
            lastTicks: null,
            lastMs: nowMs,
            percent: null,
            hidden: true,
            statFd: null,
            pass,
          });
          continue;
        }
        const stat = parseProcStat(statText);
        if (c === undefined) c = this.firstLook(p.pid, stat, statFd, nowMs);
        c.pass = pass;
        p.user = c.user;
        p.command = c.command;
        p.name = p.name ?? c.comm;
        p.rssBytes = stat === null ? null : stat.rssPages * this.pageBytes;
        if (stat !== null) {
          if (c.lastMs < nowMs || c.lastTicks === null) {
            c.percent = c.lastTicks !== null && c.lastMs < nowMs ? cpuPercent(c.lastTicks, c.lastMs, stat.cpuTicks, nowMs) : null;
            c.lastTicks = stat.cpuTicks;
            c.lastMs = nowMs;
          }
          // Two rows of the same pid (two GPUs) in one sample share the reading.
          p.cpuPercent = c.percent;
        }
        if (c.env) {
          p.rank = c.env.rank;
          p.localRank = c.env.localRank;
          p.worldSize = c.env.worldSize;
          p.slurmJobId = c.env.slurmJobId;
        }
      }
    for (const [pid, c] of this.cache)
      if (c.pass !== pass) {
        if (c.statFd !== null) closeSync(c.statFd);
        this.cache.delete(pid);
      }
    if (hidden > 0)
      snapshot.notes.push(
        `${hidden} GPU process${hidden === 1 ? ' is' : 'es are'} not visible in /proc: gpuwise runs in another pid namespace (a container without --pid=host?); GPU memory is shown, user/command/CPU are not`,
      );
    return snapshot;
  }
}
