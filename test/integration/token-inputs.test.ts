// `input` as token ids through the gateway, shaped as LangChain Python's OpenAIEmbeddings sends it by default (texts
// split with tiktoken: {"input": [[9906, 1917], ...], "model": "text-embedding-ada-002", "encoding_format": "base64"}):
// relayed as they are to an OpenAI-compatible channel, as their text to a channel that takes only text and to the
// built-in models; usage is the count of the ids given; bounds as for text; the openai client; a Batch API line.
import { encode } from 'gpt-tokenizer/encoding/cl100k_base';
import OpenAI, { toFile } from 'openai';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { float32ToString } from '../../src/embeddings/float32.js';
import { embedLocalHash } from '../../src/embeddings/local-hash.js';
import { reportedTokens } from '../../src/embeddings/relay.js';
import { FakeOpenAI, fakeVector, type UpstreamCall } from '../helpers/fake-openai.js';
import { HttpClient } from '../helpers/http.js';
import { startTestApp, type TestApp } from '../helpers/services.js';
import { until } from '../helpers/until.js';

// A provider that takes only text (tokenArrays unset), speaking OpenAI's wire format so the same fake answers it: what
// every provider without token arrays gets is the ids' text.
vi.mock('../../src/channels/providers/registry.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/channels/providers/registry.js')>();
  const { openai } = await import('../../src/channels/providers/openai.js');
  const textOnly = { ...openai, type: 'text-only-test', oneApiType: null, label: 'Text only (test)', tokenArrays: false };
  return {
    ...real,
    PROVIDERS: [...real.PROVIDERS, textOnly],
    providerOf: (type: string | number) => (type === textOnly.type ? textOnly : real.providerOf(type)),
    providerFor: (type: string) => (type === textOnly.type ? textOnly : real.providerFor(type)),
  };
});

const AS_TEXT = { disallowedSpecial: new Set<string>() };
const ids = (text: string) => encode(text, AS_TEXT);
const count = (arrays: number[][]) => arrays.reduce((n, a) => n + a.length, 0);

/** The fake's vector for token ids (it sees them as sent): depends on the ids only. */
const idsVector = (tokens: number[]) => [tokens.length, tokens[0]!, tokens.reduce((a, b) => a + b, 0) % 9973, 0.5];
const f32 = (v: number[]) => Array.from(Float32Array.from(v));
/** A float32 vector as a float answer prints it. */
const printed = (v: ArrayLike<number>) => Array.from(Float32Array.from(v), (x) => Number(float32ToString(x)));
const fromBase64 = (s: string) => {
  const b = Buffer.from(s, 'base64');
  return Array.from(new Float32Array(b.buffer, b.byteOffset, b.length / 4));
};

/** The fake's answers: a vector per input (token ids or text), base64 when asked, and a usage that is not the ids' count. */
function answer(call: UpstreamCall): string {
  // The relay always sends a list: of texts, or of token id arrays.
  const data = (call.body.input as unknown[]).map((x, index) => {
    const v = Array.isArray(x) ? idsVector(x as number[]) : fakeVector(x as string);
    return { object: 'embedding', index, embedding: call.body.encoding_format === 'base64' ? Buffer.from(Float32Array.from(v).buffer).toString('base64') : v };
  });
  return JSON.stringify({ object: 'list', data, model: call.body.model, usage: { prompt_tokens: 777, total_tokens: 777 } });
}

let t: TestApp;
let up: FakeOpenAI;
let key: string;
const ADA = 'text-embedding-ada-002';
const TEXT_ONLY = 'text-only-model';

