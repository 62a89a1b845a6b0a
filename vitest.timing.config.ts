// The latency checks (test/timing/): one file at a time, after the rest of the suite.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/timing/**/*.test.ts'],
    pool: 'forks',
    fileParallelism: false,
    testTimeout: 60_000,
    hookTimeout: 90_000,
    teardownTimeout: 30_000,
    reporters: ['default'],
  },
});
