// Refusals cost less than the work they refuse: an embeddings request is checked by its lengths before any token is
// counted, counting stops where the limits do, and a long count lets the event loop turn.
import { describe, expect, it } from 'vitest';
import { countInputs, MAX_INPUT_CHARS, MAX_REQUEST_CHARS } from '../../src/embeddings/input-limits.js';
import { MAX_INPUTS } from '../../src/embeddings/schema.js';
import { counted } from '../../src/embeddings/tokenizer.js';
import { loadUseLiteTokenizer } from '../../src/embeddings/use-lite-text.js';
import { SentencePieceEncoder } from '../../src/embeddings/sentencepiece.js';
import { readUseLiteVocabulary } from '../../src/embeddings/use-lite-text.js';

const SENTENCE = 'The car would not start, so we took the early train into town. ';
const prose = (chars: number) => SENTENCE.repeat(Math.ceil(chars / SENTENCE.length)).slice(0, chars);

/** What countInputs threw (an AppError's JSON), and how many characters it handed the BPE. */
async function refusal(inputs: string[], useLite = false) {
  const before = counted.chars;
  const pieces = useLite ? { pieces: await loadUseLiteTokenizer(), allowUnsupportedText: false } : null;
  const err = await countInputs(inputs, pieces).then(
    () => undefined,
    (e) => e.toJSON(),
  );
  return { err, countedChars: counted.chars - before };
}

describe('countInputs: cheap bounds before counting', () => {
  it('refuses an input over 65,536 characters without counting any of it', async () => {
    const { err, countedChars } = await refusal(['short', prose(MAX_INPUT_CHARS + 1)]);
    expect(err).toMatchObject({ status: 400, code: 'context_length_exceeded', param: 'input[1]' });
    expect(countedChars).toBe(0);
  });

  it('refuses an 8.4 MB request (2048 inputs of 4,100 characters) by its length alone, counting nothing', async () => {
    const inputs = Array.from({ length: MAX_INPUTS }, () => prose(4_100));
    expect(inputs.reduce((n, t) => n + t.length, 0)).toBeGreaterThan(MAX_REQUEST_CHARS);
    for (const useLite of [false, true]) {
      const { err, countedChars } = await refusal(inputs, useLite);
      expect(err).toMatchObject({ status: 400, code: 'max_tokens_per_request', param: 'input' });
      expect(countedChars).toBe(0);
    }
  });

  it('stops counting where the 300,000-token limit is passed: a request of ~520,000 tokens is counted no further than ~300,000', async () => {
    const inputs = Array.from({ length: MAX_INPUTS }, () => prose(1_100)); // 2.25 M characters, under the length bound
    const total = inputs.reduce((n, t) => n + t.length, 0);
    expect(total).toBeLessThanOrEqual(MAX_REQUEST_CHARS);
    const { err, countedChars } = await refusal(inputs);
    expect(err).toMatchObject({ status: 400, code: 'max_tokens_per_request' });
    // ~4.3 characters a token here: 300,000 tokens are ~1.3 M characters, and the input that passes the limit is counted
    // only up to what the limit left (at most one input more).
    expect(countedChars).toBeLessThan(1_400_000);
    expect(countedChars).toBeGreaterThan(1_000_000);
  });

  it('an input within its limits is counted once, in full; an input past 8192 tokens is counted no further than 8192', async () => {
    const ok = await refusal([prose(30_000)]);
    expect(ok.err).toBeUndefined();
    expect(ok.countedChars).toBe(30_000);
    const long = await refusal([prose(60_000)]); // ~14,000 tokens, under 65,536 characters
    expect(long.err).toMatchObject({ code: 'context_length_exceeded', param: 'input[0]' });
  });

  it('lets the event loop turn while it counts a big request (other callers are not held for all of it)', async () => {
    let turns = 0;
    const ticker = setInterval(() => turns++, 0);
    try {
      const tokens = await countInputs(
        Array.from({ length: 1_000 }, () => prose(1_000)),
        null,
      );
      expect(tokens).toHaveLength(1_000);
    } finally {
      clearInterval(ticker);
    }
    expect(turns).toBeGreaterThan(3);
  });
});

describe('use-lite pieces: only what the model reads is read', () => {
  it('reads a long input only up to its first 128 pieces (a prefix ending before a space), with the same pieces as reading all of it', async () => {
    const pieces = await loadUseLiteTokenizer();
    const encoder = new SentencePieceEncoder(await readUseLiteVocabulary());
    for (const text of [prose(60_000), `${'word '.repeat(2_000)}`, `${'x'.repeat(5_000)} then words follow ${'and more '.repeat(1_000)}`]) {
      const t = pieces.tokenize(text);
      expect(t.count).toBe(128);
      expect(t.truncated).toBe(true);
      expect(t.ids).toEqual(encoder.encode(text).slice(0, 128));
      expect(t.read).toBeLessThan(Math.min(text.length, 10_000));
    }
    const short = pieces.tokenize('A short sentence.');
    expect(short.read).toBe('A short sentence.'.length);
    expect(short.truncated).toBe(false);
  });
});
