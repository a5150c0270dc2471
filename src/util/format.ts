/** Number formatting shared by every report (pure). Binary units, as PyTorch and nvidia-smi print them. */

/** The eight block heights of a sparkline, lowest first (doctor's Markdown, the terminal's GPU history). */
export const SPARK_BARS = '▁▂▃▄▅▆▇█';

export function fmtMs(ns: number): string {
  const ms = ns / 1e6;
  if (ms >= 100) return `${ms.toFixed(0)} ms`;
  if (ms >= 10) return `${ms.toFixed(1)} ms`;
  if (ms >= 1) return `${ms.toFixed(2)} ms`;
  const us = ns / 1e3;
  if (us >= 1) return `${us.toFixed(us >= 100 ? 0 : 1)} us`;
  return `${ns.toFixed(0)} ns`;
}

export function fmtPct(x: number): string {
  const p = x * 100;
  return `${p >= 10 || p === 0 ? p.toFixed(0) : p.toFixed(1)}%`;
}

/** Bytes in GiB with a fixed number of decimals ("71.0 GiB"): the unit plans and what-ifs compare budgets in. */
export function fmtGiB(bytes: number, digits = 1): string {
  return `${(bytes / 1024 ** 3).toFixed(digits)} GiB`;
}

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

/**
 * A GPU's memory, one figure for one GPU in every report: GiB with one decimal, of the memory CUDA can use (what
 * torch's `total_memory` and a trace's `totalGlobalMem` say, and NVML's total less what the driver reserves):
 * "139.8 GiB" for an H200, whatever its name says it was sold as ("141GB").
 */
export function fmtGpuMemory(bytes: number): string {
  return fmtGiB(bytes, 1);
}

/** Where a total over the analysed steps stands beside per-step figures: "over the 3-step window". */
export function fmtWindow(steps: number): string {
  return `over the ${steps}-step window`;
}

export function fmtSignedBytes(b: number): string {
  return b > 0 ? `+${fmtBytes(b)}` : b < 0 ? `-${fmtBytes(-b)}` : '0 B';
}

/** Seconds (or ms) from microseconds. */
export function fmtUs(us: number): string {
  if (us >= 1e6) return `${(us / 1e6).toFixed(2)} s`;
  if (us >= 1e3) return `${(us / 1e3).toFixed(1)} ms`;
  return `${us.toFixed(0)} us`;
}

/** A rate per second (samples/s, tokens/s): whole and grouped from 100 ("15,221"), one decimal below ("87.1"). */
/**
 * An integer with thousands separators, "1,234,567" (rounded), as toLocaleString('en-US') writes it without loading
 * ICU's locale data: that first call cost 12-90 ms of a `gpuwise runs` (bench/history/bench.mjs).
 */
export function fmtInt(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  const r = Math.round(n);
  const digits = BigInt(Math.abs(r)).toString().replace(/\B(?=(\d{3})+$)/g, ',');
  return r < 0 ? `-${digits}` : digits;
}

export function fmtRate(perS: number | null | undefined): string {
  if (typeof perS !== 'number' || !Number.isFinite(perS)) return 'n/a';
  return perS >= 100 ? fmtInt(perS) : perS.toFixed(1);
}

/** A count of floating-point operations in the unit that reads: "812 MFLOP", "3.4 GFLOP", "1.21 TFLOP". */
export function fmtFlops(flops: number): string {
  const [v, u] = flops >= 1e12 ? [flops / 1e12, 'TFLOP'] : flops >= 1e9 ? [flops / 1e9, 'GFLOP'] : [flops / 1e6, 'MFLOP'];
  return `${v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)} ${u}`;
}

/** TFLOP/s with the digits a small model needs too (0.012, 3.4, 228). */
export function fmtTflops(t: number): string {
  return t >= 10 ? t.toFixed(0) : t >= 1 ? t.toFixed(1) : t.toPrecision(2);
}
