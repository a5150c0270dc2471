// Preloaded (node --import) into a process under test: writes its peak resident set size, in bytes,
// to $GPUWISE_TEST_RSS_FILE when it exits, so tests can bound memory without /usr/bin/time.
import { writeFileSync } from 'node:fs';

const file = process.env.GPUWISE_TEST_RSS_FILE;
if (file) process.on('exit', () => writeFileSync(file, String(process.resourceUsage().maxRSS * 1024)));
