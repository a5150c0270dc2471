/**
 * Parsing of Linux /proc texts for the process table (pure: the shell procfs.ts reads the files).
 * CPU percent needs two readings: (delta utime+stime ticks / ticks per second) / delta wall seconds.
 */

export interface ProcStat {
  comm: string;
  /** utime + stime, in clock ticks. */
  cpuTicks: number;
  /** Resident set size in pages (field 24). */
  rssPages: number;
}

/** The characters String.prototype.trim and /\s/ treat as white space. */
function isSpace(c: number): boolean {
  if (c <= 0xa0) return c === 32 || (c >= 9 && c <= 13) || c === 0xa0;
  return (
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x202f ||
    c === 0x205f ||
    c === 0x3000 ||
    c === 0xfeff
  );
}

/**
 * /proc/PID/stat. The command name may contain spaces and parentheses, so fields are counted after the last ')'.
 * It runs for every GPU process in every sample, so it walks the text to the three fields it needs instead
 * of splitting all fifty-odd (same result: fields are runs of non-space after ') ').
 */
export function parseProcStat(text: string): ProcStat | null {
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 0 || close < open) return null;
  // Field 3 (state) is number 0 here; utime is field 14 (11), stime field 15 (12), rss field 24 (21).
  let utime = Number.NaN;
  let stime = Number.NaN;
  let rssPages = Number.NaN;
  let field = 0;
  let i = close + 2;
  const end = text.length;
  while (i < end && field <= 21) {
    while (i < end && isSpace(text.charCodeAt(i))) i++;
    if (i >= end) break;
    const start = i;
    while (i < end && !isSpace(text.charCodeAt(i))) i++;
    if (field === 11) utime = Number(text.slice(start, i));
    else if (field === 12) stime = Number(text.slice(start, i));
    else if (field === 21) rssPages = Number(text.slice(start, i));
    field++;
  }
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) return null;
  return { comm: text.slice(open + 1, close), cpuTicks: utime + stime, rssPages: Number.isFinite(rssPages) ? rssPages : 0 };
}

export interface ProcStatus {
  uid: number | null;
  rssBytes: number | null;
  /** Innermost pid namespace PID, when the process lives in a child pid namespace (NSpid has more than one entry). */
  nsPid: number | null;
}

/** /proc/PID/status: real uid, VmRSS, NSpid. */
export function parseProcStatus(text: string): ProcStatus {
  const out: ProcStatus = { uid: null, rssBytes: null, nsPid: null };
  for (const line of text.split('\n')) {
    if (line.startsWith('Uid:')) out.uid = Number(line.slice(4).trim().split(/\s+/)[0]);
    else if (line.startsWith('VmRSS:')) {
      const m = /(\d+)\s*kB/.exec(line);
      if (m) out.rssBytes = Number(m[1]) * 1024;
    } else if (line.startsWith('NSpid:')) {
      const ids = line.slice(6).trim().split(/\s+/).map(Number);
      if (ids.length > 1) out.nsPid = ids[ids.length - 1] ?? null;
    }
  }
  return out;
}

/** /proc/PID/cmdline: NUL-separated arguments, joined with spaces. */
export function parseCmdline(text: string): string | null {
  const args = text.split('\0').filter((a) => a !== '');
  return args.length === 0 ? null : args.join(' ');
}

export interface JobEnv {
  rank: number | null;
  localRank: number | null;
  worldSize: number | null;
  slurmJobId: string | null;
}

/** The distributed-training variables of a NUL-separated /proc/PID/environ. torchrun sets RANK etc.; Slurm sets SLURM_*. */
export function parseJobEnv(environ: string): JobEnv {
  const env = new Map<string, string>();
  for (const kv of environ.split('\0')) {
    const eq = kv.indexOf('=');
    if (eq > 0) env.set(kv.slice(0, eq), kv.slice(eq + 1));
  }
  const int = (...names: string[]): number | null => {
    for (const n of names) {
      const v = env.get(n);
      if (v !== undefined && /^\d+$/.test(v)) return Number(v);
    }
    return null;
  };
  return {
    rank: int('RANK', 'SLURM_PROCID', 'OMPI_COMM_WORLD_RANK'),
    localRank: int('LOCAL_RANK', 'SLURM_LOCALID', 'OMPI_COMM_WORLD_LOCAL_RANK'),
    worldSize: int('WORLD_SIZE', 'SLURM_NTASKS', 'OMPI_COMM_WORLD_SIZE'),
    slurmJobId: env.get('SLURM_JOB_ID') ?? env.get('SLURM_JOBID') ?? null,
  };
}

/** /etc/passwd: uid -> login name. */
export function parsePasswd(text: string): Map<number, string> {
  const out = new Map<number, string>();
  for (const line of text.split('\n')) {
    const f = line.split(':');
    if (f.length >= 3 && /^\d+$/.test(f[2]!)) out.set(Number(f[2]), f[0]!);
  }
  return out;
}

/** CPU percent of one core between two readings. */
export function cpuPercent(prevTicks: number, prevMs: number, ticks: number, nowMs: number, ticksPerSecond = 100): number | null {
  const dt = (nowMs - prevMs) / 1000;
  if (dt <= 0 || ticks < prevTicks) return null;
  return ((ticks - prevTicks) / ticksPerSecond / dt) * 100;
}
