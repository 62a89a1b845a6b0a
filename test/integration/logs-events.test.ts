// What gets logged, end to end over HTTP: consume rows of /v1 calls (priced, cached, failed, free and aggregated),
// top-ups (redemptions, admin quota changes), admin actions on users, channels and codes, and channels disabled by
// their upstream. Real Postgres and Redis; a fake OpenAI upstream on loopback.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeOpenAI } from '../helpers/fake-openai.js';
import { HttpClient } from '../helpers/http.js';
import { startTestApp, type TestApp } from '../helpers/services.js';
import { UsageRecorder } from '../../src/accounts/usage.js';

let t: TestApp;
let up: FakeOpenAI;
const UPSTREAM_KEY = 'sk-upstreamSECRETkey0123456789abcdef';

beforeAll(async () => {
  up = await new FakeOpenAI().start();
  t = await startTestApp({ env: { UPSTREAM_TIMEOUT_MS: '2000', FREE_CALL_ROWS_PER_MINUTE: '3' } });
});
afterAll(async () => {
  await t?.close();
  await up?.stop();
});

interface Row {
  id: number;
  type: number;
  content: string;
  username: string;
  token_name: string;
  model_name: string;
  quota: number;
  prompt_tokens: number;
  channel: number;
  elapsed_time: number;
  request_id: string;
  request_count: number;
  cache_hit: boolean;
  status_code: number | null;
}

/** A common user with quota, logged in, with an unlimited API key named `key-<name>`. */
async function payer(name: string, quota: number) {
  const created = await t.root.post('/api/user/', { username: name, password: `${name}-password`, quota });
  expect(created.status, created.text).toBe(201);
  const session = new HttpClient(t.url);
  await session.login(name, `${name}-password`);
  const key = (await session.post('/api/token/', { name: `key-${name}`, unlimited_quota: true })).body.data.key as string;
  return {
    id: created.body.data.id as number,
    session,
    v1: t.anon.withAuth(`Bearer ${key}`),
    self: async () => (await session.get('/api/user/self')).body.data as { quota: number; used_quota: number; request_count: number },
    logs: async (q = '') => (await session.get(`/api/log/self?page_size=100&${q}`)).body.data as Row[],
  };
}

async function addChannel(body: Record<string, unknown>): Promise<number> {
  const res = await t.root.post('/api/channel/', { type: 'openai', key: UPSTREAM_KEY, base_url: up.url, ...body });
  expect(res.status, res.text).toBe(201);
  return res.body.data.id as number;
}

const everything = async () => (await t.root.get('/api/log/?page_size=100')).body.data as Row[];

