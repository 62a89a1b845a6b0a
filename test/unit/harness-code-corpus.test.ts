// Harness check, not a product test: the hand-written code corpus (test/fixtures/code-corpus.ts) is big and varied
// enough for mail-codes.test.ts to measure the extractor on. It tests the fixture, not src/.
import { describe, expect, it } from 'vitest';
import { corpus } from '../fixtures/code-corpus.js';

describe('harness: the verification-code corpus', () => {
  it('harness: has at least 40 messages, at least 12 without a code, and unique names', () => {
    expect(corpus.length).toBeGreaterThanOrEqual(40);
    expect(corpus.filter((m) => m.expected === null).length).toBeGreaterThanOrEqual(12);
    expect(new Set(corpus.map((m) => m.name)).size).toBe(corpus.length);
  });
});
