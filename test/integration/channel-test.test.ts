// Testing a channel directly (GET /api/channel/test/:id, one-api's "test") and all of an admin's channels at once
// (GET /api/channel/test), and the channel types the console's form offers (GET /api/channel/types).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROVIDERS } from '../../src/channels/providers/registry.js';
import { FakeOpenAI } from '../helpers/fake-openai.js';
import { HttpClient } from '../helpers/http.js';
import { startTestApp, type TestApp } from '../helpers/services.js';

let t: TestApp;
let near: FakeOpenAI;
let far: FakeOpenAI;
let n = 0;

beforeAll(async () => {
  [t, near, far] = await Promise.all([startTestApp({ workers: false }), new FakeOpenAI().start(), new FakeOpenAI().start()]);
});
afterAll(async () => {
  await t?.close();
  await near?.stop();
  await far?.stop();
});

const KEY = 'sk-channel-test-upstream-key-0123456789';

async function channel(client: HttpClient, body: Record<string, unknown>): Promise<number> {
  const res = await client.post('/api/channel/', { name: `c${++n}`, key: KEY, models: 'm', price: 1000, ...body });
  expect(res.status, res.text).toBe(201);
  return res.body.data.id;
}

/** A new user with `role`, signed in. */
async function signedIn(role: number): Promise<HttpClient> {
  const username = `u${Date.now()}${++n}`;
  expect((await t.root.post('/api/user/', { username, password: `${username}-password`, role })).status).toBe(201);
  const client = new HttpClient(t.url);
  await client.login(username, `${username}-password`);
  return client;
}

const row = (id: number) => t.platform.db('channels').where({ id }).first();

