// The trained built-in model use-lite over HTTP: the official openai client, meaning, dimensions, token limit,
// unsupported scripts, batching on the worker, readiness. Real Postgres and Redis; the model runs in this
// process's workers (USE_LITE_PRELOAD=false here: it loads on the first call).
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useLiteBatcher, useLiteReadyKey } from '../../src/embeddings/use-lite-worker.js';
import { HttpClient } from '../helpers/http.js';
import { startTestApp, type TestApp } from '../helpers/services.js';

let t: TestApp;
let key: string;
let oa: OpenAI;

const cosine = (a: number[], b: number[]) =>
  a.reduce((s, x, i) => s + x * b[i]!, 0) / Math.sqrt(a.reduce((s, x) => s + x * x, 0) * b.reduce((s, x) => s + x * x, 0));
const norm = (a: number[]) => Math.sqrt(a.reduce((s, x) => s + x * x, 0));

beforeAll(async () => {
  t = await startTestApp();
  key = (await t.root.post('/api/token/', { name: 'use-lite', unlimited_quota: true })).body.data.key as string;
  oa = new OpenAI({ apiKey: key, baseURL: `${t.url}/v1`, maxRetries: 0 });
}, 60_000);
afterAll(async () => {
  await t?.close();
});

describe('use-lite through /v1/embeddings', () => {
  it('gives the official openai client 512-dimension unit vectors, as float and as base64, the same either way', async () => {
    const inputs = ['The car would not start this morning.', 'My automobile failed to turn on.'];
    const b64 = await oa.embeddings.create({ model: 'use-lite', input: inputs }); // the client's default: base64
    const floats = await oa.embeddings.create({ model: 'use-lite', input: inputs, encoding_format: 'float' });
    expect(b64.model).toBe('use-lite');
    for (const res of [b64, floats]) {
      expect(res.data.map((d) => d.index)).toEqual([0, 1]);
      for (const d of res.data) {
        expect(d.embedding).toHaveLength(512);
        expect(norm(d.embedding)).toBeCloseTo(1, 4);
      }
    }
    b64.data.forEach((d, i) => d.embedding.forEach((x, j) => expect(Math.fround(floats.data[i]!.embedding[j]!)).toBe(x)));
    expect((await oa.models.list()).data.map((m) => m.id)).toContain('use-lite');
  }, 60_000);

  it('scores every paraphrase pair above every unrelated pairing of the same sentences', async () => {
    const pairs: [string, string][] = [
      ['The car would not start this morning.', 'My automobile failed to turn on today.'],
      ['How do I reset my password?', 'I forgot my login credentials and need new ones.'],
      ['The weather is lovely and sunny today.', 'It is a beautiful bright day outside.'],
      ['She is reading a novel in the library.', 'A woman is enjoying a book at the library.'],
      ['The stock market fell sharply on Monday.', 'Share prices dropped steeply at the start of the week.'],
      ['Please send me the invoice for last month.', 'Could you forward last month’s bill?'],
      ['The cat is sleeping on the sofa.', 'A kitten naps on the couch.'],
      ['Our flight was delayed by three hours.', 'The plane left three hours late.'],
    ];
    const res = await oa.embeddings.create({ model: 'use-lite', input: pairs.flat(), encoding_format: 'float' });
    const v = res.data.map((d) => d.embedding);
    const failures: string[] = [];
    pairs.forEach((_, i) => {
      const same = cosine(v[2 * i]!, v[2 * i + 1]!);
      pairs.forEach((__, j) => {
        if (i === j) return;
        const other = Math.max(cosine(v[2 * i]!, v[2 * j + 1]!), cosine(v[2 * j]!, v[2 * i + 1]!));
        if (other >= same) failures.push(`pair ${i} (${same.toFixed(2)}) vs pairing with ${j} (${other.toFixed(2)})`);
      });
    });
    expect(failures).toEqual([]);
  });

  it('answers a smaller `dimensions` as text-embedding-3 does: the first n components, re-normalised', async () => {
    const input = 'Switchyard turns long-running work into jobs.';
    const full = (await oa.embeddings.create({ model: 'use-lite', input, encoding_format: 'float' })).data[0]!.embedding;
    const short = (await oa.embeddings.create({ model: 'use-lite', input, encoding_format: 'float', dimensions: 64 })).data[0]!.embedding;
    expect(short).toHaveLength(64);
    expect(norm(short)).toBeCloseTo(1, 5);
    const head = full.slice(0, 64);
    const n = norm(head);
    short.forEach((x, i) => expect(x).toBeCloseTo(head[i]! / n, 6));
    const tooMany = await t.anon.withAuth(`Bearer ${key}`).post('/v1/embeddings', { model: 'use-lite', input, dimensions: 513 });
    expect(tooMany.status).toBe(400);
    expect(tooMany.body.error).toMatchObject({ param: 'dimensions' });
  });

  it("counts the model's own pieces in usage, at most 128 per input (longer inputs are cut there)", async () => {
    const short = await oa.embeddings.create({ model: 'use-lite', input: 'hello world' });
    expect(short.usage.prompt_tokens).toBeGreaterThan(0);
    expect(short.usage.prompt_tokens).toBeLessThan(6);
    const long = 'Queues let slow work happen later while the caller gets an answer now. '.repeat(40);
    const res = await oa.embeddings.create({ model: 'use-lite', input: [long, long.slice(0, long.length / 2)] });
    expect(res.usage.prompt_tokens).toBe(256);
    // Text past the limit does not change the vector.
    const [a, b] = res.data.map((d) => d.embedding);
    expect(cosine(a!, b!)).toBeGreaterThan(0.9999);
  });

  it('refuses a request of more than 16,384 pieces in all (the model would be held for more than ~13 s) with 400 max_tokens_per_request', async () => {
    const long = 'the quick brown fox jumps over the lazy dog '.repeat(20); // well past 128 pieces: counts 128
    const res = await t.anon.post(
      '/v1/embeddings',
      { model: 'use-lite', input: Array.from({ length: 129 }, (_, i) => `${i} ${long}`) },
      { authorization: `Bearer ${key}` },
    );
    expect(res.status, res.text).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'max_tokens_per_request', param: 'input' });
    expect(res.body.error.message).toMatch(/16384 use-lite pieces/);
  });

  it('refuses Chinese text with a 400 naming the problem, and embeds it when the caller opts in', async () => {
    const v1 = t.anon.withAuth(`Bearer ${key}`);
    const refused = await v1.post('/v1/embeddings', { model: 'use-lite', input: ['An English sentence.', '您的验证码是 7351，5分钟内有效。'] });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ param: 'input[1]', code: 'unsupported_text', type: 'invalid_request_error' });
    expect(refused.body.error.message).toMatch(/Chinese/);
    const allowed = await v1.post('/v1/embeddings', { model: 'use-lite', input: '您的验证码是 7351', allow_unsupported_text: true });
    expect(allowed.status, allowed.text).toBe(200);
    expect(allowed.body.data[0].embedding).toHaveLength(512);
    const badFlag = await v1.post('/v1/embeddings', { model: 'use-lite', input: 'x', allow_unsupported_text: 'yes' });
    expect(badFlag.status).toBe(400);
    expect(badFlag.body.error).toMatchObject({ param: 'allow_unsupported_text' });
  });

  it('batches the texts of concurrent calls into fewer model calls than calls', async () => {
    const batcher = useLiteBatcher();
    const [calls0, texts0] = [batcher.calls, batcher.texts];
    const inputs = Array.from({ length: 24 }, (_, i) => `Concurrent request number ${i} about message queues.`);
    const answers = await Promise.all(inputs.map((input) => oa.embeddings.create({ model: 'use-lite', input })));
    expect(answers.every((a) => a.data[0]!.embedding.length === 512)).toBe(true);
    expect(batcher.texts - texts0).toBe(24);
    expect(batcher.calls - calls0, `${batcher.calls - calls0} model calls for 24 requests`).toBeLessThan(24);
  });

  it('says in /readyz that a worker has use-lite loaded, and the worker says so in /metrics', async () => {
    const ready = await t.anon.get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body.models['use-lite']).toBe('loaded by 1 worker process');
    // This test app runs its workers in process, so its /metrics is the worker's too.
    expect((await t.anon.get('/metrics')).text).toMatch(/^switchyard_model_ready\{model="use-lite"\} 1$/m);
  });
});

