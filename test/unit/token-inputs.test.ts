// `input` as token ids (one array, or an array of arrays), as OpenAI takes it and LangChain's OpenAIEmbeddings sends it:
// parsed, bounded as text is, decoded with cl100k_base as tiktoken decodes; and cached apart from text.
import bpe from 'gpt-tokenizer/bpeRanks/cl100k_base';
import { encode } from 'gpt-tokenizer/encoding/cl100k_base';
import { describe, expect, it } from 'vitest';
import { MAX_INPUT_TOKENS, MAX_INPUTS, MAX_REQUEST_TOKENS, parseEmbeddingsRequest } from '../../src/embeddings/schema.js';
import { CL100K_IDS, decodeTokens, isToken } from '../../src/embeddings/tokenizer.js';
import { inputHashes } from '../../src/embeddings/upstream.js';
import { sha256Hex } from '../../src/secrets.js';

const AS_TEXT = { disallowedSpecial: new Set<string>() };
const ids = (text: string) => encode(text, AS_TEXT);

/** What parseEmbeddingsRequest threw (an AppError's JSON), or undefined. */
function refusal(input: unknown) {
  try {
    parseEmbeddingsRequest({ model: 'm', input });
  } catch (e) {
    return (e as { toJSON(): Record<string, unknown> }).toJSON();
  }
  return undefined;
}

/** The bytes tokens stand for, joined as tiktoken joins them (from gpt-tokenizer's own table), read as UTF-8. */
const bytesOf = (tokens: number[]) =>
  Buffer.concat(tokens.map((id) => (typeof bpe[id] === 'string' ? Buffer.from(bpe[id] as string) : Buffer.from(bpe[id] as number[])))).toString('utf8');

describe('decodeTokens', () => {
  it('gives back the text cl100k_base encoded (prose, accents, CJK, emoji, special-token text)', () => {
    for (const text of [
      'Hello world',
      'naïve café, déjà vu',
      '中文字符和日本語のテキスト',
      'emoji 😀🎉 and 👩‍👩‍👧',
      '<|endoftext|> as text',
      ' '.repeat(300),
    ]) {
      expect(decodeTokens(ids(text))).toBe(text);
    }
    expect(decodeTokens([9906, 1917])).toBe('Hello world');
    expect(decodeTokens([100257])).toBe('<|endoftext|>');
    expect(decodeTokens([100276])).toBe('<|endofprompt|>');
  });

  it('joins bytes across tokens before reading UTF-8, and reads what is not UTF-8 as U+FFFD', () => {
    // A character split across byte tokens (as a tokenizer may split a rare one) reads whole.
    const split = [...Buffer.from('😀')].map((byte) => bpe.findIndex((r) => Array.isArray(r) && r.length === 1 && r[0] === byte));
    expect(split.every((id) => id >= 0)).toBe(true);
    expect(decodeTokens(split)).toBe('😀');
    // Its first two bytes alone are one U+FFFD, and nothing carries over to the next call.
    expect(decodeTokens(split.slice(0, 2))).toBe('\uFFFD');
    expect(decodeTokens([9906])).toBe('Hello');
    const random = Array.from({ length: 5_000 }, (_, i) => (i * 7919) % 100_256);
    expect(decodeTokens(random)).toBe(bytesOf(random));
  });

  it('is linear: one decode of 300,000 tokens takes about what ten of 30,000 take (a quadratic decode, ten times more)', () => {
    const loneByte = bpe.findIndex((r) => Array.isArray(r) && r.length === 1 && r[0]! >= 0x80);
    const small = new Array(MAX_REQUEST_TOKENS / 10).fill(loneByte);
    const big = new Array(MAX_REQUEST_TOKENS).fill(loneByte);
    const time = (run: () => void) => {
      const started = performance.now();
      run();
      return performance.now() - started;
    };
    const tenSmall = () => {
      for (let k = 0; k < 10; k++) expect(decodeTokens(small)).toHaveLength(small.length);
    };
    const oneBig = () => expect(decodeTokens(big)).toHaveLength(big.length);
    tenSmall(); // warm-up
    oneBig();
    // The same tokens in all either way; best of five each, taken in turns, so a stretch of load falls on both.
    const a: number[] = [];
    const b: number[] = [];
    for (let i = 0; i < 5; i++) {
      a.push(time(tenSmall));
      b.push(time(oneBig));
    }
    expect(Math.min(...b) / Math.min(...a)).toBeLessThan(4);
  });

  it('knows which ids are tokens: 0 to 100276, without 100256 and 100261-100275', () => {
    expect(CL100K_IDS).toBe(100_277);
    for (const id of [0, 100_255, 100_257, 100_260, 100_276]) expect(isToken(id), String(id)).toBe(true);
    for (const id of [-1, 1.5, 100_256, 100_261, 100_275, 100_277, Number.NaN]) expect(isToken(id), String(id)).toBe(false);
  });
});

