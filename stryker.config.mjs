// Mutation testing of the core (npm run test:mutation; scripts/mutation.mjs runs one module at a time).
// MUTATION_MODULE picks the module: what is mutated, and the test files that must kill its mutants.
// Reports, and the incremental files that let a second run re-test only what changed, go to reports/mutation/<module>/.

import { modules } from './scripts/mutation-modules.mjs';

const name = process.env.MUTATION_MODULE;
const chosen = name ? modules[name] : undefined;
if (!chosen) throw new Error(`MUTATION_MODULE must be one of: ${Object.keys(modules).join(', ')} (got ${name ?? 'nothing'})`);

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  plugins: ['@stryker-mutator/vitest-runner'],
  // The module's test files are picked by vitest.mutation.config.ts, not by Stryker's testFiles: with testFiles,
  // Stryker 9.6.1 switches a static mutant (one evaluated as its module loads) on after the module has loaded, and
  // reports it survived whatever the tests do.
  vitest: { configFile: 'vitest.mutation.config.ts', related: false },
  mutate: chosen.mutate,
  coverageAnalysis: 'perTest',
  // Static mutants (in what a module computes as it loads: the outbound policy's address tables, say) each need every
  // test file run again from scratch; on two shared cores that is hours per module. They are left out (counted as
  // ignored in the report); the tests that pin those tables are named in docs/testing.md.
  ignoreStatic: true,
  // Two cores, shared: two test runners (most of a mutant's run waits on Postgres, Redis or a test app starting).
  concurrency: 2,
  incremental: true,
  incrementalFile: `reports/mutation/${name}/incremental.json`,
  reporters: ['clear-text', 'progress-append-only', 'html', 'json'],
  htmlReporter: { fileName: `reports/mutation/${name}/index.html` },
  jsonReporter: { fileName: `reports/mutation/${name}/mutation.json` },
  tempDirName: '.stryker-tmp',
  timeoutFactor: 2,
  timeoutMS: 20_000,
  dryRunTimeoutMinutes: 15,
  thresholds: { high: 90, low: 85, break: null },
};