describe('GET /api/channel/test/:id', () => {
  it('asks that channel only, even when another channel of the model comes first (priority), and records when and how long', async () => {
    const model = 'shared-model';
    const first = await channel(t.root, { base_url: near.url, models: model, priority: 10 });
    const tested = await channel(t.root, { base_url: far.url, models: model, priority: 0 });
    far.behaviour = { kind: 'ok', reportUsage: true, delayMs: 150 };
    const [nearBefore, farBefore] = [near.calls.length, far.calls.length];
    const before = Math.floor(Date.now() / 1000);
    const res = await t.root.get(`/api/channel/test/${tested}`);
    far.behaviour = { kind: 'ok', reportUsage: true };
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ success: true, message: '', model });
    expect(near.calls.length).toBe(nearBefore);
    expect(far.calls.slice(farBefore).map((c) => [c.body.model, c.authorization])).toEqual([[model, `Bearer ${KEY}`]]);
    // one-api's time is in seconds; the channel keeps milliseconds and epoch seconds.
    expect(res.body.time).toBeGreaterThanOrEqual(0.15);
    expect(res.body.time).toBeLessThan(10);
    const r = await row(tested);
    expect(r.response_time).toBeGreaterThanOrEqual(150);
    expect(Math.abs(r.response_time - res.body.time * 1000)).toBeLessThanOrEqual(1);
    expect(Number(r.test_time)).toBeGreaterThanOrEqual(before);
    expect((await t.root.get(`/api/channel/${tested}`)).body.data).toMatchObject({ response_time: r.response_time, test_time: Number(r.test_time) });
    // The other one was not tested.
    expect((await row(first)).test_time).toBeNull();
  });

  it('is charged to no one: root (quota 0) tests a priced channel; no quota moves, no usage or error row, the channel’s used_quota stays', async () => {
    const id = await channel(t.root, { base_url: near.url, models: 'priced-model', price: 5_000_000 });
    const quota = async () => (await t.platform.db('users').where({ username: 'root' }).first()).quota;
    const logs = () => t.platform.db('logs').whereIn('type', [2, 5]).count<{ count: string }[]>({ count: '*' });
    const [quotaBefore, [{ count: logsBefore }]] = [await quota(), await logs()];
    expect(quotaBefore).toBe(0);
    const res = await t.root.get(`/api/channel/test/${id}`);
    expect(res.body, res.text).toMatchObject({ success: true });
    await t.platform.channels.flushUsage();
    expect(await quota()).toBe(quotaBefore);
    expect((await logs())[0]!.count).toBe(logsBefore);
    expect((await row(id)).used_quota).toBe(0);
  });

  it('takes ?model= among the channel’s models; one it does not serve is 400', async () => {
    const id = await channel(t.root, { base_url: near.url, models: 'first-model,second-model', model_mapping: { 'second-model': 'upstream-second' } });
    const before = near.calls.length;
    expect((await t.root.get(`/api/channel/test/${id}`)).body).toMatchObject({ success: true, model: 'first-model' });
    expect((await t.root.get(`/api/channel/test/${id}?model=second-model`)).body).toMatchObject({ success: true, model: 'second-model' });
    expect(near.calls.slice(before).map((c) => c.body.model)).toEqual(['first-model', 'upstream-second']);
    const bad = await t.root.get(`/api/channel/test/${id}?model=other`);
    expect(bad.status).toBe(400);
    expect(bad.body.message).toMatch(/does not serve 'other'/);
    expect(near.calls.length).toBe(before + 2);
  });

  it('follows the role rule: an admin tests their own channels, not another admin’s or root’s (404); root tests any', async () => {
    const [alice, bob] = [await signedIn(10), await signedIn(10)];
    const hers = await channel(alice, { base_url: near.url, models: 'alice-model' });
    const roots = await channel(t.root, { base_url: near.url, models: 'root-model' });
    const before = near.calls.length;
    for (const [client, id] of [
      [bob, hers],
      [alice, roots],
    ] as const) {
      const res = await client.get(`/api/channel/test/${id}`);
      expect(res.status).toBe(404);
      expect(res.body).toMatchObject({ success: false });
    }
    expect(near.calls.length).toBe(before);
    expect((await row(hers)).test_time).toBeNull();
    expect((await alice.get(`/api/channel/test/${hers}`)).body).toMatchObject({ success: true });
    expect((await t.root.get(`/api/channel/test/${hers}`)).body).toMatchObject({ success: true });
    // Not for common users at all.
    expect((await (await signedIn(1)).get(`/api/channel/test/${hers}`)).status).toBe(403);
  });

  it('a key the upstream refuses (401) disables the channel with the reason, as a relayed call does, and says so', async () => {
    const id = await channel(t.root, { base_url: far.url, models: 'refused-model' });
    far.behaviour = { kind: 'status', status: 401, message: 'Incorrect API key provided' };
    const res = await t.root.get(`/api/channel/test/${id}`);
    far.behaviour = { kind: 'ok', reportUsage: true };
    expect(res.status).toBe(200);
    expect(res.body.success).toBe(false);
    expect(res.body.message).toMatch(/refused its key/);
    const r = await row(id);
    expect(r.status).toBe(3);
    expect(r.status_reason).toMatch(/upstream answered 401: Incorrect API key provided/);
    expect(r.status_reason).not.toContain(KEY);
    expect(r.test_time).not.toBeNull();
  });

  it('goes through the outbound policy: a base_url whose host is not allowed is not called', async () => {
    const id = await channel(t.root, { base_url: near.url, models: 'policy-model' });
    // Saved before the policy would have refused it (the policy is checked on every call, not only when saved).
    await t.platform
      .db('channels')
      .where({ id })
      .update({ base_url: near.url.replace('127.0.0.1', 'localhost') });
    const before = near.calls.length;
    const res = await t.root.get(`/api/channel/test/${id}`);
    expect(res.body.success).toBe(false);
    expect(res.body.message).toMatch(/outbound policy/);
    expect(near.calls.length).toBe(before);
  });

  it('is refused (403) to a cookie sent from another site, like any change of state, and tests nothing', async () => {
    const id = await channel(t.root, { base_url: near.url, models: 'cross-site-model' });
    const calls = near.calls.length;
    for (const path of [`/api/channel/test/${id}`, '/api/channel/test']) {
      expect((await t.root.get(path, { 'sec-fetch-site': 'cross-site' })).status, path).toBe(403);
    }
    expect(near.calls.length).toBe(calls);
    expect((await row(id)).test_time).toBeNull();
  });

  it('answers 404 for a channel that does not exist', async () => {
    expect((await t.root.get('/api/channel/test/999999')).status).toBe(404);
  });
});