describe('parseEmbeddingsRequest: token ids', () => {
  it('takes an array of arrays (LangChain’s shape): the ids as sent, the inputs their text', () => {
    const body = { input: [ids('Hello world'), ids('Goodbye, moon')], model: 'text-embedding-ada-002', encoding_format: 'base64' };
    const req = parseEmbeddingsRequest(body);
    expect(req).toMatchObject({ model: 'text-embedding-ada-002', encodingFormat: 'base64', inputs: ['Hello world', 'Goodbye, moon'] });
    expect(req.tokenIds).toEqual(body.input);
  });

  it('takes one array of ids as one input', () => {
    const req = parseEmbeddingsRequest({ input: [9906, 1917], model: 'm' });
    expect(req.inputs).toEqual(['Hello world']);
    expect(req.tokenIds).toEqual([[9906, 1917]]);
  });

  it('text stays text, without token ids', () => {
    expect(parseEmbeddingsRequest({ input: ['Hello world'], model: 'm' }).tokenIds).toBeUndefined();
    expect(parseEmbeddingsRequest({ input: 'Hello world', model: 'm' }).tokenIds).toBeUndefined();
  });

  it('takes the most there may be: 2048 inputs, 8192 tokens in one, 300,000 in all', () => {
    expect(parseEmbeddingsRequest({ model: 'm', input: Array.from({ length: MAX_INPUTS }, () => [9906]) }).inputs).toHaveLength(MAX_INPUTS);
    expect(parseEmbeddingsRequest({ model: 'm', input: new Array(MAX_INPUT_TOKENS).fill(9906) }).tokenIds![0]).toHaveLength(MAX_INPUT_TOKENS);
    const all = Array.from({ length: MAX_REQUEST_TOKENS / 1_000 }, () => new Array(1_000).fill(9906));
    expect(parseEmbeddingsRequest({ model: 'm', input: all }).inputs).toHaveLength(300);
  });

  const cases: [string, unknown, Record<string, unknown>][] = [
    ['an empty array in the list', [[9906], []], { param: 'input[1]', message: "'input[1]' must not be an empty array." }],
    ['a negative id', [[9906, -1]], { param: 'input[0][1]', message: expect.stringMatching(/-1 is not a cl100k_base token id/) }],
    ['a fractional id', [9906, 1.5], { param: 'input[1]', message: expect.stringMatching(/1\.5 is not a cl100k_base token id/) }],
    ['an id past the vocabulary', [[100_277]], { param: 'input[0][0]', message: expect.stringMatching(/100277 is not/) }],
    ['an unused id', [[100_256]], { param: 'input[0][0]' }],
    ['a string among ids', [[9906, '1917']], { param: 'input[0][1]', message: expect.stringMatching(/expected a token id \(an integer\), but got a string/) }],
    ['a number among arrays', [[9906], 1917], { param: 'input[1]', message: expect.stringMatching(/expected an array of token ids, but got a number/) }],
    ['an array among ids', [9906, [1917]], { param: 'input[1]', message: expect.stringMatching(/but got an array/) }],
    ['2049 arrays', Array.from({ length: MAX_INPUTS + 1 }, () => [9906]), { param: 'input', message: expect.stringMatching(/2049 items; at most 2048/) }],
    [
      'an input of 8193 tokens',
      [[9906], new Array(MAX_INPUT_TOKENS + 1).fill(9906)],
      { param: 'input[1]', code: 'context_length_exceeded', message: expect.stringMatching(/maximum context length is 8192 tokens, but input\[1\] has 8193/) },
    ],
    ['one array of 8193 tokens', new Array(MAX_INPUT_TOKENS + 1).fill(9906), { param: 'input', code: 'context_length_exceeded' }],
    [
      '300,001 tokens in all',
      [...Array.from({ length: MAX_REQUEST_TOKENS / 1_000 }, () => new Array(1_000).fill(9906)), [9906]],
      { param: 'input', code: 'max_tokens_per_request', message: expect.stringMatching(/more than 300000 tokens/) },
    ],
    // Token 58040 stands for 128 bytes: 8192 of them would be 1 MB of text for one input.
    ['tokens standing for more than 8 bytes each', [[9906], new Array(1_000).fill(58040)], { param: 'input[1]', code: 'context_length_exceeded' }],
  ];
  for (const [label, input, expected] of cases) {
    it(`refuses ${label}: 400 naming input`, () => {
      expect(refusal(input)).toMatchObject({ status: 400, type: 'invalid_request_error', ...expected });
    });
  }

  it('refuses what text would be refused: an empty array, a mixed list led by text', () => {
    expect(refusal([])).toMatchObject({ status: 400, param: 'input', message: "'input' must not be an empty array." });
    expect(refusal(['a', [9906]])).toMatchObject({ status: 400, param: 'input[1]' });
  });

  it('tokens standing for more than 2,400,000 bytes in all are refused naming input', () => {
    // 300 inputs of 63 × 128-byte tokens: each within 65,536 bytes, 2,419,200 in all.
    const input = Array.from({ length: 300 }, () => new Array(63).fill(58040));
    expect(refusal(input)).toMatchObject({ status: 400, param: 'input', code: 'max_tokens_per_request' });
  });
});

describe('cache keys of token ids', () => {
  it('differ from the key of the text they decode to, and are the same for the same ids', () => {
    const text = inputHashes({ inputs: ['Hello world'] });
    expect(text).toEqual([sha256Hex('Hello world')]);
    const tokens = inputHashes({
      inputs: ['Hello world', 'Hello world'],
      tokenIds: [
        [9906, 1917],
        [9906, 1917],
      ],
    });
    expect(tokens[0]).toBe(tokens[1]);
    expect(tokens[0]).not.toBe(text[0]);
    // Other ids with the same text ("Hel" + "lo world") are another input.
    const other = inputHashes({ inputs: ['Hello world'], tokenIds: [[...ids('Hel'), ...ids('lo world')]] });
    expect(decodeTokens([...ids('Hel'), ...ids('lo world')])).toBe('Hello world');
    expect(other[0]).not.toBe(tokens[0]);
  });
});
