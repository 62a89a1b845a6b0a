// The core modules that npm run test:mutation mutates (scripts/mutation.mjs, stryker.config.mjs): what is mutated, and
// the test files that must kill its mutants (vitest.mutation.config.ts runs only those).

/** @type {Record<string, { mutate: string[]; testFiles: string[] }>} */
export const modules = {
  ledger: {
    mutate: ['src/accounts/ledger.ts', 'src/accounts/usage.ts'],
    testFiles: [
      'test/unit/ledger-ops.test.ts',
      'test/unit/usage-recorder.test.ts',
      'test/integration/ledger-edges.test.ts',
      'test/integration/usage-recorder-rows.test.ts',
      'test/integration/ledger.test.ts',
      'test/integration/logs-events.test.ts',
    ],
  },
  auth: {
    mutate: ['src/accounts/auth.ts', 'src/accounts/tokens.ts'],
    testFiles: [
      'test/unit/api-key-rules.test.ts',
      'test/integration/attempt-limiter.test.ts',
      'test/integration/security-auth.test.ts',
      'test/integration/route-auth.test.ts',
      'test/integration/accounts.test.ts',
    ],
  },
  outbound: {
    mutate: ['src/outbound.ts'],
    // The policy's own tests, without services (test/integration/security-outbound.test.ts, which starts two test apps
    // for each mutant, tests the product's use of it).
    testFiles: [
      'test/unit/outbound.test.ts',
      'test/unit/outbound-embedded-ipv4.test.ts',
      'test/unit/outbound-policy-edges.test.ts',
      'test/unit/outbound-dns.test.ts',
    ],
  },
  wire: {
    mutate: ['src/jobs/wire.ts'],
    testFiles: [
      'test/unit/job-wire.test.ts',
      'test/unit/job-signature.test.ts',
      'test/unit/sealed-payload.test.ts',
      'test/integration/job-wire-storage.test.ts',
      'test/integration/security-job-trust.test.ts',
      'test/integration/job-storage-sweep.test.ts',
      'test/integration/jobs.test.ts',
    ],
  },
  relay: {
    // Failover (channel order, Retry-After and cool-downs, slow channels, the loop over channels) and settlement (the
    // tokens a call is charged for); not the parsing of answers and error messages between them.
    mutate: ['src/embeddings/relay.ts:24-135', 'src/embeddings/relay.ts:249-262', 'src/embeddings/relay.ts:380-583'],
    testFiles: [
      'test/integration/relay-answers.test.ts',
      'test/integration/embeddings.test.ts',
      'test/integration/claims-embeddings.test.ts',
      'test/integration/security-channel-routing.test.ts',
      'test/unit/embeddings-model.test.ts',
    ],
  },
  mail: {
    // The mailbox lock, and the send record (onAccount and sendOp).
    mutate: ['src/mail/lock.ts', 'src/mail/operations.ts:44-65', 'src/mail/operations.ts:136-163'],
    testFiles: ['test/integration/claims-mail.test.ts', 'test/integration/mail.test.ts', 'test/integration/idempotency.test.ts'],
  },
  redemption: {
    mutate: ['src/accounts/redemptions-service.ts'],
    testFiles: [
      'test/integration/redemption-admin.test.ts',
      'test/integration/accounts.test.ts',
      'test/integration/security-auth.test.ts',
      'test/integration/logs-events.test.ts',
    ],
  },
};
