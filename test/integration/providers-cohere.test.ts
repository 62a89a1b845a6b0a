// Cohere channels: the fake of Cohere's v2 embed API checked with the cohere-ai SDK, then the gateway with the openai
// client as the caller: floats and base64, the request Cohere takes (input_type, embedding_types, config, model mapping),
// output_dimension on embed-v4 only, 96 texts a call, usage from billed_units, and Cohere's errors (401/498/402 refuse the
// key, 429 with Retry-After or X-RateLimit-Reset cools the channel down, {message} passed on, nothing else read).
import { CohereClientV2 } from 'cohere-ai';
import { describe, expect, it } from 'vitest';
import { cohere, rateLimitResetMs } from '../../src/channels/providers/cohere.js';
import { cohereTokens, FakeCohere } from '../helpers/fake-cohere.js';
import { fakeVector } from '../helpers/fake-openai.js';
import { asFloat32, expectCooledFor, expectRefusedKey, providerSuite, received, refusal } from '../helpers/provider-gateway.js';

const KEY = 'co-channel-key-0123456789abcdef';
const s = providerSuite('cohere', KEY, () => new FakeCohere());

describe('the fake Cohere, checked with the cohere-ai SDK', () => {
  it('gives CohereClientV2 the vectors it makes, at the length asked of embed-v4', async () => {
    const client = new CohereClientV2({ token: KEY, environment: s.up.url });
    const res = await client.embed({ model: 'embed-v4.0', texts: ['sdk one', 'sdk text two'], inputType: 'search_document', embeddingTypes: ['float'] });
    expect(res.embeddings.float).toEqual([fakeVector('sdk one'), fakeVector('sdk text two')]);
    expect(res.meta?.billedUnits?.inputTokens).toBe(cohereTokens(['sdk one', 'sdk text two']));
    const short = await client.embed({ model: 'embed-v4.0', texts: ['sdk short'], inputType: 'search_query', embeddingTypes: ['float'], outputDimension: 256 });
    expect(short.embeddings.float?.[0]).toEqual(fakeVector('sdk short', 256));
    expect(s.up.calls.map((c) => [c.path, c.authorization])).toEqual([
      ['/v2/embed', `Bearer ${KEY}`],
      ['/v2/embed', `Bearer ${KEY}`],
    ]);
  });

  it('refuses what Cohere refuses: another key (401), no input_type, output_dimension on a v3 model (400, {message})', async () => {
    const wrongKey = new CohereClientV2({ token: 'not-the-key', environment: s.up.url });
    await expect(wrongKey.embed({ model: 'embed-v4.0', texts: ['x'], inputType: 'search_document' }, { maxRetries: 0 })).rejects.toMatchObject({
      statusCode: 401,
      body: { message: 'invalid api token' },
    });
    const noType = await s.up.post({ model: 'embed-english-v3.0', texts: ['x'] });
    expect(noType.status).toBe(400);
    expect(noType.body.message).toMatch(/input_type/);
    expect((await s.up.post({ model: 'embed-english-v3.0', texts: ['x'], input_type: 'search_document', output_dimension: 256 })).status).toBe(400);
    expect((await s.up.post({ model: 'embed-v4.0', texts: Array.from({ length: 97 }, (_, i) => `t${i}`), input_type: 'search_document' })).status).toBe(400);
    expect((await s.up.post({ model: 'embed-v4.0', texts: ['x'], input_type: 'search_document', embedding_types: ['base64'] })).status).toBe(400);
  });
});