describe('use-lite at a price (LOCAL_MODEL_PRICE=1000: a quota per piece)', () => {
  let priced: TestApp;
  beforeAll(async () => {
    priced = await startTestApp({ env: { LOCAL_MODEL_PRICE: '1000' } });
  }, 60_000);
  afterAll(async () => {
    await priced?.close();
  });

  it("reserves what it charges, its own pieces: a long input fits a key that cl100k's count would refuse, and a short one never takes more than the user has", async () => {
    const made = await priced.root.post('/api/user/', { username: 'pieces', password: 'pieces-password', quota: 1_000 });
    expect(made.status, made.text).toBe(201);
    const session = new HttpClient(priced.url);
    await session.login('pieces', 'pieces-password');
    const limited = (await session.post('/api/token/', { name: 'limited', remain_quota: 300 })).body.data.key as string;
    const call = (k: string, input: string) => priced.anon.post('/v1/embeddings', { model: 'use-lite', input }, { authorization: `Bearer ${k}` });
    const user = async () => priced.platform.db('users').where({ username: 'pieces' }).first('quota', 'used_quota');
    // 540 cl100k tokens, 128 pieces (the most use-lite reads): costs 128.
    const long = await call(limited, 'the quick brown fox jumps over the lazy dog '.repeat(60));
    expect(long.status, long.text).toBe(200);
    expect(long.body.usage.prompt_tokens).toBe(128);
    expect(await user()).toEqual({ quota: 872, used_quota: 128 });
    // 2 cl100k tokens, 3 pieces: with 2 left, refused (the reservation is for 3), not charged past zero.
    await priced.platform.db('users').where({ username: 'pieces' }).update({ quota: 2 });
    const short = await call(limited, 'hello world');
    expect(short.status, short.text).toBe(403);
    expect(await user()).toEqual({ quota: 2, used_quota: 128 });
  }, 60_000);

  it("a worker that stops takes itself off /readyz's count of use-lite workers at once (not 30 s later)", async () => {
    // Its worker said it has the model when it ran the calls of the test before.
    const key = useLiteReadyKey(priced.platform);
    expect(await t.platform.redis.zcard(key)).toBe(1);
    await priced.close();
    expect(await t.platform.redis.zcard(key)).toBe(0);
  });
});
