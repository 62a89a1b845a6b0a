// The scale-out tests (test/scale/): a Redis Cluster of six servers with masters killed, and PgBouncer.
// One file at a time, after the main suite: they load the machine, and the main suite's timing-sensitive
// crash tests should not share two cores with them.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/scale/**/*.test.ts'],
    pool: 'forks',
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 120_000,
    teardownTimeout: 30_000,
    reporters: ['default'],
  },
});
