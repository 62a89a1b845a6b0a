// Google Gemini channels (type "gemini", one-api 24): the fake Gemini API checked with @google/genai, then the gateway's
// calls to it with the official openai client as the caller — batchEmbedContents with x-goog-api-key, taskType and
// outputDimensionality, at most 100 inputs a call, floats turned into base64 for the caller, Gemini's errors read (a bad
// key is its 400 API_KEY_INVALID: the channel is disabled), and a 429's RetryInfo cooling the channel down.
import { GoogleGenAI } from '@google/genai';
import type OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { gemini } from '../../src/channels/providers/gemini.js';
import { decodeTokens } from '../../src/embeddings/tokenizer.js';
import { FakeGemini, resourceExhausted } from '../helpers/fake-gemini.js';
import { fakeVector } from '../helpers/fake-openai.js';
import { asFloat32 as f32, type Gateway, startGateway } from '../helpers/provider-gateway.js';

let g: Gateway;
let gm: FakeGemini;
let other: FakeGemini;
let client: OpenAI;
let seq = 0;

beforeAll(async () => {
  gm = await new FakeGemini().start();
  other = await new FakeGemini('AIzaSy-other-gemini-key-987654321').start();
  g = await startGateway('gemini');
  client = g.client();
});
afterAll(async () => {
  await g?.t.close();
  await gm?.stop();
  await other?.stop();
});
beforeEach(() => {
  gm.behaviour = { kind: 'ok' };
  other.behaviour = { kind: 'ok' };
});

/** A Gemini channel on `up` serving a model of its own (returned), mapped to gemini-embedding-001, with these fields. */
async function geminiChannel(up: FakeGemini, body: Record<string, unknown> = {}): Promise<{ id: number; model: string }> {
  const model = (body.models as string | undefined) ?? `gemini-model-${++seq}`;
  const id = await g.channel('gemini', model, { key: up.key, base_url: up.url, model_mapping: { [model]: 'gemini-embedding-001' }, ...body, models: model });
  return { id, model };
}
const since = (up: FakeGemini, n: number) => up.calls.slice(n);

describe('the fake Gemini API, checked with @google/genai', () => {
  it('answers the SDK’s embedContent (batchEmbedContents, x-goog-api-key, taskType, outputDimensionality) with the vectors it makes', async () => {
    // v1beta, as the adapter calls it by default, and v1 (a channel's api_version "v1"); the SDK's own default has
    // been each of them in turn, so both are named.
    const ai = new GoogleGenAI({ apiKey: gm.key, httpOptions: { baseUrl: gm.url, apiVersion: 'v1beta' } });
    const sdkDefault = new GoogleGenAI({ apiKey: gm.key, httpOptions: { baseUrl: gm.url, apiVersion: 'v1' } });
    const before = gm.calls.length;
    const res = await ai.models.embedContent({ model: 'gemini-embedding-001', contents: ['first text', 'second'] });
    expect(res.embeddings?.map((e) => e.values)).toEqual([fakeVector('first text'), fakeVector('second')]);
    const shaped = await sdkDefault.models.embedContent({
      model: 'gemini-embedding-001',
      contents: 'third',
      config: { taskType: 'RETRIEVAL_QUERY', outputDimensionality: 7 },
    });
    expect(shaped.embeddings?.[0]?.values).toEqual(fakeVector('third', 7));
    const [c1, c2] = since(gm, before);
    expect(c1!.path).toBe('/v1beta/models/gemini-embedding-001:batchEmbedContents');
    expect(c1!.headers['x-goog-api-key']).toBe(gm.key);
    expect(c1!.body.requests).toHaveLength(2);
    expect(c2!.path).toBe('/v1/models/gemini-embedding-001:batchEmbedContents');
    expect(c2!.body.requests[0]).toMatchObject({ model: 'models/gemini-embedding-001', taskType: 'RETRIEVAL_QUERY', outputDimensionality: 7 });
  });

  it('refuses a wrong key as Gemini does (400 INVALID_ARGUMENT, API key not valid) and a request it does not know', async () => {
    const ai = new GoogleGenAI({ apiKey: 'AIzaSy-wrong', httpOptions: { baseUrl: gm.url } });
    const err = (await ai.models.embedContent({ model: 'gemini-embedding-001', contents: ['x'] }).catch((e: unknown) => e)) as {
      status?: number;
      message: string;
    };
    expect(err.status).toBe(400);
    expect(err.message).toMatch(/API key not valid/);
    const odd = await fetch(`${gm.url}/v1beta/models/gemini-embedding-001:batchEmbedContents`, {
      method: 'POST',
      headers: { 'x-goog-api-key': gm.key, 'content-type': 'application/json' },
      body: JSON.stringify({ requests: [{ model: 'models/gemini-embedding-001', content: { parts: [{ text: 'a' }] }, dimensions: 3 }] }),
    });
    expect(odd.status).toBe(400);
    expect(((await odd.json()) as { error: { status: string } }).error.status).toBe('INVALID_ARGUMENT');
  });
});

