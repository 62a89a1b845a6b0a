// docs/embeddings.md claims about the gateway that no other test checked (issue 11): coalescing, cool-downs,
// auto-disable on 403, timeouts, and what a call is charged. Real Postgres and Redis; fake upstreams on loopback.
import { countTokens } from 'gpt-tokenizer/encoding/cl100k_base';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { float32ToString } from '../../src/embeddings/float32.js';
import { embedLocalHash } from '../../src/embeddings/local-hash.js';
import type { GenerationPayload } from '../../src/embeddings/schema.js';
import { loadPayload } from '../../src/jobs/wire.js';
import { FakeOpenAI } from '../helpers/fake-openai.js';
import { HttpClient } from '../helpers/http.js';
import { startTestApp, type TestApp } from '../helpers/services.js';
import { spawnServer, type Spawned } from '../helpers/spawn.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function addChannel(app: TestApp, body: Record<string, unknown>): Promise<number> {
  const res = await app.root.post('/api/channel/', { type: 'openai', key: 'sk-upstream-secret-AAAA', priority: 0, weight: 1, ...body });
  expect(res.status, res.text).toBe(201);
  return res.body.data.id as number;
}

/** A common user with `quota`, logged in, and an unlimited API key of theirs (the user still pays). */
async function payer(app: TestApp, username: string, quota: number) {
  expect((await app.root.post('/api/user/', { username, password: `${username}-password`, quota })).status).toBe(201);
  const session = new HttpClient(app.url);
  await session.login(username, `${username}-password`);
  const key = (await session.post('/api/token/', { name: 'k', unlimited_quota: true })).body.data.key as string;
  return {
    key,
    v1: app.anon.withAuth(`Bearer ${key}`),
    quota: async () => (await session.get('/api/user/self')).body.data.quota as number,
  };
}

let t: TestApp;
let upA: FakeOpenAI;
let upB: FakeOpenAI;
let limiter: FakeOpenAI;

beforeAll(async () => {
  upA = await new FakeOpenAI().start();
  upB = await new FakeOpenAI().start();
  limiter = await new FakeOpenAI().start();
  t = await startTestApp({ env: { UPSTREAM_TIMEOUT_MS: '400', EMBEDDINGS_MAX_IN_FLIGHT: '2' } });
});
afterAll(async () => {
  await t?.close();
  await upA?.stop();
  await upB?.stop();
  await limiter?.stop();
});
beforeEach(() => {
  upA.calls.length = 0;
  upB.calls.length = 0;
  upA.behaviour = { kind: 'ok', reportUsage: true };
  upB.behaviour = { kind: 'ok', reportUsage: true };
});

describe('coalescing local-model calls', () => {
  it('40 concurrent local-hash-v1 calls travel in fewer embeddings.create jobs than calls, each answered with its own vector', async () => {
    const { v1 } = await payer(t, 'coalesced', 0);
    const texts = Array.from({ length: 40 }, (_, i) => `coalesce me ${i}`);
    const answers = await Promise.all(texts.map((input) => v1.post('/v1/embeddings', { model: 'local-hash-v1', input, dimensions: 8 })));
    answers.forEach((a, i) => {
      expect(a.status, a.text).toBe(200);
      expect(a.body.data[0].embedding).toEqual(Array.from(embedLocalHash(texts[i]!, 8), (x) => Number(float32ToString(x))));
    });
    const queue = t.platform.jobs.queues.get('embeddings')!;
    // The payloads are sealed in Redis: opened here as a worker opens them.
    const payloads = await Promise.all(
      (await queue.getJobs(['completed', 'failed', 'active', 'waiting', 'delayed'], 0, -1))
        .filter((j) => j.name === 'embeddings.create')
        .map(async (j) => (await loadPayload(t.platform.db, t.platform.secrets, j.data)) as GenerationPayload),
    );
    const jobs = payloads.map((pl) => pl.requests.flatMap((r) => r.inputs)).filter((inputs) => inputs.some((x) => x.startsWith('coalesce me ')));
    // Every call rode in exactly one job, and the jobs were fewer than the calls.
    expect(jobs.flat().sort()).toEqual([...texts].sort());
    expect(jobs.length, `${jobs.length} jobs for ${texts.length} calls`).toBeLessThan(texts.length);
  });
});

