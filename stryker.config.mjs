// Mutation testing of the core (npm run test:mutation; scripts/mutation.mjs runs one module at a time).
// MUTATION_MODULE picks the module: what is mutated, and the test files that must kill its mutants.
// Reports, and the incremental files that let a second run re-test only what changed, go to reports/mutation/<module>/.

/** @type {Record<string, { mutate: string[]; testFiles: string[] }>} */
export const modules = {
  ledger: {
    mutate: ['src/accounts/ledger.ts', 'src/accounts/usage.ts'],
    testFiles: [
      'test/integration/ledger.test.ts',
      'test/unit/usage-recorder.test.ts',
      'test/integration/logs-events.test.ts',
      'test/integration/embeddings.test.ts',
    ],
  },
  auth: {
    mutate: ['src/accounts/auth.ts', 'src/accounts/tokens.ts'],
    testFiles: [
      'test/integration/security-auth.test.ts',
      'test/integration/accounts.test.ts',
      'test/integration/attempt-limiter.test.ts',
      'test/integration/route-auth.test.ts',
      'test/integration/jobs.test.ts',
    ],
  },
  outbound: {
    mutate: ['src/outbound.ts'],
    testFiles: ['test/unit/outbound.test.ts', 'test/unit/outbound-dns.test.ts', 'test/integration/security-outbound.test.ts'],
  },
  wire: {
    mutate: ['src/jobs/wire.ts'],
    testFiles: [
      'test/unit/job-signature.test.ts',
      'test/unit/sealed-payload.test.ts',
      'test/integration/security-job-trust.test.ts',
      'test/integration/jobs.test.ts',
    ],
  },
  relay: {
    mutate: ['src/embeddings/relay.ts'],
    testFiles: [
      'test/integration/relay-answers.test.ts',
      'test/integration/embeddings.test.ts',
      'test/integration/claims-embeddings.test.ts',
      'test/unit/embeddings-model.test.ts',
    ],
  },
  mail: {
    // The mailbox lock, and the send record (sendOp).
    mutate: ['src/mail/lock.ts', 'src/mail/operations.ts:140-170'],
    testFiles: ['test/integration/claims-mail.test.ts', 'test/integration/mail.test.ts', 'test/integration/idempotency.test.ts'],
  },
  redemption: {
    mutate: ['src/accounts/redemptions-service.ts'],
    testFiles: ['test/integration/accounts.test.ts', 'test/integration/security-auth.test.ts'],
  },
};

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
  // Two cores, shared: one test runner.
  concurrency: 1,
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