describe('GET /api/channel/test', () => {
  it('tests every enabled channel the admin manages, 4 at a time, and answers how each did', async () => {
    const admin = await signedIn(10);
    const slow = await new FakeOpenAI().start();
    try {
      slow.behaviour = { kind: 'ok', reportUsage: true, delayMs: 300 };
      const good = [];
      for (let i = 0; i < 6; i++) good.push(await channel(admin, { base_url: slow.url, models: `all-${i}` }));
      const refused = await channel(admin, { base_url: far.url, models: 'all-refused' });
      const off = await channel(admin, { base_url: slow.url, models: 'all-off', status: 2 });
      const notHers = await channel(t.root, { base_url: slow.url, models: 'all-root' });
      far.behaviour = { kind: 'status', status: 403, message: 'forbidden here' };
      slow.maxInFlight = 0;
      const res = await admin.get('/api/channel/test');
      far.behaviour = { kind: 'ok', reportUsage: true };
      expect(res.status, res.text).toBe(200);
      expect(res.body.success).toBe(true);
      expect(res.body.data).toMatchObject({ tested: 7, succeeded: 6, failed: 1 });
      expect(res.body.message).toBe('Tested 7 channels: 6 answered, 1 failed');
      const byId = new Map(res.body.data.results.map((r: { id: number }) => [r.id, r]));
      expect([...byId.keys()].sort((a: any, b: any) => a - b)).toEqual([...good, refused]);
      for (const id of good) expect(byId.get(id)).toMatchObject({ success: true, message: '', model: expect.stringMatching(/^all-\d$/) });
      expect(byId.get(refused)).toMatchObject({ success: false, message: expect.stringMatching(/refused its key/) });
      expect(slow.calls.map((c) => c.body.model).sort()).toEqual(['all-0', 'all-1', 'all-2', 'all-3', 'all-4', 'all-5']);
      // Bounded: never more than 4 at once, and more than one at once.
      expect(slow.maxInFlight).toBe(4);
      for (const id of good) expect((await row(id)).response_time).toBeGreaterThanOrEqual(300);
      expect((await row(refused)).status).toBe(3);
      expect((await row(off)).test_time).toBeNull();
      expect((await row(notHers)).test_time).toBeNull();
    } finally {
      await slow.stop();
    }
  });
});

describe('GET /api/channel/types', () => {
  it('lists every registered provider with its settings and what it supports; admins only', async () => {
    const res = await t.root.get('/api/channel/types');
    expect(res.status, res.text).toBe(200);
    const types = res.body.data as any[];
    expect(types.map((x) => x.type)).toEqual(PROVIDERS.map((p) => p.type));
    for (const p of PROVIDERS) {
      const v = types.find((x) => x.type === p.type);
      expect(v).toMatchObject({ one_api_type: p.oneApiType, label: p.label, default_base_url: p.defaultBaseUrl });
      expect(v.config_fields.map((f: { name: string }) => f.name)).toEqual(p.configFields.map((f) => f.name));
      expect(v.supports.base64).toBe(p.base64);
    }
    const openai = types.find((x) => x.type === 'openai');
    expect(openai).toMatchObject({ one_api_type: 1, supports: { dimensions: 'yes', base64: true, token_arrays: true, max_inputs: 2048 } });
    expect(openai.config_fields).toEqual([
      expect.objectContaining({ name: 'path', kind: 'text', required: false, choices: null }),
      expect.objectContaining({ name: 'headers', kind: 'json', required: false, choices: null }),
    ]);
    expect((await (await signedIn(1)).get('/api/channel/types')).status).toBe(403);
  });

  it('documents the three endpoints in /openapi.json', async () => {
    const doc = (await t.anon.get('/openapi.json')).body;
    for (const path of ['/api/channel/types', '/api/channel/test', '/api/channel/test/{id}']) expect(doc.paths[path]?.get, path).toBeDefined();
  });
});