beforeAll(async () => {
  up = await new FakeOpenAI().start();
  up.behaviour = { kind: 'raw', status: 200, body: answer };
  t = await startTestApp({ env: { BATCH_CHUNK_LINES: '4', JOB_BACKOFF_MS: '50' } });
  for (const [type, models] of [
    ['openai', ADA],
    ['text-only-test', TEXT_ONLY],
  ]) {
    const made = await t.root.post('/api/channel/', { name: models, type, key: 'sk-token-test-0123456789', base_url: up.url, models, price: 1000 });
    expect(made.status, made.text).toBe(201);
  }
  await t.root.post('/api/user/', { username: 'tok', password: 'tok-password', quota: 1_000_000_000 });
  const session = new HttpClient(t.url);
  await session.login('tok', 'tok-password');
  key = (await session.post('/api/token/', { name: 'k', unlimited_quota: true })).body.data.key;
}, 60_000);
afterAll(async () => {
  await t?.close();
  await up?.stop();
});

const v1 = () => t.anon.withAuth(`Bearer ${key}`);
const oa = () => new OpenAI({ apiKey: key, baseURL: `${t.url}/v1`, maxRetries: 0 });
/** The body exactly as LangChain Python writes it (the openai Python client's JSON: key order, spaces). */
const langchainBody = (input: number[][], model: string) =>
  `{"input": [${input.map((a) => `[${a.join(', ')}]`).join(', ')}], "model": "${model}", "encoding_format": "base64"}`;
const callsSince = (n: number) => up.calls.slice(n);

describe('token ids as LangChain Python sends them', () => {
  it('to an OpenAI-compatible channel: the fake gets the ids as sent; the vectors are its answer; usage is the ids given', async () => {
    const input = [ids('Hello world'), ids('LangChain splits long texts with tiktoken'), ids('and sends the pieces as token ids')];
    const before = up.calls.length;
    const res = await v1().post('/v1/embeddings', langchainBody(input, ADA));
    expect(res.status, res.text).toBe(200);
    const seen = callsSince(before);
    expect(seen).toHaveLength(1);
    expect(seen[0]!.path).toBe('/v1/embeddings');
    expect(seen[0]!.body.input).toEqual(input);
    expect(seen[0]!.body.model).toBe(ADA);
    expect(res.body.model).toBe(ADA);
    expect(res.body.data.map((d: { embedding: string }) => fromBase64(d.embedding))).toEqual(input.map((a) => f32(idsVector(a))));
    // The upstream said 777: the usage of token ids is their count.
    expect(res.body.usage).toEqual({ prompt_tokens: count(input), total_tokens: count(input) });
  });

  it('to a channel that takes only text: the fake gets the ids’ text (cl100k_base); usage is the upstream’s count of that text when more (bounded as for text)', async () => {
    const texts = ['Hello world', 'naïve café — 中文 😀'];
    const input = texts.map(ids);
    const before = up.calls.length;
    const res = await v1().post('/v1/embeddings', langchainBody(input, TEXT_ONLY));
    expect(res.status, res.text).toBe(200);
    const seen = callsSince(before);
    expect(seen.map((c) => c.body.input)).toEqual([texts]);
    expect(res.body.data.map((d: { embedding: string }) => fromBase64(d.embedding))).toEqual(texts.map((x) => f32(fakeVector(x))));
    // The upstream said 777 for text it was sent: held to the relay's bound for that many tokens and inputs.
    expect(res.body.usage.prompt_tokens).toBe(reportedTokens(777, count(input), input.length));
    expect(res.body.usage.prompt_tokens).toBeGreaterThan(count(input));
  });

  it('to local-hash-v1: the vectors of the ids’ text, usage the ids given (not the text counted again)', async () => {
    // "Hello world" sent as three tokens (Hel|lo| world) where cl100k makes two: the usage is the three given.
    const input = [[...ids('Hel'), ...ids('lo'), ...ids(' world')], ids('the second input, as tokens')];
    const texts = ['Hello world', 'the second input, as tokens'];
    expect(count([ids('Hello world')])).toBe(2);
    const res = await v1().post('/v1/embeddings', langchainBody(input, 'local-hash-v1'));
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.map((d: { embedding: string }) => fromBase64(d.embedding))).toEqual(texts.map((x) => Array.from(embedLocalHash(x, 384))));
    expect(res.body.usage).toEqual({ prompt_tokens: count(input), total_tokens: count(input) });
    // The same as the text asked for directly.
    const direct = await v1().post('/v1/embeddings', { model: 'local-hash-v1', input: texts, encoding_format: 'base64' });
    expect(res.body.data).toEqual(direct.body.data);
  });

  it('on /v1/engines/{model}/embeddings too', async () => {
    const res = await v1().post('/v1/engines/local-hash-v1/embeddings', { input: [ids('engines path')] });
    expect(res.status, res.text).toBe(200);
    expect(res.body.data[0].embedding).toHaveLength(384);
    expect(res.body.usage.prompt_tokens).toBe(ids('engines path').length);
  });
});

