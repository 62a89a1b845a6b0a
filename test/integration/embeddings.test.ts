// Embeddings over HTTP with the official openai client, real Postgres and Redis, and fake upstreams on loopback.
import OpenAI from 'openai';
import { countTokens } from 'gpt-tokenizer/encoding/cl100k_base';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { float32ToString } from '../../src/embeddings/float32.js';
import { embedLocalHash } from '../../src/embeddings/local-hash.js';
import type { GenerationPayload } from '../../src/embeddings/schema.js';
import { loadPayload } from '../../src/jobs/wire.js';
import { HttpClient } from '../helpers/http.js';
import { startTestApp, type TestApp } from '../helpers/services.js';
import { FakeOpenAI, fakeVector } from '../helpers/fake-openai.js';

let t: TestApp;
let user: HttpClient;
let userId: number;
let upA: FakeOpenAI;
let upB: FakeOpenAI;

/** The embeddings.create jobs (any state) whose calls include an input matching `test`, with their calls' inputs. */
async function jobsWithInput(test: (input: string) => boolean) {
  const queue = t.platform.jobs.queues.get('embeddings')!;
  const jobs = await queue.getJobs(['completed', 'failed', 'active', 'waiting', 'delayed'], 0, -1);
  // The payloads are sealed in Redis: opened here as a worker opens them.
  const found = await Promise.all(
    jobs
      .filter((j) => j.name === 'embeddings.create')
      .map(async (j) => ({ job: j, requests: ((await loadPayload(t.platform.db, t.platform.secrets, j.data)) as GenerationPayload).requests })),
  );
  return found.filter(({ requests }) => requests.some((r) => r.inputs.some(test)));
}

async function newKey(body: Record<string, unknown> = { unlimited_quota: true }) {
  return (await user.post('/api/token/', { name: 'k', ...body })).body.data as { id: number; key: string };
}
const v1 = (key: string) => t.anon.withAuth(`Bearer ${key}`);
const oa = (key: string) => new OpenAI({ apiKey: key, baseURL: `${t.url}/v1`, maxRetries: 0 });
/** A float32 vector as a float response carries it: each value the shortest decimal of its float32. */
const printed = (v: ArrayLike<number>) => Array.from(Float32Array.from(v), (x) => Number(float32ToString(x)));
async function channel(body: Record<string, unknown>) {
  const res = await t.root.post('/api/channel/', { type: 'openai', key: 'sk-upstream-secret-AAAA', priority: 0, weight: 1, ...body });
  expect(res.status, res.text).toBe(201);
  return res.body.data as { id: number };
}
async function setQuota(quota: number) {
  await t.root.put(`/api/user/${userId}`, { quota });
}
const quotaOf = async () => (await user.get('/api/user/self')).body.data.quota as number;

beforeAll(async () => {
  upA = await new FakeOpenAI().start();
  upB = await new FakeOpenAI().start();
  t = await startTestApp({ env: { JOB_BACKOFF_MS: '50' } });
  await t.root.post('/api/user/', { username: 'dev', password: 'dev-password', quota: 0 });
  user = new HttpClient(t.url);
  userId = (await user.login('dev', 'dev-password')).body.data.id;
});
afterAll(async () => {
  await t?.close();
  await upA?.stop();
  await upB?.stop();
});

