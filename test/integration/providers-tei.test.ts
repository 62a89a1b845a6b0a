// Hugging Face TEI's native API as a channel type. TEI has no official Node s.client, so the fake is checked against the
// shapes of TEI's own OpenAPI document (EmbedRequest, EmbedResponse, ErrorResponse); then the gateway through the
// official `openai` client: vectors (float and base64), dimensions, the request TEI gets (no model, the settings, a key
// only when given), a refused key disabling the channel, Overloaded cooling it down and failing over, Backend (424),
// Unhealthy and a batch-size refusal failing over, a request TEI refuses ending the call, token ids sent as ids.
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { tei } from '../../src/channels/providers/tei.js';
import { FakeTei, TEI_ERROR_STATUS, teiVector } from '../helpers/fake-tei.js';
import { asFloat32, received } from '../helpers/provider-gateway.js';
import { expectKeyRefused, partSizes, selfHostedSuite } from '../helpers/self-hosted-suite.js';

// TEI's documented shapes (its docs/openapi.json): what a request may hold, and what every answer must be.
const InputType = z.union([z.string(), z.array(z.number().int().min(0))]);
const EmbedRequest = z
  .object({
    inputs: z.union([InputType, z.array(InputType)]),
    normalize: z.boolean().optional(),
    prompt_name: z.string().nullable().optional(),
    truncate: z.boolean().nullable().optional(),
    truncation_direction: z.enum(['Left', 'Right', 'left', 'right']).optional(),
    dimensions: z.number().int().min(1).optional(),
  })
  .strict();
const EmbedResponse = z.array(z.array(z.number()));
// ErrorType as documented, and Empty (400) that later versions added.
const ErrorResponse = z.object({ error: z.string(), error_type: z.enum(['Unhealthy', 'Backend', 'Overloaded', 'Validation', 'Tokenizer', 'Empty']) }).strict();

/** The key of a server started with --api-key (the suite's `keyed` fake); `up` and `backup` were started without one. */
const API_KEY = 'tei-api-key-0123456789abcdef';
const s = selfHostedSuite(
  'tei',
  API_KEY,
  () => new FakeTei(),
  (f) => {
    f.maxClientBatchSize = 32;
  },
);

