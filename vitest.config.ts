import { defineConfig } from 'vitest/config';
import LongestFirst from './test/sequencer.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // CI machines have 2 cores; fixture tests parse real multi-MB traces.
    testTimeout: 60_000,
    // beforeAll hooks build the CLI bundle, start servers, browsers and Python: on a loaded 2-core machine far more
    // than the 10 s default.
    hookTimeout: 60_000,
    // The last task updates and the pool's shutdown, on a loaded machine (the default is 10 s). The worker's own calls
    // to vitest (onTaskUpdate) wait 60 s, which no option changes: a test must not hold its thread that long in
    // synchronous work (spawnSync, zlib's *Sync on big files), or vitest reports "Timeout calling onTaskUpdate".
    teardownTimeout: 30_000,
    // Two test files at a time even on 2 cores (vitest's default is cores - 1 = 1 there): most of the suite waits on
    // the processes it starts (Python with torch, the CLI, chromium), so the files overlap well.
    maxWorkers: 2,
    minWorkers: 1,
    // A worker imports the project's modules once for all the files it runs, not once a file: collecting took 207 s of
    // the suite's 1,123 s of CPU on 2 cores, 23 s without isolation. The tests restore what they change in process.env
    // and share no module state through the code they test (one run of the whole suite checked it).
    isolate: false,
    // CI (.ci/run sets CI=true): a dot a test, the failures in full at the end; less for the main process to write
    // while the workers report to it.
    reporters: process.env.CI ? ['dot'] : ['default'],
    // The longest files first, also on a fresh clone that has no durations of an earlier run (test/sequencer.ts).
    sequence: { sequencer: LongestFirst },
  },
});
