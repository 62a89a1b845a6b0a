// What a provider's test through the gateway sets up the same for every provider: the app, a user's key, the official
// openai client as the caller, channels of a type on fakes, and a channel's row as an admin sees it.
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, expect } from 'vitest';
import type { FakeJsonUpstream } from './fake-json-upstream.js';
import { HttpClient } from './http.js';
import { startTestApp, type TestApp } from './services.js';

export interface Gateway {
  t: TestApp;
  /** A user's API key (unlimited quota). */
  key: string;
  /** The openai client, calling the gateway with that key (no retries: each call is one). */
  client(): OpenAI;
  /** A channel of `type` serving `model` (201 expected); its id. */
  channel(type: string, model: string, body: Record<string, unknown>): Promise<number>;
  /** A channel's row as GET /api/channel/:id shows it. */
  seen(id: number): Promise<{ status: number; status_reason: string | null; [k: string]: unknown }>;
}

export async function startGateway(user: string): Promise<Gateway> {
  const t = await startTestApp();
  await t.root.post('/api/user/', { username: user, password: `${user}-password`, quota: 10_000_000 });
  const session = new HttpClient(t.url);
  await session.login(user, `${user}-password`);
  const key = (await session.post('/api/token/', { name: 'k', unlimited_quota: true })).body.data.key as string;
  return {
    t,
    key,
    client: () => new OpenAI({ apiKey: key, baseURL: `${t.url}/v1`, maxRetries: 0 }),
    async channel(type, model, body) {
      const res = await t.root.post('/api/channel/', { type, name: `${model}-${String(body.priority ?? 0)}`, models: model, price: 1000, ...body });
      expect(res.status, res.text).toBe(201);
      return res.body.data.id as number;
    },
    async seen(id) {
      return (await t.root.get(`/api/channel/${id}`)).body.data;
    },
  };
}

/** A vector as the gateway hands it on: each number as its float32. */
export const asFloat32 = (v: number[]) => v.map(Math.fround);

/** An answer's vectors, each number read as its float32 (floats come printed as float32's shortest form). */
export const received = (res: { data: { embedding: number[] }[] }) => res.data.map((d) => asFloat32(d.embedding));

/** An OpenAI client error's status and message (the openai package's APIError). */
export async function refusal(p: Promise<unknown>): Promise<{ status: number; message: string; param?: string | null }> {
  try {
    await p;
  } catch (err) {
    const e = err as { status: number; message: string; param?: string | null };
    return { status: e.status, message: e.message, param: e.param };
  }
  throw new Error('the call succeeded');
}

/** A provider's test: the gateway and two fakes taking `key` (the second for failover), calls and behaviours reset before each test. */
export interface ProviderSuite<F extends FakeJsonUpstream<unknown>> {
  g: Gateway;
  /** The fake the channels under test call. */
  up: F;
  /** A second fake, behind a lower-priority channel, for failover. */
  up2: F;
  /** A gateway model of its own (no cache or cool-down carries over) on `up`, mapped to the provider's `upstream` model. */
  model(upstream: string, body?: Record<string, unknown>): Promise<{ model: string; id: number }>;
  /** A second channel for `model` on `up2` (priority 5, below the first's 10). */
  fallback(model: string, upstream: string): Promise<number>;
}

export function providerSuite<F extends FakeJsonUpstream<unknown>>(type: string, key: string, make: () => F): ProviderSuite<F> {
  let seq = 0;
  const suite = {
    async model(upstream: string, body: Record<string, unknown> = {}) {
      const model = `${type}-model-${++seq}`;
      const id = await suite.g.channel(type, model, { key, base_url: suite.up.url, model_mapping: { [model]: upstream }, ...body });
      return { model, id };
    },
    fallback: (model: string, upstream: string) =>
      suite.g.channel(type, model, { key, base_url: suite.up2.url, model_mapping: { [model]: upstream }, priority: 5 }),
  } as ProviderSuite<F>;
  beforeAll(async () => {
    suite.up = await make().start();
    suite.up2 = await make().start();
    suite.up.key = key;
    suite.up2.key = key;
    suite.g = await startGateway(`${type}-user`);
  });
  afterAll(async () => {
    await suite.g?.t.close();
    await suite.up?.stop();
    await suite.up2?.stop();
  });
  beforeEach(() => {
    for (const f of [suite.up, suite.up2]) {
      f.calls.length = 0;
      f.behaviour = { kind: 'ok' };
    }
  });
  return suite;
}

/**
 * With `up` answering 429 (its retry hint set by the test) to the channel at priority 10 for `model`, and `up2` behind it:
 * the call fails over, the next skips the cooled channel, and once `up2` is limited too the gateway's 429 says the
 * shorter wait, the first channel's `waitS` (not a default of a few seconds).
 */
export async function expectCooledFor<F extends FakeJsonUpstream<unknown>>(s: ProviderSuite<F>, model: string, waitS: number): Promise<void> {
  const call = (input: string) => s.g.t.anon.post('/v1/embeddings', { model, input }, { authorization: `Bearer ${s.g.key}` });
  expect((await call(`${model} limited 1`)).status).toBe(200);
  expect([s.up.calls.length, s.up2.calls.length]).toEqual([1, 1]);
  expect((await call(`${model} limited 2`)).status).toBe(200);
  expect([s.up.calls.length, s.up2.calls.length]).toEqual([1, 2]);
  s.up2.behaviour = { kind: 'status', status: 429, headers: { 'retry-after': String(waitS * 10) } };
  const limited = await call(`${model} limited 3`);
  expect(limited.status).toBe(429);
  expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(waitS - 20);
  expect(Number(limited.headers.get('retry-after'))).toBeLessThanOrEqual(waitS);
}

/**
 * The channel `id` (priority 10 on `up`, for `model`) refused its key: the call was answered by the next channel, the
 * channel is disabled (status 3) with `reason` and no `secret`, and the next call does not reach `up`.
 */
export async function expectRefusedKey<F extends FakeJsonUpstream<unknown>>(s: ProviderSuite<F>, model: string, id: number, reason: string, secret: string) {
  const first = await s.g.client().embeddings.create({ model, input: `${model} refused key` });
  expect(first.data).toHaveLength(1);
  expect(s.up2.calls).toHaveLength(1);
  const row = await s.g.seen(id);
  expect(row.status).toBe(3);
  expect(row.status_reason).toBe(reason);
  expect(row.status_reason).not.toContain(secret);
  s.up.calls.length = 0;
  await s.g.client().embeddings.create({ model, input: `${model} refused key again` });
  expect(s.up.calls).toHaveLength(0);
}
