// Channel types and the OpenAI-compatible provider's own settings: the type by name or one-api's number, the settings
// checked against the provider when a channel is saved, and a path override and extra headers reaching the upstream.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeOpenAI, fakeVector } from '../helpers/fake-openai.js';
import { HttpClient } from '../helpers/http.js';
import { startTestApp, type TestApp } from '../helpers/services.js';

let t: TestApp;
let up: FakeOpenAI;
let key: string;

beforeAll(async () => {
  up = await new FakeOpenAI().start();
  t = await startTestApp();
  await t.root.post('/api/user/', { username: 'prov', password: 'prov-password', quota: 1_000_000 });
  const session = new HttpClient(t.url);
  await session.login('prov', 'prov-password');
  key = (await session.post('/api/token/', { name: 'k', unlimited_quota: true })).body.data.key;
});
afterAll(async () => {
  await t?.close();
  await up?.stop();
});

const channel = (body: Record<string, unknown>) =>
  t.root.post('/api/channel/', { name: 'c', key: 'sk-provider-test-0123456789', base_url: up.url, models: 'm', price: 1000, ...body });

describe('channel types and settings', () => {
  it('takes a type by name or by one-api’s number (1 is openai); an unknown type is 400 naming the types there are', async () => {
    const byNumber = await channel({ type: 1, name: 'by-number', models: 'by-number-model' });
    expect(byNumber.status, byNumber.text).toBe(201);
    expect(byNumber.body.data.type).toBe('openai');
    const unknown = await channel({ type: 'no-such-provider' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.message).toMatch(/type/);
    expect(unknown.body.message).toMatch(/"openai" \(1\)/);
  });

  it('checks config against the provider when saved: an unknown setting, a header the gateway sets, a path with a query are 400 naming config', async () => {
    for (const config of [
      { region: 'eu' },
      { headers: { Authorization: 'Bearer other' } },
      { headers: { 'Proxy-Authorization': 'x' } },
      { headers: { Expect: '100-continue' } },
      { path: '/v1/embeddings?x=1' },
      { path: '/a/../../x' },
      { path: '/a/%2E%2e/x' },
      { headers: { 'X-A': 'a\r\nb' } },
      { headers: { 'X-A': 'a\u0001b' } },
      { headers: { 'X-A': 'caf\u0100' } },
    ]) {
      const res = await channel({ type: 'openai', config });
      expect(res.status, JSON.stringify(config)).toBe(400);
      expect(res.body.message, JSON.stringify(config)).toMatch(/^config/);
    }
    // The same on an update; a JSON string is read as the object.
    const made = await channel({ type: 'openai', name: 'to-update', models: 'to-update-model' });
    const bad = await t.root.put('/api/channel/', { id: made.body.data.id, config: '{"nope":1}' });
    expect(bad.status).toBe(400);
    const good = await t.root.put('/api/channel/', { id: made.body.data.id, config: '{"path":"/custom/embeddings"}' });
    expect(good.status, good.text).toBe(200);
    expect(good.body.data.config).toEqual({ path: '/custom/embeddings' });
  });

  it('sends a channel’s calls to its path override with its extra headers (as Zhipu’s /api/paas/v4 needs), the key as a Bearer token', async () => {
    const made = await channel({
      type: 'openai',
      name: 'zhipu-like',
      models: 'embedding-3',
      config: { path: '/api/paas/v4/embeddings', headers: { 'X-Extra': 'extra-value' } },
    });
    expect(made.status, made.text).toBe(201);
    const before = up.calls.length;
    const client = new OpenAI({ apiKey: key, baseURL: `${t.url}/v1`, maxRetries: 0 });
    const res = await client.embeddings.create({ model: 'embedding-3', input: ['path override text'] });
    expect(res.data[0]!.embedding.map(Math.fround)).toEqual(fakeVector('path override text').map(Math.fround));
    const call = up.calls.slice(before).find((c) => c.body.model === 'embedding-3')!;
    expect(call.path).toBe('/api/paas/v4/embeddings');
    expect(call.headers['x-extra']).toBe('extra-value');
    expect(call.authorization).toBe('Bearer sk-provider-test-0123456789');
  });

  it('without a path, a base URL ending in /v1 gets /embeddings and any other /v1/embeddings (as before)', async () => {
    await channel({ type: 'openai', name: 'v1-base', models: 'v1-base-model', base_url: `${up.url}/v1` });
    await channel({ type: 'openai', name: 'plain-base', models: 'plain-base-model', base_url: `${up.url}/prefix` });
    const client = new OpenAI({ apiKey: key, baseURL: `${t.url}/v1`, maxRetries: 0 });
    const before = up.calls.length;
    await client.embeddings.create({ model: 'v1-base-model', input: 'a' });
    await client.embeddings.create({ model: 'plain-base-model', input: 'b' });
    expect(up.calls.slice(before).map((c) => c.path)).toEqual(['/v1/embeddings', '/prefix/v1/embeddings']);
  });

  it('cuts the values of a channel’s extra headers out of an upstream’s message (a gateway key may be one), and keeps the word “none” of a keyless channel', async () => {
    // Words, not shaped like a key: only the header scrub can find it.
    const secret = 'correct horse battery staple';
    await channel({ type: 'openai', name: 'with-secret-header', models: 'secret-header-model', config: { headers: { 'X-Gateway-Key': secret } } });
    await channel({ type: 'openai', name: 'keyless', key: 'none', models: 'keyless-model' });
    const client = new OpenAI({ apiKey: key, baseURL: `${t.url}/v1`, maxRetries: 0 });
    try {
      up.behaviour = { kind: 'status', status: 400, message: `bad header x-gateway-key=${secret}; none of the inputs were read` };
      const err = (await client.embeddings.create({ model: 'secret-header-model', input: 'x' }).catch((e) => e)) as { status: number; message: string };
      expect(err.status).toBe(400);
      expect(err.message).not.toContain(secret);
      expect(err.message).toContain('none of the inputs');
      const keyless = (await client.embeddings.create({ model: 'keyless-model', input: 'x' }).catch((e) => e)) as { message: string };
      expect(keyless.message).toContain('none of the inputs were read');
    } finally {
      up.behaviour = { kind: 'ok', reportUsage: true };
    }
  });

  it('an answer whose data holds null is a 502 that says so, not a JavaScript error', async () => {
    await channel({ type: 'openai', name: 'null-data', models: 'null-data-model' });
    const client = new OpenAI({ apiKey: key, baseURL: `${t.url}/v1`, maxRetries: 0 });
    try {
      up.behaviour = { kind: 'raw', status: 200, body: () => '{"object":"list","data":[null]}' };
      const err = (await client.embeddings.create({ model: 'null-data-model', input: 'x' }).catch((e) => e)) as { status: number; message: string };
      expect(err.status).toBe(502);
      expect(err.message).toContain('embedding 0 is not an object');
      expect(err.message).not.toMatch(/Cannot read properties/);
    } finally {
      up.behaviour = { kind: 'ok', reportUsage: true };
    }
  });
});
