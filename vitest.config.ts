import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Latency checks run on their own afterwards (vitest.timing.config.ts): other files running in
    // parallel on two cores would measure the machine, not the code.
    exclude: [...configDefaults.exclude, 'test/timing/**'],
    pool: 'forks',
    maxWorkers: 3,
    testTimeout: 30_000,
    hookTimeout: 90_000,
    teardownTimeout: 30_000,
    reporters: ['default'],
  },
});