describe('the official openai client against local-hash-v1', () => {
  it('gets base64 (its default) and float vectors, one per input, in order, with cl100k usage', async () => {
    const { key } = await newKey();
    const inputs = ['hello world', '你好，世界', 'The quick brown fox jumps over the lazy dog'];
    const res = await oa(key).embeddings.create({ model: 'local-hash-v1', input: inputs });
    expect(res.object).toBe('list');
    expect(res.model).toBe('local-hash-v1');
    expect(res.data.map((d) => d.index)).toEqual([0, 1, 2]);
    const expectedTokens = inputs.reduce((s, x) => s + countTokens(x), 0);
    expect(res.usage).toEqual({ prompt_tokens: expectedTokens, total_tokens: expectedTokens });
    res.data.forEach((d, i) => {
      expect(d.object).toBe('embedding');
      expect(d.embedding).toHaveLength(384);
      const local = embedLocalHash(inputs[i]!, 384);
      d.embedding.forEach((x, j) => expect(x).toBe(local[j]));
    });
    const floats = await oa(key).embeddings.create({ model: 'local-hash-v1', input: 'hello world', encoding_format: 'float', dimensions: 16 });
    expect(floats.data[0]!.embedding).toEqual(printed(embedLocalHash('hello world', 16)));
  });

  it('base64 is little-endian float32, exactly as OpenAI encodes it', async () => {
    const { key } = await newKey();
    const res = await v1(key).post('/v1/embeddings', { model: 'local-hash-v1', input: 'bytes please', encoding_format: 'base64', dimensions: 8 });
    const buf = Buffer.from(res.body.data[0].embedding, 'base64');
    expect(buf.length).toBe(32);
    const expected = embedLocalHash('bytes please', 8);
    for (let i = 0; i < 8; i++) expect(buf.readFloatLE(i * 4)).toBe(expected[i]);
  });

  it('the body model wins over the path; the path model is the fallback', async () => {
    const { key } = await newKey();
    const viaPath = await v1(key).post('/v1/engines/local-hash-v1/embeddings', { input: 'x y z' });
    expect(viaPath.status).toBe(200);
    expect(viaPath.body.model).toBe('local-hash-v1');
    const bodyWins = await v1(key).post('/v1/engines/does-not-exist/embeddings', { model: 'local-hash-v1', input: 'x y z' });
    expect(bodyWins.status).toBe(200);
    // An empty or null body model is no model: the path's is used (one-api does the same).
    for (const model of ['', null]) {
      const empty = await v1(key).post('/v1/engines/local-hash-v1/embeddings', { model, input: 'x y z' });
      expect(empty.status, JSON.stringify(model)).toBe(200);
      expect(empty.body.model).toBe('local-hash-v1');
    }
    const pathUnknown = await v1(key).post('/v1/engines/does-not-exist/embeddings', { input: 'x' });
    expect(pathUnknown.status).toBe(404);
    expect(pathUnknown.body.error).toMatchObject({ code: 'model_not_found', type: 'invalid_request_error', param: 'model' });
  });

  it('lists the models a key may use', async () => {
    const all = await newKey();
    expect((await oa(all.key).models.list()).data.map((m) => m.id)).toContain('local-hash-v1');
    const limited = await newKey({ unlimited_quota: true, models: 'some-other-model' });
    expect((await v1(limited.key).get('/v1/models')).body.data).toEqual([]);
    expect((await v1(all.key).get('/v1/models/local-hash-v1')).body).toMatchObject({ id: 'local-hash-v1', object: 'model' });
  });

  it('60 concurrent calls share fewer jobs than calls, and each still gets its own vectors back', async () => {
    const { key } = await newKey();
    const texts = Array.from({ length: 60 }, (_, i) => `concurrent request number ${i}`);
    const results = await Promise.all(texts.map((text) => v1(key).post('/v1/embeddings', { model: 'local-hash-v1', input: text, dimensions: 32 })));
    results.forEach((r, i) => {
      expect(r.status).toBe(200);
      expect(r.body.data[0].embedding).toEqual(printed(embedLocalHash(texts[i]!, 32)));
    });
    // Every call is in exactly one job, and the jobs are fewer than the calls (EMBEDDINGS_MAX_IN_FLIGHT is 2 here).
    const jobs = await jobsWithInput((x) => x.startsWith('concurrent request number '));
    const carried = jobs.flatMap(({ requests }) => requests.flatMap((r) => r.inputs)).sort();
    expect(carried).toEqual([...texts].sort());
    expect(jobs.length, `${jobs.length} jobs for 60 calls`).toBeLessThan(texts.length);
    expect(Math.max(...jobs.map(({ requests }) => requests.length))).toBeGreaterThan(1);
  });
});