describe('consume rows of /v1 calls', () => {
  it('a priced upstream call writes one consume row (user, key name, model, channel, tokens, quota, elapsed ms, request id) and used_quota grows by its quota', async () => {
    const p = await payer('consumer', 100_000);
    const channel = await addChannel({ name: 'priced', models: 'priced-model', price: 1000 });
    up.behaviour = { kind: 'ok', reportUsage: true };
    const res = await p.v1.post('/v1/embeddings', { model: 'priced-model', input: ['one', 'two'] }, { 'x-request-id': 'consume-req-1' });
    expect(res.status, res.text).toBe(200);
    const rows = await p.logs('type=2');
    expect(rows).toHaveLength(1);
    // The fake reports 10 tokens per input: 20 tokens at 1000 per 1K = 20 quota.
    expect(rows[0]).toMatchObject({
      type: 2,
      username: 'consumer',
      token_name: 'key-consumer',
      model_name: 'priced-model',
      channel,
      prompt_tokens: 20,
      quota: 20,
      request_id: 'consume-req-1',
      request_count: 1,
      cache_hit: false,
      status_code: null,
    });
    expect(rows[0]!.elapsed_time).toBeGreaterThanOrEqual(0);
    expect((await p.self()).used_quota).toBe(20);
  });

  it('the same input again comes from the cache: its row says cache_hit, names no channel, and is charged like any other', async () => {
    const p = await payer('cached', 100_000);
    await addChannel({ name: 'cache-channel', models: 'cache-model', price: 1000 });
    up.behaviour = { kind: 'ok', reportUsage: true };
    expect((await p.v1.post('/v1/embeddings', { model: 'cache-model', input: 'cache me please' })).status).toBe(200);
    const calls = up.calls.length;
    expect((await p.v1.post('/v1/embeddings', { model: 'cache-model', input: 'cache me please' })).status).toBe(200);
    expect(up.calls.length).toBe(calls);
    const [second, first] = await p.logs('type=2');
    expect(first).toMatchObject({ cache_hit: false });
    expect(first!.channel).toBeGreaterThan(0);
    expect(second).toMatchObject({ cache_hit: true, channel: 0 });
    expect(second!.quota).toBeGreaterThan(0);
    expect((await p.self()).used_quota).toBe(first!.quota + second!.quota);
  });

  it("an upstream failure writes a type 5 row with the status answered and the upstream's reason (the channel's key cut out), and charges nothing", async () => {
    const p = await payer('failing', 100_000);
    await addChannel({ name: 'broken', models: 'broken-model', price: 1000 });
    up.behaviour = { kind: 'status', status: 500, message: `Incorrect API key provided: ${UPSTREAM_KEY}` };
    const res = await p.v1.post('/v1/embeddings', { model: 'broken-model', input: 'x' }, { 'x-request-id': 'failed-req-1' });
    expect(res.status).toBe(502);
    const rows = await p.logs();
    const errors = rows.filter((r) => r.type === 5);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ model_name: 'broken-model', status_code: 502, quota: 0, request_id: 'failed-req-1', token_name: 'key-failing' });
    expect(errors[0]!.content).toMatch(/broken-model failed with 502/);
    expect(errors[0]!.content).toMatch(/answered 500/);
    expect(errors[0]!.content).not.toContain(UPSTREAM_KEY);
    expect(errors[0]!.content).toContain('Incorrect API key provided: ***');
    expect(rows.filter((r) => r.type === 2)).toHaveLength(0);
    expect(await p.self()).toMatchObject({ quota: 100_000, used_quota: 0 });
    up.behaviour = { kind: 'ok', reportUsage: true };
  });

  it('a free local-hash-v1 call has its consume row and request count by the time it is answered', async () => {
    const p = await payer('free-single', 0);
    const before = (await p.self()).request_count;
    const res = await p.v1.post('/v1/embeddings', { model: 'local-hash-v1', input: 'one free call' }, { 'x-request-id': 'free-req-1' });
    expect(res.status).toBe(200);
    // No flush, no wait.
    const rows = (await p.logs('type=2')).filter((r) => r.model_name === 'local-hash-v1');
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      username: 'free-single',
      token_name: 'key-free-single',
      quota: 0,
      request_count: 1,
      request_id: 'free-req-1',
      prompt_tokens: res.body.usage.prompt_tokens,
    });
    expect((await p.self()).request_count).toBe(before + 1);
  });

  it('past FREE_CALL_ROWS_PER_MINUTE (3 here) free calls of a (user, key, model) in a minute, the rest become one row whose request_count counts them, written when the minute ends or the process stops', async () => {
    const p = await payer('free-caller', 0);
    // All seven calls in one minute (they take well under a second), so the rows are exactly 1, 1, 1 and 4.
    const second = new Date().getUTCSeconds();
    if (second > 50) await new Promise((r) => setTimeout(r, (61 - second) * 1000));
    for (let i = 0; i < 7; i++) expect((await p.v1.post('/v1/embeddings', { model: 'local-hash-v1', input: `free call ${i}` })).status).toBe(200);
    const own = (await p.logs('type=2')).filter((r) => r.model_name === 'local-hash-v1');
    expect(own.map((r) => r.request_count)).toEqual([1, 1, 1]);
    // The minute is still open: its aggregate is written when it ends; the platform closing writes everything.
    await t.platform.usage.flush();
    const rows = (await p.logs('type=2')).filter((r) => r.model_name === 'local-hash-v1');
    expect(rows.map((r) => r.request_count).sort()).toEqual([1, 1, 1, 4]);
    const aggregate = rows.find((r) => r.request_count === 4)!;
    expect(aggregate.content).toMatch(/4 free calls in the minute from/);
    expect(aggregate.prompt_tokens).toBeGreaterThan(0);
    expect(rows.every((r) => r.quota === 0 && r.token_name === 'key-free-caller')).toBe(true);
    expect((await p.self()).request_count).toBe(7);
  });
});

