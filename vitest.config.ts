import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Latency checks run on their own afterwards (vitest.timing.config.ts): other files running in
    // parallel on two cores would measure the machine, not the code.
    // So do the scale-out tests (test/scale/, vitest.scale.config.ts), which start a Redis Cluster and PgBouncer.
    // The browser tests (test/e2e/) build the console and drive Chromium: `npm run test:e2e` (vitest.e2e.config.ts).
    exclude: [...configDefaults.exclude, 'test/timing/**', 'test/e2e/**', 'test/scale/**'],
    pool: 'forks',
    maxWorkers: 3,
    // Hang catchers, not speed claims (speed is bench's; bounds inside tests come from same-run baselines,
    // test/helpers/pace.ts): generous, so a machine busy with other work slows the suite without failing it.
    testTimeout: 120_000,
    hookTimeout: 180_000,
    teardownTimeout: 30_000,
    reporters: ['default'],
  },
});