describe('bad input: 400 in OpenAI shape', () => {
  let key: string;
  beforeAll(async () => {
    key = (await newKey()).key;
  });
  const cases: [string, unknown, string | null][] = [
    ['missing input', { model: 'local-hash-v1' }, 'input'],
    ['null input', { model: 'local-hash-v1', input: null }, 'input'],
    ['empty string', { model: 'local-hash-v1', input: '' }, 'input'],
    ['empty array', { model: 'local-hash-v1', input: [] }, 'input'],
    ['an empty string item', { model: 'local-hash-v1', input: ['a', ''] }, 'input[1]'],
    ['a non-string item', { model: 'local-hash-v1', input: ['a', 5] }, 'input[1]'],
    ['a token array with a negative id', { model: 'local-hash-v1', input: [[1, -2, 3]] }, 'input[0][1]'],
    ['an object input', { model: 'local-hash-v1', input: { text: 'a' } }, 'input'],
    ['2049 items', { model: 'local-hash-v1', input: Array.from({ length: 2049 }, () => 'a') }, 'input'],
    ['an item over 8192 tokens', { model: 'local-hash-v1', input: ['ok', 'word '.repeat(9000)] }, 'input[1]'],
    ['dimensions 0', { model: 'local-hash-v1', input: 'a', dimensions: 0 }, 'dimensions'],
    ['dimensions 4000', { model: 'local-hash-v1', input: 'a', dimensions: 4000 }, 'dimensions'],
    ['dimensions 1.5', { model: 'local-hash-v1', input: 'a', dimensions: 1.5 }, 'dimensions'],
    ['unknown encoding_format', { model: 'local-hash-v1', input: 'a', encoding_format: 'int8' }, 'encoding_format'],
    ['missing model', { input: 'a' }, 'model'],
    ['an empty model', { model: '', input: 'a' }, 'model'],
    ['a non-object body', ['a'], null],
  ];
  for (const [label, body, param] of cases) {
    it(label, async () => {
      const res = await v1(key).post('/v1/embeddings', body);
      expect(res.status).toBe(400);
      expect(res.body.error).toMatchObject({ type: 'invalid_request_error', param });
      expect(typeof res.body.error.message).toBe('string');
      expect(Object.keys(res.body.error).sort()).toEqual(['code', 'message', 'param', 'type']);
    });
  }
  it('a body that is not JSON', async () => {
    const res = await v1(key).post('/v1/embeddings', '{"model": "local-hash-v1", "input": ');
    expect(res.status).toBe(400);
    expect(res.body.error.type).toBe('invalid_request_error');
  });
  it('the openai client surfaces these as BadRequestError', async () => {
    await expect(oa(key).embeddings.create({ model: 'local-hash-v1', input: '' })).rejects.toBeInstanceOf(OpenAI.BadRequestError);
  });
});

describe('keys and models on /v1', () => {
  it('401 for no key, a wrong key, a session-only caller, and disabled, expired or exhausted keys', async () => {
    const body = { model: 'local-hash-v1', input: 'a' };
    const none = await t.anon.post('/v1/embeddings', body);
    expect(none.status).toBe(401);
    expect(none.body.error.code).toBe('missing_api_key');
    expect((await t.anon.post('/v1/embeddings', body, { authorization: 'Bearer sk-wrongwrongwrong' })).body.error.code).toBe('invalid_api_key');
    expect((await user.post('/v1/embeddings', body)).status).toBe(401);
    await expect(oa('sk-nope').embeddings.create(body)).rejects.toBeInstanceOf(OpenAI.AuthenticationError);

    const disabled = await newKey();
    await user.put('/api/token/?status_only=1', { id: disabled.id, status: 2 });
    expect((await v1(disabled.key).post('/v1/embeddings', body)).body.error.code).toBe('token_disabled');
    // At least a second ahead when made (now + 1 s rounded down could be a millisecond ahead, and in the past by the
    // time the request is taken), then waited past.
    const expiresAt = Math.floor(Date.now() / 1000) + 2;
    const expiring = await newKey({ unlimited_quota: true, expired_time: expiresAt });
    await new Promise((r) => setTimeout(r, Math.max(0, expiresAt * 1000 - Date.now()) + 100));
    expect((await v1(expiring.key).post('/v1/embeddings', body)).body.error.code).toBe('token_expired');
    const exhausted = await newKey({ remain_quota: 0 });
    const res = await v1(exhausted.key).post('/v1/embeddings', body);
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('token_exhausted');
  });

  it('403 for a model outside the allow-list or an address outside the subnet', async () => {
    const limited = await newKey({ unlimited_quota: true, models: 'text-embedding-3-small' });
    const res = await v1(limited.key).post('/v1/embeddings', { model: 'local-hash-v1', input: 'a' });
    expect(res.status).toBe(403);
    expect(res.body.error).toMatchObject({ code: 'model_not_allowed', param: 'model' });
    const fenced = await newKey({ unlimited_quota: true, subnet: '192.0.2.0/24' });
    const r2 = await v1(fenced.key).post('/v1/embeddings', { model: 'local-hash-v1', input: 'a' });
    expect(r2.status).toBe(403);
    expect(r2.body.error.code).toBe('ip_not_allowed');
  });

  it('404 for an unknown model', async () => {
    const { key } = await newKey();
    await expect(oa(key).embeddings.create({ model: 'text-embedding-9', input: 'a' })).rejects.toBeInstanceOf(OpenAI.NotFoundError);
  });
});