describe('rate-limited channels (429)', () => {
  it('honours retry-after-ms: the channel is set aside for that long (1.5 s), not the 5 s default, then used again', async () => {
    const { v1 } = await payer(t, 'ms-waiter', 1_000_000);
    await addChannel(t, { name: 'ms-limited', base_url: limiter.url, models: 'ms-model', priority: 10, price: 1 });
    await addChannel(t, { name: 'ms-spare', base_url: upB.url, models: 'ms-model', priority: 1, price: 1 });
    limiter.calls.length = 0;
    limiter.behaviour = { kind: 'status', status: 429, message: 'slow down', headers: { 'retry-after-ms': '1500' }, times: 1 };
    expect((await v1.post('/v1/embeddings', { model: 'ms-model', input: 'one' })).status).toBe(200);
    expect([limiter.calls.length, upB.calls.length]).toEqual([1, 1]);
    // Set aside: the next call goes straight to the spare.
    expect((await v1.post('/v1/embeddings', { model: 'ms-model', input: 'two' })).status).toBe(200);
    expect([limiter.calls.length, upB.calls.length]).toEqual([1, 2]);
    // Past 1.5 s (well before 5 s) the channel is tried again.
    await sleep(2_000);
    expect((await v1.post('/v1/embeddings', { model: 'ms-model', input: 'three' })).status).toBe(200);
    expect([limiter.calls.length, upB.calls.length]).toEqual([2, 2]);
  });

  it('without Retry-After or retry-after-ms, the channel is set aside for 5 s: still skipped after 3 s, used again after 5.5 s', async () => {
    const { v1 } = await payer(t, 'default-waiter', 1_000_000);
    await addChannel(t, { name: 'default-limited', base_url: limiter.url, models: 'default-model', priority: 10, price: 1 });
    await addChannel(t, { name: 'default-spare', base_url: upB.url, models: 'default-model', priority: 1, price: 1 });
    limiter.calls.length = 0;
    limiter.behaviour = { kind: 'status', status: 429, message: 'slow down', times: 1 };
    expect((await v1.post('/v1/embeddings', { model: 'default-model', input: 'one' })).status).toBe(200);
    const limitedAt = Date.now();
    expect([limiter.calls.length, upB.calls.length]).toEqual([1, 1]);
    await sleep(3_000);
    expect((await v1.post('/v1/embeddings', { model: 'default-model', input: 'two' })).status).toBe(200);
    expect([limiter.calls.length, upB.calls.length]).toEqual([1, 2]);
    await sleep(Math.max(0, limitedAt + 5_500 - Date.now()));
    expect((await v1.post('/v1/embeddings', { model: 'default-model', input: 'three' })).status).toBe(200);
    expect([limiter.calls.length, upB.calls.length]).toEqual([2, 2]);
  });
});

describe('a channel whose upstream answers 403', () => {
  it('is disabled automatically (status 3) with the upstream message in status_reason, and no longer called', async () => {
    const { v1 } = await payer(t, 'forbidden-caller', 1_000_000);
    const refused = await addChannel(t, { name: 'refused-403', base_url: upA.url, models: 'auth403-model', priority: 10, price: 1 });
    await addChannel(t, { name: 'fine', base_url: upB.url, models: 'auth403-model', priority: 1, price: 1 });
    upA.behaviour = { kind: 'status', status: 403, message: 'Your organization is not allowed to use this model' };
    expect((await v1.post('/v1/embeddings', { model: 'auth403-model', input: 'x' })).status).toBe(200);
    expect([upA.calls.length, upB.calls.length]).toEqual([1, 1]);
    const seen = (await t.root.get(`/api/channel/${refused}`)).body.data;
    expect(seen.status).toBe(3);
    expect(seen.status_reason).toBe('upstream answered 403: Your organization is not allowed to use this model');
    expect((await v1.post('/v1/embeddings', { model: 'auth403-model', input: 'y' })).status).toBe(200);
    expect([upA.calls.length, upB.calls.length]).toEqual([1, 2]);
  });
});

describe('pricing', () => {
  it('a model served by channels of prices 1000 and 3000 is charged at 3000, even when the cheaper channel serves it', async () => {
    const p = await payer(t, 'price-payer', 1_000);
    // The cheap channel has the higher priority, so it is the one that answers.
    await addChannel(t, { name: 'cheap', base_url: upA.url, models: 'two-price-model', priority: 10, price: 1000 });
    await addChannel(t, { name: 'dear', base_url: upB.url, models: 'two-price-model', priority: 1, price: 3000 });
    const res = await p.v1.post('/v1/embeddings', { model: 'two-price-model', input: 'priced input' });
    expect(res.status, res.text).toBe(200);
    expect([upA.calls.length, upB.calls.length]).toEqual([1, 0]);
    // The fake reports 10 tokens per input: ceil(10 × 3000 / 1000) = 30 (at 1000 it would be 10).
    expect(res.body.usage.prompt_tokens).toBe(10);
    expect(await p.quota()).toBe(1_000 - 30);
  });

  it('an input answered from the cache is billed like any other: same tokens, same charge, no upstream call', async () => {
    const p = await payer(t, 'cache-payer', 1_000);
    await addChannel(t, { name: 'cached-billing', base_url: upA.url, models: 'cache-billed-model', price: 1000 });
    // No usage reported: both calls are counted with the local tokenizer, so they must cost the same.
    upA.behaviour = { kind: 'ok', reportUsage: false };
    const input = 'a sentence that will be cached after the first call';
    const tokens = countTokens(input);
    const cost = Math.ceil((tokens * 1000) / 1000);
    expect(cost).toBeGreaterThan(0);
    const first = await p.v1.post('/v1/embeddings', { model: 'cache-billed-model', input });
    expect(first.status, first.text).toBe(200);
    expect(upA.calls).toHaveLength(1);
    expect(await p.quota()).toBe(1_000 - cost);
    const second = await p.v1.post('/v1/embeddings', { model: 'cache-billed-model', input });
    expect(second.status, second.text).toBe(200);
    expect(upA.calls).toHaveLength(1);
    expect(second.body.usage).toEqual({ prompt_tokens: tokens, total_tokens: tokens });
    expect(await p.quota()).toBe(1_000 - 2 * cost);
  });
});