describe('Gemini channels through the gateway (the openai client as the caller)', () => {
  it('takes type 24, defaults base_url to Google’s, and checks task_type and api_version', async () => {
    const made = await g.t.root.post('/api/channel/', { type: 24, name: 'default-base', key: 'AIzaSy-0123456789', models: 'default-base-model' });
    expect(made.status, made.text).toBe(201);
    expect([made.body.data.type, made.body.data.base_url]).toEqual(['gemini', 'https://generativelanguage.googleapis.com']);
    for (const config of [
      { task_type: 'RETRIEVAL' },
      { task_type: 'retrieval_query' },
      { api_version: 'beta' },
      { api_version: 'v1beta/../x' },
      { dimensions: 3 },
    ]) {
      const bad = await g.t.root.post('/api/channel/', { type: 'gemini', name: 'bad', key: 'AIzaSy-0123456789', models: 'bad-config', config });
      expect(bad.status, JSON.stringify(config)).toBe(400);
      expect(bad.body.message, JSON.stringify(config)).toMatch(/^config/);
    }
    const good = await g.t.root.post('/api/channel/', {
      type: 'gemini',
      name: 'good',
      key: 'AIzaSy-0123456789',
      models: 'good-config',
      config: { task_type: 'SEMANTIC_SIMILARITY', api_version: 'v1' },
    });
    expect(good.status, good.text).toBe(201);
  });

  it('calls {base}/v1beta/models/{mapped model}:batchEmbedContents with x-goog-api-key, one request per input; floats and base64 reach the caller', async () => {
    const { model } = await geminiChannel(gm);
    const before = gm.calls.length;
    const b64 = await client.embeddings.create({ model, input: ['one', 'two three'] });
    expect(b64.data.map((d) => d.embedding)).toEqual([f32(fakeVector('one')), f32(fakeVector('two three'))]);
    const floats = await client.embeddings.create({ model, input: 'four', encoding_format: 'float' });
    expect(floats.data[0]!.embedding.map(Math.fround)).toEqual(f32(fakeVector('four')));
    const raw = await g.t.anon.post('/v1/embeddings', { model, input: 'five', encoding_format: 'base64' }, { authorization: `Bearer ${g.key}` });
    expect(raw.body.data[0].embedding).toBe(Buffer.from(Float32Array.from(fakeVector('five')).buffer).toString('base64'));
    const calls = since(gm, before);
    expect(calls).toHaveLength(3);
    for (const c of calls) {
      expect(c.path).toBe('/v1beta/models/gemini-embedding-001:batchEmbedContents');
      expect(c.headers['x-goog-api-key']).toBe(gm.key);
      expect(c.headers.authorization).toBeUndefined();
    }
    // No taskType unless the channel sets one; no outputDimensionality unless the caller asks.
    expect(calls[0]!.body).toEqual({
      requests: [
        { model: 'models/gemini-embedding-001', content: { parts: [{ text: 'one' }] } },
        { model: 'models/gemini-embedding-001', content: { parts: [{ text: 'two three' }] } },
      ],
    });
  });

  it('sends the channel’s task_type and api_version, and dimensions as every request’s outputDimensionality', async () => {
    const { model } = await geminiChannel(gm, { config: { task_type: 'RETRIEVAL_DOCUMENT', api_version: 'v1' } });
    const before = gm.calls.length;
    const res = await client.embeddings.create({ model, input: ['doc a', 'doc b'], dimensions: 3 });
    expect(res.data.map((d) => d.embedding)).toEqual([f32(fakeVector('doc a', 3)), f32(fakeVector('doc b', 3))]);
    const [c] = since(gm, before);
    expect(c!.path).toBe('/v1/models/gemini-embedding-001:batchEmbedContents');
    for (const r of c!.body.requests) expect(r).toMatchObject({ taskType: 'RETRIEVAL_DOCUMENT', outputDimensionality: 3 });
  });

  it('sends at most 100 inputs a call: 150 go as two calls (100 and 50), answered in order; no usage from Gemini, so the gateway counts', async () => {
    const { model } = await geminiChannel(gm);
    const inputs = Array.from({ length: 150 }, (_, i) => `input number ${i} ${'x'.repeat(i % 7)}`);
    const before = gm.calls.length;
    const res = await client.embeddings.create({ model, input: inputs });
    expect(res.data.map((d) => d.embedding)).toEqual(inputs.map((s) => f32(fakeVector(s))));
    expect(
      since(gm, before)
        .map((c) => c.body.requests.length)
        .sort((a, b) => a - b),
    ).toEqual([50, 100]);
    expect(res.usage.prompt_tokens).toBeGreaterThan(0);
  });

  it('sends token-id inputs to Gemini as their text (cl100k decoded), which takes text only', async () => {
    const { model } = await geminiChannel(gm);
    const before = gm.calls.length;
    const ids = [[9906, 1917], [15339]];
    const res = await g.t.anon.post('/v1/embeddings', { model, input: ids, encoding_format: 'float' }, { authorization: `Bearer ${g.key}` });
    expect(res.status, res.text).toBe(200);
    const [c] = since(gm, before);
    const texts = ids.map((one) => decodeTokens(one));
    expect(texts.every((x) => x.length > 0)).toBe(true);
    expect(c!.body.requests.map((r) => r.content.parts[0]!.text)).toEqual(texts);
    expect(res.body.data.map((d: { embedding: number[] }) => f32(d.embedding))).toEqual(texts.map((x) => f32(fakeVector(x))));
  });

  it('a request Gemini refuses (400 INVALID_ARGUMENT) is the caller’s 400 with Gemini’s message', async () => {
    const { model } = await geminiChannel(gm);
    gm.behaviour = { kind: 'status', status: 400, grpc: 'INVALID_ARGUMENT', message: 'Request contains an invalid argument.' };
    const res = await g.t.anon.post('/v1/embeddings', { model, input: 'odd' }, { authorization: `Bearer ${g.key}` });
    expect(res.status, res.text).toBe(400);
    expect(res.body.error.message).toBe('Upstream rejected the request: Request contains an invalid argument.');
  });

  it('a refused key (Gemini’s 400 API_KEY_INVALID) disables the channel with the reason (no key in it); the next channel answers, and later calls skip it', async () => {
    const wrongKey = 'AIzaSy-revoked-gemini-key-5555555555';
    const { id, model } = await geminiChannel(gm, { key: wrongKey, priority: 10 });
    await geminiChannel(other, { models: model, priority: 5 });
    const res = await client.embeddings.create({ model, input: 'auth failover' });
    expect(res.data[0]!.embedding).toEqual(f32(fakeVector('auth failover')));
    const seen = await g.seen(id);
    expect(seen.status).toBe(3);
    expect(seen.status_reason).toBe('upstream answered 400: API key not valid. Please pass a valid API key.');
    expect(seen.status_reason).not.toContain(wrongKey);
    const before = gm.calls.length;
    await client.embeddings.create({ model, input: 'again' });
    expect(gm.calls.length).toBe(before);
  });

  for (const [what, behaviour] of [
    [
      '403 PERMISSION_DENIED',
      { kind: 'status', status: 403, grpc: 'PERMISSION_DENIED', message: 'Generative Language API has not been used in project 1 before or it is disabled.' },
    ],
    [
      '400 FAILED_PRECONDITION (the project’s state)',
      { kind: 'status', status: 400, grpc: 'FAILED_PRECONDITION', message: 'User location is not supported for the API use.' },
    ],
  ] as const) {
    it(`${what} disables the channel too, and the next channel answers`, async () => {
      const { id, model } = await geminiChannel(gm, { priority: 10 });
      await geminiChannel(other, { models: model, priority: 5 });
      gm.behaviour = { ...behaviour };
      const res = await client.embeddings.create({ model, input: `refused: ${what}` });
      expect(res.data[0]!.embedding).toEqual(f32(fakeVector(`refused: ${what}`)));
      const seen = await g.seen(id);
      expect(seen.status).toBe(3);
      expect(seen.status_reason).toBe(`upstream answered ${behaviour.status}: ${behaviour.message}`);
    });
  }

  it('a 429 RESOURCE_EXHAUSTED with RetryInfo (no Retry-After) cools the channel down for its retryDelay; the call fails over, the next call skips it', async () => {
    const { id, model } = await geminiChannel(gm, { priority: 10 });
    await geminiChannel(other, { models: model, priority: 5 });
    gm.behaviour = resourceExhausted('37s');
    const before = [gm.calls.length, other.calls.length];
    const res = await client.embeddings.create({ model, input: 'throttled' });
    expect(res.data[0]!.embedding).toEqual(f32(fakeVector('throttled')));
    expect([gm.calls.length - before[0]!, other.calls.length - before[1]!]).toEqual([1, 1]);
    const ttl = await g.t.platform.redis.pttl(g.t.platform.keys.grouped('channel-cooldown', id));
    expect(ttl).toBeGreaterThan(35_000);
    expect(ttl).toBeLessThanOrEqual(37_000);
    gm.behaviour = { kind: 'ok' };
    await client.embeddings.create({ model, input: 'skips the cooled one' });
    expect([gm.calls.length - before[0]!, other.calls.length - before[1]!]).toEqual([1, 2]);
    expect((await g.seen(id)).status).toBe(1);
  });

  it('reads RetryInfo’s retryDelay as a Duration ("1.5s"), held to a day; anything else leaves the default wait', () => {
    const wait = (retryDelay: unknown) =>
      gemini.retryAfterMs?.(new Headers(), {
        error: { code: 429, status: 'RESOURCE_EXHAUSTED', details: [{ '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay }] },
      });
    expect(wait('1.5s')).toBe(1500);
    expect(wait('1e9s')).toBeUndefined();
    expect(wait('999999999s')).toBe(86_400_000);
    expect(wait('30')).toBeUndefined();
    expect(wait('0s')).toBeUndefined();
    expect(wait({ seconds: 30 })).toBeUndefined();
  });
});