describe('Cohere channels through the gateway', () => {
  it('takes the type by name or by one-api’s number (35); config is input_type and truncate, each of Cohere’s values only', async () => {
    const byNumber = await s.g.t.root.post('/api/channel/', { type: 35, name: 'co-35', key: KEY, base_url: s.up.url, models: 'co-by-number' });
    expect(byNumber.status, byNumber.text).toBe(201);
    expect(byNumber.body.data.type).toBe('cohere');
    // No base_url: Cohere's own.
    const byDefault = await s.g.t.root.post('/api/channel/', { type: 'cohere', name: 'co-default', key: KEY, models: 'co-default-url' });
    expect(byDefault.body.data.base_url).toBe('https://api.cohere.com');
    for (const config of [{ input_type: 'image' }, { input_type: 'query' }, { truncate: 'MIDDLE' }, { path: '/v1/embed' }, { output_dimension: 256 }]) {
      const res = await s.g.t.root.post('/api/channel/', { type: 'cohere', name: 'co-bad', key: KEY, base_url: s.up.url, models: 'co-bad', config });
      expect(res.status, JSON.stringify(config)).toBe(400);
      expect(res.body.message, JSON.stringify(config)).toMatch(/^config/);
    }
  });

  it('answers floats and base64 equal to Cohere’s vectors; asks /v2/embed with the key, the mapped model, search_document and float', async () => {
    const { model } = await s.model('embed-english-v3.0');
    const client = s.g.client();
    const floats = await client.embeddings.create({ model, input: ['co float one', 'co float second'], encoding_format: 'float' });
    expect(received(floats)).toEqual([asFloat32(fakeVector('co float one')), asFloat32(fakeVector('co float second'))]);
    expect(floats.usage.prompt_tokens).toBe(cohereTokens(['co float one', 'co float second']));
    const b64 = await client.embeddings.create({ model, input: 'co base64 input' }); // the client's default: base64
    expect(received(b64)).toEqual([asFloat32(fakeVector('co base64 input'))]);
    expect(s.up.calls).toHaveLength(2);
    for (const c of s.up.calls) {
      expect(c.path).toBe('/v2/embed');
      expect(c.authorization).toBe(`Bearer ${KEY}`);
    }
    // Exactly these fields: no truncate (Cohere's default), no output_dimension, floats asked for even when base64 was.
    expect(s.up.calls.map((c) => c.body)).toEqual([
      { model: 'embed-english-v3.0', texts: ['co float one', 'co float second'], input_type: 'search_document', embedding_types: ['float'] },
      { model: 'embed-english-v3.0', texts: ['co base64 input'], input_type: 'search_document', embedding_types: ['float'] },
    ]);
  });

  it('sends the channel’s input_type and truncate', async () => {
    const { model } = await s.model('embed-multilingual-v3.0', { config: { input_type: 'search_query', truncate: 'START' } });
    await s.g.client().embeddings.create({ model, input: 'co config input' });
    expect(s.up.calls[0]!.body).toEqual({
      model: 'embed-multilingual-v3.0',
      texts: ['co config input'],
      input_type: 'search_query',
      embedding_types: ['float'],
      truncate: 'START',
    });
  });

  it('sends dimensions as output_dimension to embed-v4; a v3 model’s call with dimensions is 400 naming dimensions, not sent', async () => {
    const v4 = await s.model('embed-v4.0');
    const res = await s.g.client().embeddings.create({ model: v4.model, input: 'co dims input', dimensions: 512 });
    expect(received(res)).toEqual([asFloat32(fakeVector('co dims input', 512))]);
    expect(s.up.calls[0]!.body.output_dimension).toBe(512);
    const v3 = await s.model('embed-english-light-v3.0');
    const refused = await refusal(s.g.client().embeddings.create({ model: v3.model, input: 'co v3 dims', dimensions: 256 }));
    expect(refused.status).toBe(400);
    expect(refused.param).toBe('dimensions');
    expect(refused.message).toMatch(/dimensions/);
    expect(s.up.calls).toHaveLength(1);
  });

  it('sends at most 96 texts a call: 100 inputs go as 96 and 4, answered in order', async () => {
    const { model } = await s.model('embed-english-v3.0');
    const inputs = Array.from({ length: 100 }, (_, i) => `${String.fromCharCode(97 + (i % 26))}${'w'.repeat(i)}`);
    const res = await s.g.client().embeddings.create({ model, input: inputs, encoding_format: 'float' });
    expect(received(res)).toEqual(inputs.map((s) => asFloat32(fakeVector(s))));
    expect(s.up.calls.map((c) => c.body.texts.length).sort((a, b) => b - a)).toEqual([96, 4]);
  });

  it('passes Cohere’s own {message} on for a request it refuses, and reads no other error shape', async () => {
    const { model } = await s.model('embed-english-v3.0');
    s.up.behaviour = { kind: 'status', status: 400, message: 'invalid request: texts must not contain the sound of one hand' };
    const refused = await refusal(s.g.client().embeddings.create({ model, input: 'co refused input' }));
    expect(refused.status).toBe(400);
    expect(refused.message).toMatch(/texts must not contain the sound of one hand/);
    expect(cohere.errorMessage({ message: 'theirs' })).toBe('theirs');
    expect(cohere.errorMessage({ error: { message: 'an OpenAI-shaped body' } })).toBeUndefined();
    expect(cohere.errorMessage({ message: { nested: 'x' } })).toBeUndefined();
  });

  for (const [status, message] of [
    [401, 'invalid api token'],
    [498, 'invalid token'],
    [402, 'Please add a payment method to continue'],
  ] as const) {
    it(`a ${status} refuses the key: the channel is disabled (status 3) with Cohere’s message, no key in it, and the next channel answers`, async () => {
      // 401: the fake refuses a key that is not its own, as Cohere does; 498 and 402: as Cohere sends them.
      const channelKey = status === 401 ? `${KEY}-revoked` : KEY;
      const { model, id } = await s.model('embed-english-v3.0', { priority: 10, key: channelKey });
      await s.fallback(model, 'embed-english-v3.0');
      if (status !== 401) s.up.behaviour = { kind: 'status', status, message };
      await expectRefusedKey(s, model, id, `upstream answered ${status}: ${message}`, channelKey);
    });
  }

  for (const [hint, headers] of [
    ['Retry-After', () => ({ 'retry-after': '120' })],
    ['X-RateLimit-Reset', () => ({ 'x-ratelimit-reset': String(Math.floor(Date.now() / 1000) + 120) })],
  ] as const) {
    it(`a 429 with ${hint} cools the channel down for that long: the call fails over, the next skips it`, async () => {
      const { model } = await s.model('embed-english-v3.0', { priority: 10 });
      await s.fallback(model, 'embed-english-v3.0');
      s.up.behaviour = {
        kind: 'status',
        status: 429,
        message: 'You are past the per minute request limit, please wait and try again later.',
        headers: headers(),
      };
      await expectCooledFor(s, model, 120);
    });
  }

  it('a 499 (Cohere’s “request cancelled”) is no fault of the request: the next channel answers', async () => {
    const { model } = await s.model('embed-english-v3.0', { priority: 10 });
    await s.fallback(model, 'embed-english-v3.0');
    s.up.behaviour = { kind: 'status', status: 499, message: 'request cancelled' };
    const res = await s.g.client().embeddings.create({ model, input: 'co cancelled input' });
    expect(received(res)).toEqual([asFloat32(fakeVector('co cancelled input'))]);
    expect([s.up.calls.length, s.up2.calls.length]).toEqual([1, 1]);
  });

  it('reads X-RateLimit-Reset as epoch seconds, or as seconds from now when too small to be a time; at most a day', () => {
    const now = 1_800_000_000_000;
    const h = (v: string) => new Headers({ 'x-ratelimit-reset': v });
    expect(rateLimitResetMs(h(String(now / 1000 + 30)), now)).toBe(30_000);
    expect(rateLimitResetMs(h('45'), now)).toBe(45_000);
    expect(rateLimitResetMs(h(String(now / 1000 - 5)), now)).toBeUndefined();
    expect(rateLimitResetMs(h(String(now / 1000 + 10 * 86_400)), now)).toBe(86_400_000);
    expect(rateLimitResetMs(h('soon'), now)).toBeUndefined();
    expect(rateLimitResetMs(new Headers(), now)).toBeUndefined();
  });
});
