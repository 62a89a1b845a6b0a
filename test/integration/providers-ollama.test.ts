// Ollama's native API as a channel type: the fake checked with the `ollama` SDK, then the gateway through the official
// `openai` client: vectors (float and base64), dimensions, the request Ollama gets (no key for a local server, the key
// for ollama.com's), a refused key disabling the channel, a 429 cooling it down and failing over, a model the server has
// not pulled failing over, a request Ollama refuses ending the call.
import { Ollama } from 'ollama';
import OpenAI from 'openai';
import { describe, expect, it } from 'vitest';
import { ollama } from '../../src/channels/providers/ollama.js';
import { FakeOllama, ollamaTokens, ollamaVector } from '../helpers/fake-ollama.js';
import { asFloat32, received } from '../helpers/provider-gateway.js';
import { expectKeyRefused, partSizes, selfHostedSuite } from '../helpers/self-hosted-suite.js';

/** ollama.com's API takes a key (the suite's `keyed` fake); a local server (`up`, `backup`) none. */
const CLOUD_KEY = 'ollama-cloud-key-0123456789abcdef';
const s = selfHostedSuite(
  'ollama',
  CLOUD_KEY,
  () => new FakeOllama(),
  (f) => {
    f.models = undefined;
    f.contextChars = 10_000;
  },
);

describe('the fake, checked with the ollama SDK', () => {
  it('answers the SDK’s embed with its vectors and token count; a key server refuses the SDK without its key and takes it with', async () => {
    const sdk = new Ollama({ host: s.up.url });
    const res = await sdk.embed({ model: 'nomic-embed-text', input: ['first text', 'second'] });
    expect(res.embeddings).toEqual([ollamaVector('first text'), ollamaVector('second')]);
    expect(res.prompt_eval_count).toBe(ollamaTokens(['first text', 'second']));
    expect(res.model).toBe('nomic-embed-text');
    const call = s.up.calls.at(-1)!;
    expect(call.path).toBe('/api/embed');
    expect(call.body).toEqual({ model: 'nomic-embed-text', input: ['first text', 'second'] });

    const dims = await sdk.embed({ model: 'nomic-embed-text', input: 'one', dimensions: 8, truncate: false, keep_alive: '1m' });
    expect(dims.embeddings).toEqual([ollamaVector('one', 8)]);

    await expect(new Ollama({ host: s.keyed.url }).embed({ model: 'm', input: ['x'] })).rejects.toMatchObject({ status_code: 401, error: 'unauthorized' });
    const withKey = new Ollama({ host: s.keyed.url, headers: { Authorization: `Bearer ${CLOUD_KEY}` } });
    expect((await withKey.embed({ model: 'm', input: ['x'] })).embeddings).toEqual([ollamaVector('x')]);
  });

  it('sends the SDK Ollama’s errors: a model it has not pulled is 404 {"error"}, and a wrong field is refused', async () => {
    s.up.models = ['nomic-embed-text'];
    await expect(new Ollama({ host: s.up.url }).embed({ model: 'not-pulled', input: ['x'] })).rejects.toMatchObject({
      status_code: 404,
      error: 'model "not-pulled" not found, try pulling it first',
    });
    const wrong = await fetch(`${s.up.url}/api/embed`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'nomic-embed-text', inputs: ['x'] }),
    });
    expect(wrong.status).toBe(400);
    expect(await wrong.json()).toEqual({ error: expect.stringMatching(/inputs/) });
    s.up.behaviour = { kind: 'status', status: 500, message: 'llama runner process has terminated' };
    await expect(new Ollama({ host: s.up.url }).embed({ model: 'nomic-embed-text', input: ['x'] })).rejects.toMatchObject({
      status_code: 500,
      error: 'llama runner process has terminated',
    });
  });
});