describe('the official openai client sending token ids', () => {
  it('an array of arrays and a single array, to the OpenAI-compatible channel and to local-hash-v1 (its default base64)', async () => {
    const client = oa();
    const several = [ids('client tokens one'), ids('client tokens two')];
    const before = up.calls.length;
    const relayed = await client.embeddings.create({ model: ADA, input: several });
    expect(callsSince(before).map((c) => c.body.input)).toEqual([several]);
    expect(relayed.data.map((d) => d.embedding)).toEqual(several.map((a) => f32(idsVector(a))));
    expect(relayed.usage.prompt_tokens).toBe(count(several));

    const one = ids('a single array of ids is one input');
    const single = await client.embeddings.create({ model: ADA, input: one });
    expect(single.data).toHaveLength(1);
    expect(single.data[0]!.embedding).toEqual(f32(idsVector(one)));

    const local = await client.embeddings.create({ model: 'local-hash-v1', input: one, dimensions: 64 });
    expect(local.data[0]!.embedding).toEqual(Array.from(embedLocalHash('a single array of ids is one input', 64)));
    expect(local.usage.prompt_tokens).toBe(one.length);
  });
});

describe('bounds: 400 naming input', () => {
  const cases: [string, unknown, string, RegExp][] = [
    [
      'more than 8192 tokens in an input',
      [[9906], new Array(8193).fill(9906)],
      'input[1]',
      /maximum context length is 8192 tokens, but input\[1\] has 8193 tokens/,
    ],
    ['more than 300,000 tokens in all', Array.from({ length: 37 }, () => new Array(8192).fill(9906)), 'input', /more than 300000 tokens/],
    ['a negative id', [[9906, -5]], 'input[0][1]', /-5 is not a cl100k_base token id/],
    ['an id that is not an integer', [[9906, 2.5]], 'input[0][1]', /2\.5 is not a cl100k_base token id/],
    ['an id past cl100k_base', [100_277], 'input[0]', /100277 is not a cl100k_base token id/],
    // <|endoftext|> is one id but seven tokens of text once decoded: charged as one, it would be text for free.
    ['a special token (<|endoftext|>)', [[9906, 100_257]], 'input[0][1]', /100257 is not a cl100k_base token id.*special tokens are not taken/],
    ['an empty array', [[9906], []], 'input[1]', /'input\[1\]' must not be an empty array/],
  ];
  for (const [label, input, param, message] of cases) {
    it(label, async () => {
      const res = await v1().post('/v1/embeddings', { model: ADA, input, encoding_format: 'base64' });
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ type: 'invalid_request_error', param });
      expect(res.body.error.message).toMatch(message);
    });
  }
  it('use-lite reads the ids’ text as it reads text: text it does not know is refused', async () => {
    const res = await v1().post('/v1/embeddings', { model: 'use-lite', input: [ids('an English sentence'), ids('这是一个中文句子，模型不认识它')] });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ param: 'input[1]', code: 'unsupported_text' });
  });
  it('the openai client gets a BadRequestError', async () => {
    await expect(oa().embeddings.create({ model: 'local-hash-v1', input: [[-1]] })).rejects.toBeInstanceOf(OpenAI.BadRequestError);
  });
});

