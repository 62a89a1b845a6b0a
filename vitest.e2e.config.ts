// The browser tests (test/e2e/): the console is built once first, then each file drives Chromium against a real server, one file at a time.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/e2e/**/*.test.ts'],
    globalSetup: ['test/e2e/build-console.ts'],
    pool: 'forks',
    // Chromium, the API, its workers, Postgres and Redis share two cores: one file at a time.
    fileParallelism: false,
    testTimeout: 120_000,
    hookTimeout: 120_000,
    teardownTimeout: 30_000,
    // A page settles in its own time: what a test waits for with expect.poll gets as long as a Playwright locator.
    expect: { poll: { timeout: 15_000, interval: 100 } },
    reporters: ['default'],
  },
});
