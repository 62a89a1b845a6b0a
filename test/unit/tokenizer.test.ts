// Counting tokens (usage, and the input limits) with cl100k_base: exact for prose, and in linear time for any input.
import { countTokens } from 'gpt-tokenizer/encoding/cl100k_base';
import { describe, expect, it } from 'vitest';
import { count, countWithin, LONG_RUN } from '../../src/embeddings/tokenizer.js';

const letters = (n: number) => Array.from({ length: n }, (_, i) => String.fromCharCode(97 + ((i * 7919) % 26))).join('');

describe('countWithin', () => {
  it('counts prose exactly as cl100k_base does, and says false past the limit', () => {
    const prose = 'The car would not start, so we took the 7:15 train — twice as slow, but it ran. '.repeat(40);
    expect(countWithin(prose, 100_000)).toBe(countTokens(prose));
    expect(count(prose)).toBe(countTokens(prose));
    expect(countWithin(prose, 10)).toBe(false);
  });

  it('a run of more than LONG_RUN letters, punctuation or spaces is counted in pieces of LONG_RUN, not encoded whole', () => {
    // Each run between texts of another kind (spaces around a word, words around spaces).
    for (const [before, run, after] of [
      ['start ', letters(1_000), ' end'],
      ['start ', '!?'.repeat(500), ' end'],
      ['start', ' '.repeat(1_000), 'end'],
    ]) {
      let pieces = 0;
      for (let i = 0; i < run.length; i += LONG_RUN) pieces += countTokens(run.slice(i, i + LONG_RUN));
      expect(countWithin(`${before}${run}${after}`, 100_000)).toBe(countTokens(before) + pieces + countTokens(after));
    }
  });

  // Encoded whole, one such word is a single pre-token whose BPE merges take time growing with the
  // square of its length: 200,000 letters took 18 s, 1,000,000 took 9 minutes. In pieces, milliseconds.
  for (const [what, text] of [
    ['a 1,000,000-letter word', letters(1_000_000)],
    ['1,000,000 exclamation marks', '!'.repeat(1_000_000)],
    ['1,000,000 spaces between two words', `a${' '.repeat(1_000_000)}b`],
  ] as const) {
    it(`${what} is refused past the 8192-token limit, and counted in full, without encoding it whole`, () => {
      expect(countWithin(text, 8192)).toBe(false);
      const n = countWithin(text, 10_000_000);
      expect(n).toBeGreaterThanOrEqual(Math.ceil((text.length - 2) / LONG_RUN));
    });
  }

  it('a long run costs at most one token more per piece than encoding it whole', () => {
    const word = letters(1_000);
    const pieces = Math.ceil(word.length / LONG_RUN);
    expect(countWithin(word, 100_000)).toBeLessThanOrEqual(countTokens(word) + pieces);
  });
});