describe('the free-call recorder', () => {
  it('gives at most FREE_CALL_ROWS_PER_MINUTE own rows to each minute, even when calls of two minutes interleave at the turn', async () => {
    const p = await payer('free-turn', 0);
    const recorder = new UsageRecorder(t.platform.db, t.platform.log, 2);
    const minute = Math.floor(Date.now() / 60_000) * 60;
    const entry = (at: number) => ({ type: 2 as const, userId: p.id, tokenName: 'turn', modelName: 'turn-model', content: 'free', createdAt: at });
    for (let i = 0; i < 4; i++) {
      await recorder.record(p.id, null, entry(minute - 60 + 59));
      await recorder.record(p.id, null, entry(minute + 1));
    }
    const own = await t.platform.db('logs').where({ user_id: p.id, model_name: 'turn-model' }).select('created_at', 'request_count');
    expect(own.filter((r) => r.created_at < minute).length).toBeLessThanOrEqual(2);
    expect(own.filter((r) => r.created_at >= minute)).toHaveLength(2);
    await recorder.flush();
    const rows = await t.platform.db('logs').where({ user_id: p.id, model_name: 'turn-model' }).select('request_count');
    expect(rows.reduce((n, r) => n + Number(r.request_count), 0)).toBe(8);
  });
});

describe('top-up rows', () => {
  it("redeeming a code writes a top-up row with the code's id and quota, never the code itself", async () => {
    const p = await payer('redeemer', 0);
    const codes = await t.root.post('/api/redemption/', { name: 'promo-log', quota: 250 });
    const code = codes.body.data[0] as string;
    expect((await p.session.post('/api/user/topup', { key: code })).status).toBe(200);
    const id = (await t.root.get('/api/redemption/search?keyword=promo-log')).body.data[0].id as number;
    const topups = await p.logs('type=1');
    expect(topups).toHaveLength(1);
    expect(topups[0]).toMatchObject({ quota: 250, username: 'redeemer' });
    expect(topups[0]!.content).toContain(`#${id}`);
    expect(JSON.stringify(await everything())).not.toContain(code);
  });

  it("an admin's quota change is a top-up row carrying the difference; its other changes one manage row naming them, never the password", async () => {
    const p = await payer('managed', 100);
    const res = await t.root.put(`/api/user/${p.id}`, { quota: 40, role: 10, password: 'new-secret-password-123', display_name: 'Managed' });
    expect(res.status, res.text).toBe(200);
    // The new password ended the user's sessions: root reads their rows.
    const rows = (await t.root.get('/api/log/?username=managed&page_size=100')).body.data as Row[];
    const topup = rows.filter((r) => r.type === 1);
    expect(topup.map((r) => [r.quota, r.content])).toEqual([
      [-60, 'Quota changed from 100 to 40 by root (#1)'],
      [100, 'Initial quota 100 set by root (#1)'],
    ]);
    const manage = rows.filter((r) => r.type === 3).map((r) => r.content);
    expect(manage[0]).toBe(`User managed (#${p.id}) changed by root (#1): display name changed, role 1 → 10, password set`);
    expect(manage[1]).toBe(`User managed (#${p.id}) created by root (#1) with role 1`);
    expect(JSON.stringify(rows)).not.toContain('new-secret-password-123');
  });
});

