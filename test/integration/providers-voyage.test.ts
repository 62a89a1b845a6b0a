// Voyage AI channels: the fake of Voyage's embeddings API checked with the voyageai SDK, then the gateway with the openai
// client as the caller: floats and base64, the request Voyage takes (input, input_type, truncation, model mapping),
// output_dimension, 1,000 texts a call, usage from total_tokens, and Voyage's errors (401 refuses the key, 429 with
// Retry-After cools the channel down, {detail} passed on, nothing else read).
import { VoyageAIClient } from 'voyageai';
import { describe, expect, it } from 'vitest';
import { voyage } from '../../src/channels/providers/voyage.js';
import { fakeVector } from '../helpers/fake-openai.js';
import { FakeVoyage, voyageTokens } from '../helpers/fake-voyage.js';
import { asFloat32, expectCooledFor, expectRefusedKey, providerSuite, received, refusal } from '../helpers/provider-gateway.js';

const KEY = 'pa-voyage-channel-key-0123456789';
const s = providerSuite('voyage', KEY, () => new FakeVoyage());

describe('the fake Voyage, checked with the voyageai SDK', () => {
  it('gives VoyageAIClient (its baseUrl aimed at the fake’s /v1) the vectors it makes, at the length asked', async () => {
    const client = new VoyageAIClient({ apiKey: KEY, baseUrl: `${s.up.url}/v1`, maxRetries: 0 });
    const res = await client.embed({ input: ['sdk one', 'sdk text two'], model: 'voyage-3.5' });
    expect(res.data?.map((d) => d.embedding)).toEqual([fakeVector('sdk one'), fakeVector('sdk text two')]);
    expect(res.usage?.totalTokens).toBe(voyageTokens(['sdk one', 'sdk text two']));
    const short = await client.embed({ input: 'sdk short', model: 'voyage-3-large', inputType: 'query', outputDimension: 256 });
    expect(short.data?.[0]?.embedding).toEqual(fakeVector('sdk short', 256));
    expect(s.up.calls.map((c) => [c.path, c.authorization])).toEqual([
      ['/v1/embeddings', `Bearer ${KEY}`],
      ['/v1/embeddings', `Bearer ${KEY}`],
    ]);
    expect(s.up.calls[1]!.body).toEqual({ input: 'sdk short', model: 'voyage-3-large', input_type: 'query', output_dimension: 256 });
  });

  it('refuses what Voyage refuses: another key (401), an unknown field, output_dimension on an older model (400, {detail})', async () => {
    const wrongKey = new VoyageAIClient({ apiKey: 'not-the-key', baseUrl: `${s.up.url}/v1`, maxRetries: 0 });
    await expect(wrongKey.embed({ input: 'x', model: 'voyage-3.5' })).rejects.toMatchObject({
      statusCode: 401,
      body: { detail: 'Provided API key is invalid.' },
    });
    const unknown = await s.up.post({ model: 'voyage-3.5', input: ['x'], dimensions: 256 });
    expect(unknown.status).toBe(400);
    expect(unknown.body.detail).toMatch(/dimensions/);
    expect((await s.up.post({ model: 'voyage-2', input: ['x'], output_dimension: 256 })).status).toBe(400);
    expect((await s.up.post({ model: 'voyage-3.5', input: ['x'], input_type: 'passage' })).status).toBe(400);
    expect((await s.up.post({ model: 'voyage-3.5', input: Array.from({ length: 1001 }, (_, i) => `t${i}`) })).status).toBe(400);
    expect((await s.up.post({ model: 'voyage-3.5', input: ['x'], encoding_format: 'base64' })).status).toBe(400);
  });
});