const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${url}/embed`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

describe('the fake, checked against TEI’s documented OpenAPI shapes (there is no official TEI s.client for Node)', () => {
  it('takes the documented request forms (a text, texts, token ids, a mix) and answers an EmbedResponse, one vector per input', async () => {
    const bodies = [
      { inputs: 'What is Deep Learning?' },
      { inputs: ['a', 'b'], normalize: true, truncate: false, truncation_direction: 'Right', prompt_name: null },
      { inputs: [101, 2054, 2003] },
      { inputs: [[101, 2054], 'text'], dimensions: 2 },
    ];
    for (const body of bodies) {
      EmbedRequest.parse(body);
      const res = await post(s.up.url, body);
      expect(res.status, JSON.stringify(body)).toBe(200);
      const vectors = EmbedResponse.parse(await res.json());
      const n = typeof body.inputs === 'string' || typeof body.inputs[0] === 'number' ? 1 : body.inputs.length;
      expect(vectors).toHaveLength(n);
    }
  });

  it('answers each error as an ErrorResponse with the status TEI sends for its error_type; 401 without a body where --api-key is set', async () => {
    for (const [type, status] of Object.entries(TEI_ERROR_STATUS)) {
      s.up.behaviour = { kind: 'status', status };
      const res = await post(s.up.url, { inputs: 'x' });
      expect(res.status).toBe(status);
      const body = ErrorResponse.parse(await res.json());
      // 422 is both Validation and Tokenizer: the fake says Validation.
      if (status !== 422) expect(body.error_type).toBe(type);
    }
    s.up.behaviour = { kind: 'ok' };
    const refusals: [unknown, number, string][] = [
      [{ inputs: [] }, 400, 'Empty'],
      [{ inputs: Array(33).fill('x') }, 422, 'Validation'],
      [{ inputs: 'x', model: 'm' }, 422, 'Validation'],
      [{ inputs: 'x', prompt_name: 'no-such-prompt' }, 422, 'Validation'],
      [{ input: 'x' }, 422, 'Validation'],
    ];
    for (const [body, status, type] of refusals) {
      const res = await post(s.up.url, body);
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(ErrorResponse.parse(await res.json()).error_type).toBe(type);
    }
    const noKey = await post(s.keyed.url, { inputs: 'x' });
    expect([noKey.status, await noKey.text()]).toEqual([401, '']);
    const withKey = await post(s.keyed.url, { inputs: 'x' }, { authorization: `Bearer ${API_KEY}` });
    expect(EmbedResponse.parse(await withKey.json())).toEqual([teiVector('x')]);
  });

  it('is asked by the adapter in the documented shape; token ids go as ids only when the channel says its model reads them', async () => {
    const call = { model: 'bge', inputs: ['decoded text'], tokenIds: [[9906, 1917]], encoding: 'float' as const, dimensions: 3 };
    const access = { baseUrl: s.up.url, key: 'none', config: { truncate: true, normalize: false, prompt_name: 'query' } };
    const asText = await tei.request(access, call);
    expect(asText.url).toBe(`${s.up.url}/embed`);
    expect(asText.headers.authorization).toBeUndefined();
    expect(EmbedRequest.parse(JSON.parse(asText.body))).toEqual({
      inputs: ['decoded text'],
      truncate: true,
      normalize: false,
      prompt_name: 'query',
      dimensions: 3,
    });
    const asIds = await tei.request({ ...access, config: { token_ids: true } }, call);
    expect(EmbedRequest.parse(JSON.parse(asIds.body))).toEqual({ inputs: [[9906, 1917]], dimensions: 3 });
    const res = await post(s.up.url, JSON.parse(asIds.body));
    expect(tei.read(EmbedResponse.parse(await res.json()), call).data).toEqual([{ embedding: teiVector([9906, 1917], { dims: 3 }) }]);
    expect((await tei.request({ ...access, key: API_KEY }, call)).headers.authorization).toBe(`Bearer ${API_KEY}`);
  });
});

describe('a tei channel', () => {
  it('needs a base_url (TEI has no public one) and has no one-api number; its settings are checked', async () => {
    expect(tei.oneApiType).toBeNull();
    const none = await s.t.root.post('/api/channel/', { type: 'tei', name: 'x', key: 'none', models: 'x' });
    expect(none.status).toBe(400);
    expect(none.body.message).toMatch(/^base_url: a Hugging Face TEI channel needs its base_url/);
    for (const config of [{ normalize: 'no' }, { prompt_name: 'a b' }, { token_ids: 1 }, { max_batch: 8 }, { model: 'm' }]) {
      const res = await s.t.root.post('/api/channel/', { type: 'tei', name: 'bad', key: 'none', base_url: s.up.url, models: 'bad', config });
      expect(res.status, JSON.stringify(config)).toBe(400);
      expect(res.body.message, JSON.stringify(config)).toMatch(/^config/);
    }
  });

  it('answers floats and base64 equal to TEI’s vectors; asks /embed with no model, no key for key "none", and the channel’s settings', async () => {
    await s.channel({ name: 'local', models: 'bge-local', config: { truncate: true, normalize: false, prompt_name: 'document' } });
    const from = s.up.calls.length;
    const opts = { normalize: false, promptName: 'document' };
    const floats = await s.client.embeddings.create({ model: 'bge-local', input: ['alpha text', 'beta'], encoding_format: 'float' });
    expect(received(floats)).toEqual([asFloat32(teiVector('alpha text', opts)), asFloat32(teiVector('beta', opts))]);
    // The openai client's default: base64 (the gateway encodes TEI's floats). Other texts: answered vectors are cached.
    const b64 = await s.client.embeddings.create({ model: 'bge-local', input: ['gamma text', 'delta'] });
    expect(b64.data.map((d) => d.embedding)).toEqual([asFloat32(teiVector('gamma text', opts)), asFloat32(teiVector('delta', opts))]);
    const calls = s.up.since(from);
    expect(calls.map((c) => c.body.inputs)).toEqual([
      ['alpha text', 'beta'],
      ['gamma text', 'delta'],
    ]);
    for (const call of calls) {
      expect(call.path).toBe('/embed');
      expect(call.authorization).toBeUndefined();
      expect(call.body).toEqual({ inputs: call.body.inputs, truncate: true, normalize: false, prompt_name: 'document' });
    }
  });

  it('sends the key as a Bearer token to a server started with --api-key, and TEI’s defaults when nothing is set (normalized vectors)', async () => {
    await s.channel({ name: 'keyed', base_url: s.keyed.url, key: API_KEY, models: 'bge-keyed' });
    const res = await s.client.embeddings.create({ model: 'bge-keyed', input: 'keyed text' });
    expect(received(res)).toEqual([asFloat32(teiVector('keyed text'))]);
    const call = s.keyed.calls.at(-1)!;
    expect(call.authorization).toBe(`Bearer ${API_KEY}`);
    expect(call.body).toEqual({ inputs: ['keyed text'] });
  });

  it('sends dimensions as TEI’s `dimensions` and answers vectors of that length', async () => {
    await s.channel({ name: 'dims', models: 'bge-dims' });
    const res = await s.client.embeddings.create({ model: 'bge-dims', input: ['short'], dimensions: 3 });
    expect(received(res)).toEqual([asFloat32(teiVector('short', { dims: 3 }))]);
    expect(s.up.calls.at(-1)!.body.dimensions).toBe(3);
  });

  it('splits a call of more than 32 inputs (TEI’s default --max-client-batch-size) into calls of at most 32, answered in order', async () => {
    await s.channel({ name: 'split', models: 'bge-split' });
    const inputs = Array.from({ length: 40 }, (_, i) => `split text ${i}`);
    const from = s.up.calls.length;
    const res = await s.client.embeddings.create({ model: 'bge-split', input: inputs, encoding_format: 'float' });
    expect(received(res)).toEqual(inputs.map((text) => asFloat32(teiVector(text))));
    expect(partSizes(s.up, from, (b) => [b.inputs].flat())).toEqual([8, 32]);
  });

  it('takes token-id inputs (as LangChain sends them): sends their decoded text, or the ids themselves where the channel says its model reads cl100k_base', async () => {
    await s.channel({ name: 'as-text', models: 'bge-text' });
    await s.channel({ name: 'as-ids', models: 'bge-ids', config: { token_ids: true } });
    const ids = [[9906, 1917], [15339]];
    const from = s.up.calls.length;
    const asText = await s.client.embeddings.create({ model: 'bge-text', input: ids });
    const texts = s.up.calls.at(-1)!.body.inputs as string[];
    expect(texts).toEqual(['Hello world', 'hello']);
    expect(received(asText)).toEqual(texts.map((text) => asFloat32(teiVector(text))));
    const asIds = await s.client.embeddings.create({ model: 'bge-ids', input: ids });
    expect(s.up.calls.at(-1)!.body.inputs).toEqual(ids);
    expect(received(asIds)).toEqual(ids.map((one) => asFloat32(teiVector(one))));
    expect(s.up.calls.length - from).toBe(2);
  });

  it('disables a channel whose key the server refuses (status 3, the reason without the key), the call answered by the next channel', async () => {
    // TEI's 401 has no body: the reason says so.
    await expectKeyRefused(s, 'bge-auth', teiVector('refused key text'), 'upstream answered 401: an empty answer');
  });

  it('cools down an Overloaded channel (429, no hint from TEI: 1 s) and fails over; the next call skips it, the one after the second uses it again', async () => {
    const limited = await s.channel({ name: 'overloaded', models: 'bge-429', priority: 10 });
    await s.channel({ name: 'spare', base_url: s.backup.url, models: 'bge-429', priority: 1 });
    s.up.behaviour = { kind: 'status', status: 429, message: 'Model is overloaded', times: 1 };
    const calls = s.counter();
    const first = await s.client.embeddings.create({ model: 'bge-429', input: 'overloaded text' });
    expect(received(first)).toEqual([asFloat32(teiVector('overloaded text'))]);
    expect(calls()).toEqual([1, 1]);
    const wait = (await s.cooldownUntil(limited)) - Date.now();
    expect(wait).toBeGreaterThan(500);
    expect(wait).toBeLessThanOrEqual(1_000);
    await s.client.embeddings.create({ model: 'bge-429', input: 'second' });
    expect(calls()).toEqual([1, 2]);
    await new Promise((r) => setTimeout(r, 1_300));
    await s.client.embeddings.create({ model: 'bge-429', input: 'third' });
    expect(calls()).toEqual([2, 2]);
  });

  for (const [what, behaviour] of [
    ['Backend (424: the model failed to run)', { status: 424, message: 'Inference failed' }],
    ['Unhealthy (503)', { status: 503, message: 'unhealthy' }],
    ['a path it does not serve (404: a base_url that is not a TEI server’s)', { status: 404, message: 'no route' }],
    [
      'a batch-size Validation error (a server started with a smaller --max-client-batch-size)',
      { status: 422, message: 'batch size 3 > maximum allowed batch size 2', errorType: 'Validation' },
    ],
  ] as const) {
    it(`fails over past ${what}: the server’s fault, not the request’s`, async () => {
      const model = `bge-fail-${behaviour.status}`;
      await s.channel({ name: 'failing', models: model, priority: 10 });
      await s.channel({ name: 'spare', base_url: s.backup.url, models: model, priority: 1 });
      s.up.behaviour = { kind: 'status', ...behaviour };
      const calls = s.counter();
      const inputs = ['fail over', 'please', 'now'];
      const res = await s.client.embeddings.create({ model, input: inputs });
      expect(received(res)).toEqual(inputs.map((text) => asFloat32(teiVector(text))));
      expect(calls()).toEqual([1, 1]);
    });
  }

  it('ends the call with 400 when TEI refuses the request itself (Tokenizer or Validation, 422), trying no other channel', async () => {
    await s.channel({ name: 'strict', models: 'bge-422', priority: 10 });
    await s.channel({ name: 'other', base_url: s.backup.url, models: 'bge-422', priority: 1 });
    const calls = s.counter();
    for (const [errorType, message] of [
      ['Tokenizer', 'Input validation error: `inputs` must have less than 512 tokens'],
      ['Validation', '`inputs` cannot be tokenized'],
    ]) {
      s.up.behaviour = { kind: 'status', status: 422, message, errorType };
      const err = await s.client.embeddings.create({ model: 'bge-422', input: `refused ${errorType}` }).catch((e) => e);
      expect(err).toBeInstanceOf(OpenAI.BadRequestError);
      expect(err.message).toContain(`Upstream rejected the request: ${message}`);
    }
    expect(calls()).toEqual([2, 0]);
  });
});