describe('channels (admin API)', () => {
  it('creates, lists, updates and deletes; the key is encrypted at rest and never shown again', async () => {
    const res = await t.root.post('/api/channel/', {
      name: 'primary',
      base_url: `${upA.url}/`,
      key: 'sk-live-abcdefghijklmnop1234',
      models: ['m-admin'],
      model_mapping: { 'm-admin': 'real-model' },
      priority: 3,
      weight: 2,
      price: 5,
    });
    expect(res.status).toBe(201);
    const c = res.body.data;
    expect(c).toMatchObject({
      name: 'primary',
      base_url: upA.url,
      models: 'm-admin',
      model_mapping: { 'm-admin': 'real-model' },
      priority: 3,
      weight: 2,
      price: 5,
      status: 1,
      type: 'openai',
    });
    expect(c.key).not.toContain('abcdefghijklmnop');
    const row = await t.platform.db('channels').where({ id: c.id }).first();
    expect(JSON.stringify(row)).not.toContain('abcdefghijklmnop');
    expect(t.platform.secrets.decrypt(row.key_enc)).toBe('sk-live-abcdefghijklmnop1234');
    expect((await t.root.get('/api/channel/')).body.data.some((x: { id: number }) => x.id === c.id)).toBe(true);
    expect((await t.root.put('/api/channel/', { id: c.id, priority: 7 })).body.data.priority).toBe(7);
    expect((await t.root.get(`/api/channel/${c.id}`)).body.data.key).toBe(c.key);
    expect((await t.root.delete(`/api/channel/${c.id}`)).status).toBe(200);
    expect((await t.root.get(`/api/channel/${c.id}`)).status).toBe(404);
  });

  it('validates and is admin-only', async () => {
    for (const body of [
      { name: 'x', key: 'k', models: '' },
      { name: 'x', key: '', models: 'm' },
      { name: 'x', key: 'k', models: 'm', base_url: 'ftp://nope' },
      { name: 'x', key: 'k', models: 'm', type: 'anthropic' },
      { name: 'x', key: 'k', models: 'm', price: -1 },
      { name: 'x', key: 'k', models: 'm', model_mapping: '{not json' },
      { name: 'x', key: 'k', models: 'm', weight: -2 },
    ]) {
      const res = await t.root.post('/api/channel/', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.success).toBe(false);
    }
    expect((await user.get('/api/channel/')).status).toBe(403);
    expect((await user.post('/api/channel/', { name: 'x', key: 'k', models: 'm' })).status).toBe(403);
  });
});

