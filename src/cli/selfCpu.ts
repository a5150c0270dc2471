/**
 * `GPUWISE_SELF_CPU=1`: a command measures its own CPU time (all threads, microsecond resolution)
 * from a start mark (after start-up and the first sample) to its end, and prints it as one JSON line
 * on stderr. Benchmarks read it instead of differencing child-process CPU at the 10 ms tick resolution,
 * which is coarser than what a 10 Hz monitor spends in a few seconds.
 */
export interface SelfCpu {
  mark(): void;
  sample(): void;
  report(what: string): void;
}

export function selfCpu(): SelfCpu | null {
  if (process.env.GPUWISE_SELF_CPU !== '1') return null;
  let start: { cpu: NodeJS.CpuUsage; wallMs: number } | null = null;
  let samples = 0;
  return {
    mark() {
      start = { cpu: process.cpuUsage(), wallMs: performance.now() };
      samples = 0;
    },
    sample() {
      samples++;
    },
    report(what: string) {
      if (start === null) return;
      const cpu = process.cpuUsage(start.cpu);
      const wallMs = performance.now() - start.wallMs;
      const cpuUs = cpu.user + cpu.system;
      process.stderr.write(
        `${JSON.stringify({ selfCpu: what, samples, wallMs, cpuUs, userUs: cpu.user, systemUs: cpu.system, percentOfOneCore: (cpuUs / 1000 / wallMs) * 100 })}\n`,
      );
    },
  };
}
