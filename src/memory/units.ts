/**
 * Number formatting for memory reports (pure). Binary units, as PyTorch and nvidia-smi print them.
 * main's src/advice/format.ts has the same fmtBytes; fold the two into one when the branches meet.
 */
export function fmtBytes(b: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = b;
  let u = 0;
  while (Math.abs(v) >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${v.toFixed(v >= 100 || u === 0 ? 0 : Math.abs(v) >= 10 ? 1 : 2)} ${units[u]}`;
}

export function fmtSignedBytes(b: number): string {
  return b > 0 ? `+${fmtBytes(b)}` : b < 0 ? `-${fmtBytes(-b)}` : '0 B';
}

export function fmtPct(x: number): string {
  const p = x * 100;
  return `${p >= 10 || p === 0 ? p.toFixed(0) : p.toFixed(1)}%`;
}

/** Seconds (or ms) from microseconds. */
export function fmtUs(us: number): string {
  if (us >= 1e6) return `${(us / 1e6).toFixed(2)} s`;
  if (us >= 1e3) return `${(us / 1e3).toFixed(1)} ms`;
  return `${us.toFixed(0)} us`;
}
