import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // CI machines have 2 cores; fixture tests parse real multi-MB traces.
    testTimeout: 60_000,
  },
});