describe('relaying to upstream channels', () => {
  let key: string;
  beforeAll(async () => {
    key = (await newKey()).key;
    await setQuota(1_000_000);
  });
  beforeEach(() => {
    upA.calls.length = 0;
    upB.calls.length = 0;
    upA.behaviour = { kind: 'ok', reportUsage: true };
    upB.behaviour = { kind: 'ok', reportUsage: true };
  });

  it('maps the model name, sends the channel key, uses the upstream usage, and returns vectors in input order', async () => {
    await channel({
      name: 'mapped',
      base_url: `${upA.url}/v1`,
      key: 'sk-channel-A-key',
      models: 'text-embedding-3-small',
      model_mapping: { 'text-embedding-3-small': 'upstream-small' },
      price: 1,
    });
    const res = await oa(key).embeddings.create({ model: 'text-embedding-3-small', input: ['alpha', 'beta'], encoding_format: 'float' });
    expect(upA.calls).toHaveLength(1);
    expect(upA.calls[0]).toMatchObject({
      path: '/v1/embeddings',
      authorization: 'Bearer sk-channel-A-key',
      body: { model: 'upstream-small', input: ['alpha', 'beta'] },
    });
    expect(res.data.map((d) => d.embedding)).toEqual([fakeVector('alpha'), fakeVector('beta')].map(printed));
    expect(res.usage.prompt_tokens).toBe(20);
    expect(res.model).toBe('text-embedding-3-small');
  });

  it('caches by (model, dimensions, input): a cached input never goes upstream again', async () => {
    await channel({ name: 'cache', base_url: upA.url, models: 'cache-model', price: 1 });
    await v1(key).post('/v1/embeddings', { model: 'cache-model', input: ['one', 'two'] });
    expect(upA.calls).toHaveLength(1);
    const again = await v1(key).post('/v1/embeddings', { model: 'cache-model', input: ['two', 'three', 'one', 'three'] });
    expect(again.status).toBe(200);
    expect(upA.calls).toHaveLength(2);
    expect(upA.calls[1]!.body.input).toEqual(['three']);
    expect(again.body.data.map((d: { embedding: number[] }) => d.embedding)).toEqual(['two', 'three', 'one', 'three'].map((x) => printed(fakeVector(x))));
    await v1(key).post('/v1/embeddings', { model: 'cache-model', input: ['one', 'two', 'three'] });
    expect(upA.calls).toHaveLength(2);
    // Other dimensions are other vectors.
    await v1(key).post('/v1/embeddings', { model: 'cache-model', input: ['one'], dimensions: 8 });
    expect(upA.calls).toHaveLength(3);
    expect(upA.calls[2]!.body.dimensions).toBe(8);
  });

  it('returns a relayed vector exactly as the upstream wrote it, from the cache too, with no float over 9 significant digits', async () => {
    await channel({ name: 'exact', base_url: upA.url, models: 'exact-model', price: 1 });
    const odd = [-0.0069292835, 0.012345679, 1e-7, -3.4028235e38];
    // One answer's vectors are of one length (the relay refuses a mix).
    upA.fixed.set('exact one', [0.6, 0.8, 3, 0.25]);
    upA.fixed.set('exact two', odd);
    for (let round = 0; round < 2; round++) {
      const res = await v1(key).post('/v1/embeddings', { model: 'exact-model', input: ['exact one', 'exact two'], encoding_format: 'float' });
      expect(res.status, res.text).toBe(200);
      expect(res.text).toContain('"embedding":[0.6,0.8,3,0.25]');
      expect(res.body.data[1].embedding).toEqual(odd);
      const numbers = res.text.match(/-?\d+(?:\.\d+)?(?:e[-+]?\d+)?/gi)!;
      for (const n of numbers) expect(n.replace(/^-/, '').replace(/e.*$/i, '').replace('.', '').replace(/^0+/, '').length, n).toBeLessThanOrEqual(9);
    }
    expect(upA.calls).toHaveLength(1); // the second round came from the cache
    const b64 = await v1(key).post('/v1/embeddings', { model: 'exact-model', input: 'exact one', encoding_format: 'base64' });
    const buf = Buffer.from(b64.body.data[0].embedding, 'base64');
    expect([buf.readFloatLE(0), buf.readFloatLE(4), buf.readFloatLE(8), buf.readFloatLE(12)]).toEqual([Math.fround(0.6), Math.fround(0.8), 3, 0.25]);
  });

  for (const encodings of ['openai', 'ignores', 'float-only'] as const) {
    it(`an upstream that ${{ openai: 'sends base64 when asked (as OpenAI)', ignores: 'sends floats whatever was asked', 'float-only': 'refuses base64 with 400' }[encodings]}: vectors arrive exactly, and the cache keeps their float32 bits`, async () => {
      const up = await new FakeOpenAI().start();
      up.encodings = encodings;
      try {
        const model = `enc-${encodings}`;
        await channel({ name: model, base_url: up.url, models: model, price: 1 });
        up.fixed.set(`${model} a`, [0.6, 0.8, 3]);
        up.fixed.set(`${model} b`, [-0.0069292835, 0.012345679, 1e-7]);
        const res = await v1(key).post('/v1/embeddings', { model, input: [`${model} a`, `${model} b`], encoding_format: 'float' });
        expect(res.status, res.text).toBe(200);
        expect(res.text).toContain('"embedding":[0.6,0.8,3]},{"object":"embedding","index":1,"embedding":[-0.0069292835,0.012345679,1e-7]}');
        const rows = await t.platform.db('embedding_cache').where({ model }).select('vector');
        expect(rows.map((r) => [...new Float32Array(new Uint8Array(r.vector).buffer)]).sort((x, y) => x[0]! - y[0]!)).toEqual([
          [Math.fround(-0.0069292835), Math.fround(0.012345679), Math.fround(1e-7)],
          [Math.fround(0.6), Math.fround(0.8), 3],
        ]);
        // base64 is asked for first (float32 bits as they are, a third of the bytes); a channel that refuses it is asked for floats from then on.
        await v1(key).post('/v1/embeddings', { model, input: `${model} c` });
        expect(up.calls.map((c) => c.body.encoding_format)).toEqual(encodings === 'float-only' ? ['base64', 'float', 'float'] : ['base64', 'base64']);
      } finally {
        await up.stop();
      }
    });
  }

  it('an answer holding NaN or a value past float32 is unusable: 502 after the retries, nothing charged, nothing cached', async () => {
    await channel({ name: 'nan', base_url: upA.url, models: 'nan-model', price: 1000 });
    upA.fixed.set('nan base64', [0.1, Number.NaN, 0.3]);
    const before = await quotaOf();
    const res = await v1(key).post('/v1/embeddings', { model: 'nan-model', input: 'nan base64', encoding_format: 'float' });
    expect(res.status, res.text).toBe(502);
    expect(res.body.error.message).toMatch(/not a finite float32/);
    upA.encodings = 'ignores';
    try {
      upA.fixed.set('too big', [0.1, 1e39, 0.3]);
      expect((await v1(key).post('/v1/embeddings', { model: 'nan-model', input: 'too big' })).status).toBe(502);
    } finally {
      upA.encodings = 'openai';
    }
    expect(await quotaOf()).toBe(before);
    expect(await t.platform.db('embedding_cache').where({ model: 'nan-model' })).toEqual([]);
  });

  it('keeps an input asked for again in memory: with its cache row gone, this process still answers it without the upstream', async () => {
    await channel({ name: 'hot', base_url: upA.url, models: 'hot-model', price: 1 });
    const first = await v1(key).post('/v1/embeddings', { model: 'hot-model', input: 'hot input' });
    expect(first.status).toBe(200);
    // Seen once: in Postgres (written before the call was answered), not yet in memory.
    const rows = await t.platform.db('embedding_cache').where({ model: 'hot-model' }).select('*');
    expect(rows).toHaveLength(1);
    await t.platform.db('embedding_cache').where({ model: 'hot-model' }).delete();
    expect((await v1(key).post('/v1/embeddings', { model: 'hot-model', input: 'hot input' })).status).toBe(200);
    expect(upA.calls).toHaveLength(2);
    // Asked for a second time, it is read back from Postgres and kept in memory too.
    expect((await v1(key).post('/v1/embeddings', { model: 'hot-model', input: 'hot input' })).status).toBe(200);
    await t.platform.db('embedding_cache').where({ model: 'hot-model' }).delete();
    const again = await v1(key).post('/v1/embeddings', { model: 'hot-model', input: 'hot input' });
    expect(again.status).toBe(200);
    expect(again.body.data[0].embedding).toEqual(first.body.data[0].embedding);
    expect(upA.calls).toHaveLength(2);
  });

  it('counts tokens locally when the upstream reports no usage', async () => {
    await channel({ name: 'nousage', base_url: upA.url, models: 'nousage-model', price: 1 });
    upA.behaviour = { kind: 'ok', reportUsage: false };
    const res = await v1(key).post('/v1/embeddings', { model: 'nousage-model', input: 'count these four words' });
    expect(res.body.usage.prompt_tokens).toBe(countTokens('count these four words'));
  });

  it('fails over from a failing channel to the next by priority', async () => {
    await channel({ name: 'A-high', base_url: upA.url, models: 'fo-model', priority: 10, price: 1 });
    await channel({ name: 'B-low', base_url: upB.url, models: 'fo-model', priority: 1, price: 1 });
    upA.behaviour = { kind: 'status', status: 503 };
    const res = await v1(key).post('/v1/embeddings', { model: 'fo-model', input: 'failover' });
    expect(res.status).toBe(200);
    expect(upA.calls).toHaveLength(1);
    expect(upB.calls).toHaveLength(1);
    upA.behaviour = { kind: 'ok' };
    await v1(key).post('/v1/embeddings', { model: 'fo-model', input: 'back to A' });
    expect(upA.calls).toHaveLength(2);
    expect(upB.calls).toHaveLength(1);
  });

  it('honours Retry-After: a 429 channel is skipped until it has passed', async () => {
    await channel({ name: 'A-rl', base_url: upA.url, models: 'rl-model', priority: 10, price: 1 });
    await channel({ name: 'B-rl', base_url: upB.url, models: 'rl-model', priority: 1, price: 1 });
    upA.behaviour = { kind: 'status', status: 429, retryAfter: '2' };
    expect((await v1(key).post('/v1/embeddings', { model: 'rl-model', input: 'first' })).status).toBe(200);
    expect([upA.calls.length, upB.calls.length]).toEqual([1, 1]);
    upA.behaviour = { kind: 'ok' };
    expect((await v1(key).post('/v1/embeddings', { model: 'rl-model', input: 'second' })).status).toBe(200);
    expect([upA.calls.length, upB.calls.length]).toEqual([1, 2]);
    await new Promise((r) => setTimeout(r, 2_100));
    expect((await v1(key).post('/v1/embeddings', { model: 'rl-model', input: 'third' })).status).toBe(200);
    expect([upA.calls.length, upB.calls.length]).toEqual([2, 2]);
  });

  it("a lone rate-limited channel gives 429 at once, calling it once, with the channel's remaining Retry-After", async () => {
    await channel({ name: 'only-rl', base_url: upA.url, models: 'lonely-model', price: 1 });
    upA.behaviour = { kind: 'status', status: 429, retryAfter: '30' };
    const res = await v1(key).post('/v1/embeddings', { model: 'lonely-model', input: 'lonely input' });
    expect(res.status).toBe(429);
    expect(res.body.error).toMatchObject({ type: 'rate_limit_error', code: 'upstream_rate_limited' });
    expect(upA.calls).toHaveLength(1);
    expect(Number(res.headers.get('retry-after'))).toBe(30);
    // The channel is set aside: the next call does not reach it, and says how long is left.
    const again = await v1(key).post('/v1/embeddings', { model: 'lonely-model', input: 'lonely input again' });
    expect(again.status).toBe(429);
    expect(upA.calls).toHaveLength(1);
    expect(Number(again.headers.get('retry-after'))).toBeGreaterThanOrEqual(28);
    expect(Number(again.headers.get('retry-after'))).toBeLessThanOrEqual(30);
  });

  it('disables a channel that answers 401, and an admin sees why', async () => {
    const bad = await channel({ name: 'revoked', base_url: upA.url, models: 'auth-model', priority: 10, price: 1 });
    await channel({ name: 'good', base_url: upB.url, models: 'auth-model', priority: 1, price: 1 });
    upA.behaviour = { kind: 'status', status: 401, message: 'Incorrect API key provided' };
    expect((await v1(key).post('/v1/embeddings', { model: 'auth-model', input: 'x' })).status).toBe(200);
    const seen = (await t.root.get(`/api/channel/${bad.id}`)).body.data;
    expect(seen.status).toBe(3);
    expect(seen.status_reason).toMatch(/401.*Incorrect API key provided/);
    upA.calls.length = 0;
    await v1(key).post('/v1/embeddings', { model: 'auth-model', input: 'y' });
    expect(upA.calls).toHaveLength(0);
    // Re-enabling clears the reason.
    const re = (await t.root.put('/api/channel/', { id: bad.id, status: 1 })).body.data;
    expect([re.status, re.status_reason]).toEqual([1, null]);
  });

  it('a channel that refused its key is asked once in a call, not again in its later rounds', async () => {
    await channel({ name: 'refusing', base_url: upA.url, models: 'refusing-model', price: 1 });
    upA.behaviour = { kind: 'status', status: 401, message: 'Incorrect API key provided' };
    upA.calls.length = 0;
    const res = await v1(key).post('/v1/embeddings', { model: 'refusing-model', input: 'once' });
    expect(res.status).toBe(502);
    expect(res.body.error.message).toMatch(/refused its key/);
    expect(upA.calls).toHaveLength(1);
  });

  it("502 when every channel fails; 503 when every channel is disabled; a 4xx from upstream is the caller's", async () => {
    await channel({ name: 'broken', base_url: upA.url, models: 'broken-model', price: 1 });
    upA.behaviour = { kind: 'status', status: 500 };
    const res = await v1(key).post('/v1/embeddings', { model: 'broken-model', input: 'x' });
    expect(res.status).toBe(502);
    expect(res.body.error.type).toBe('upstream_error');
    const off = await channel({ name: 'off', base_url: upA.url, models: 'off-model', price: 1, status: 2 });
    expect(off.id).toBeGreaterThan(0);
    expect((await v1(key).post('/v1/embeddings', { model: 'off-model', input: 'x' })).status).toBe(503);
    upA.behaviour = { kind: 'status', status: 400, message: 'input too weird' };
    await channel({ name: 'picky', base_url: upA.url, models: 'picky-model', price: 1 });
    const picky = await v1(key).post('/v1/embeddings', { model: 'picky-model', input: 'x' });
    expect(picky.status).toBe(400);
    expect(picky.body.error.message).toMatch(/input too weird/);
  });
});