describe('the vector cache', () => {
  it('keeps token ids apart from the text they decode to, and answers the same ids again from the cache', async () => {
    const text = 'cached apart from its token ids';
    const before = up.calls.length;
    const asText = await v1().post('/v1/embeddings', { model: ADA, input: [text] });
    expect(asText.status).toBe(200);
    expect(callsSince(before)).toHaveLength(1);
    // The same text as ids is another request to the upstream: not answered with the text's vector.
    const asIds = await v1().post('/v1/embeddings', { model: ADA, input: [ids(text)] });
    expect(callsSince(before)).toHaveLength(2);
    expect(callsSince(before)[1]!.body.input).toEqual([ids(text)]);
    expect(asIds.body.data[0].embedding).toEqual(f32(idsVector(ids(text))));
    // The same ids again: from the cache, usage still their count.
    const again = await v1().post('/v1/embeddings', { model: ADA, input: [ids(text)] });
    expect(callsSince(before)).toHaveLength(2);
    expect(again.body.data).toEqual(asIds.body.data);
    expect(again.body.usage.prompt_tokens).toBe(ids(text).length);
  });
});

describe('a Batch API line with token ids', () => {
  const line = (custom_id: string, body: Record<string, unknown>) => JSON.stringify({ custom_id, method: 'POST', url: '/v1/embeddings', body });
  /** A batch of these lines run to its end: its output lines' bodies by custom_id. */
  async function runBatch(lines: string[]) {
    const client = oa();
    const file = await client.files.create({ file: await toFile(Buffer.from(`${lines.join('\n')}\n`), 'tokens.jsonl'), purpose: 'batch' });
    const b = await client.batches.create({ input_file_id: file.id, endpoint: '/v1/embeddings', completion_window: '24h' });
    const done = await until(
      'the batch to end',
      () => client.batches.retrieve(b.id),
      (x) => ['completed', 'failed', 'expired', 'cancelled'].includes(x.status),
      60_000,
    );
    expect(done.status, JSON.stringify(done.errors)).toBe('completed');
    expect(done.request_counts).toEqual({ total: lines.length, completed: lines.length, failed: 0 });
    const out = (await (await client.files.content(done.output_file_id!)).text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    return new Map(out.map((o) => [o.custom_id as string, o.response.body]));
  }

  it('to the OpenAI-compatible channel: the ids as sent, in a call apart from a text line’s; usage the ids given', async () => {
    const idsLine = [ids('batch line as token ids'), ids('and its second input')];
    const before = up.calls.length;
    const byId = await runBatch([
      line('ids', { model: ADA, input: idsLine, encoding_format: 'base64' }),
      line('text', { model: ADA, input: ['batch line as text'] }),
    ]);
    // The ids line and the text line went as two calls (a call's inputs are all ids or all text).
    const seen = callsSince(before).map((c) => c.body.input);
    expect(seen).toHaveLength(2);
    expect(seen).toContainEqual(idsLine);
    expect(seen).toContainEqual(['batch line as text']);
    expect(byId.get('ids').data.map((d: { embedding: string }) => fromBase64(d.embedding))).toEqual(idsLine.map((a) => f32(idsVector(a))));
    expect(byId.get('ids').usage.prompt_tokens).toBe(count(idsLine));
    expect(byId.get('text').data[0].embedding).toEqual(f32(fakeVector('batch line as text')).map((x) => Number(float32ToString(x))));
  });

  it('to local-hash-v1: the vectors of the ids’ text, usage the ids given', async () => {
    const localLine = [ids('a batch line for local-hash-v1')];
    const byId = await runBatch([line('local', { model: 'local-hash-v1', input: localLine, dimensions: 32 })]);
    expect(byId.get('local').data[0].embedding).toEqual(printed(embedLocalHash('a batch line for local-hash-v1', 32)));
    expect(byId.get('local').usage.prompt_tokens).toBe(count(localLine));
  });
});