describe('Voyage channels through the gateway', () => {
  it('takes the type by name (one-api has no number for it); config is input_type (query, document or null) and truncation', async () => {
    const byDefault = await s.g.t.root.post('/api/channel/', { type: 'voyage', name: 'vo-default', key: KEY, models: 'vo-default-url' });
    expect(byDefault.status, byDefault.text).toBe(201);
    expect(byDefault.body.data.base_url).toBe('https://api.voyageai.com');
    const nullType = await s.g.t.root.post('/api/channel/', {
      type: 'voyage',
      name: 'vo-null',
      key: KEY,
      base_url: s.up.url,
      models: 'vo-null',
      config: { input_type: null },
    });
    expect(nullType.status, nullType.text).toBe(201);
    for (const config of [{ input_type: 'passage' }, { input_type: 'search_document' }, { truncation: 'yes' }, { output_dimension: 256 }, { path: '/v1/x' }]) {
      const res = await s.g.t.root.post('/api/channel/', { type: 'voyage', name: 'vo-bad', key: KEY, base_url: s.up.url, models: 'vo-bad', config });
      expect(res.status, JSON.stringify(config)).toBe(400);
      expect(res.body.message, JSON.stringify(config)).toMatch(/^config/);
    }
  });

  it('answers floats and base64 equal to Voyage’s vectors; asks /v1/embeddings with the key and the mapped model, nothing more', async () => {
    const { model } = await s.model('voyage-3.5');
    const client = s.g.client();
    const floats = await client.embeddings.create({ model, input: ['vo float one', 'vo float second'], encoding_format: 'float' });
    expect(received(floats)).toEqual([asFloat32(fakeVector('vo float one')), asFloat32(fakeVector('vo float second'))]);
    expect(floats.usage.prompt_tokens).toBe(voyageTokens(['vo float one', 'vo float second']));
    const b64 = await client.embeddings.create({ model, input: 'vo base64 input' }); // the client's default: base64
    expect(received(b64)).toEqual([asFloat32(fakeVector('vo base64 input'))]);
    expect(s.up.calls).toHaveLength(2);
    for (const c of s.up.calls) {
      expect(c.path).toBe('/v1/embeddings');
      expect(c.authorization).toBe(`Bearer ${KEY}`);
    }
    // Exactly these fields: no input_type or truncation unless the channel sets them, no encoding_format (floats).
    expect(s.up.calls.map((c) => c.body)).toEqual([
      { model: 'voyage-3.5', input: ['vo float one', 'vo float second'] },
      { model: 'voyage-3.5', input: ['vo base64 input'] },
    ]);
  });

  it('sends the channel’s input_type and truncation', async () => {
    const { model } = await s.model('voyage-3.5-lite', { config: { input_type: 'document', truncation: false } });
    await s.g.client().embeddings.create({ model, input: 'vo config input' });
    expect(s.up.calls[0]!.body).toEqual({ model: 'voyage-3.5-lite', input: ['vo config input'], input_type: 'document', truncation: false });
  });

  it('sends dimensions as output_dimension; a model Voyage will not shorten answers Voyage’s 400 {detail}, passed on', async () => {
    const flexible = await s.model('voyage-3-large');
    const res = await s.g.client().embeddings.create({ model: flexible.model, input: 'vo dims input', dimensions: 512 });
    expect(received(res)).toEqual([asFloat32(fakeVector('vo dims input', 512))]);
    expect(s.up.calls[0]!.body.output_dimension).toBe(512);
    const older = await s.model('voyage-2');
    const refused = await refusal(s.g.client().embeddings.create({ model: older.model, input: 'vo older dims', dimensions: 256 }));
    expect(refused.status).toBe(400);
    expect(refused.message).toMatch(/Model voyage-2 does not support output_dimension/);
    expect(voyage.errorMessage({ detail: 'theirs' })).toBe('theirs');
    expect(voyage.errorMessage({ error: { message: 'an OpenAI-shaped body' } })).toBeUndefined();
    expect(voyage.errorMessage({ detail: [{ msg: 'a list' }] })).toBeUndefined();
  });

  it('sends at most 1,000 texts a call: 1,001 inputs go as 1,000 and 1, answered in order', async () => {
    const { model } = await s.model('voyage-3.5');
    const inputs = Array.from({ length: 1001 }, (_, i) => `${String.fromCharCode(97 + (i % 26))}${'v'.repeat(i % 90)} ${i}`);
    const res = await s.g.client().embeddings.create({ model, input: inputs });
    expect(received(res)).toEqual(inputs.map((s) => asFloat32(fakeVector(s))));
    expect(s.up.calls.map((c) => c.body.input.length).sort((a, b) => b - a)).toEqual([1000, 1]);
  });

  it('a 401 refuses the key: the channel is disabled (status 3) with Voyage’s detail, no key in it, and the next channel answers', async () => {
    const revoked = `${KEY}-revoked`;
    const { model, id } = await s.model('voyage-3.5', { priority: 10, key: revoked });
    await s.fallback(model, 'voyage-3.5');
    await expectRefusedKey(s, model, id, 'upstream answered 401: Provided API key is invalid.', revoked);
  });

  it('a 429 with Retry-After cools the channel down for that long: the call fails over, the next skips it', async () => {
    const { model } = await s.model('voyage-3.5', { priority: 10 });
    await s.fallback(model, 'voyage-3.5');
    s.up.behaviour = { kind: 'status', status: 429, message: 'Rate limit exceeded. Please pace your requests.', headers: { 'retry-after': '120' } };
    await expectCooledFor(s, model, 120);
  });
});
