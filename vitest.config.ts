import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // CI machines have 2 cores; fixture tests parse real multi-MB traces.
    testTimeout: 60_000,
    // Two test files at a time even on 2 cores (vitest's default is cores - 1 = 1 there): most of the suite waits on
    // the processes it starts (Python with torch, the CLI, chromium), so the files overlap well.
    maxWorkers: 2,
    minWorkers: 1,
  },
});