describe('an upstream that does not answer within UPSTREAM_TIMEOUT_MS (400 ms here)', () => {
  it('answers 504 (not 502, not 202) once the channel has been tried 3 times', async () => {
    const { v1 } = await payer(t, 'timeout-caller', 1_000_000);
    await addChannel(t, { name: 'hangs', base_url: upA.url, models: 'hang-model', price: 1 });
    upA.behaviour = { kind: 'hang' };
    const res = await v1.post('/v1/embeddings', { model: 'hang-model', input: 'anyone there?' });
    expect(res.status, res.text).toBe(504);
    expect(res.body.error).toMatchObject({ type: 'upstream_error', code: 'upstream_error' });
    expect(res.body.error.message).toMatch(/timed out/);
    expect(upA.calls).toHaveLength(3);
  });
});

describe('/v1 when the relay outlives SYNC_WAIT_MS', () => {
  let slow: TestApp;
  let hanging: FakeOpenAI;
  beforeAll(async () => {
    hanging = await new FakeOpenAI().start();
    hanging.behaviour = { kind: 'hang' };
    slow = await startTestApp({ env: { SYNC_WAIT_MS: '800', UPSTREAM_TIMEOUT_MS: '30000' } });
  });
  afterAll(async () => {
    await hanging?.stop();
    await slow?.close();
  });

  it('answers 504 timeout in OpenAI shape, never 202, even when the client sends Prefer: respond-async', async () => {
    const { v1 } = await payer(slow, 'impatient', 1_000_000);
    await addChannel(slow, { name: 'never-answers', base_url: hanging.url, models: 'slow-model', price: 1 });
    for (const headers of [{}, { prefer: 'respond-async' }] as Record<string, string>[]) {
      const res = await v1.post('/v1/embeddings', { model: 'slow-model', input: 'wait for me' }, headers);
      expect(res.status, res.text).toBe(504);
      expect(res.headers.get('location')).toBeNull();
      expect(res.body.error).toMatchObject({ code: 'timeout', type: 'server_error' });
    }
  });
});

describe('cool-downs are kept in Redis, shared by all API processes', () => {
  let app: TestApp;
  let other: (Spawned & { url: string }) | undefined;
  let rl: FakeOpenAI;
  let spare: FakeOpenAI;
  beforeAll(async () => {
    rl = await new FakeOpenAI().start();
    spare = await new FakeOpenAI().start();
    app = await startTestApp();
  });
  afterAll(async () => {
    await other?.stop('SIGKILL');
    await app?.close();
    await rl?.stop();
    await spare?.stop();
  });

  it('a channel set aside by a 429 in one API process is skipped by another API process', async () => {
    const { v1, key } = await payer(app, 'shared-cooldown', 1_000_000);
    await addChannel(app, { name: 'rl-shared', base_url: rl.url, models: 'shared-model', priority: 10, price: 1 });
    await addChannel(app, { name: 'spare-shared', base_url: spare.url, models: 'shared-model', priority: 1, price: 1 });
    rl.behaviour = { kind: 'status', status: 429, retryAfter: '60' };

    // Process 1: a real API process (src/server.ts api) meets the 429.
    other = await spawnServer(['api'], app.testEnv.env);
    const viaOther = new HttpClient(other.url).withAuth(`Bearer ${key}`);
    expect((await viaOther.post('/v1/embeddings', { model: 'shared-model', input: 'first' })).status).toBe(200);
    expect([rl.calls.length, spare.calls.length]).toEqual([1, 1]);
    expect((await other.stop('SIGTERM')).code).toBe(0);

    // Process 2: this test process's API, which never saw the 429, skips the channel.
    rl.behaviour = { kind: 'ok' };
    expect((await v1.post('/v1/embeddings', { model: 'shared-model', input: 'second' })).status).toBe(200);
    expect([rl.calls.length, spare.calls.length]).toEqual([1, 2]);
  });
});