describe('manage rows of admin actions', () => {
  it('creating, changing and deleting a channel writes manage rows naming the admin and what changed; the key never, only "key replaced"', async () => {
    const id = await addChannel({ name: 'audited', models: 'audit-model', price: 5 });
    expect((await t.root.put('/api/channel/', { id, key: 'sk-anotherSECRETkey9876543210', priority: 3 })).status).toBe(200);
    expect((await t.root.delete(`/api/channel/${id}`)).status).toBe(200);
    const rows = (await everything()).filter((r) => r.type === 3 && r.channel === id).map((r) => r.content);
    expect(rows).toEqual([
      `Deleted channel #${id} by root (#1)`,
      `Changed channel #${id} "audited": priority 0 → 3, key replaced by root (#1)`,
      `Created channel #${id} "audited" (${up.url}, models audit-model) by root (#1)`,
    ]);
    const all = JSON.stringify(await everything());
    expect(all).not.toContain('anotherSECRET');
    expect(all).not.toContain('upstreamSECRET');
  });

  it('creating, changing and deleting redemption codes writes manage rows with their ids, never the codes', async () => {
    const made = await t.root.post('/api/redemption/', { name: 'audit-codes', quota: 7, count: 2 });
    const list = (await t.root.get('/api/redemption/search?keyword=audit-codes')).body.data as { id: number }[];
    const [a, b] = list.map((r) => r.id).sort((x, y) => x - y);
    expect((await t.root.put('/api/redemption/', { id: a, quota: 9 })).status).toBe(200);
    expect((await t.root.delete(`/api/redemption/${b}`)).status).toBe(200);
    const rows = (await everything()).filter((r) => r.type === 3 && /redemption code/.test(r.content)).map((r) => r.content);
    expect(rows).toEqual(
      expect.arrayContaining([
        `Created 2 redemption code(s) #${a}-#${b} "audit-codes" worth 7 quota each by root (#1)`,
        `Changed redemption code #${a}: quota 7 → 9 by root (#1)`,
        `Deleted redemption code #${b} by root (#1)`,
      ]),
    );
    const all = JSON.stringify(await everything());
    for (const code of made.body.data as string[]) expect(all).not.toContain(code);
  });

  it('deleting a user writes a manage row on that user, which admins still see', async () => {
    const p = await payer('doomed', 0);
    expect((await t.root.delete(`/api/user/${p.id}`)).status).toBe(200);
    const rows = (await t.root.get('/api/log/?username=doomed&type=3')).body.data as Row[];
    expect(rows.map((r) => r.content)).toEqual([`User doomed (#${p.id}) deleted by root (#1)`, `User doomed (#${p.id}) created by root (#1) with role 1`]);
  });
});

describe('system rows', () => {
  it("a channel disabled because its upstream refused the key writes one system row with the upstream's reason", async () => {
    const p = await payer('refused-caller', 100_000);
    const id = await addChannel({ name: 'refusing', models: 'refused-model', price: 1 });
    up.behaviour = { kind: 'status', status: 401, message: 'Your key was revoked' };
    expect((await p.v1.post('/v1/embeddings', { model: 'refused-model', input: 'x' })).status).toBe(502);
    up.behaviour = { kind: 'ok', reportUsage: true };
    const rows = (await t.root.get('/api/log/?type=4')).body.data as Row[];
    const mine = rows.filter((r) => r.channel === id);
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ username: '', content: `Channel #${id} "refusing" disabled automatically: upstream answered 401: Your key was revoked` });
    // An admin (not root) sees system rows too.
    expect((await t.root.post('/api/user/', { username: 'sysadmin', password: 'sysadmin-password', role: 10 })).status).toBe(201);
    const admin = new HttpClient(t.url);
    await admin.login('sysadmin', 'sysadmin-password');
    expect(((await admin.get('/api/log/?type=4')).body.data as Row[]).some((r) => r.channel === id)).toBe(true);
  });
});