describe('pricing and quota', () => {
  beforeEach(() => {
    upA.behaviour = { kind: 'ok', reportUsage: true };
  });

  it('refuses an upstream model without a price, and never charges for it', async () => {
    await channel({ name: 'unpriced', base_url: upA.url, models: 'free-lunch', price: null });
    const { key } = await newKey();
    const res = await v1(key).post('/v1/embeddings', { model: 'free-lunch', input: 'x' });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'model_price_not_set', param: 'model' });
    expect(res.body.error.message).toMatch(/no price/);
  });

  it('charges ceil(tokens × price / 1000) to the user and the key; an unlimited key spares only itself', async () => {
    await channel({ name: 'priced', base_url: upA.url, models: 'priced-model', price: 150 });
    await setQuota(1000);
    const limited = await newKey({ remain_quota: 500 });
    // The fake reports 10 tokens per input: 2 inputs → 20 tokens → ceil(20 × 150 / 1000) = 3.
    await v1(limited.key).post('/v1/embeddings', { model: 'priced-model', input: ['p1', 'p2'] });
    expect(await quotaOf()).toBe(997);
    const tok = (await user.get(`/api/token/${limited.id}`)).body.data;
    expect([tok.remain_quota, tok.used_quota]).toEqual([497, 3]);
    const unlimited = await newKey({ unlimited_quota: true });
    await v1(unlimited.key).post('/v1/embeddings', { model: 'priced-model', input: ['p3'] });
    expect(await quotaOf()).toBe(995);
    expect((await user.get(`/api/token/${unlimited.id}`)).body.data).toMatchObject({ remain_quota: 0, used_quota: 2 });
    expect((await user.get('/api/user/self')).body.data.used_quota).toBeGreaterThanOrEqual(5);
  });

  it('403 insufficient_quota says whether the user or the key ran out, and charges nothing', async () => {
    await channel({ name: 'pricey', base_url: upA.url, models: 'pricey-model', price: 100_000 });
    await setQuota(10);
    const { key } = await newKey({ unlimited_quota: true });
    const res = await v1(key).post('/v1/embeddings', { model: 'pricey-model', input: 'hello' });
    expect(res.status).toBe(403);
    expect(res.body.error).toMatchObject({ type: 'insufficient_quota', code: 'insufficient_quota' });
    expect(res.body.error.message).toMatch(/your account's quota/);
    await setQuota(1_000_000);
    const small = await newKey({ remain_quota: 5 });
    const r2 = await v1(small.key).post('/v1/embeddings', { model: 'pricey-model', input: 'hello' });
    expect(r2.status).toBe(403);
    expect(r2.body.error).toMatchObject({ type: 'insufficient_quota', code: 'insufficient_quota' });
    expect(r2.body.error.message).toMatch(/this API key's remain_quota/);
    expect(await quotaOf()).toBe(1_000_000);
    expect((await user.get(`/api/token/${small.id}`)).body.data.remain_quota).toBe(5);
  });

  it('concurrent calls never overspend: quota for exactly 5 calls, 20 at once → 5 succeed, 0 left', async () => {
    // The fake reports no usage, so the local count settles each call at exactly what it reserved.
    await channel({ name: 'race', base_url: upA.url, models: 'race-model', price: 100 });
    upA.behaviour = { kind: 'ok', reportUsage: false };
    const perCall = Math.ceil((countTokens('race') * 100) / 1000);
    await setQuota(perCall * 5);
    const { key } = await newKey({ unlimited_quota: true });
    const results = await Promise.all(Array.from({ length: 20 }, () => v1(key).post('/v1/embeddings', { model: 'race-model', input: 'race' })));
    expect(results.filter((r) => r.status === 200)).toHaveLength(5);
    expect(results.filter((r) => r.status === 403)).toHaveLength(15);
    expect(await quotaOf()).toBe(0);
  });

  it('a failed call gives its reservation back', async () => {
    await channel({ name: 'fails', base_url: upA.url, models: 'fail-model', price: 1000 });
    await setQuota(100);
    upA.behaviour = { kind: 'status', status: 500 };
    const { key } = await newKey({ unlimited_quota: true });
    expect((await v1(key).post('/v1/embeddings', { model: 'fail-model', input: 'x' })).status).toBe(502);
    expect(await quotaOf()).toBe(100);
  });

  it('local-hash-v1 is free by default and counts requests', async () => {
    await setQuota(0);
    const { key } = await newKey({ unlimited_quota: true });
    const before = (await user.get('/api/user/self')).body.data.request_count;
    expect((await v1(key).post('/v1/embeddings', { model: 'local-hash-v1', input: 'free' })).status).toBe(200);
    await t.platform.usage.flush();
    expect((await user.get('/api/user/self')).body.data.request_count).toBe(before + 1);
  });
});
