// Preloaded (node --import) into a process under test: writes its peak resident set size, in bytes, and the CPU
// time it used (all its threads, ms) to $GPUWISE_TEST_RSS_FILE when it exits, so tests can bound memory and work
// without /usr/bin/time. CPU time, unlike wall time, does not grow when other processes load the machine.
// VmHWM from /proc (Linux): getrusage's maxrss carries the high-water mark of the forking parent across
// exec (a 400 MB test runner made every child look 400 MB).
import { readFileSync, writeFileSync } from 'node:fs';

const file = process.env.GPUWISE_TEST_RSS_FILE;
function peakBytes() {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
    if (m) return Number(m[1]) * 1024;
  } catch {
    // not Linux
  }
  return process.resourceUsage().maxRSS * 1024;
}
function cpuMs() {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}
if (file) process.on('exit', () => writeFileSync(file, `${peakBytes()} ${cpuMs()}`));
