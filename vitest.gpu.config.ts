// Real-GPU suite (`npm run test:gpu`): not part of `npm test`, which runs in CI without a GPU.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/gpu/**/*.gpucheck.ts'],
    testTimeout: 300_000,
  },
});
