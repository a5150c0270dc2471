// Preloaded (node --import) into a process under test: writes its peak resident set size, in bytes,
// to $GPUWISE_TEST_RSS_FILE when it exits, so tests can bound memory without /usr/bin/time.
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
if (file) process.on('exit', () => writeFileSync(file, String(peakBytes())));