describe('an ollama channel', () => {
  it('is made by name or by one-api’s number 30; its settings are checked; without a base_url it is http://localhost:11434, which the outbound policy refuses unless allow-listed', async () => {
    const byNumber = await s.t.root.post('/api/channel/', { type: 30, name: 'n', key: 'none', base_url: s.up.url, models: 'by-30' });
    expect(byNumber.status, byNumber.text).toBe(201);
    expect(byNumber.body.data.type).toBe('ollama');
    for (const config of [{ keep_alive: 'five minutes' }, { truncate: 'yes' }, { keep_alive: 5.5 }, { options: { num_ctx: 8 } }]) {
      const res = await s.t.root.post('/api/channel/', { type: 'ollama', name: 'bad', key: 'none', base_url: s.up.url, models: 'bad', config });
      expect(res.status, JSON.stringify(config)).toBe(400);
      expect(res.body.message, JSON.stringify(config)).toMatch(/^config/);
    }
    expect(ollama.defaultBaseUrl).toBe('http://localhost:11434');
    const local = await s.t.root.post('/api/channel/', { type: 'ollama', name: 'local', key: 'none', models: 'local-model' });
    expect(local.status).toBe(400);
    expect(local.body.message).toMatch(/^base_url: "localhost" is refused by the outbound policy/);
  });

  it('answers floats and base64 equal to Ollama’s vectors, with its token count; asks /api/embed for the mapped model with the settings, and no key for key "none"', async () => {
    await s.channel({ name: 'local', models: 'emb-local', model_mapping: { 'emb-local': 'nomic-embed-text' }, config: { truncate: false, keep_alive: '10m' } });
    const from = s.up.calls.length;
    const floats = await s.client.embeddings.create({ model: 'emb-local', input: ['alpha text', 'beta'], encoding_format: 'float' });
    expect(received(floats)).toEqual([asFloat32(ollamaVector('alpha text')), asFloat32(ollamaVector('beta'))]);
    expect(floats.usage.prompt_tokens).toBe(ollamaTokens(['alpha text', 'beta']));
    // The openai client's default: base64 (the gateway encodes Ollama's floats). Other texts: answered vectors are cached.
    const b64 = await s.client.embeddings.create({ model: 'emb-local', input: ['gamma text', 'delta'] });
    expect(b64.data.map((d) => d.embedding)).toEqual([asFloat32(ollamaVector('gamma text')), asFloat32(ollamaVector('delta'))]);
    const calls = s.up.since(from);
    expect(calls.map((c) => c.body.input)).toEqual([
      ['alpha text', 'beta'],
      ['gamma text', 'delta'],
    ]);
    for (const call of calls) {
      expect(call.path).toBe('/api/embed');
      expect(call.authorization).toBeUndefined();
      expect(call.headers['content-type']).toBe('application/json');
      expect(call.body).toEqual({ model: 'nomic-embed-text', input: call.body.input, truncate: false, keep_alive: '10m' });
    }
  });

  it('sends the key as a Bearer token when it is not "none" (ollama.com’s API), and leaves out the settings not set', async () => {
    await s.channel({ name: 'cloud', base_url: s.keyed.url, key: CLOUD_KEY, models: 'emb-cloud' });
    const res = await s.client.embeddings.create({ model: 'emb-cloud', input: 'cloud text' });
    expect(received(res)).toEqual([asFloat32(ollamaVector('cloud text'))]);
    const call = s.keyed.calls.at(-1)!;
    expect(call.authorization).toBe(`Bearer ${CLOUD_KEY}`);
    expect(call.body).toEqual({ model: 'emb-cloud', input: ['cloud text'] });
  });

  it('sends dimensions as Ollama’s `dimensions` and answers vectors of that length', async () => {
    await s.channel({ name: 'dims', models: 'emb-dims' });
    const res = await s.client.embeddings.create({ model: 'emb-dims', input: ['short'], dimensions: 8 });
    expect(received(res)).toEqual([asFloat32(ollamaVector('short', 8))]);
    expect(s.up.calls.at(-1)!.body.dimensions).toBe(8);
  });

  it('sends token-id inputs (as LangChain sends them) as their decoded text: Ollama takes only text', async () => {
    await s.channel({ name: 'ids', models: 'emb-ids' });
    const res = await s.client.embeddings.create({ model: 'emb-ids', input: [[9906, 1917], [15339]] });
    expect(s.up.calls.at(-1)!.body.input).toEqual(['Hello world', 'hello']);
    expect(received(res)).toEqual([asFloat32(ollamaVector('Hello world')), asFloat32(ollamaVector('hello'))]);
  });

  it('splits a call of more than 512 inputs into calls of at most 512, answered in order', async () => {
    await s.channel({ name: 'split', models: 'emb-split' });
    const inputs = Array.from({ length: 515 }, (_, i) => `text number ${i}`);
    const from = s.up.calls.length;
    const res = await s.client.embeddings.create({ model: 'emb-split', input: inputs, encoding_format: 'float' });
    expect(received(res)).toEqual(inputs.map((text) => asFloat32(ollamaVector(text))));
    expect(partSizes(s.up, from, (b) => [b.input].flat())).toEqual([3, 512]);
  });

  it('disables a channel whose key the server refuses (status 3, the reason without the key), the call answered by the next channel', async () => {
    await expectKeyRefused(s, 'emb-auth', ollamaVector('refused key text'), 'upstream answered 401: unauthorized');
  });

  it('cools down a channel answering 429 for its Retry-After and fails over; the next call skips it', async () => {
    const limited = await s.channel({ name: 'limited', models: 'emb-429', priority: 10 });
    await s.channel({ name: 'spare', base_url: s.backup.url, models: 'emb-429', priority: 1 });
    s.up.behaviour = { kind: 'status', status: 429, message: 'too many requests', headers: { 'retry-after': '30' } };
    const calls = s.counter();
    const first = await s.client.embeddings.create({ model: 'emb-429', input: 'limited text' });
    expect(received(first)).toEqual([asFloat32(ollamaVector('limited text'))]);
    expect(calls()).toEqual([1, 1]);
    const wait = (await s.cooldownUntil(limited)) - Date.now();
    expect(wait).toBeGreaterThan(25_000);
    expect(wait).toBeLessThanOrEqual(30_000);
    s.up.behaviour = { kind: 'ok' };
    await s.client.embeddings.create({ model: 'emb-429', input: 'second' });
    expect(calls()).toEqual([1, 2]);
  });

  it('fails over past a server that has not pulled the model (its 404 is the channel’s fault, not the request’s)', async () => {
    await s.channel({ name: 'unpulled', models: 'emb-404', priority: 10 });
    await s.channel({ name: 'pulled', base_url: s.backup.url, models: 'emb-404', priority: 1 });
    s.up.models = ['something-else'];
    const calls = s.counter();
    const res = await s.client.embeddings.create({ model: 'emb-404', input: 'pull me' });
    expect(received(res)).toEqual([asFloat32(ollamaVector('pull me'))]);
    expect(calls()).toEqual([1, 1]);
  });

  it('ends the call with 400 when Ollama refuses the request (a text past the context with truncate off), trying no other channel', async () => {
    await s.channel({ name: 'strict', models: 'emb-400', priority: 10, config: { truncate: false } });
    await s.channel({ name: 'other', base_url: s.backup.url, models: 'emb-400', priority: 1, config: { truncate: false } });
    s.up.contextChars = 20;
    const calls = s.counter();
    const err = await s.client.embeddings.create({ model: 'emb-400', input: 'a text longer than the context of twenty characters' }).catch((e) => e);
    expect(err).toBeInstanceOf(OpenAI.BadRequestError);
    expect(err.message).toMatch(/Upstream rejected the request: the input length exceeds the context length/);
    expect(calls()).toEqual([1, 0]);
  });
});
